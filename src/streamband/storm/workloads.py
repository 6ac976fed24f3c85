"""The benchmark topologies of ``storm/`` (``streamband.storm.topo``) as the runs see
them: which topology runs a spec's application, the Storm component of each spec
operator, the ``bench.*`` settings taken from the spec, and the factor from the sinks'
count to the spec's throughput unit. One record per topology (:class:`Workload`),
one registry (:data:`WORKLOADS`).

001's fork-join is :func:`fork_join`, placed as the ``paper-001`` spec's TP1-TP3 by
:func:`fork_join_placement`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from streamband.model.app import App
from streamband.model.spec import load_spec


@dataclass(frozen=True)
class Workload:
    """How the Storm topology of ``storm/`` runs a spec's application: its main class,
    the Storm component of each spec operator, the ``bench.*`` settings taken from the
    spec (rates, parallelism, tuple sizes) and the factor from the sink's count to the
    spec's throughput unit."""

    main: str
    components: dict[str, str]
    settings: Callable[[App], dict[str, Any]]
    per_sink_count: Callable[[App], float] = lambda app: 1.0
    #: Kafka-fed (``bench.source: kafka``): the spout component that reads each of the
    #: benchmark's topics (``bench.topic.COMPONENT`` renames the topic)
    kafka_spouts: dict[str, str] = field(default_factory=dict)
    #: a Kafka spout placed with the component it feeds (component -> that component)
    placed_with: dict[str, str] = field(default_factory=dict)

    def edges(self, app: App) -> tuple[tuple[str, str], ...]:
        """The topology's edges (component pairs), in ``app``'s edge order."""
        return tuple((self.components[e.src], self.components[e.dst]) for e in app.edges)

    def tuple_bytes(self, app: App) -> tuple[int, ...]:
        """Bytes per tuple of each edge of :meth:`edges`."""
        return tuple(int(e.tuple_bytes) for e in app.edges)

    def edge_bytes(self, app: App) -> dict[str, int]:
        """``'SRC->DST'`` (components) -> bytes per tuple, as ``cluster.yaml``'s
        ``tuple_bytes`` takes them."""
        return {f"{a}->{b}": n for (a, b), n in zip(self.edges(app), self.tuple_bytes(app),
                                                     strict=True)}


def _parallelism(app: App, components: dict[str, str]) -> dict[str, Any]:
    return {f"bench.parallelism.{components[o.name]}": o.parallelism for o in app.operators}


def _edge_bytes(app: App, src: str, dst: str) -> int:
    return int(next(e.tuple_bytes for e in app.edges if e.src == src and e.dst == dst))


def _fork_join(app: App) -> dict[str, Any]:
    return {"bench.rate": app.op("A").rate_tps,
            **{f"bench.bytes.{a}{b}": _edge_bytes(app, a, b)
               for a, b in (("A", "B"), ("A", "C"), ("B", "D"), ("C", "D"))}}


def _trending_topics(app: App) -> dict[str, Any]:
    from streamband.storm.words import english_words

    wct = app.op("wct")
    return {"bench.rate": app.op("spout").rate_tps, "bench.k": wct.window_count or 5,
            "bench.window.s": app.op("aggregator").window_s or 30.0,
            "bench.words": english_words(5000),
            "bench.words.per.tweet": round(app.op("split").selectivity),
            **{f"bench.bytes.{kind}": _edge_bytes(app, a, b)
               for kind, (a, b) in {"tweet": ("spout", "split"), "word": ("split", "wct"),
                                    "partial": ("wct", "aggregator"),
                                    "ranking": ("aggregator", "report")}.items()},
            **_parallelism(app, WORKLOADS["trending-topics"].components)}


def _trucking_iot(app: App) -> dict[str, Any]:
    return {"bench.rate": app.op("truck").rate_tps,
            "bench.bytes.truck": _edge_bytes(app, "truck", "combiner"),
            "bench.bytes.traffic": _edge_bytes(app, "traffic", "combiner"),
            "bench.bytes.joined": _edge_bytes(app, "combiner", "dashboard"),
            "bench.grouping.traffic": next(e.grouping for e in app.edges
                                           if e.src == "traffic" and e.dst == "combiner"),
            **_parallelism(app, WORKLOADS["trucking-iot"].components)}


#: spec application name -> the Storm topology that runs it (storm/.../topo)
WORKLOADS: dict[str, Workload] = {
    "fork-join": Workload("streamband.storm.topo.ForkJoin",
                          {"A": "A", "B": "B", "C": "C", "D": "D"}, _fork_join,
                          kafka_spouts={"forkjoin": "kafka-A"}, placed_with={"kafka-A": "A"}),
    # the sink counts the words the rankings cover; a partial covers window_count words
    "trending-topics": Workload(
        "streamband.storm.topo.TrendingTopics",
        {"spout": "tweets", "split": "split", "wct": "count", "aggregator": "topk",
         "report": "report"}, _trending_topics,
        lambda app: 1.0 / (app.op("wct").window_count or 5), kafka_spouts={"tweets": "tweets"}),
    "trucking-iot": Workload(
        "streamband.storm.topo.TruckingIoT",
        {"truck": "trucks", "traffic": "traffic", "combiner": "combine",
         "dashboard": "score"}, _trucking_iot,
        kafka_spouts={"trucks": "trucks", "traffic": "traffic"}),
}


def scale_tuples(app: App, scale: float) -> App:
    """``app`` with ``1/scale`` of its sources' tuples, each ``scale`` times the bytes:
    every stream carries the spec's bytes per second (the network sees the spec's load)
    with ``1/scale`` of the tuples, and so of the per-tuple CPU, to process.

    Examples
    --------
    >>> from streamband.model.spec import load_spec
    >>> app = load_spec("paper-001").app
    >>> scaled = scale_tuples(app, 10)
    >>> scaled.op("A").rate_tps, app.op("A").rate_tps
    (50.0, 500.0)
    >>> scaled.edges[0].tuple_bytes / app.edges[0].tuple_bytes
    10.0
    """
    if scale == 1:
        return app
    ops = [o.model_copy(update={"rate_tps": o.rate_tps / scale}) if o.rate_tps else o
           for o in app.operators]
    edges = [e.model_copy(update={"tuple_bytes": e.tuple_bytes * scale}) for e in app.edges]
    return app.model_copy(update={"operators": ops, "edges": edges})




def fork_join_placement(tp: str, ips: tuple[str, str]) -> dict[str, list[str]]:
    """The scheduler's placement (component -> hosts) of 001's placement ``tp`` (TP1-TP3
    of the ``paper-001`` spec, {A, B, C, D} on hosts S1, S2), S1 at ``ips[0]``, S2 at
    ``ips[1]``."""
    placements = load_spec("paper-001").placements
    if tp not in placements:
        raise ValueError(f"placement: expected one of {', '.join(placements)}, got {tp!r}")
    hosts = {"S1": ips[0], "S2": ips[1]}
    return {c: [hosts[h]] for c, h in (placements[tp].map or {}).items()}


def fork_join() -> tuple[Workload, App]:
    """001's fork-join as Storm runs it: the topology and the application of the
    ``paper-001`` spec (8 / 4 / 6 / 3 KB tuples on A->B, A->C, B->D, C->D)."""
    return WORKLOADS["fork-join"], load_spec("paper-001").app
