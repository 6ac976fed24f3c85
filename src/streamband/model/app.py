"""Stream applications as DAGs of operators (000 §II-A2, §II-A3).

An operator has a kind and a parallelism (its instances); an edge carries tuples
of a fixed size under a grouping policy. Kinds:

- ``source``: emits ``rate_tps`` tuples/s per operator (open loop; split over instances);
- ``map``: 1:1 operator, ``selectivity`` output tuples per input tuple (several inputs = union);
- ``join``: m:1 operator aligned on event time; ``join_mode="all"`` emits one tuple per
  tuple of every input (001's frame/logo join), ``"latest"`` joins each tuple of the
  ``primary`` input with the latest record of the others (Trucking IoT combiner);
- ``window``: aggregates and emits ``emit`` tuples every ``window_s`` seconds (time
  window, aligned on event time) or every ``window_count`` arrivals (count window);
- ``sink``: consumes tuples.
"""

from __future__ import annotations

from typing import Literal

import networkx as nx
from pydantic import ConfigDict, Field, model_validator

from streamband.model.numbers import Numbers

#: the largest source rate, tuples/s: a whole cluster's order of magnitude (a spec asking
#: more runs, and reports throughput nobody can believe)
MAX_RATE_TPS = 1e9
#: the largest tuple, bytes (1 GiB: past any engine's message size)
MAX_TUPLE_BYTES = float(2**30)

OperatorKind = Literal["source", "map", "join", "window", "sink"]
GroupingKind = Literal["shuffle", "fields", "global", "all", "local_or_shuffle"]


class _Strict(Numbers):
    model_config = ConfigDict(extra="forbid")


class KeyDistribution(_Strict):
    """Key frequencies of a fields grouping: uniform or Zipf(s) over ``keys`` keys."""

    kind: Literal["uniform", "zipf"] = Field("uniform", description="uniform or Zipf(s)")
    keys: int = Field(1000, ge=1, le=10_000_000, description="number of distinct keys")
    s: float = Field(1.0, ge=0, le=100, allow_inf_nan=False, description="Zipf exponent")


class Operator(_Strict):
    """An operator of the DAG and its instances (kind-specific fields as noted)."""

    name: str = Field(min_length=1, description="the operator's name")
    kind: OperatorKind = Field(description="source, map, join, window or sink")
    parallelism: int = Field(1, ge=1, le=10_000, description="number of instances")
    rate_tps: float | None = Field(None, gt=0, le=MAX_RATE_TPS, allow_inf_nan=False,
                                   description="source: tuples/s emitted by all its instances")
    selectivity: float = Field(1.0, ge=0, le=10_000, allow_inf_nan=False,
                               description="map: output tuples per input tuple")
    join_mode: Literal["all", "latest"] = Field(
        "all", description="join: 'all' (one tuple of every input) or 'latest' (each primary "
        "tuple with the latest record of the others)")
    primary: str | None = Field(None, description="latest-mode join: the primary input operator")
    window_s: float | None = Field(None, gt=0, le=86_400, allow_inf_nan=False,
                                   description="time window: seconds of event time per firing")
    window_count: int | None = Field(None, ge=1, le=10**9,
                                     description="count window: arrivals per firing")
    emit: int = Field(1, ge=1, le=10**6, description="window: tuples emitted per firing")

    @model_validator(mode="after")
    def _kind_fields(self) -> Operator:
        if self.kind == "source" and self.rate_tps is None:
            raise ValueError(f"operator {self.name}: a source needs rate_tps > 0")
        if self.kind == "window" and (self.window_s is None) == (self.window_count is None):
            raise ValueError(f"operator {self.name}: a window needs window_s or window_count")
        return self


class Edge(_Strict):
    """A stream between two operators: tuples of a fixed size under a grouping."""

    src: str = Field(description="the sending operator")
    dst: str = Field(description="the receiving operator")
    grouping: GroupingKind = Field("shuffle", description="shuffle, fields, global, all or "
                                   "local_or_shuffle (000 §II-A3)")
    tuple_bytes: float = Field(gt=0, le=MAX_TUPLE_BYTES, allow_inf_nan=False,
                               description="bytes per tuple")
    keys: KeyDistribution | None = Field(None, description="fields grouping: the key "
                                         "distribution (default uniform)")


class App(_Strict):
    """A validated application DAG."""

    name: str = Field(min_length=1, description="the application's name")
    operators: list[Operator] = Field(min_length=1)
    edges: list[Edge]
    throughput_at: list[str] | None = Field(
        None, description="operators whose processed tuples/s is the app throughput "
        "(default: the operators without outgoing edges)"
    )
    notes: str = Field("", description="what the spec chose and why (shown in the report)")

    @model_validator(mode="after")
    def _dag(self) -> App:
        names = [o.name for o in self.operators]
        if len(set(names)) != len(names):
            raise ValueError("operators: names must be distinct")
        known = set(names)
        for i, e in enumerate(self.edges):
            for end in ("src", "dst"):
                if getattr(e, end) not in known:
                    raise ValueError(
                        f"edges[{i}].{end}: unknown operator {getattr(e, end)!r}, "
                        f"expected one of {sorted(known)}"
                    )
        g = self.graph()
        if not nx.is_directed_acyclic_graph(g):
            cycle = " -> ".join(a for a, _ in nx.find_cycle(g))
            raise ValueError(f"edges: the application graph has a cycle ({cycle}); expected a DAG")
        for op in self.operators:
            ins = list(g.predecessors(op.name))
            if op.kind == "source" and ins:
                raise ValueError(f"operator {op.name}: a source cannot have inputs")
            if op.kind != "source" and not ins:
                raise ValueError(f"operator {op.name}: a {op.kind} needs at least one input")
            if op.kind == "join" and len(ins) < 2:
                raise ValueError(f"operator {op.name}: a join needs two or more inputs")
            if op.kind == "join" and op.join_mode == "latest" and op.primary not in ins:
                raise ValueError(
                    f"operator {op.name}.primary: expected one of its inputs {ins}, "
                    f"got {op.primary!r}"
                )
        for name in self.throughput_at or []:
            if name not in known:
                raise ValueError(f"throughput_at: unknown operator {name!r}")
        return self

    def graph(self) -> nx.DiGraph:
        g = nx.DiGraph()
        g.add_nodes_from(o.name for o in self.operators)
        g.add_edges_from((e.src, e.dst) for e in self.edges)
        return g

    def op(self, name: str) -> Operator:
        return next(o for o in self.operators if o.name == name)

    def order(self) -> list[str]:
        """Operators in a topological order that keeps the declared order on ties."""
        pos = {o.name: i for i, o in enumerate(self.operators)}
        return list(nx.lexicographical_topological_sort(self.graph(), key=pos.__getitem__))

    def measured(self) -> list[str]:
        if self.throughput_at:
            return list(self.throughput_at)
        outs = {e.src for e in self.edges}
        return [o.name for o in self.operators if o.name not in outs]

    def instances(self) -> list[str]:
        """Instance ids ``op[i]`` in declared operator order (000 §II-A4)."""
        return [f"{o.name}[{i}]" for o in self.operators for i in range(o.parallelism)]


def instance_id(op: str, index: int) -> str:
    return f"{op}[{index}]"


def split_instance(iid: str) -> tuple[str, int]:
    op, _, rest = iid.rpartition("[")
    return op, int(rest.rstrip("]"))
