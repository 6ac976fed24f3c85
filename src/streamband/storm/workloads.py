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

from streamband.errors import SpecError
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


#: the fan-in's join store bound, MB: a window's imbalance between a join's inputs fits in it
#: (bench appfair's largest, app4 under TCP: its 4-KB inputs 2 x 350 KB/s ahead, 26 MB in 75 s)
FAN_IN_STORE_MB = 64


def fan_in(app: App) -> Workload:
    """The Storm topology of a fan-in application (``FanIn`` in ``storm/``): sources that
    each feed one operator, a join of mode ``all`` (one tuple of every input per record
    number) or, for a single source, a sink; 000 §VII's competing applications (the
    ``appfair`` specs). Kafka-fed only: each source is a topic of its own (the source's
    rate, its edge's tuple size), read by a spout of the source's name. The join counts
    what it completes (it reports as the topology's sink), so the topology's flows are
    exactly the spec's source -> join edges.

    Raises
    ------
    SpecError
        If ``app`` is not a fan-in, or its join's sources emit at different rates (the
        join completes a record number once every input has delivered it).

    Examples
    --------
    >>> from streamband.model.spec import load_spec
    >>> app2 = load_spec("appfair").apps[1]
    >>> w = fan_in(app2)
    >>> w.main, w.kafka_spouts
    ('streamband.storm.topo.FanIn', {'a': 'a', 'b': 'b'})
    >>> w.settings(app2)["bench.fanin.sources"], w.settings(app2)["bench.fanin.join"]
    (['a', 'b'], 'join')
    """
    sources = [o for o in app.operators if o.kind == "source"]
    rest = [o for o in app.operators if o.kind != "source"]
    where = f"app {app.name!r}"
    if len(rest) != 1 or rest[0].kind not in ("join", "sink"):
        raise SpecError(f"{where}: a fan-in runs sources into one join or sink, got operators "
                        f"{', '.join(f'{o.name} ({o.kind})' for o in rest) or 'none'} besides "
                        "the sources")
    end = rest[0]
    if end.kind == "join" and end.join_mode != "all":
        raise SpecError(f"{where}: operator {end.name}: the fan-in's join takes one tuple of "
                        f"every input (join_mode all), got {end.join_mode!r}")
    if any(e.dst != end.name or e.src == end.name for e in app.edges) or \
            len(app.edges) != len(sources):
        raise SpecError(f"{where}: a fan-in has one edge from each source to {end.name}")
    rates = {float(o.rate_tps or 0.0) for o in sources}
    if end.kind == "join" and len(rates) > 1:
        raise SpecError(f"{where}: the join's sources emit {sorted(rates)} tuples/s; the join "
                        "completes a record number once every input has delivered it, so "
                        "they must emit at one rate")
    names = [o.name for o in app.operators]

    def settings(a: App) -> dict[str, Any]:
        conf: dict[str, Any] = {"bench.fanin.sources": [o.name for o in sources],
                                **_parallelism(a, {n: n for n in names})}
        if end.kind == "join":
            conf.update({"bench.fanin.join": end.name, "bench.store.max.mb": FAN_IN_STORE_MB})
        else:
            conf["bench.fanin.sink"] = end.name
        return conf

    return Workload("streamband.storm.topo.FanIn", {n: n for n in names}, settings,
                    kafka_spouts={o.name: o.name for o in sources})


def workload(app: App) -> Workload:
    """The topology that runs ``app``: the benchmark of its name (:data:`WORKLOADS`), else
    a fan-in built from its shape (:func:`fan_in`).

    Raises
    ------
    SpecError
        If neither runs it.
    """
    if app.name in WORKLOADS:
        return WORKLOADS[app.name]
    try:
        return fan_in(app)
    except SpecError as err:
        raise SpecError(f"{err}; the storm backend runs {', '.join(WORKLOADS)} and fan-in "
                        "applications") from None


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
