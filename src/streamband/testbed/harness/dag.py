"""The traffic a harness run carries: operators placed on hosts and the edges
(flows) between them, with tuple sizes. A traffic harness, not a stream engine:
sources emit at a fixed rate (open loop), relays forward one tuple per input,
joins match tuples by id across all their inputs (001's join at D).

Builders: :func:`fork_join` (001 Fig. 1: A -> B, A -> C, B -> D, C -> D with 8/4/6/3
KB tuples) and :func:`trucking_iot` (000 §VI-B: truck geo events and traffic speed
events joined by route, then scored).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

KB = 1024


@dataclass
class Operator:
    name: str
    kind: Literal["source", "relay", "join"]
    host: str
    rate_tps: float = 0.0  # sources only


@dataclass
class Edge:
    """One flow: every tuple of ``src`` goes to ``dst`` as ``tuple_bytes`` bytes
    over its own TCP connection (to ``port`` on ``dst``'s host) when remote."""

    id: int
    src: str
    dst: str
    tuple_bytes: int
    port: int = 0


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


FORK_JOIN_PLACEMENTS = {
    # 001 §IV: the three placements of {A, B, C, D} on two machines
    "TP1": ({"A", "B"}, {"C", "D"}),
    "TP2": ({"A", "C"}, {"B", "D"}),
    "TP3": ({"A", "D"}, {"B", "C"}),
}


def fork_join(placement: str, hosts: tuple[str, str] = ("S1", "S2"),
              rate_tps: float = 500.0) -> Dag:
    """001's fork-join: A -> B (8 KB), A -> C (4 KB), B -> D (6 KB), C -> D (3 KB),
    D joins B's and C's tuples 1:1 by id; ``placement`` is TP1, TP2 or TP3."""
    try:
        first, _ = FORK_JOIN_PLACEMENTS[placement]
    except KeyError:
        raise ValueError(f"placement: expected TP1, TP2 or TP3, got {placement!r}") from None

    def host(op: str) -> str:
        return hosts[0] if op in first else hosts[1]

    ops = [Operator("A", "source", host("A"), rate_tps), Operator("B", "relay", host("B")),
           Operator("C", "relay", host("C")), Operator("D", "join", host("D"))]
    edges = [Edge(0, "A", "B", 8 * KB), Edge(1, "A", "C", 4 * KB), Edge(2, "B", "D", 6 * KB),
             Edge(3, "C", "D", 3 * KB)]
    return Dag(ops, edges)


def trucking_iot(hosts: tuple[str, str, str] = ("w1", "w2", "w3"),
                 rate_tps: float = 200.0) -> Dag:
    """000 §VI-B's Trucking IoT pattern: geo events (G) and speed events (S) from
    two sources, joined by route (J), then scored (R); tuple sizes are small JSON
    events (geo 1 KB, speed 0.5 KB, joined 1.5 KB)."""
    ops = [Operator("G", "source", hosts[0], rate_tps),
           Operator("S", "source", hosts[1], rate_tps),
           Operator("J", "join", hosts[2]), Operator("R", "relay", hosts[0])]
    edges = [Edge(0, "G", "J", 1 * KB), Edge(1, "S", "J", KB // 2),
             Edge(2, "J", "R", 3 * KB // 2)]
    return Dag(ops, edges)
