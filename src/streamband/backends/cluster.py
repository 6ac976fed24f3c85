"""The ``cluster`` backend: the manager loop of 000 Fig. 4 against a Storm cluster and an
OpenFlow network it knows only by their addresses (a ``cluster.yaml``), as
``streamband manage`` runs it.

- the flow mapper (000 §V-A1): the placement from Nimbus's Thrift API
  (:mod:`streamband.storm.nimbus`), the edges from the submitted topology; a flow is a
  directed worker pair between two hosts, matched in the network by ``ip_src, ip_dst,
  tcp_dst`` = the receiving worker's slot port (:mod:`streamband.storm.flows`); pairs
  that share that match are one network flow;
- the application profiler (000 §V-A2): the workers' ``FlowReporter`` datagrams, received
  here (:class:`ProfileReceiver`: malformed, non-finite, negative or absurd values are
  rejected and counted, never used), turned into the 5-metric tuple by
  :class:`~streamband.backends.storm.StormProfiler`, with the bytes a flow sent measured by
  its counting rule on the switch (no kernel of a remote host to ask);
- link statistics and the bandwidth enforcer (000 §V-B): the controller's HTTP API
  (:mod:`streamband.backends.openflow`); every meter carries a lease of 3 Δt.

The network in the config: switches (dpids), hosts (address, switch, link capacity, the
switch port it attaches to) and trunks between switches; routes are shortest paths
(ECMP by host pair), as the testbed installs them.
"""

from __future__ import annotations

import json
import math
import os
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from streamband.alloc.base import FlowState
from streamband.backends.openflow import PortRef
from streamband.backends.storm import StormProfiler, app_totals
from streamband.control.manager import FULL_FRAC
from streamband.errors import PreconditionError, SpecError, one_line
from streamband.model.routing import Router, routing_matrix
from streamband.model.topology import Topology
from streamband.storm.collector import key as report_key
from streamband.storm.flows import WorkerPair, component_pairs

#: the largest value a report or a flow state may carry (bytes, messages); beyond it
#: the sample is garbage (1 PB: no interval of any real link moves that much)
ABSURD = 1e15
#: bytes per message assumed until the switch has counted a flow
DEFAULT_TUPLE_BYTES = 1024.0


# -- the config ---------------------------------------------------------------------------
def _address(v: str, what: str) -> str:
    host, sep, port = v.rpartition(":")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT for {what} (port 1..65535)")
    return v


class StormEndpoints(BaseModel):
    """Where the Storm cluster is."""

    model_config = ConfigDict(extra="forbid")
    nimbus: str = Field(description="Nimbus's Thrift address HOST:PORT (Storm's "
                        "nimbus.seeds and nimbus.thrift.port, 6627 by default)")
    profiler: str = Field(description="HOST:PORT where the manager receives the workers' "
                          "FlowReporter datagrams (UDP): the 'manager' of the reporter in the "
                          "cluster's topology.metrics.reporters")
    placement_every_s: float = Field(5.0, gt=0, le=3600, allow_inf_nan=False,
                                     description="how often Nimbus is asked for topologies "
                                     "and their placement, seconds")

    @field_validator("nimbus", "profiler")
    @classmethod
    def _hp(cls, v: str) -> str:
        return _address(v, "a Storm endpoint")


class ControllerEndpoint(BaseModel):
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


class SwitchConfig(BaseModel):
    """An OpenFlow switch."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="its name in this file")
    dpid: int = Field(ge=1, description="its datapath id")


class HostConfig(BaseModel):
    """A machine that runs Storm workers, and its link to its switch."""

    model_config = ConfigDict(extra="forbid")
    ip: str = Field(description="its address (Storm's storm.local.hostname)")
    switch: str = Field(description="the switch it is attached to")
    port: str = Field(description="the switch port (interface name) it is attached to: "
                      "its uplink is counted as received there, its downlink as sent")
    link_mbps: float = Field(gt=0, allow_inf_nan=False, description="its link's capacity, "
                             "Mbit/s, each direction")


class TrunkConfig(BaseModel):
    """A link between two switches (both directions)."""

    model_config = ConfigDict(extra="forbid")
    a: str = Field(description="one switch")
    b: str = Field(description="the other switch")
    a_port: str = Field(description="a's port towards b")
    b_port: str = Field(description="b's port towards a")
    mbps: float = Field(gt=0, allow_inf_nan=False, description="capacity, Mbit/s, each "
                        "direction")


class NetworkConfig(BaseModel):
    """The network the cluster's traffic crosses."""

    model_config = ConfigDict(extra="forbid")
    switches: list[SwitchConfig] = Field(min_length=1, description="the switches")
    hosts: list[HostConfig] = Field(min_length=1, description="the worker machines")
    trunks: list[TrunkConfig] = Field([], description="switch-to-switch links")


class TopologyConfig(BaseModel):
    """A topology to manage (by name; it may be submitted later, killed or rebalanced
    while the manager runs)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, description="the topology's name in Storm")
    policy: str = Field("appaware", description="its allocation policy (tcp, appaware, "
                        "maxmin, weighted, observe); switchable live through the API")
    tuple_bytes: dict[str, float] = Field({}, description="bytes per tuple of an edge "
                                          "'SRC->DST' until the switch has measured it "
                                          "(default 1024)")

    @field_validator("policy")
    @classmethod
    def _policy(cls, v: str) -> str:
        check_policy(v)
        return v


class ManagerSettings(BaseModel):
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
    keep_allocations: int = Field(200_000, ge=100, description="allocation records kept "
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
        return _address(v, "the manager's API")


class ClusterConfig(BaseModel):
    """``streamband manage --config cluster.yaml``: a Storm cluster, an OpenFlow
    controller, the network between them, the topologies to manage, the service."""

    model_config = ConfigDict(extra="forbid")
    storm: StormEndpoints
    controller: ControllerEndpoint
    network: NetworkConfig
    topologies: list[TopologyConfig] = Field(min_length=1)
    manager: ManagerSettings


def check_policy(name: str) -> str:
    """``name`` if it is ``tcp`` or a manager-loop policy; else a SpecError line."""
    from streamband.alloc.registry import POLICIES, policy_entry

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
    from streamband.experiments.spec import load_yaml

    path = Path(path)
    if not path.is_file():
        raise SpecError(f"--config: {path}: no such file")
    data = load_yaml(path, "cluster config")
    try:
        cfg = ClusterConfig.model_validate(data)
    except ValidationError as exc:
        raise SpecError(one_line(exc, str(path), ClusterConfig)) from None
    net = cfg.network
    names = [s.name for s in net.switches]
    for i, h in enumerate(net.hosts):
        if h.switch not in names:
            raise SpecError(f"{path}: network.hosts.{i}.switch: unknown switch {h.switch!r}, "
                            f"expected one of {', '.join(names)}")
    for i, t in enumerate(net.trunks):
        for end in ("a", "b"):
            if getattr(t, end) not in names:
                raise SpecError(f"{path}: network.trunks.{i}.{end}: unknown switch "
                                f"{getattr(t, end)!r}, expected one of {', '.join(names)}")
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
    """The token in the environment variable ``env`` (None when unset or empty)."""
    return (os.environ.get(env) or None) if env else None


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


# -- the profiler endpoint -----------------------------------------------------------------
def check_report(rec: Any) -> str | None:
    """Why a report is garbage (``malformed``, ``not_finite``, ``negative``, ``absurd``),
    or None when every number in it is a finite count within reason."""
    if not isinstance(rec, dict) or not isinstance(rec.get("type"), str) \
            or not isinstance(rec.get("topology"), str):
        return "malformed"
    bad: list[str] = []

    def walk(v: Any, key: str) -> None:
        if isinstance(v, bool):
            return
        if isinstance(v, int | float):
            if not math.isfinite(v):
                bad.append("not_finite")
            elif v < 0 and key != "port":  # a worker without a slot reports port -1
                bad.append("negative")
            elif abs(v) > ABSURD:
                bad.append("absurd")
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(x, str(k))
        elif isinstance(v, list):
            for x in v:
                walk(x, key)

    walk(rec, "")
    return bad[0] if bad else None


#: the fields of a task's report that are not counters from the task's start: gauges and
#: bookkeeping, taken as reported
NOT_COUNTERS = frozenset({"t", "recv", "task", "port", "pending"})


def _counters(rec: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in rec.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and k not in NOT_COUNTERS}


class CounterCarry:
    """A task's counters across its restarts (a worker killed and launched again reports
    from zero): a counter that goes down marks a restart, and everything the task had
    counted before it is carried into every later report, so the topology's totals only
    grow. Maxima (``*_max_ms``) carry their maximum. A report older (by the task's own
    clock ``t``) than the last one taken is stale (a datagram overtaken): None."""

    def __init__(self) -> None:
        self.last: dict[str, dict[str, float]] = {}  # key -> the task's last raw counters
        self.base: dict[str, dict[str, float]] = {}  # key -> carried from earlier lives
        self.t: dict[str, float] = {}
        self.restarts = 0

    def apply(self, key: str, rec: dict[str, Any]) -> dict[str, Any] | None:
        t = float(rec.get("t", 0.0))
        if t < self.t.get(key, 0.0):
            return None
        self.t[key] = t
        now = _counters(rec)
        prev = self.last.get(key)
        base = self.base.setdefault(key, {})
        if prev is not None and any(now.get(k, 0.0) < v for k, v in prev.items()
                                    if not k.endswith("_max_ms")):
            self.restarts += 1
            for k, v in prev.items():
                base[k] = max(base.get(k, 0.0), v) if k.endswith("_max_ms") \
                    else base.get(k, 0.0) + v
        self.last[key] = now
        if not base:
            return rec
        out = dict(rec)
        for k, v in base.items():
            out[k] = max(v, now.get(k, 0.0)) if k.endswith("_max_ms") else v + now.get(k, 0.0)
        return out

    def forget(self, keys: list[str]) -> None:
        for k in keys:
            self.last.pop(k, None)
            self.base.pop(k, None)
            self.t.pop(k, None)


class ProfileReceiver:
    """Receives the workers' and tasks' datagrams on ``listen`` (UDP) and keeps the latest
    of each reporting thing, like :mod:`streamband.storm.collector`, in this process;
    :meth:`write` puts them where :class:`StormProfiler` reads them. A task's counters
    survive its worker's restart (:class:`CounterCarry`)."""

    def __init__(self, listen: str, snapshot: Path) -> None:
        host, _, port = listen.rpartition(":")
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self.sock.bind((host, int(port)))
        except OSError as exc:
            self.sock.close()
            raise PreconditionError(f"storm.profiler: cannot listen on {listen} (UDP): "
                                    f"{exc.strerror}") from None
        self.sock.settimeout(0.2)
        self.snapshot = snapshot
        self.latest: dict[str, dict[str, dict[str, Any]]] = {"flow": {}, "spout": {}, "sink": {}}
        self.received = 0
        self.rejected: Counter[str] = Counter()
        self.last_flow: dict[str, float] = {}  # topology id -> time of its newest flow report
        self.carry = CounterCarry()
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="profiler", daemon=True)

    def start(self) -> ProfileReceiver:
        self.thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data, _ = self.sock.recvfrom(65536)
            except (TimeoutError, OSError):
                continue
            self.take(data)

    def take(self, data: bytes) -> str | None:
        """Keep one datagram; returns why it was rejected, or None."""
        try:
            rec = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError):
            rec = None
        why = check_report(rec)
        with self.lock:
            if why:
                self.rejected[why] += 1
                return why
            now = time.time()
            rec["recv"] = now
            key = report_key(rec)
            if rec["type"] in ("spout", "sink"):
                carried = self.carry.apply(key, rec)
                if carried is None:
                    return None
                rec = carried
            self.latest.setdefault(str(rec["type"]), {})[key] = rec
            self.received += 1
            if rec["type"] == "flow":
                self.last_flow[rec["topology"]] = now
        return None

    def view(self) -> dict[str, Any]:
        with self.lock:
            return {"time": time.time(), "received": self.received,
                    **{k: dict(v) for k, v in self.latest.items()}}

    def write(self) -> dict[str, Any]:
        """Write the snapshot (atomically) and return it."""
        snap = self.view()
        tmp = self.snapshot.with_suffix(".tmp")
        tmp.write_text(json.dumps(snap))
        os.replace(tmp, self.snapshot)
        return snap

    def forget(self, topology_id: str) -> None:
        """Drop a killed topology's reports."""
        with self.lock:
            for kind in self.latest.values():
                gone = [k for k, r in kind.items() if r.get("topology") == topology_id]
                for k in gone:
                    del kind[k]
                self.carry.forget(gone)
            self.last_flow.pop(topology_id, None)

    def stop(self) -> None:
        self._stop.set()
        if self.thread.is_alive():
            self.thread.join(2)
        self.sock.close()


# -- the flow mapper ----------------------------------------------------------------------
def flow_match(p: WorkerPair) -> dict[str, Any]:
    """The meter match of a remote worker pair (its receiving worker's slot port)."""
    return {"src_ip": p.src.host, "dst_ip": p.dst.host, "proto": "tcp", "dst_port": p.dst.port}


@dataclass
class FlowMapping:
    """The network flows of one placement: flow ``i`` is ``keys[i]``, carrying the worker
    pairs ``members[i]`` (indices into ``pairs``), on the links of row ``i`` of
    ``routing``; ``unrouted``: pairs between hosts the config does not list."""

    pairs: list[WorkerPair]
    keys: list[dict[str, Any]]
    names: list[str]
    members: list[list[int]]
    routing: sp.csr_matrix
    paths: list[list[int]]
    bytes_hint: list[float]
    unrouted: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.keys)


def map_flows(info: dict[str, Any], edges: list[tuple[str, str]], net: Network,
              tuple_bytes: dict[str, float] | None = None) -> FlowMapping:
    """The network flows of a placement (Nimbus's ``topology_info``) and its edges."""
    hint = tuple_bytes or {}
    pairs, unrouted = [], []
    for p in component_pairs(info, [e for e in edges if not e[0].startswith("__")]):
        if not p.remote:
            continue
        if p.src.host in net.dpid and p.dst.host in net.dpid:
            pairs.append(p)
        else:
            unrouted.append(p.name)
    keys: list[dict[str, Any]] = []
    members: list[list[int]] = []
    where: dict[tuple[Any, ...], int] = {}
    for i, p in enumerate(pairs):
        k = flow_match(p)
        t = tuple(sorted(k.items()))
        if t not in where:
            where[t] = len(keys)
            keys.append(k)
            members.append([])
        members[where[t]].append(i)
    names = [f"{k['src_ip']}->{k['dst_ip']}:{k['dst_port']}" for k in keys]
    router = Router(net.topo, "ecmp")
    ends = [(k["src_ip"], k["dst_ip"]) for k in keys]
    paths = [list(x) for x in router.paths(ends, ends)] if keys else []
    routing = routing_matrix(paths, len(net.topo.links)) if keys else sp.csr_matrix(
        (0, len(net.topo.links)))
    bytes_hint = []
    for i in range(len(pairs)):
        a, b = pairs[i].label.split("->")
        bytes_hint.append(float(hint.get(f"{a.split('[')[0]}->{b.split('[')[0]}",
                                         DEFAULT_TUPLE_BYTES)))
    return FlowMapping(pairs, keys, names, members, routing.tocsr(), paths, bytes_hint,
                       unrouted)


class GarbageState(ValueError):
    """A flow state the policy must not see (a non-finite, negative or absurd value)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def check_state(state: FlowState) -> None:
    """Raise :class:`GarbageState` unless every field is a finite count within reason."""
    for name in ("ls0", "ls1", "lr0", "lr1", "sent"):
        a = np.asarray(getattr(state, name), float)
        if not np.all(np.isfinite(a)):
            raise GarbageState("not_finite")
        if np.any(a < 0):
            raise GarbageState("negative")
        if np.any(a > ABSURD):
            raise GarbageState("absurd")


class ClusterProfiler:
    """The 5-metric tuple of every network flow of one topology (000 §IV-A1): the
    worker pairs' states from :class:`StormProfiler` (no socket view: bytes from messages
    times bytes per message) summed per flow; the bytes sent, and from them the bytes per
    message, measured by each flow's counting rule on its switch (``counters()``: the
    controller's cumulative bytes per flow key)."""

    def __init__(self, snapshot: Path, topology_id: str, mapping: FlowMapping,
                 counters: Any) -> None:
        self.mapping = mapping
        self.counters = counters
        self.inner = StormProfiler(snapshot, topology_id, mapping.pairs,
                                   hint_bytes=mapping.bytes_hint)
        self.keys = [tuple(sorted(k.items())) for k in mapping.keys]
        self._bytes = self._switch_bytes()
        self.last: dict[str, Any] | None = None

    def _switch_bytes(self) -> np.ndarray:
        got = self.counters()
        return np.array([got.get(k, np.nan) for k in self.keys], float)

    def flow_state(self) -> FlowState:
        m = self.mapping
        pair = self.inner.flow_state()
        msgs = np.asarray(self.inner.last["msgs"], float) if self.inner.last else np.zeros(
            len(m.pairs))
        now = self._switch_bytes()
        measured = now - self._bytes  # NaN where not counted, negative after a re-install
        self._bytes = now
        agg = [np.zeros(m.n) for _ in range(5)]
        for f, idx in enumerate(m.members):
            for j, a in enumerate((pair.ls0, pair.ls1, pair.lr0, pair.lr1, pair.sent)):
                agg[j][f] = float(np.sum(np.asarray(a)[idx]))
            d_msgs = float(msgs[idx].sum())
            if np.isfinite(measured[f]) and measured[f] >= 0:
                agg[4][f] = measured[f]
                if d_msgs > 0 and measured[f] > 0:
                    bpm = measured[f] / d_msgs
                    self.inner.bpm[idx] = 0.5 * self.inner.bpm[idx] + 0.5 * bpm
        state = FlowState(*agg)
        self.last = {"sent": agg[4].tolist(), "ls": agg[1].tolist(), "lr": agg[3].tolist(),
                     "bytes_per_msg": self.inner.bpm.tolist()}
        check_state(state)
        return state


def throughput(before: dict[str, float], after: dict[str, float], seconds: float
               ) -> tuple[float | None, float | None]:
    """Tuples per second at the sinks and their mean event-time latency (s) between two
    :func:`~streamband.backends.storm.app_totals` readings (None: no sink reports)."""
    if "sink.count" not in after or seconds <= 0:
        return None, None
    n = after["sink.count"] - before.get("sink.count", 0.0)
    lat = after.get("sink.latency_sum_ms", 0.0) - before.get("sink.latency_sum_ms", 0.0)
    return max(n, 0.0) / seconds, (lat / n / 1e3 if n > 0 else None)


__all__ = ["ClusterConfig", "ClusterProfiler", "CounterCarry", "FlowMapping", "GarbageState",
           "Network", "ProfileReceiver", "Runner", "app_totals", "check_report", "check_state",
           "load_config", "map_flows", "throughput"]


class Runner:
    """The cluster backend runs as a service, not as the runner of an experiment."""

    name = "cluster"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise PreconditionError("--backend cluster: a real cluster is managed as a service, "
                                "not by an experiment: streamband manage --config "
                                "cluster.yaml")
