"""The Flink profiler's event-time view of a join (a snapshot file as the receiver writes
it; no kernel): Trending Topics' aggregator reports, per counter subtask, the latest event
time its store has received; each pair into it gets its counter's event time and the bytes
it carried per second that advanced, and a store that names no senders gives none."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from streamband.flink.flows import Channel, TaskManagerRef, TmPair
from streamband.flink.profiler import FlinkProfiler

C0, C1, AGG = (TaskManagerRef(f"tm{i}", f"10.0.0.{i}", 6121) for i in (1, 2, 3))
#: two counter subtasks, each on its own TaskManager, into the aggregator's one subtask
PAIRS = [TmPair(tm, AGG, ("count->topk",), (Channel("vc", k, "vt", 0),))
         for k, tm in enumerate((C0, C1))]


def _write(path: Path, handed: tuple[int, int], tasks: dict[str, int] | None) -> None:
    """Each counter's report (its subpartition's bytes written and handed) and the
    aggregator's: its input channels and its store, with ``tasks`` per sender unless None."""
    flow = {}
    for k, tm in enumerate((C0, C1)):
        flow[tm.id] = {"engine": "flink", "topology": "job", "tm": tm.id, "tasks": {
            f"vc:{k}": {"out": [{"ds": "d1", "sub": [[handed[k], handed[k], 0]]}]}}}
    store = {"inputs": {"count": {"tuples": 3, "bytes": 9000, "watermark_ms": 200_000,
                                  **({"tasks": tasks} if tasks is not None else {})}}}
    flow[AGG.id] = {"engine": "flink", "topology": "job", "tm": AGG.id, "tasks": {"vt:0": {
        "in": [{"ds": "d1", "ch": [{"p": k, "kind": "remote", "s": [0, 0], "queued_bytes": 0}
                                   for k in (0, 1)]}],
        "stores": {"topk": store}}}}
    path.write_text(json.dumps({"time": 0.0, "flow": flow}))


def test_each_pair_gets_its_counters_event_time_and_pace(tmp_path: Path):
    snap = tmp_path / "snapshot.json"
    _write(snap, (0, 0), {"0": 100_000, "1": 101_000})
    prof = FlinkProfiler(snap, "job", PAIRS)
    assert prof.last is not None and prof.last["event_s"] == [100.0, 101.0]
    # 3 MB in 2 s of the first counter's event time, 1 MB in 1 s of the second's
    _write(snap, (3_000_000, 1_000_000), {"0": 102_000, "1": 102_000})
    state = prof.flow_state()
    assert state.event_s is not None and state.rho_event is not None
    assert state.event_s.tolist() == [102.0, 102.0]
    assert state.rho_event == pytest.approx([1.5e6, 1e6])


def test_a_store_without_senders_gives_no_event_time(tmp_path: Path):
    """Trucking IoT's combiner names no sending subtask: its input's latest event time is
    not a flow's (an input's subtasks on two TaskManagers are two flows)."""
    snap = tmp_path / "snapshot.json"
    _write(snap, (0, 0), None)
    prof = FlinkProfiler(snap, "job", PAIRS)
    _write(snap, (3_000_000, 1_000_000), None)
    state = prof.flow_state()
    assert state.event_s is None and state.rho_event is None
    assert prof.last is not None and np.isnan(np.array(prof.last["event_s"], float)).all()
