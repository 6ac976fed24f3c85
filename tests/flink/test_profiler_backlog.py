"""The Flink profiler's sender backlog of eq. (3) from the TaskManagers' reports (a snapshot
file as the receiver writes it; no kernel): a source task's ``pendingRecords`` enter the
backlog of each pair out of it in the bytes that pair handed per record emitted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamband.flink.flows import Channel, TaskManagerRef, TmPair
from streamband.flink.profiler import FlinkProfiler

SRC, C1, C2 = (TaskManagerRef(f"tm{i}", f"10.0.0.{i}", 6121) for i in (1, 2, 3))
#: a source subtask feeding two consumer subtasks, one per TaskManager
PAIRS = [TmPair(SRC, C1, ("trucks->combiner",), (Channel("v1", 0, "v2", 0),)),
         TmPair(SRC, C2, ("trucks->combiner",), (Channel("v1", 0, "v2", 1),))]


def _write(path: Path, handed: tuple[int, int], emitted: int, pending: int | None,
           kafka: dict | None = None) -> None:
    """The source's report: per subpartition (written, handed, queued) bytes, the records
    it emitted and, unless None, its records not fetched yet and its partitions' end and
    next offsets; each consumer's input channel of the pair."""
    source = {"numRecordsOut": emitted,
              "out": [{"ds": "d1", "sub": [[h, h, 0] for h in handed]}]}
    if pending is not None:
        source["pendingRecords"] = pending
    if kafka is not None:
        source["kafka"] = kafka
    flow = {"src": {"engine": "flink", "topology": "job", "tm": SRC.id,
                    "tasks": {"v1:0": source}}}
    for k, tm in enumerate((C1, C2)):
        flow[tm.id] = {"engine": "flink", "topology": "job", "tm": tm.id, "tasks": {
            f"v2:{k}": {"in": [{"ds": "d1", "ch": [{"p": 0, "kind": "remote", "s": [k, k],
                                                     "queued_bytes": 0}]}]}}}
    path.write_text(json.dumps({"time": 0.0, "flow": flow}))


def test_pending_records_are_backlog_in_the_pairs_bytes(tmp_path: Path):
    snap = tmp_path / "snapshot.json"
    _write(snap, (0, 0), 0, 0)
    prof = FlinkProfiler(snap, "job", PAIRS)
    _write(snap, (30_000, 10_000), 10, 500)  # 3 and 1 KB a record emitted
    state = prof.flow_state()
    assert state.ls1 == pytest.approx([500 * 3_000, 500 * 1_000])
    _write(snap, (30_000, 10_000), 10, 800)  # nothing emitted: the last bytes per record
    assert prof.flow_state().ls1 == pytest.approx([800 * 3_000, 800 * 1_000])
    assert prof.last is not None and prof.last["source_pending"] == [800, 800]


def test_a_task_without_pending_records_adds_nothing(tmp_path: Path):
    snap = tmp_path / "snapshot.json"
    _write(snap, (0, 0), 0, None)
    prof = FlinkProfiler(snap, "job", PAIRS)
    _write(snap, (30_000, 10_000), 10, None)
    assert prof.flow_state().ls1 == pytest.approx([0.0, 0.0])


def test_a_held_source_is_behind_by_the_brokers_end(tmp_path: Path):
    """A source that back-pressure holds fetches nothing, so its pendingRecords keeps the
    0 of its last fetch; the broker's end less the next offset it emits is its backlog."""
    snap = tmp_path / "snapshot.json"
    _write(snap, (0, 0), 0, 0)
    prof = FlinkProfiler(snap, "job", PAIRS)
    _write(snap, (30_000, 10_000), 10, 0, {"t/0": {"end": 2_010, "next": 10, "lag": 2_000}})
    assert prof.flow_state().ls1 == pytest.approx([2_000 * 3_000, 2_000 * 1_000])
    assert prof.last is not None and prof.last["source_from_broker"] == ["broker"] * 2
    _write(snap, (30_000, 10_000), 10, 0,  # the broker did not answer: its last ends
           {"t/0": {"end": 2_010, "next": 10, "lag": 2_000, "stale": True}})
    assert prof.flow_state().ls1 == pytest.approx([2_000 * 3_000, 2_000 * 1_000])
    assert prof.last["source_from_broker"] == ["stale"] * 2
    _write(snap, (30_000, 10_000), 10, 0)  # a reporter without the broker: the gauge alone
    assert prof.flow_state().ls1 == pytest.approx([0.0, 0.0])
    assert prof.last["source_from_broker"] == ["fetch"] * 2
