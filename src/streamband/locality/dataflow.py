"""The shape of a keyed stream application as the protocol sees it (003 §2.1, §3.1).

Operators with a parallelism; sources have no input key, keyed operators receive
tuples by a fields grouping on ``key_field`` of the tuple. Edges form a DAG; every
edge into a keyed operator is a fields grouping routed by that operator's table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from streamband.model.app import App, instance_id


@dataclass(frozen=True)
class OpSpec:
    name: str
    parallelism: int
    key_field: int | None = None  # None: a source (no input key, stateless)

    @property
    def keyed(self) -> bool:
        return self.key_field is not None


@dataclass
class Dataflow:
    ops: list[OpSpec]
    edges: list[tuple[str, str]]
    _by_name: dict[str, OpSpec] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_name = {o.name: o for o in self.ops}
        g = nx.DiGraph(self.edges)
        g.add_nodes_from(self._by_name)
        if not nx.is_directed_acyclic_graph(g):
            raise ValueError("dataflow: edges must form a DAG")
        for s, d in self.edges:
            if s not in self._by_name or d not in self._by_name:
                raise ValueError(f"dataflow: edge {s}->{d} names an unknown operator")
            if not self._by_name[d].keyed:
                raise ValueError(f"dataflow: edge {s}->{d}: {d} needs a key_field")
        self._order = list(nx.topological_sort(g))

    def op(self, name: str) -> OpSpec:
        return self._by_name[name]

    def order(self) -> list[str]:
        return list(self._order)

    def successors(self, op: str) -> list[str]:
        return [d for s, d in self.edges if s == op]

    def predecessors(self, op: str) -> list[str]:
        return [s for s, d in self.edges if d == op]

    def instances(self, op: str | None = None) -> list[str]:
        ops = [self.op(op)] if op else [self.op(n) for n in self._order]
        return [instance_id(o.name, i) for o in ops for i in range(o.parallelism)]

    def keyed_pairs(self) -> list[tuple[str, str]]:
        """Consecutive keyed operators X -> Y: the bipartite graphs of 003 §3.3."""
        return [(s, d) for s, d in self.edges if self.op(s).keyed and self.op(d).keyed]

    def to_json(self) -> dict:
        """The shape the Java instances read: operators in topological order."""
        return {"ops": [[o, self.op(o).parallelism, self.op(o).key_field] for o in self._order],
                "edges": [list(e) for e in self.edges]}

    @classmethod
    def from_json(cls, d: dict) -> Dataflow:
        return cls([OpSpec(n, int(p), None if k is None else int(k)) for n, p, k in d["ops"]],
                   [(s, t) for s, t in d["edges"]])

    @classmethod
    def from_app(cls, app: App, key_fields: dict[str, int]) -> Dataflow:
        """The dataflow of a model ``App``: ``key_fields[op]`` for its fields-grouped ops."""
        ops = [OpSpec(o.name, o.parallelism, key_fields.get(o.name)) for o in app.operators]
        return cls(ops, [(e.src, e.dst) for e in app.edges])
