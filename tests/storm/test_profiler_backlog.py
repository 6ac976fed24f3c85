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


#: Trending Topics' two counters into the aggregator's worker, whose store keys each
#: counter task as an input of its own
CT1, CT2, AGG = (Worker(f"10.0.1.{i}", 6700) for i in (1, 2, 3))
INTO_JOIN = [WorkerPair(CT1, AGG, "count[0]->topk[0]", (4,)),
             WorkerPair(CT2, AGG, "count[1]->topk[0]", (5,))]


def _join_snapshot(path: Path, sent: tuple[int, int], wm_s: tuple[float, float] | None) -> None:
    """The counters' sent messages and the aggregator's store (watermarks in s; None:
    the store has not reported)."""
    flows = {f"c{i}": {"topology": "tt", "host": w.host, "port": w.port, "recv": 0.0,
                       "clients": {f"{AGG.host}:{AGG.port}": {"sent": n, "pending": 0}},
                       "transfer_queue": 0}
             for i, (w, n) in enumerate(zip((CT1, CT2), sent, strict=True))}
    agg: dict = {"topology": "tt", "host": AGG.host, "port": AGG.port, "recv": 0.0,
                 "clients": {}, "transfer_queue": 0}
    if wm_s is not None:
        agg["stores"] = {"topk:9": {"forced": 0, "inputs": {
            f"count:{t}": {"tuples": 0, "bytes": 0, "watermark_ms": 1000 * w,
                           "lag_ms": 1000 * (max(wm_s) - w), "tasks": {str(t): 1000 * w}}
            for t, w in zip((4, 5), wm_s, strict=True)}}}
    path.write_text(json.dumps({"time": 0.0, "flow": {**flows, "agg": agg}}))


def test_join_inputs_pace_in_event_time(tmp_path: Path):
    """Each flow into a join's store: the event time the store has received of its
    sending task, and the bytes it carried per second that advanced, over every interval
    since the store first reported."""
    snap = tmp_path / "snapshot.json"
    _join_snapshot(snap, (0, 0), None)
    prof = StormProfiler(snap, "tt", INTO_JOIN, hint_bytes=[3000.0, 3000.0])
    assert prof.flow_state().rho_event is None  # no store yet
    _join_snapshot(snap, (10, 10), (1000.0, 1000.0))
    assert prof.flow_state().rho_event is None  # first seen: no advance to divide by
    # the first counter's input advances 2 s on 30 messages, the second 4 s on 20
    _join_snapshot(snap, (40, 30), (1002.0, 1004.0))
    state = prof.flow_state()
    assert state.rho_event == pytest.approx([30 * 3000 / 2, 20 * 3000 / 4])
    assert state.event_s == pytest.approx([1002.0, 1004.0])
    # an interval in which the first input's watermark stays: its pace holds
    _join_snapshot(snap, (40, 50), (1002.0, 1008.0))
    assert prof.flow_state().rho_event == pytest.approx([45_000.0, 40 * 3000 / 8])
    assert prof.last is not None and prof.last["event_s"] == [1002.0, 1008.0]
