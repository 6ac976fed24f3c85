"""The profiler datagrams' format (000 §V-A2's application profiler, one format for every
engine): per report type, the fields the snapshot's readers walk into and the kinds they
must hold, so that a report the receiver keeps can be read. Storm's ``FlowReporter``
and benchmark tasks, Flink's reporter plug-in and the locality instances send it; the
receiver (:class:`~streamband.loop.reports.ProfileReceiver`) refuses, as ``malformed``,
a report whose shape differs (a string where a worker's port or a map is read, a list
where a store is). Fields not named here are free; a count the reporter did not know is
``null`` where a reader takes it as 0.

Examples
--------
>>> shape_error({"type": "flow", "topology": "t", "host": "10.0.0.2", "port": 6700,
...              "clients": {"10.0.0.3:6701": {"sent": 10, "pending": 0}}}) is None
True
>>> shape_error({"type": "flow", "topology": "t", "host": "10.0.0.2", "port": "x"})
'port'
>>> shape_error({"type": "flow", "topology": "t", "host": "h", "port": 1, "engine": "flink",
...              "tasks": {"v:0": {"stores": {"s": ["not a store"]}}}})
'tasks.v:0.stores.s'
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

from pydantic import Field, TypeAdapter, ValidationError

# pydantic reads field types only from typing_extensions' TypedDict before Python 3.12
from typing_extensions import TypedDict

#: a number (never a boolean: strict validation)
Num = float
#: a count or gauge the reporter may not know (null), read as 0
Count = float | None


class StoreInput(TypedDict, total=False):
    """One input of a join's own store (Storm's ``JoinStore``, Flink's ``Store``)."""

    tuples: Count
    bytes: Count
    lag_ms: Count
    watermark_ms: Count
    #: per sending task (Storm) or subtask (Flink), its latest event time (ms)
    tasks: dict[str, Count]


class Store(TypedDict, total=False):
    forced: Count
    inputs: dict[str, StoreInput]


class StormClient(TypedDict, total=False):
    """A Storm worker's Netty client to one destination worker."""

    sent: Num
    pending: Num


class TopicPartition(TypedDict, total=False):
    """A Kafka source's view of one topic/partition (Storm's spouts, Flink's sources)."""

    end: Count
    next: Count
    lag: Count
    lag_bytes: Count


class FlinkSubpartitions(TypedDict, total=False):
    """A producing task's result partition: per subpartition written, handed, queued."""

    ds: str
    sub: list[Annotated[list[Count], Field(min_length=3)]]


class FlinkChannel(TypedDict, total=False):
    """One input channel of a consuming task's gate; ``s``: the subpartitions it reads."""

    s: Annotated[list[int], Field(min_length=2, max_length=2)] | None
    queued_bytes: Count
    backlog: Count


class FlinkGate(TypedDict, total=False):
    ds: str
    ch: list[FlinkChannel]


#: a Flink task: its vertex, output partitions, input gates (``in``, a Python keyword,
#: hence the functional form), its source's backlog and its joins' stores
FlinkTask = TypedDict("FlinkTask", {
    "vertex": str, "out": list[FlinkSubpartitions], "in": list[FlinkGate],
    "pendingRecords": Count, "numRecordsOut": Count, "kafka": dict[str, TopicPartition],
    "stores": dict[str, Store]}, total=False)


class FlowReport(TypedDict):
    """A Storm worker's or a Flink TaskManager's report of its flows."""

    host: str
    port: int
    clients: NotRequired[dict[str, StormClient]]
    transfer_queue: NotRequired[Num]
    receive: NotRequired[dict[str, Num]]
    stores: NotRequired[dict[str, Store]]
    sources: NotRequired[dict[str, dict[str, TopicPartition]]]
    tasks: NotRequired[dict[str, FlinkTask]]


class LocalityReport(TypedDict):
    """A locality-aware instance's report (003): its id, epochs by number."""

    iid: str
    applied: NotRequired[Num]
    epochs: NotRequired[dict[Annotated[str, Field(pattern=r"^\d+$")], dict[str, Any]]]


#: per report type, the shape its readers need (spout and sink reports: flat counters,
#: read only where they are numbers)
SHAPES: dict[str, TypeAdapter[Any]] = {
    "flow": TypeAdapter(FlowReport),
    "locality": TypeAdapter(LocalityReport),
}


def shape_error(rec: dict[str, Any]) -> str | None:
    """The dotted place where report ``rec`` differs from its type's shape
    (:data:`SHAPES`), ``""`` for the report itself; None when it matches, or its type has
    no shape."""
    adapter = SHAPES.get(rec.get("type", ""))
    if adapter is None:
        return None
    try:
        adapter.validate_python(rec, strict=True)
    except ValidationError as exc:
        return ".".join(str(p) for p in exc.errors()[0]["loc"])
    return None
