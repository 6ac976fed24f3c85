"""``streamband manage``'s ``cluster.yaml``: a Storm cluster, a Flink cluster or both, an
OpenFlow controller, the network between them (switches by dpid, hosts by address, the
switch ports that count each link), the topologies (Storm) and jobs (Flink) to manage and
the service's settings; validated on load
(:func:`load_config`), one line per error. :class:`Network` is the config's network as
the loop models it: a :class:`~streamband.model.topology.Topology` whose hosts are
addresses, routed by shortest paths (ECMP by host pair) as the testbed installs them."""

from __future__ import annotations

import ipaddress
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from streamband.alloc.registry import POLICIES, policy_entry
from streamband.errors import SpecError, one_line
from streamband.loop.manager import FULL_FRAC
from streamband.loop.openflow import PortRef
from streamband.model.app import MAX_TUPLE_BYTES
from streamband.model.network import MAX_LINK_MBPS
from streamband.model.numbers import Numbers
from streamband.model.source import load_yaml
from streamband.model.topology import Topology
from streamband.sdn.auth import check_token

# -- the config ---------------------------------------------------------------------------
#: the largest datapath id (OpenFlow's is 64 bits)
MAX_DPID = 2**64 - 1


def _address(v: str, what: str) -> str:
    host, sep, port = v.rpartition(":")
    if not sep or not host or not re.fullmatch(r"[0-9]{1,5}", port) \
            or not 1 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT for {what} (port 1..65535)")
    return v


def _bind_address(v: str, what: str) -> str:
    """``v`` if it is ``IP:PORT`` (or ``localhost:PORT``) this service can listen on:
    a name is not resolved at start, so it is refused here."""
    _address(v, what)
    host = v.rpartition(":")[0]
    if host != "localhost":
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            raise ValueError(f"{host!r} is not an IPv4 address, expected the address this "
                             f"manager listens on for {what} (IP:PORT)") from None
    return v


class EngineEndpoints(Numbers):
    """What every engine's section has: where this manager receives the engine's reports
    (``profiler``, checked here) and how often its placements are read
    (``placement_every_s``, :func:`_every`)."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("profiler", check_fields=False)
    @classmethod
    def _bind(cls, v: str) -> str:
        return _bind_address(v, "the engine's reports")


def _every(what: str) -> Any:
    """The ``placement_every_s`` field of an engine's section: how often ``what``."""
    return Field(5.0, gt=0, le=3600, allow_inf_nan=False,
                 description=f"how often {what}, seconds")


class StormEndpoints(EngineEndpoints):
    """Where the Storm cluster is."""

    nimbus: str = Field(description="Nimbus's Thrift address HOST:PORT (Storm's "
                        "nimbus.seeds and nimbus.thrift.port, 6627 by default)")
    profiler: str = Field(description="HOST:PORT where the manager receives the workers' "
                          "FlowReporter datagrams (UDP): the 'manager' of the reporter in the "
                          "cluster's topology.metrics.reporters")
    placement_every_s: float = _every("Nimbus is asked for topologies and their placement")

    @field_validator("nimbus")
    @classmethod
    def _hp(cls, v: str) -> str:
        return _address(v, "a Storm endpoint")


class FlinkEndpoints(EngineEndpoints):
    """Where the Flink cluster is."""

    rest: str = Field(description="the JobManager's REST address HOST:PORT (Flink's "
                      "rest.address and rest.port, 8081 by default)")
    profiler: str = Field(description="IP:PORT where the manager receives the reporter "
                          "plug-in's datagrams (UDP): metrics.reporter.streamband.manager in "
                          "the cluster's config.yaml; may be storm.profiler's (one receiver)")
    placement_every_s: float = _every("the REST API is asked for jobs and their subtasks' "
                                      "TaskManagers")

    @field_validator("rest")
    @classmethod
    def _hp(cls, v: str) -> str:
        return _address(v, "Flink's REST API")


class ControllerEndpoint(Numbers):
    """The OpenFlow controller's HTTP API (``streamband controller``)."""

    model_config = ConfigDict(extra="forbid")
    api: str = Field(description="HOST:PORT of the controller's HTTP API")
    token_env: str | None = Field("STREAMBAND_API_TOKEN", description="environment variable "
                                  "holding its bearer token (needed when the API is not on "
                                  "loopback); null: no token")

    @field_validator("api")
    @classmethod
    def _hp(cls, v: str) -> str:
        return _address(v, "the controller's API")


class SwitchConfig(Numbers):
    """An OpenFlow switch."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, description="its name in this file")
    dpid: int = Field(ge=1, le=MAX_DPID, description="its datapath id")


class HostConfig(Numbers):
    """A machine that runs Storm workers or Flink TaskManagers, and its link to its
    switch."""

    model_config = ConfigDict(extra="forbid")
    ip: str = Field(description="its IPv4 address (Storm's storm.local.hostname, Flink's "
                    "taskmanager.host)")
    switch: str = Field(description="the switch it is attached to")
    port: str = Field(min_length=1, description="the switch port (interface name) it is "
                      "attached to: its uplink is counted as received there, its downlink "
                      "as sent")
    link_mbps: float = Field(gt=0, le=MAX_LINK_MBPS, allow_inf_nan=False,
                             description="its link's capacity, Mbit/s, each direction")

    @field_validator("ip")
    @classmethod
    def _ip(cls, v: str) -> str:
        try:
            return str(ipaddress.IPv4Address(v))
        except ValueError:
            raise ValueError("expected an IPv4 address (the meters match flows by "
                             "their IPv4 addresses)") from None


class TrunkConfig(Numbers):
    """A link between two switches (both directions)."""

    model_config = ConfigDict(extra="forbid")
    a: str = Field(description="one switch")
    b: str = Field(description="the other switch")
    a_port: str = Field(min_length=1, description="a's port towards b")
    b_port: str = Field(min_length=1, description="b's port towards a")
    mbps: float = Field(gt=0, le=MAX_LINK_MBPS, allow_inf_nan=False,
                        description="capacity, Mbit/s, each direction")

    @model_validator(mode="after")
    def _two_switches(self) -> TrunkConfig:
        if self.a == self.b:
            raise ValueError(f"b: a trunk joins two switches, got {self.a!r} at both ends")
        return self


class NetworkConfig(Numbers):
    """The network the cluster's traffic crosses."""

    model_config = ConfigDict(extra="forbid")
    switches: list[SwitchConfig] = Field(min_length=1, description="the switches")
    hosts: list[HostConfig] = Field(min_length=1, description="the worker machines")
    trunks: list[TrunkConfig] = Field([], description="switch-to-switch links")


class TopologyConfig(Numbers):
    """A topology (Storm) or job (Flink) to manage, by name; it may be submitted later,
    killed or rebalanced (Storm), canceled and submitted again (Flink) while the manager
    runs."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, description="the topology's name in Storm, or the "
                      "job's name in Flink (the newest running job of that name)")
    engine: Literal["storm", "flink"] | None = Field(
        None, description="storm or flink: the engine it runs on (default: storm, or flink "
        "when the config has a flink: section and no storm:)")
    policy: str = Field("appaware", description="its allocation policy (tcp, appaware, "
                        "maxmin, weighted, observe); switchable live through the API")
    tuple_bytes: dict[str, float] = Field({}, description="bytes per tuple of an edge "
                                          "'SRC->DST' (components; in Flink an operator "
                                          "chain's first operator) until the switch has "
                                          "measured it (default 1024)")

    @field_validator("policy")
    @classmethod
    def _policy(cls, v: str) -> str:
        check_policy(v)
        return v

    @field_validator("tuple_bytes")
    @classmethod
    def _sizes(cls, v: dict[str, float]) -> dict[str, float]:
        for edge, size in v.items():
            if not 0 < size <= MAX_TUPLE_BYTES:  # NaN fails too
                raise ValueError(f"{edge[:40]!r}: expected bytes per tuple in (0, "
                                 f"{MAX_TUPLE_BYTES:g}], got {size:g}")
        return v


class ManagerSettings(Numbers):
    """The service itself."""

    model_config = ConfigDict(extra="forbid")
    dt_s: float = Field(5.0, ge=0.2, le=600, allow_inf_nan=False,
                        description="Δt, seconds between allocations (000 §VI-A: 5 s)")
    state_dir: Path = Field(description="where the SQLite state lives (allocation history, "
                            "leases, the last safe allocation, routing); a restart resumes "
                            "from it")
    listen: str = Field("127.0.0.1:8480", description="HOST:PORT of the dashboard, its API "
                        "and /metrics (a token is required off loopback)")
    token_env: str | None = Field("STREAMBAND_MANAGE_TOKEN", description="environment "
                                  "variable holding the bearer token of this API")
    hold_intervals: int = Field(3, ge=1, le=100, description="while the profiler is silent, "
                                "the last safe allocation is held this many Δt, then the "
                                "flows fail open (plain TCP)")
    keep_allocations: int = Field(200_000, ge=100, le=10**9, description="allocation records kept "
                                  "in the state (older ones are dropped)")
    guard: bool = Field(True, description="do no harm: keep TCP's measured split unless "
                        "an allocation moves at least 12 % of a bottlenecked link's capacity "
                        "(released below 8 %); false: always enforce the policy's caps")
    full_frac: float | None = Field(FULL_FRAC, gt=0, le=1, allow_inf_nan=False,
                                    description="a link counts as bottlenecked (000 "
                                    "Algorithm 1 line 11) only while the switch's counters "
                                    "show it at least this share full; null: whenever its "
                                    "flows' demands reach its capacity, as the paper writes")

    @field_validator("listen")
    @classmethod
    def _hp(cls, v: str) -> str:
        return _bind_address(v, "the manager's API")


class ClusterConfig(Numbers):
    """``streamband manage --config cluster.yaml``: a Storm cluster, a Flink cluster or
    both, an OpenFlow controller, the network between them, the topologies and jobs to
    manage, the service."""

    model_config = ConfigDict(extra="forbid")
    storm: StormEndpoints | None = Field(None, description="the Storm cluster (this or "
                                         "flink, or both)")
    flink: FlinkEndpoints | None = Field(None, description="the Flink cluster (this or "
                                         "storm, or both)")
    controller: ControllerEndpoint
    network: NetworkConfig
    topologies: list[TopologyConfig] = Field(min_length=1)
    manager: ManagerSettings
    enforce: Literal["meter", "shaper"] = Field(
        "meter", description="how the rates are enforced: meter (an OpenFlow meter per flow "
        "on the sender's switch: it polices, dropping what exceeds the rate) or shaper (an "
        "HTB class per flow on every switch egress port of its path: it queues; the "
        "controller runs tc on the ports, so they must be Linux interfaces of its machine)")

    def engine_of(self, t: TopologyConfig) -> str:
        """The engine ``t`` runs on: its own ``engine``, else storm, or flink when the
        config has only a flink section."""
        return t.engine or ("flink" if self.storm is None and self.flink is not None
                            else "storm")


def check_policy(name: str) -> str:
    """``name`` if it is ``tcp`` or a manager-loop policy; else a SpecError line."""
    loop = ["tcp"] + [n for n, e in POLICIES.items() if e.kind == "loop"]
    if name not in loop:
        entry = policy_entry(name)  # the unknown-policy line, with the nearest name
        raise SpecError(f"policy: {name!r} is of kind {entry.kind!r}; the manager runs "
                        f"{', '.join(loop)}")
    return name


def load_config(path: Path) -> ClusterConfig:
    """Parse and check ``cluster.yaml``.

    Raises
    ------
    SpecError
        One line: the file, the field, what was expected.
    """
    path = Path(path)
    if not os.path.lexists(path):
        raise SpecError(f"--config: {path}: no such file")
    data = load_yaml(path, "cluster config")  # a directory, a FIFO or a link loop: its line
    try:
        cfg = ClusterConfig.model_validate(data)
    except ValidationError as exc:
        raise SpecError(one_line(exc, str(path), ClusterConfig)) from None
    if cfg.storm is None and cfg.flink is None:
        raise SpecError(f"{path}: expected a storm: or a flink: section (or both): the "
                        "engines whose topologies and jobs are managed")
    for i, t in enumerate(cfg.topologies):
        engine = cfg.engine_of(t)
        if getattr(cfg, engine) is None:
            raise SpecError(f"{path}: topologies.{i}.engine: {t.name!r} runs on {engine}, "
                            f"but the config has no {engine}: section")
    net = cfg.network
    names = [s.name for s in net.switches]
    for what, values in (("name", names), ("dpid", [s.dpid for s in net.switches])):
        first: dict[object, int] = {}
        for i, v in enumerate(values):
            if v in first:
                raise SpecError(f"{path}: network.switches.{i}.{what}: {v!r} is switch "
                                f"{first[v]}'s too, expected each switch's own")
            first[v] = i
    ends: dict[tuple[str, str], str] = {}
    for where, sw, port in (
            *((f"hosts.{i}.port", h.switch, h.port) for i, h in enumerate(net.hosts)),
            *((f"trunks.{i}.{e}_port", getattr(t, e), getattr(t, f"{e}_port"))
              for i, t in enumerate(net.trunks) for e in ("a", "b"))):
        if (sw, port) in ends:
            raise SpecError(f"{path}: network.{where}: port {port!r} of {sw} is "
                            f"network.{ends[sw, port]} already, expected one link per port")
        ends[sw, port] = where
    for i, h in enumerate(net.hosts):
        if h.switch not in names:
            raise SpecError(f"{path}: network.hosts.{i}.switch: unknown switch {h.switch!r}, "
                            f"expected one of {', '.join(names)}")
    for i, t in enumerate(net.trunks):
        for end in ("a", "b"):
            if getattr(t, end) not in names:
                raise SpecError(f"{path}: network.trunks.{i}.{end}: unknown switch "
                                f"{getattr(t, end)!r}, expected one of {', '.join(names)}")
    if cfg.enforce == "shaper":
        # the controller shapes a port by its interface name (tc on its own machine)
        owner: dict[str, tuple[str, str]] = {}
        for (sw, port), where in ends.items():
            if port in owner and owner[port][0] != sw:
                raise SpecError(f"{path}: network.{where}: port {port!r} of {sw} is also "
                                f"network.{owner[port][1]} of {owner[port][0]}; with enforce: "
                                "shaper the controller runs tc on ports by interface name, "
                                "expected each switch port's own name")
            owner[port] = (sw, where)
    ips = [h.ip for h in net.hosts]
    dup = [ip for ip, n in Counter(ips).items() if n > 1]
    if dup:
        raise SpecError(f"{path}: network.hosts: host {dup[0]} listed twice")
    tops = [t.name for t in cfg.topologies]
    dup = [t for t, n in Counter(tops).items() if n > 1]
    if dup:
        raise SpecError(f"{path}: topologies: {dup[0]!r} listed twice")
    for i, t in enumerate(cfg.topologies):
        for edge in t.tuple_bytes:
            if "->" not in edge:
                raise SpecError(f"{path}: topologies.{i}.tuple_bytes: expected 'SRC->DST', "
                                f"got {edge!r}")
    return cfg


def secret(env: str | None) -> str | None:
    """The token in the environment variable ``env`` (None when unset or empty).

    Raises
    ------
    OptionError
        If it holds anything but printable ASCII (an HTTP header cannot carry it).
    """
    return check_token(os.environ.get(env) or None, f"${env}") if env else None


# -- the network --------------------------------------------------------------------------
@dataclass
class Network:
    """The model of the config's network: a :class:`Topology` whose hosts are addresses,
    where each link is counted (:class:`PortRef`), and each host's edge switch."""

    topo: Topology
    ports: list[PortRef]
    dpid: dict[str, int]  # host address -> dpid of its switch
    names: list[str]  # a readable name per link

    @classmethod
    def from_config(cls, net: NetworkConfig) -> Network:
        topo = Topology("cluster")
        dpids = {s.name: s.dpid for s in net.switches}
        for s in net.switches:
            topo.add_switch(s.name)
        ports: list[PortRef] = []
        names: list[str] = []
        for h in net.hosts:
            topo.add_host(h.ip)
            topo.connect_host(h.ip, h.switch, h.link_mbps * 1e6)
            ports += [PortRef(dpids[h.switch], h.port, "rx"), PortRef(dpids[h.switch], h.port,
                                                                       "tx")]
            names += [f"{h.ip}->{h.switch}", f"{h.switch}->{h.ip}"]
        for t in net.trunks:
            topo.connect_switches(t.a, t.b, t.mbps * 1e6)
            ports += [PortRef(dpids[t.a], t.a_port, "tx"), PortRef(dpids[t.b], t.b_port, "tx")]
            names += [f"{t.a}->{t.b}", f"{t.b}->{t.a}"]
        return cls(topo, ports, {h.ip: dpids[h.switch] for h in net.hosts}, names)

    def egress_rates(self) -> dict[str, float]:
        """Each switch egress port (by name) and its link's capacity, bit/s: the ports
        the shaper's classes go on, and the rate each port's tree shapes."""
        return {ref.port: float(cap) for ref, cap in zip(self.ports, self.topo.capacities,
                                                         strict=True)
                if ref.direction == "tx"}
