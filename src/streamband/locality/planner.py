"""From the instances' statistics to new routing tables (003 §3.3).

The manager merges the key counts and key-pair counts of all instances of each
keyed operator, builds the key graph, partitions it with METIS into the servers and
turns the parts into one routing table per keyed operator.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from streamband.locality.dataflow import Dataflow
from streamband.locality.keygraph import KeyGraph, build_keygraph
from streamband.locality.partition import DEFAULT_ALPHA, Partition, partition_keygraph
from streamband.locality.routing_table import RoutingTable, tables_from_partition
from streamband.model.app import split_instance


def keygraph_from_metrics(flow: Dataflow, metrics: Mapping[str, dict]) -> KeyGraph:
    """Merge ② of every instance into the key graph of 003 Fig. 5."""
    keys: dict[str, tuple[list, list]] = {}
    pairs: dict[tuple[str, str], tuple[list, list, list]] = {}
    for iid, m in metrics.items():
        op, _ = split_instance(iid)
        if not flow.op(op).keyed:
            continue
        ks, cs = keys.setdefault(op, ([], []))
        for k, c in m["keys"]:
            ks.append(k)
            cs.append(c)
        for succ, plist in m["pairs"].items():
            a, b, c = pairs.setdefault((op, succ), ([], [], []))
            for x, y, n in plist:
                a.append(x)
                b.append(y)
                c.append(n)
    for op in flow.order():
        if flow.op(op).keyed:
            keys.setdefault(op, ([], []))
    as_arr = {op: (_obj(k), np.asarray(c, np.int64)) for op, (k, c) in keys.items()}
    as_pairs = {e: (_obj(a), _obj(b), np.asarray(c, np.int64)) for e, (a, b, c) in pairs.items()}
    return build_keygraph(as_arr, as_pairs)


def _obj(xs: list) -> np.ndarray:
    out = np.empty(len(xs), object)
    out[:] = xs
    return out


@dataclass
class MetisPlanner:
    """The default planner: METIS on the key graph, instance i of an op on server i."""

    flow: Dataflow
    servers: int
    alpha: float = DEFAULT_ALPHA
    seed: int = 0
    last: Partition | None = None

    def instance_hosts(self) -> dict[str, list[str]]:
        return {o.name: [f"h{i % self.servers}" for i in range(o.parallelism)]
                for o in self.flow.ops}

    def __call__(self, metrics: Mapping[str, dict],
                 current: Mapping[str, RoutingTable]) -> dict[str, RoutingTable]:
        g = keygraph_from_metrics(self.flow, metrics)
        part = partition_keygraph(g, self.servers, self.alpha, self.seed)
        self.last = part
        par = {o.name: o.parallelism for o in self.flow.ops}
        tables = tables_from_partition(part, par, self.instance_hosts(),
                                       [f"h{p}" for p in range(self.servers)])
        for op in self.flow.order():  # keyed operators without statistics: hash
            if self.flow.op(op).keyed and op not in tables:
                tables[op] = RoutingTable(op, par[op])
        return tables
