"""The traffic a harness run carries: operator instances placed on hosts and the
flows between them, with tuple sizes. A traffic harness, not a stream engine:
sources emit at a fixed rate (open loop), relays forward one tuple per input,
joins match tuples by id across all their input operators (001's join at D) or, in
``latest`` mode, join each tuple of the primary input with the latest record of the
others (000's Trucking IoT combiner).

A run's DAG is derived from the same :class:`~streamband.model.app.App` and placement
as the simulator's (:meth:`Dag.from_flowmap`): one harness operator per instance, one
edge per flow of the :class:`~streamband.model.flows.FlowMap`, in its order.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from streamband.errors import SpecError

if TYPE_CHECKING:
    from streamband.model.flows import FlowMap


@dataclass
class Operator:
    """One instance: ``source`` (open loop at ``rate_tps``), ``relay`` (one tuple out
    per tuple in) or ``join`` (``mode`` ``all``: by id across every input operator;
    ``latest``: each ``primary`` tuple with the latest record of the others).
    ``measured``: its completions are the run's throughput and latency."""

    name: str
    kind: Literal["source", "relay", "join"]
    host: str
    rate_tps: float = 0.0  # sources only
    mode: Literal["all", "latest"] = "all"
    primary: str = ""  # latest-mode joins: the input operator whose tuples are joined
    measured: bool = False
    index: int = 0  # instance index within its operator (source ids interleave by it)
    parallelism: int = 1


@dataclass
class Edge:
    """One flow: ``share`` of ``src``'s tuples go to ``dst`` as ``tuple_bytes`` bytes
    over its own TCP connection (to ``port`` on ``dst``'s host) when remote.

    The edges from one instance to one downstream operator form a group: under the
    ``all`` grouping every tuple goes on every edge of the group; otherwise each tuple
    goes on one edge, chosen from the tuple id by the edges' shares (the same choice
    on every input of a join)."""

    id: int
    src: str
    dst: str
    tuple_bytes: int
    port: int = 0
    grouping: str = "all"
    share: float = 1.0


@dataclass
class Dag:
    operators: list[Operator]
    edges: list[Edge]
    ips: dict[str, str] = field(default_factory=dict)  # host -> IP
    seconds: float = 20.0
    warmup_s: float = 5.0
    # sender queue bound per flow (tuples); a full queue drops. Large by default:
    # the backlog grows as in 001's model, and the join matches ids in order
    queue_tuples: int = 1_000_000
    join_timeout_s: float = 0.0  # 0: unmatched tuples wait forever
    base_port: int = 6100

    def __post_init__(self) -> None:
        names = {o.name for o in self.operators}
        for e in self.edges:
            for end in (e.src, e.dst):
                if end not in names:
                    raise ValueError(f"edge {e.id}: unknown operator {end!r}")
            if not e.port:
                e.port = self.base_port + e.id

    def op(self, name: str) -> Operator:
        return next(o for o in self.operators if o.name == name)

    def remote(self, e: Edge) -> bool:
        return self.op(e.src).host != self.op(e.dst).host

    def remote_edges(self) -> list[Edge]:
        """The flows the network carries (the manager's flows, in this order)."""
        return [e for e in self.edges if self.remote(e)]

    @classmethod
    def from_flowmap(cls, fm: FlowMap, rate_scale: float = 1.0) -> Dag:
        """The harness DAG of ``fm``'s application as placed there: operator instances
        on their hosts, edge ``i`` = flow ``i``. Sources emit ``rate_scale`` x their rate.

        Raises
        ------
        SpecError
            For an operator the harness cannot run: a window, or a map whose
            selectivity is not 1.
        """
        app = fm.app
        measured = set(app.measured())
        ops = []
        kinds = {"source": "source", "map": "relay", "sink": "relay", "join": "join"}
        for o in app.operators:
            if o.kind == "window" or (o.kind == "map" and o.selectivity != 1.0):
                what = o.kind if o.kind == "window" else f"map, selectivity {o.selectivity:g}"
                raise SpecError(f"app {app.name}: operator {o.name} ({what}): the traffic "
                                f"harness runs sources, maps of selectivity 1, joins and sinks")
            for i in range(o.parallelism):
                iid = f"{o.name}[{i}]"
                ops.append(Operator(
                    iid, kinds[o.kind], fm.placement[iid],  # type: ignore[arg-type]
                    rate_tps=rate_scale * (o.rate_tps or 0.0) / o.parallelism,
                    mode=o.join_mode, primary=o.primary or "", measured=o.name in measured,
                    index=i, parallelism=o.parallelism))
        edges = [Edge(f.index, f.src, f.dst, int(round(f.tuple_bytes)),
                      grouping=app.edges[f.edge].grouping, share=f.share) for f in fm.flows]
        return cls(ops, edges)

    def hosts(self) -> list[str]:
        return sorted({o.host for o in self.operators})

    def flow_key(self, e: Edge) -> dict[str, object]:
        """The enforcer's key of a remote edge: IP pair and the receiver's port."""
        return {"src_ip": self.ips[self.op(e.src).host], "dst_ip": self.ips[self.op(e.dst).host],
                "proto": "tcp", "dst_port": e.port}

    def dump(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self)))

    @classmethod
    def load(cls, path: Path) -> Dag:
        d = json.loads(Path(path).read_text())
        d["operators"] = [Operator(**o) for o in d["operators"]]
        d["edges"] = [Edge(**e) for e in d["edges"]]
        return cls(**d)
