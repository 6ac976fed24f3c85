"""A Flink window's Kafka figures without a cluster: the source tasks' ``pendingRecords`` per
component (from the TaskManagers' reports, as the receiver's snapshot holds them) and the
broker's end offsets per topic, in the shape :func:`window_figures` reads, give each topic's
backlog at both ends of the window and its arrival rate, as Storm's spouts do."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from streamband.backends.flink import source_view
from streamband.flink.managed import ManagedJob
from streamband.flink.profiler import source_pending
from streamband.kafka.replay import window_figures

#: Trucking IoT as the REST API places it: two sources of two subtasks each, the combiner
PLACE = {"vertices": {
    "v1": {"name": "Source: trucks-kafka", "component": "trucks", "parallelism": 2},
    "v2": {"name": "Source: traffic-kafka", "component": "traffic", "parallelism": 2},
    "v3": {"name": "combine", "component": "combine", "parallelism": 2}}}
TOPICS = {"trucks": "trucks-4", "traffic": "traffic-4"}


def _reports(trucks: tuple[int, int], traffic: tuple[int, int]) -> dict[str, dict]:
    """Two TaskManagers, each with one subtask of every vertex; the combiner reports no
    ``pendingRecords`` (it is no source)."""
    return {f"tm{k}": {"engine": "flink", "topology": "job", "tm": f"tm{k}", "tasks": {
        f"v1:{k}": {"vertex": "v1", "pendingRecords": trucks[k], "numRecordsOut": 10},
        f"v2:{k}": {"vertex": "v2", "pendingRecords": traffic[k]},
        f"v3:{k}": {"vertex": "v3", "numRecordsIn": 5}}} for k in (0, 1)}


def _ends(trucks: tuple[int, int], traffic: tuple[int, int]) -> dict[str, dict[str, int]]:
    """The broker's offsets of both topics, two partitions each, and another job's topic."""
    out = {f"trucks-4/{k}": {"start": 0, "end": trucks[k], "bytes": 0} for k in (0, 1)}
    out.update({f"traffic-4/{k}": {"start": 0, "end": traffic[k], "bytes": 0} for k in (0, 1)})
    out["trucks-3/0"] = {"start": 0, "end": 99_999, "bytes": 0}
    return out


def test_pending_records_sum_over_a_sources_subtasks():
    assert source_pending(_reports((100, 50), (3, 4)), PLACE) == {"trucks": 150.0,
                                                                 "traffic": 7.0}


def test_a_source_subtask_without_its_gauge_leaves_the_topic_unknown():
    reps = _reports((100, 50), (3, 4))
    del reps["tm1"]["tasks"]["v1:1"]["pendingRecords"]  # it has not fetched yet
    got = source_pending(reps, PLACE)
    assert math.isnan(got["trucks"]) and got["traffic"] == 7.0


def test_a_chained_source_is_its_components():
    """The fork-join's source is chained into A: the vertex ``Source: A-kafka -> A``."""
    place = {"vertices": {"v1": {"name": "Source: A-kafka -> A", "component": "A",
                                 "parallelism": 1}}}
    reps = {"tm0": {"tasks": {"v1:0": {"vertex": "v1", "pendingRecords": 12}}}}
    assert source_pending(reps, place) == {"A": 12.0}


def test_window_figures_of_a_flink_window():
    """60 s: the trucks' topic grows by 15,000 records (250/s) and its backlog by 9,000
    (150/s); the traffic's by 15,000 and its backlog stays."""
    start = source_view(_ends((5_000, 5_000), (5_000, 5_000)),
                        source_pending(_reports((500, 500), (100, 100)), PLACE), TOPICS)
    end = source_view(_ends((12_500, 12_500), (12_500, 12_500)),
                      source_pending(_reports((5_000, 5_000), (100, 100)), PLACE), TOPICS)
    assert set(start) == {"trucks-4/*", "traffic-4/*"}
    f = window_figures({"sources_start": start, "sources_end": end, "stores": {}}, 60.0,
                       "at-most-once")
    assert f["arrival_rps"] == pytest.approx({"trucks": 250.0, "traffic": 250.0})
    assert f["source_lag_start"] == {"trucks": 1_000.0, "traffic": 200.0}
    assert f["source_lag_growth_rps"] == pytest.approx({"trucks": 150.0, "traffic": 0.0})
    assert f["produced"] == {"trucks": 25_000.0, "traffic": 25_000.0}


def test_the_managed_job_reads_its_own_jobs_reports(tmp_path: Path):
    """:meth:`ManagedJob.pending` reads the receiver's snapshot, this job's reports only."""
    snap = tmp_path / "profile.json"
    flow = {k: v for k, v in _reports((10, 20), (1, 2)).items()}
    flow["other"] = {"engine": "flink", "topology": "another-job", "tm": "tm9", "tasks": {
        "v1:0": {"vertex": "v1", "pendingRecords": 10_000}}}
    snap.write_text(json.dumps({"time": 0.0, "flow": flow}))
    mj = ManagedJob.__new__(ManagedJob)  # no testbed: only what pending() reads
    mj.snapshot, mj.job, mj.place = snap, "job", PLACE
    assert mj.pending() == {"trucks": 30.0, "traffic": 3.0}
