"""The Storm profiler's sender backlog of eq. (3) from the workers' reports (a snapshot
file as the collector writes it; no kernel): a Kafka spout's unread records enter the
backlog of each flow out of its worker in the bytes that flow will carry for them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamband.storm.flows import Worker, WorkerPair
from streamband.storm.profiler import StormProfiler

TRUCK, TRAFFIC, C1, C2 = (Worker(f"10.0.0.{i}", 6700) for i in (2, 3, 4, 5))
#: a truck spout's events go to one combiner each (fields); a congestion record to both
PAIRS = [WorkerPair(TRUCK, C1, "truck[0]->combiner[0]"),
         WorkerPair(TRUCK, C2, "truck[0]->combiner[1]"),
         WorkerPair(TRAFFIC, C1, "traffic[0]->combiner[0]"),
         WorkerPair(TRAFFIC, C2, "traffic[0]->combiner[1]")]
BPM = [40_000.0, 40_000.0, 10_000.0, 10_000.0]


def _report(w: Worker, sent: dict[Worker, int], nxt: int, lag: int) -> dict:
    return {"topology": "ti", "host": w.host, "port": w.port, "recv": 0.0,
            "clients": {f"{d.host}:{d.port}": {"sent": n, "pending": 0} for d, n in sent.items()},
            "transfer_queue": 0,
            "sources": {"spout:1": {"t/0": {"next": nxt, "lag": lag, "lag_bytes": lag * 20}}}}


def _write(path: Path, truck: tuple[int, int], traffic: tuple[int, int]) -> None:
    """truck, traffic: (records emitted up to, records unread)."""
    flows = {
        "a": _report(TRUCK, {C1: truck[0] // 2, C2: truck[0] // 2}, *truck),
        "b": _report(TRAFFIC, {C1: traffic[0], C2: traffic[0]}, *traffic),
    }
    path.write_text(json.dumps({"time": 0.0, "flow": flows}))


def test_unread_records_are_backlog_in_the_flows_bytes(tmp_path: Path):
    snap = tmp_path / "snapshot.json"
    _write(snap, (0, 0), (0, 0))
    prof = StormProfiler(snap, "ti", PAIRS, hint_bytes=BPM)
    _write(snap, (100, 1000), (200, 10))
    state = prof.flow_state()
    # a truck event crosses one of the two flows, a congestion record both
    assert state.ls1 == pytest.approx([1000 * 0.5 * 40_000] * 2 + [10 * 1.0 * 10_000] * 2)
    # an interval in which the spouts emitted nothing keeps the last messages per record
    _write(snap, (100, 3000), (200, 10))
    state = prof.flow_state()
    assert state.ls1[:2] == pytest.approx([3000 * 0.5 * 40_000] * 2)
    assert prof.last is not None and prof.last["source_lag"] == [3000, 3000, 10, 10]


def test_no_kafka_source_no_source_backlog(tmp_path: Path):
    snap = tmp_path / "snapshot.json"
    rep = _report(TRUCK, {C1: 50, C2: 50}, 0, 0)
    del rep["sources"]
    snap.write_text(json.dumps({"time": 0.0, "flow": {"a": rep}}))
    prof = StormProfiler(snap, "ti", PAIRS[:2], hint_bytes=BPM[:2])
    rep["clients"] = {f"{C1.host}:{C1.port}": {"sent": 150, "pending": 3},
                      f"{C2.host}:{C2.port}": {"sent": 150, "pending": 0}}
    snap.write_text(json.dumps({"time": 0.0, "flow": {"a": rep}}))
    assert prof.flow_state().ls1 == pytest.approx([3 * 40_000, 0.0])
