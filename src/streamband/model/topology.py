"""Network topology: hosts, switches and directed links with capacities.

The network model of 000 §II-B: every host (machine) has one *uplink* to its
switch and one *downlink* from it; every other link (rack-to-core, core-to-rack,
edge-to-aggregation, ...) is an *internal* link. Capacities are in bit/s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from streamband.errors import SpecError

LinkKind = Literal["uplink", "downlink", "internal"]


class TopologyError(SpecError):
    """A topology that cannot exist (zero capacity, unknown node, duplicate link)."""


@dataclass(frozen=True)
class Link:
    """A directed link ``src -> dst`` of ``capacity_bps`` bit/s."""

    id: int
    src: str
    dst: str
    capacity_bps: float
    kind: LinkKind


@dataclass
class Topology:
    """Hosts, switches and directed links; one source of truth for sim and testbed."""

    name: str
    hosts: list[str] = field(default_factory=list)
    switches: list[str] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._index: dict[tuple[str, str], int] = {}
        self._uplink: dict[str, int] = {}
        self._downlink: dict[str, int] = {}
        self._host_set = set(self.hosts)
        self._switch_set = set(self.switches)

    # -- construction -------------------------------------------------------
    def add_host(self, name: str) -> None:
        self.hosts.append(name)
        self._host_set.add(name)

    def add_switch(self, name: str) -> None:
        self.switches.append(name)
        self._switch_set.add(name)

    def add_link(self, src: str, dst: str, capacity_bps: float, kind: LinkKind) -> int:
        """Add the directed link ``src -> dst``; returns its id."""
        if not capacity_bps > 0 or not np.isfinite(capacity_bps):
            raise TopologyError(
                f"link {src}->{dst}: capacity must be a positive number of bit/s, "
                f"got {capacity_bps!r}"
            )
        for node in (src, dst):
            if node not in self._host_set and node not in self._switch_set:
                raise TopologyError(f"link {src}->{dst}: unknown node {node!r}")
        if (src, dst) in self._index:
            raise TopologyError(f"link {src}->{dst}: added twice")
        lid = len(self.links)
        self.links.append(Link(lid, src, dst, float(capacity_bps), kind))
        self._index[(src, dst)] = lid
        if kind == "uplink":
            self._uplink[src] = lid
        elif kind == "downlink":
            self._downlink[dst] = lid
        return lid

    def connect_host(self, host: str, switch: str, capacity_bps: float) -> None:
        """The host's uplink and downlink to ``switch`` (000 §II-B)."""
        self.add_link(host, switch, capacity_bps, "uplink")
        self.add_link(switch, host, capacity_bps, "downlink")

    def connect_switches(self, a: str, b: str, capacity_bps: float) -> None:
        """Two internal links, ``a -> b`` and ``b -> a``."""
        self.add_link(a, b, capacity_bps, "internal")
        self.add_link(b, a, capacity_bps, "internal")

    # -- queries ------------------------------------------------------------
    def link_id(self, src: str, dst: str) -> int:
        return self._index[(src, dst)]

    def uplink(self, host: str) -> int:
        return self._uplink[host]

    def downlink(self, host: str) -> int:
        return self._downlink[host]

    def host_switch(self, host: str) -> str:
        return self.links[self._uplink[host]].dst

    def is_host(self, name: str) -> bool:
        return name in self._host_set

    @property
    def capacities(self) -> np.ndarray:
        """Capacity of every link in bit/s, indexed by link id."""
        return np.fromiter((lk.capacity_bps for lk in self.links), float, len(self.links))

    @property
    def kinds(self) -> np.ndarray:
        """0 = uplink, 1 = downlink, 2 = internal, indexed by link id."""
        code = {"uplink": 0, "downlink": 1, "internal": 2}
        return np.fromiter((code[lk.kind] for lk in self.links), np.int8, len(self.links))

    def with_capacity(self, kind: LinkKind, capacity_bps: float) -> Topology:
        """A copy with every link of ``kind`` set to ``capacity_bps`` (throttling)."""
        out = Topology(self.name, list(self.hosts), list(self.switches))
        for lk in self.links:
            cap = capacity_bps if lk.kind == kind else lk.capacity_bps
            out.add_link(lk.src, lk.dst, cap, lk.kind)
        return out


# -- builders -----------------------------------------------------------------


def _host_names(hosts: int | list[str], prefix: str = "h") -> list[str]:
    if isinstance(hosts, int):
        if hosts < 1:
            raise TopologyError(f"hosts: expected at least 1 host, got {hosts}")
        return [f"{prefix}{i + 1}" for i in range(hosts)]
    if len(set(hosts)) != len(hosts) or not hosts:
        raise TopologyError(f"hosts: expected distinct names, got {hosts!r}")
    return list(hosts)


def star(hosts: int | list[str], bw_bps: float, name: str = "star",
         master: float | None = None) -> Topology:
    """One non-blocking switch: only host uplinks and downlinks constrain (000 §VI-A1);
    ``master``: a host ``master`` first, on a link of that capacity (bit/s)."""
    topo = Topology(name)
    topo.add_switch("s1")
    if master is not None:
        topo.add_host("master")
        topo.connect_host("master", "s1", master)
    for h in _host_names(hosts):
        topo.add_host(h)
        topo.connect_host(h, "s1", bw_bps)
    return topo


def two_tier(
    racks: int = 4,
    hosts_per_rack: int = 2,
    cores: int = 2,
    host_bw_bps: float = 1e9,
    internal_bw_bps: float = 1e9,
    hosts: list[str] | None = None,
    name: str = "two_tier",
) -> Topology:
    """000 Fig. 2: racks of hosts under rack switches, every rack wired to every core.

    Defaults give the figure's 8 uplinks, 8 downlinks, 8 rack-to-core and 8
    core-to-rack links; ``internal_bw_bps`` throttles the internal links to move
    the bottleneck off the hosts' links (000 §VI-A1, multi-hop setting).
    """
    names = _host_names(hosts if hosts is not None else racks * hosts_per_rack, "m")
    if len(names) != racks * hosts_per_rack:
        raise TopologyError(
            f"hosts: expected {racks * hosts_per_rack} names (racks x hosts_per_rack), "
            f"got {len(names)}"
        )
    topo = Topology(name)
    for c in range(cores):
        topo.add_switch(f"core{c + 1}")
    for r in range(racks):
        tor = f"rack{r + 1}"
        topo.add_switch(tor)
        for c in range(cores):
            topo.connect_switches(tor, f"core{c + 1}", internal_bw_bps)
        for h in names[r * hosts_per_rack : (r + 1) * hosts_per_rack]:
            topo.add_host(h)
            topo.connect_host(h, tor, host_bw_bps)
    return topo


def fat_tree(k: int, bw_bps: float = 1e9, core_bw_bps: float | None = None) -> Topology:
    """The k-ary fat-tree: k pods of k/2 edge and k/2 aggregation switches,
    (k/2)^2 cores and k^3/4 hosts (Al-Fares et al., SIGCOMM 2008)."""
    if k < 2 or k % 2:
        raise TopologyError(f"fat_tree k: expected an even number >= 2, got {k}")
    half = k // 2
    core_bw = bw_bps if core_bw_bps is None else core_bw_bps
    topo = Topology(f"fat_tree({k})")
    cores = [f"c{i}" for i in range(half * half)]
    for c in cores:
        topo.add_switch(c)
    for p in range(k):
        aggs = [f"a{p}_{i}" for i in range(half)]
        for a in aggs:
            topo.add_switch(a)
        for i, a in enumerate(aggs):
            for j in range(half):
                topo.connect_switches(a, cores[i * half + j], core_bw)
        for e in range(half):
            edge = f"e{p}_{e}"
            topo.add_switch(edge)
            for a in aggs:
                topo.connect_switches(edge, a, bw_bps)
            for h in range(half):
                host = f"h{p}_{e}_{h}"
                topo.add_host(host)
                topo.connect_host(host, edge, bw_bps)
    return topo


def leaf_spine(
    leaves: int,
    spines: int,
    hosts_per_leaf: int,
    bw_bps: float = 1e9,
    fabric_bw_bps: float | None = None,
) -> Topology:
    """A two-stage Clos: every leaf wired to every spine, hosts under leaves."""
    for fld, val in (("leaves", leaves), ("spines", spines), ("hosts_per_leaf", hosts_per_leaf)):
        if val < 1:
            raise TopologyError(f"leaf_spine {fld}: expected at least 1, got {val}")
    fabric = bw_bps if fabric_bw_bps is None else fabric_bw_bps
    topo = Topology(f"leaf_spine({leaves},{spines},{hosts_per_leaf})")
    for s in range(spines):
        topo.add_switch(f"spine{s + 1}")
    for lf in range(leaves):
        leaf = f"leaf{lf + 1}"
        topo.add_switch(leaf)
        for s in range(spines):
            topo.connect_switches(leaf, f"spine{s + 1}", fabric)
        for h in range(hosts_per_leaf):
            host = f"h{lf + 1}_{h + 1}"
            topo.add_host(host)
            topo.connect_host(host, leaf, bw_bps)
    return topo
