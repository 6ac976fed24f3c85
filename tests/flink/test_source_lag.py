"""A Flink window's Kafka figures without a cluster: the source tasks' ``pendingRecords`` per
component, from the TaskManagers' reports as the receiver's snapshot holds them."""

from __future__ import annotations

import math

from streamband.flink.profiler import source_pending

#: Trucking IoT as the REST API places it: two sources of two subtasks each, the combiner
PLACE = {"vertices": {
    "v1": {"name": "Source: trucks-kafka", "component": "trucks", "parallelism": 2},
    "v2": {"name": "Source: traffic-kafka", "component": "traffic", "parallelism": 2},
    "v3": {"name": "combine", "component": "combine", "parallelism": 2}}}


def _reports(trucks: tuple[int, int], traffic: tuple[int, int]) -> dict[str, dict]:
    """Two TaskManagers, each with one subtask of every vertex; the combiner reports no
    ``pendingRecords`` (it is no source)."""
    return {f"tm{k}": {"engine": "flink", "topology": "job", "tm": f"tm{k}", "tasks": {
        f"v1:{k}": {"vertex": "v1", "pendingRecords": trucks[k], "numRecordsOut": 10},
        f"v2:{k}": {"vertex": "v2", "pendingRecords": traffic[k]},
        f"v3:{k}": {"vertex": "v3", "numRecordsIn": 5}}} for k in (0, 1)}


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
