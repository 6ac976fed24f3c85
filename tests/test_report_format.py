"""The profiler datagrams' format against hostile reports: a report the receiver keeps
(``check_report`` passes) can be read by every reader of the snapshot — the Storm and
Flink profilers, the stores', sources' and totals' readers — without an exception, so no
datagram stops a manager's steps. Reports start from the real reporters' shapes (a Storm
worker's, a Flink TaskManager's) with one value anywhere replaced by any JSON value."""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streamband.flink.flows import Channel, TaskManagerRef, TmPair
from streamband.flink.profiler import FlinkProfiler, observed_pairs, source_pending, tm_reports
from streamband.loop.reports import (
    ProfileReceiver,
    app_totals,
    check_report,
    store_totals,
    worker_reports,
)
from streamband.storm.flows import Worker, WorkerPair
from streamband.storm.profiler import StormProfiler

A, B = Worker("10.0.0.2", 6700), Worker("10.0.0.3", 6701)
STORM_PAIRS = [WorkerPair(A, B, "trucks[1]->join[2]", (1,)), WorkerPair(B, A, "join[2]->sink[3]")]
STORE = {"forced": 0, "inputs": {"trucks": {"tuples": 3, "bytes": 300, "lag_ms": 5,
                                            "watermark_ms": 9000, "tasks": {"1": 8000}}}}
#: a Storm worker's flow report as its FlowReporter sends it (fields the readers walk)
STORM = {"type": "flow", "topology": "t", "t": 1.0, "host": A.host, "port": A.port,
         "clients": {f"{B.host}:{B.port}": {"sent": 10, "pending": 1, "lostOnSend": 0}},
         "transfer_queue": 2, "receive": {"join": 4, "__system": 1}, "stores": {"2": STORE},
         "sources": {"spout:1": {"t/0": {"end": 90, "next": 50, "lag": 40, "lag_bytes": 800,
                                         "stale": False}}}}
SRC, DST = TaskManagerRef("tm1", "10.0.0.2", 6121), TaskManagerRef("tm2", "10.0.0.3", 6121)
FLINK_PAIRS = [TmPair(SRC, DST, ("src->join",), (Channel("vs", 0, "vj", 0),))]
PLACE = {"vertices": {"vs": {"name": "Source: trucks-kafka", "component": "src",
                             "parallelism": 1},
                      "vj": {"name": "join", "component": "join", "parallelism": 1}}}
#: a Flink TaskManager's report as the reporter plug-in sends it, the consumer's below
FLINK_SRC = {"type": "flow", "engine": "flink", "topology": "job", "t": 1.0, "tm": "tm1",
             "host": SRC.host, "port": 34001, "tasks": {"vs:0": {
                 "vertex": "vs", "subtask": 0, "pendingRecords": 7, "numRecordsOut": 70,
                 "kafka": {"t/0": {"end": 90, "next": 50, "lag": 40}},
                 "out": [{"ds": "d1", "p": 1, "sub": [[1000, 900, 2]]}]}}}
FLINK_DST = {"type": "flow", "engine": "flink", "topology": "job", "t": 1.0, "tm": "tm2",
             "host": DST.host, "port": 34002, "tasks": {"vj:0": {
                 "vertex": "vj", "subtask": 0, "stores": {"join": STORE},
                 "in": [{"ds": "d1", "gate": 0, "ch": [{
                     "p": 0, "kind": "remote", "from": "10.0.0.2:6121", "s": [0, 0],
                     "queued_bytes": 10, "backlog": None, "credit": 2}]}]}}}

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.text(max_size=4)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=3), kids,
                                                              max_size=3),
    max_leaves=6)


def _paths(v: Any, at: tuple = ()) -> list[tuple]:
    """Every place in a report: its dicts' keys and its lists' items, nested."""
    out = [at] if at else []
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
    for k, x in items:
        out += _paths(x, (*at, k))
    return out


@st.composite
def mutated(draw: st.DrawFn, report: dict[str, Any]) -> dict[str, Any]:
    """``report`` with the value at one of its places (or a new key) replaced."""
    rec = copy.deepcopy(report)
    path = draw(st.sampled_from(_paths(rec)))
    parent = rec
    for k in path[:-1]:
        parent = parent[k]
    key = path[-1] if draw(st.booleans()) or isinstance(parent, list) \
        else draw(st.text(max_size=3))
    parent[key] = draw(JSON)
    return rec


def _snapshot(directory: str, *reports: dict[str, Any]) -> Path:
    """The snapshot the receiver writes of the reports it kept."""
    rx = ProfileReceiver("127.0.0.1:0", Path(directory) / "profile.json")
    try:
        for r in reports:
            rx.take(json.dumps(r).encode())
        rx.write()
    finally:
        rx.stop()
    return rx.snapshot


def _read_storm(path: Path) -> None:
    snap = json.loads(path.read_text())
    reps = worker_reports(snap, "t")
    store_totals(s for r in reps.values() for s in (r.get("stores") or {}).values())
    app_totals(snap, "t")
    prof = StormProfiler(path, "t", STORM_PAIRS, hint_bytes=[100.0, 100.0], input_queue=True)
    prof.flow_state()


def _read_flink(path: Path) -> None:
    snap = json.loads(path.read_text())
    reps = tm_reports(snap, "job")
    source_pending(reps, PLACE)
    store_totals(s for r in reps.values() for t in (r.get("tasks") or {}).values()
                 for s in (t.get("stores") or {}).values())
    observed_pairs(snap, "job")
    FlinkProfiler(path, "job", FLINK_PAIRS).flow_state()


def test_the_real_shapes_are_kept_and_read():
    for rec in (STORM, FLINK_SRC, FLINK_DST):
        assert check_report(rec) is None, rec
    with tempfile.TemporaryDirectory() as d:
        _read_storm(_snapshot(d, STORM))
        _read_flink(_snapshot(d, FLINK_SRC, FLINK_DST))


@settings(max_examples=300, deadline=None)
@given(mutated(STORM))
def test_a_kept_storm_report_never_stops_the_readers(rec):
    with tempfile.TemporaryDirectory() as d:
        _read_storm(_snapshot(d, rec))


@settings(max_examples=300, deadline=None)
@given(mutated(FLINK_SRC), mutated(FLINK_DST))
def test_kept_flink_reports_never_stop_the_readers(src, dst):
    with tempfile.TemporaryDirectory() as d:
        _read_flink(_snapshot(d, src, dst))


def test_shapes_the_readers_cannot_walk_are_refused():
    bad = [{**STORM, "port": "x"}, {**STORM, "clients": ["a"]},
           {**STORM, "clients": {"10.0.0.3:6701": {"sent": None}}},
           {**STORM, "stores": {"2": "x"}}, {**STORM, "sources": {"s": {"t/0": 1}}},
           {k: v for k, v in STORM.items() if k != "host"},
           {**FLINK_DST, "tasks": {"vj:0": {"in": [{"ds": ["unhashable"]}]}}},
           {**FLINK_DST, "tasks": {"vj:0": {"in": [{"ch": [{"s": [0]}]}]}}},
           {**FLINK_SRC, "tasks": {"vs:0": {"out": [{"sub": [[1, 2]]}]}}},
           {**FLINK_SRC, "tasks": "x"},
           {"type": "locality", "topology": "t", "iid": "B-1", "epochs": {"x": {}}},
           {"type": "locality", "topology": "t"}]
    assert [check_report(r) for r in bad] == ["malformed"] * len(bad)
    # a report of a type no reader walks, and a count the reporter did not know, are kept
    assert check_report({"type": "sink", "topology": "t", "note": ["free"]}) is None
    assert check_report({**FLINK_SRC, "tasks": {"vs:0": {"pendingRecords": None}}}) is None
