"""Routing tables for fields groupings with hash fallback (003 §3.3).

A table maps the keys of one keyed operator to the index of one of its instances;
a key that is not in the table is routed by a stable hash, the default fields
grouping. One table per *destination operator*, so that every keyed edge into the
operator agrees on where a key's state lives (DAGs with joins, 003 §6).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field

import numpy as np

from streamband.locality.partition import Partition
from streamband.model.routing import stable_hash


def hash_route(key: Hashable, op: str, parallelism: int) -> int:
    """Default fields grouping: a stable hash of the key, salted by the operator."""
    return stable_hash(key, op) % parallelism


@dataclass
class RoutingTable:
    """key -> instance index of operator ``op``; hash fallback for other keys."""

    op: str
    parallelism: int
    table: dict[Hashable, int] = field(default_factory=dict)

    def route(self, key: Hashable) -> int:
        i = self.table.get(key)
        return hash_route(key, self.op, self.parallelism) if i is None else i

    def route_many(self, keys: np.ndarray) -> np.ndarray:
        """Vectorised ``route`` (each distinct key looked up once)."""
        keys = np.asarray(keys)
        if keys.size == 0:
            return np.empty(0, np.int64)
        uniq, inv = np.unique(keys, return_inverse=True)
        dest = np.fromiter((self.route(k) for k in uniq.tolist()), np.int64, uniq.size)
        return dest[inv.ravel()]

    def owners_changed(self, other: RoutingTable) -> dict[Hashable, tuple[int, int]]:
        """Keys whose instance differs from ``self`` (old) to ``other`` (new): (old, new)."""
        out = {}
        for k in set(self.table) | set(other.table):
            a, b = self.route(k), other.route(k)
            if a != b:
                out[k] = (a, b)
        return out

    def to_json(self) -> dict:
        return {"op": self.op, "parallelism": self.parallelism,
                "table": [[k, v] for k, v in self.table.items()]}

    @classmethod
    def from_json(cls, d: Mapping) -> RoutingTable:
        return cls(d["op"], int(d["parallelism"]), {_key(k): int(v) for k, v in d["table"]})


def _key(k: object) -> Hashable:
    return tuple(k) if isinstance(k, list) else k  # type: ignore[return-value]


def tables_from_partition(
    part: Partition,
    parallelism: Mapping[str, int],
    instance_host: Mapping[str, list[str]],
    part_hosts: list[str],
) -> dict[str, RoutingTable]:
    """Routing tables that send each key to an instance on the host of its part.

    ``instance_host[op][i]`` is the host of instance i of ``op``; part p is host
    ``part_hosts[p]``. Several instances of ``op`` on a host share its keys by hash; a
    part whose host has no instance of ``op`` leaves its keys to the hash fallback.
    """
    g = part.graph
    tables = {}
    for oi, op in enumerate(g.ops):
        by_host: dict[str, list[int]] = {}
        for i, h in enumerate(instance_host[op]):
            by_host.setdefault(h, []).append(i)
        t: dict[Hashable, int] = {}
        for v in np.flatnonzero(g.op_of == oi):
            k = g.keys[v]
            local = by_host.get(part_hosts[int(part.parts[v])])
            if local:
                t[_plain(k)] = local[stable_hash(k, op) % len(local)]
        tables[op] = RoutingTable(op, parallelism[op], t)
    return tables


def _plain(k: object) -> Hashable:
    return k.item() if isinstance(k, np.generic) else k  # type: ignore[return-value]
