"""One network spec and one topology grammar for every part of streamband.

A :class:`NetworkSpec` names one of the topologies of :mod:`streamband.model.topology`
(``star``, ``two_tier``, ``fat_tree``, ``leaf_spine``) or the non-blocking
``big_switch`` of the coflow simulator, its shape and its link capacities. The
experiment specs (``networks:``), the testbed specs (a network plus control-plane
fields) and the coflow simulator (``--topology``) all read it.

The short form on the command line is ``KIND[:key=value,...]``, e.g.
``star:hosts=2,link_mbps=20``, ``two_tier:internal_mbps=10``, ``fat_tree:k=8`` or
``big_switch``; in YAML the same keys are fields, with ``topology: KIND``.

Capacities are in Mbit/s here (10^6 bit/s) and in bit/s inside the model.
"""

from __future__ import annotations

from typing import Any, Literal

import yaml
from pydantic import ConfigDict, Field, ValidationError, model_validator

from streamband.errors import SpecError, nearest, one_line
from streamband.model import topology as mt
from streamband.model.numbers import Numbers
from streamband.model.source import StrictLoader

#: the fastest link a spec may name, Mbit/s (10 Tbit/s, past any link built)
MAX_LINK_MBPS = 1e7

TopologyKind = Literal["star", "two_tier", "fat_tree", "leaf_spine", "big_switch"]
KINDS: tuple[str, ...] = ("star", "two_tier", "fat_tree", "leaf_spine", "big_switch")
#: the fields each kind reads (the others keep their defaults)
SHAPE: dict[str, tuple[str, ...]] = {
    "star": ("hosts", "master", "master_mbps"),
    "big_switch": ("hosts",),
    "two_tier": ("hosts", "racks", "hosts_per_rack", "cores"),
    "fat_tree": ("k",),
    "leaf_spine": ("leaves", "spines", "hosts_per_leaf"),
}


class NetworkSpec(Numbers):
    """A network: its topology, shape and link capacities.

    Parameters
    ----------
    topology : {"star", "two_tier", "fat_tree", "leaf_spine", "big_switch"}
        ``star``: hosts on one switch, only host links constrain (000 §VI-A1);
        ``two_tier``: racks under rack switches wired to every core (000 Fig. 2);
        ``fat_tree``: the k-ary fat-tree (k^3/4 hosts); ``leaf_spine``: a two-stage
        Clos; ``big_switch``: the non-blocking fabric of the coflow simulator (004 §II;
        a star elsewhere).
    hosts : int or list of str, optional
        star, big_switch, two_tier: a number of hosts (a star's are named ``w1..wN``,
        a two-tier's ``m1..mN``) or their names. Default: 8 (star), racks x
        hosts_per_rack (two_tier).
    master : bool
        star: add a host ``master`` first (000's testbed has a master node beside
        the workers). Default False.
    racks, hosts_per_rack, cores : int
        two_tier's shape (defaults 4, 2, 2: 000 Fig. 2).
    k : int
        fat_tree's arity, even (default 4).
    leaves, spines, hosts_per_leaf : int
        leaf_spine's shape (defaults 2, 2, 2).
    link_mbps : float
        Capacity of every host link (uplink and downlink), Mbit/s (default 1000).
    internal_mbps : float, optional
        Capacity of every switch-to-switch link, Mbit/s; default ``link_mbps``.

    Examples
    --------
    >>> parse_network("star:hosts=2,link_mbps=20").build().hosts
    ['w1', 'w2']
    >>> len(parse_network("fat_tree:k=4").build().hosts)
    16
    """

    model_config = ConfigDict(extra="forbid")
    topology: TopologyKind = Field("star", description="star, two_tier, fat_tree, leaf_spine "
                                   "or big_switch")
    hosts: list[str] | int | None = Field(
        None, description="star, big_switch, two_tier: a number of hosts or their names "
        "(default 8 for a star, named w1..wN; racks x hosts_per_rack for a two-tier)")
    master: bool = Field(False, description="star: add a host 'master' first")
    master_mbps: float | None = Field(None, gt=0, le=100_000, allow_inf_nan=False,
                                      description="star with master: the master's link, "
                                      "Mbit/s each way (default link_mbps): an engine's "
                                      "sources served from the master (Kafka) keep it off "
                                      "the links under test")
    racks: int = Field(4, ge=1, le=1024, description="two_tier: racks")
    hosts_per_rack: int = Field(2, ge=1, le=1024, description="two_tier: hosts per rack")
    cores: int = Field(2, ge=1, le=1024, description="two_tier: core switches")
    k: int = Field(4, ge=2, le=128, description="fat_tree: arity (even)")
    leaves: int = Field(2, ge=1, le=1024, description="leaf_spine: leaves")
    spines: int = Field(2, ge=1, le=1024, description="leaf_spine: spines")
    hosts_per_leaf: int = Field(2, ge=1, le=1024, description="leaf_spine: hosts per leaf")
    link_mbps: float = Field(1000.0, gt=0, le=MAX_LINK_MBPS, allow_inf_nan=False,
                             description="host link capacity, Mbit/s")
    internal_mbps: float | None = Field(None, gt=0, le=MAX_LINK_MBPS, allow_inf_nan=False,
                                        description="switch-to-switch link capacity, Mbit/s "
                                        "(default: link_mbps)")

    @model_validator(mode="after")
    def _shape(self) -> NetworkSpec:
        if self.k % 2:
            raise ValueError(f"k: expected an even number, got {self.k}")
        if isinstance(self.hosts, int) and not 1 <= self.hosts <= 100_000:
            raise ValueError(f"hosts: expected 1..100000 hosts, got {self.hosts}")
        if isinstance(self.hosts, list):
            if not self.hosts or len(set(self.hosts)) != len(self.hosts):
                raise ValueError(f"hosts: expected distinct host names, got {self.hosts!r}")
            if self.master and "master" in self.hosts:
                raise ValueError("hosts: 'master' is added by master: true; expected other names")
        return self

    def build(self, name: str | None = None) -> mt.Topology:
        """The model topology (the one source of truth for simulator and testbed).

        Raises
        ------
        SpecError
            If the shape cannot exist (e.g. a two-tier host list of the wrong length).
        """
        bw = self.link_mbps * 1e6
        inner = (self.internal_mbps if self.internal_mbps is not None else self.link_mbps) * 1e6
        kind = self.topology
        try:
            if kind in ("star", "big_switch"):
                hosts = self.hosts if self.hosts is not None else 8
                names = ([f"w{i + 1}" for i in range(hosts)] if isinstance(hosts, int)
                         else list(hosts))
                if self.master and kind == "star":
                    topo = mt.star(names, bw, name or kind, master=(
                        self.master_mbps * 1e6 if self.master_mbps is not None else bw))
                    return topo
                return mt.star(names, bw, name or kind)
            if kind == "two_tier":
                topo = mt.two_tier(self.racks, self.hosts_per_rack, self.cores, bw, inner,
                                   self.hosts if isinstance(self.hosts, list) else None,
                                   name or kind)
                if isinstance(self.hosts, int) and self.hosts != len(topo.hosts):
                    raise mt.TopologyError(
                        f"hosts: expected racks x hosts_per_rack = {len(topo.hosts)}, "
                        f"got {self.hosts}")
                return topo
            if kind == "fat_tree":
                return mt.fat_tree(self.k, bw).with_capacity("internal", inner)
            return mt.leaf_spine(self.leaves, self.spines, self.hosts_per_leaf, bw, inner)
        except mt.TopologyError as err:
            raise SpecError(f"network {name or kind}: {err}") from None

    def short(self) -> str:
        """The short form of this spec (the fields that differ from the defaults)."""
        base = NetworkSpec(topology=self.topology)
        parts = [f"{k}={v}" for k, v in self.model_dump().items()
                 if k != "topology" and v != getattr(base, k) and not isinstance(v, list)]
        return self.topology + (":" + ",".join(parts) if parts else "")


def _scalar(text: str) -> Any:
    """A short form's value as a spec file's would read (``yes`` and ``0x10`` stay text)."""
    try:
        return StrictLoader.scalar(text)
    except yaml.YAMLError:
        return text


def split_short(text: str, source: str = "") -> dict[str, Any]:
    """``KIND[:key=value,...]`` as a dict ``{"topology": KIND, key: value, ...}``.

    Raises
    ------
    SpecError
        If an item is not ``key=value`` or a key repeats.
    """
    kind, _, rest = text.strip().partition(":")
    where = source or repr(text)
    data: dict[str, Any] = {"topology": kind.strip()}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, val = item.partition("=")
        if not eq or not key.strip():
            raise SpecError(f"{where}: expected key=value after '{kind}:', got {item!r} "
                            f"(form KIND[:key=value,...], e.g. fat_tree:k=8)")
        if key.strip() in data:
            raise SpecError(f"{where}: key {key.strip()!r} given twice")
        data[key.strip()] = _scalar(val.strip())
    return data


def parse_network(spec: str | dict[str, Any], source: str = "") -> NetworkSpec:
    """A :class:`NetworkSpec` from its short form or a dict.

    Raises
    ------
    SpecError
        On an unknown kind or key (naming the nearest valid one) or a bad value.

    Examples
    --------
    >>> parse_network("fat_tree:k=8").k
    8
    >>> try:
    ...     parse_network("fattree:k=8")
    ... except SpecError as err:
    ...     print(str(err).endswith("did you mean 'fat_tree'?"))
    True
    """
    data = split_short(spec, source) if isinstance(spec, str) else dict(spec)
    kind = data.get("topology", "star")
    if kind not in KINDS:
        where = source or (repr(spec) if isinstance(spec, str) else "topology")
        raise SpecError(f"{where}: unknown topology {kind!r} (expected KIND[:key=value,...] "
                        f"with KIND one of {', '.join(KINDS)}, e.g. fat_tree:k=8)"
                        f"{nearest(str(kind), KINDS)}")
    try:
        return NetworkSpec.model_validate(data)
    except ValidationError as err:
        raise SpecError(one_line(err, source or (spec if isinstance(spec, str) else ""),
                                 NetworkSpec)) from None
