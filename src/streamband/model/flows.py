"""FlowMap: every instance pair that exchanges tuples is a flow (000 §II-C), internal
when both instances share a host, external otherwise, with the links it crosses.

Grouping shares follow 000 §II-A3: shuffle splits evenly, fields splits by the key
distribution hashed onto the instances, global sends everything to instance 0,
all copies every tuple to every instance, local-or-shuffle prefers instances on
the sender's host.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from streamband.model.app import App, Edge, instance_id
from streamband.model.routing import Router, routing_matrix, stable_hash
from streamband.model.topology import Topology


@dataclass(frozen=True)
class Flow:
    """A uni-directional transfer from one instance to another."""

    index: int
    src: str  # instance id, e.g. "A[0]"
    dst: str
    edge: int  # index into app.edges
    share: float  # fraction of the sender's output on this edge that goes to dst
    tuple_bytes: float
    src_host: str
    dst_host: str
    links: tuple[int, ...]

    @property
    def id(self) -> str:
        return f"{self.src}->{self.dst}"

    @property
    def internal(self) -> bool:
        return not self.links


def key_shares(edge: Edge, parallelism: int) -> np.ndarray:
    """Share of a fields grouping's tuples that each of ``parallelism`` instances gets."""
    dist = edge.keys
    if dist is None:
        return np.full(parallelism, 1.0 / parallelism)
    ranks = np.arange(1, dist.keys + 1, dtype=float)
    freq = ranks ** -dist.s if dist.kind == "zipf" else np.ones_like(ranks)
    freq /= freq.sum()
    target = np.fromiter(
        (stable_hash(k, f"{edge.src}->{edge.dst}") % parallelism for k in range(dist.keys)),
        np.int64,
        dist.keys,
    )
    return np.bincount(target, weights=freq, minlength=parallelism)


def edge_shares(
    app: App, edge: Edge, src_index: int, placement: dict[str, str]
) -> dict[int, float]:
    """Downstream instance index -> share of ``src_index``'s tuples on ``edge``."""
    p = app.op(edge.dst).parallelism
    g = edge.grouping
    if g == "shuffle":
        return {j: 1.0 / p for j in range(p)}
    if g == "fields":
        return {j: float(s) for j, s in enumerate(key_shares(edge, p)) if s > 0}
    if g == "global":
        return {0: 1.0}
    if g == "all":
        return {j: 1.0 for j in range(p)}
    here = placement[instance_id(edge.src, src_index)]
    local = [j for j in range(p) if placement[instance_id(edge.dst, j)] == here]
    chosen = local or list(range(p))
    return {j: 1.0 / len(chosen) for j in chosen}


class FlowMap:
    """Flows of an application placed on a topology, with their paths."""

    def __init__(
        self,
        app: App,
        topo: Topology,
        placement: dict[str, str],
        routing: str = "ecmp",
        shares: dict[int, np.ndarray] | None = None,
    ) -> None:
        """``shares`` overrides the grouping of some edges: edge index -> a matrix
        (sender instances x receiver instances) of shares, e.g. from a locality-aware
        routing table (003)."""
        self.app = app
        self.topo = topo
        self.placement = placement
        specs = []
        for ei, e in enumerate(app.edges):
            for i in range(app.op(e.src).parallelism):
                if shares is not None and ei in shares:
                    row = {j: float(v) for j, v in enumerate(shares[ei][i]) if v > 0}
                else:
                    row = edge_shares(app, e, i, placement)
                for j, share in sorted(row.items()):
                    specs.append((ei, instance_id(e.src, i), instance_id(e.dst, j), share))
        router = Router(topo, routing)
        pairs = [(placement[s], placement[d]) for _, s, d, _ in specs]
        paths = router.paths(pairs, [f"{s}->{d}" for _, s, d, _ in specs])
        self.flows = [
            Flow(k, s, d, ei, share, app.edges[ei].tuple_bytes, h1, h2, tuple(path))
            for k, ((ei, s, d, share), (h1, h2), path) in enumerate(
                zip(specs, pairs, paths, strict=True)
            )
        ]

    def __len__(self) -> int:
        return len(self.flows)

    @cached_property
    def routing(self) -> sp.csr_matrix:
        """R (flows x links), 000 eq. (1a)."""
        return routing_matrix([f.links for f in self.flows], len(self.topo.links))

    @cached_property
    def external(self) -> np.ndarray:
        return np.array([not f.internal for f in self.flows], bool)

    def nominal_rates(self) -> np.ndarray:
        """Tuples/s on every flow when every operator keeps up with its input."""
        app = self.app
        out_rate: dict[str, float] = {}
        inflow: dict[str, dict[str, float]] = {}
        by_src: dict[str, list[Flow]] = {}
        for f in self.flows:
            by_src.setdefault(f.src, []).append(f)
        rates = np.zeros(len(self.flows))
        for name in app.order():
            op = app.op(name)
            for i in range(op.parallelism):
                iid = instance_id(name, i)
                ins = inflow.get(iid, {})
                total = sum(ins.values())
                if op.kind == "source":
                    r = (op.rate_tps or 0.0) / op.parallelism
                elif op.kind == "map":
                    r = op.selectivity * total
                elif op.kind == "join":
                    if op.join_mode == "latest":
                        r = ins.get(op.primary or "", 0.0)
                    else:
                        r = min(ins.values()) if ins else 0.0
                elif op.kind == "window":
                    r = op.emit / op.window_s if op.window_s else total / (op.window_count or 1)
                else:
                    r = 0.0
                out_rate[iid] = r
                for f in by_src.get(iid, []):
                    rates[f.index] = r * f.share
                    d = inflow.setdefault(f.dst, {})
                    d[name] = d.get(name, 0.0) + rates[f.index]
        return rates
