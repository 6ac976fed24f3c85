"""Vectorised fabrics for flow-level simulation: link capacities plus a fixed-width
flow x link path table (padded with one dummy link of infinite capacity).

``big_switch`` is the non-blocking fabric of 004 §II (only the ports' ingress and egress
constrain); ``fat_tree_fabric`` wraps :func:`streamband.model.topology.fat_tree` with ECMP
computed for many flows at once (one up-path choice per key by a stable hash, as
:class:`streamband.model.routing.Router` does per switch, vectorised). The coflow
engines pass the host pair as the key (ECMP on the addresses, 004 §IV-B), so all flows
between two hosts share one path and the path table stays at most hosts^2 long.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamband.model.topology import Topology, fat_tree


@dataclass
class Fabric:
    """``cap_bps[l]`` for links 0..L-1 and ``cap_bps[L] = inf`` (the padding link)."""

    name: str
    n_hosts: int
    cap_bps: np.ndarray
    topology: Topology | None = None

    @property
    def n_links(self) -> int:
        return len(self.cap_bps) - 1

    def paths(self, src: np.ndarray, dst: np.ndarray, key: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class BigSwitch(Fabric):
    """Port p has uplink p (ingress) and downlink P + p (egress)."""

    def paths(self, src: np.ndarray, dst: np.ndarray, key: np.ndarray) -> np.ndarray:
        return np.stack([np.asarray(src), self.n_hosts + np.asarray(dst)], axis=1)


def big_switch(ports: int, port_bps: float) -> BigSwitch:
    cap = np.full(2 * ports + 1, float(port_bps))
    cap[-1] = np.inf
    return BigSwitch(f"bigswitch({ports})", ports, cap)


class FatTreeFabric(Fabric):
    """A k-ary fat-tree; hosts in the order of ``fat_tree(k).hosts``."""

    def __init__(self, k: int, bw_bps: float) -> None:
        topo = fat_tree(k, bw_bps)
        cap = np.append(topo.capacities, np.inf)
        super().__init__(f"fattree(k={k})", len(topo.hosts), cap, topo)
        self.k = k
        half = k // 2
        lid = topo.link_id
        hosts = topo.hosts
        self._up = np.array([topo.uplink(h) for h in hosts])
        self._down = np.array([topo.downlink(h) for h in hosts])
        self._pod = np.arange(len(hosts)) // (half * half)
        self._edge = (np.arange(len(hosts)) // half) % half
        r = range(half)
        self._e2a = np.array([[[lid(f"e{p}_{e}", f"a{p}_{i}") for i in r] for e in r]
                              for p in range(k)])
        self._a2e = np.array([[[lid(f"a{p}_{i}", f"e{p}_{e}") for e in r] for i in r]
                              for p in range(k)])
        self._a2c = np.array([[[lid(f"a{p}_{i}", f"c{i * half + j}") for j in r] for i in r]
                              for p in range(k)])
        self._c2a = np.array([[[lid(f"c{i * half + j}", f"a{p}_{i}") for j in r] for i in r]
                              for p in range(k)])

    def paths(self, src: np.ndarray, dst: np.ndarray, key: np.ndarray) -> np.ndarray:
        """ECMP: aggregation ``i = h mod k/2`` and core ``j = (h div k/2) mod k/2`` where
        ``h`` is a stable hash of the flow key; shortest paths only."""
        half = self.k // 2
        src, dst = np.asarray(src), np.asarray(dst)
        h = mix64(np.asarray(key))
        i = (h % np.uint64(half)).astype(np.int64)
        j = ((h // np.uint64(half)) % np.uint64(half)).astype(np.int64)
        ps, pd = self._pod[src], self._pod[dst]
        es, ed = self._edge[src], self._edge[dst]
        pad = self.n_links
        out = np.full((len(src), 6), pad, np.int64)
        out[:, 0] = self._up[src]
        same_edge = (ps == pd) & (es == ed)
        same_pod = (ps == pd) & ~same_edge
        far = ps != pd
        out[same_edge, 1] = self._down[dst[same_edge]]
        m = same_pod
        out[m, 1] = self._e2a[ps[m], es[m], i[m]]
        out[m, 2] = self._a2e[ps[m], i[m], ed[m]]
        out[m, 3] = self._down[dst[m]]
        m = far
        out[m, 1] = self._e2a[ps[m], es[m], i[m]]
        out[m, 2] = self._a2c[ps[m], i[m], j[m]]
        out[m, 3] = self._c2a[pd[m], i[m], j[m]]
        out[m, 4] = self._a2e[pd[m], i[m], ed[m]]
        out[m, 5] = self._down[dst[m]]
        return out


def fat_tree_fabric(k: int, bw_bps: float) -> FatTreeFabric:
    return FatTreeFabric(k, bw_bps)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 (a stable hash: the same on every machine and run)."""
    z = np.asarray(x, dtype=np.int64).astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))
