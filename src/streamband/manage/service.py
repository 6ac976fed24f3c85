"""``streamband manage --config cluster.yaml``: the manager of 000 Fig. 4 / §V-A as a
long-running service beside a Storm cluster, a Flink cluster or both, known by their
addresses (:mod:`streamband.manage.config`), never Mininet.

Each engine is a source of placements and flow states
(:class:`~streamband.loop.engine.Engine`): :class:`~streamband.storm.engine.StormEngine`
(Nimbus and the workers' reports), :class:`~streamband.flink.engine.FlinkEngine` (the
REST API and the reporter plug-in's). Past it a Flink job is managed as a Storm topology
is, and "topology" below means either.

Every Δt, for every managed topology that runs: observe (its engine's profiler summed per
flow, :class:`~streamband.loop.engine.SwitchMeasured`, and link statistics), decide (its
policy, switchable live), then one enforcement of every topology's flows through the
enforcer the config's ``enforce`` names, as the benches use them: OpenFlow meters on the
senders' switches that police (:class:`~streamband.loop.openflow.MeterEnforcer`, the
default) or HTB classes on the switch egress ports of each flow's path that queue
(:class:`~streamband.loop.openflow.ShaperEnforcer`); one batch, leased for 3 Δt, or 3 x
the longest recent gap between steps when they run late,
:class:`~streamband.loop.manager.Lease`, so a dead manager fails open (the controller
drops the meters, or the classes and the ports share as plain TCP). The rules of safety
are the same for both:

- a report or a flow state with a non-finite, negative or absurd value is rejected and
  counted, never enforced; the step keeps the last safe allocation (``hold``);
- while the profiler is silent the last safe allocation is held; once it has been silent
  ``hold_intervals`` Δt every flow is uncapped (``fail-open``: plain TCP);
- the controller unreachable: nothing is pushed (the controller's leases expire, the
  switches forward on); when it is back the allocation is installed again in full;
- a flow whose counting rule is new (after a restart of the manager or the controller)
  has no measured rate yet: its traffic would read as cross traffic (000 §IV-A2) and
  shrink the allocatable capacity, so the step holds until every counter has a rate.

Every ``placement_every_s`` each engine is asked for its topologies and their placement
(Nimbus; Flink's REST API): a topology submitted, killed or rebalanced, a job canceled
and submitted again, is picked up (placement re-read, flows re-mapped) while the service
runs. The state directory (:mod:`streamband.manage.state`) keeps the policies,
allocations, leases, the last safe allocation and the routing; a restarted service
re-applies the last safe allocation at once if its lease would still run.

The dashboard, its JSON API and ``/metrics`` are served by :mod:`.dashboard`.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from streamband.alloc.base import GarbageState
from streamband.alloc.registry import POLICIES
from streamband.errors import OptionError, PreconditionError
from streamband.flink.engine import FlinkEngine
from streamband.loop.engine import Engine, EngineError, FlowMapping, SwitchMeasured
from streamband.loop.guard import HarmGuard, paced_links
from streamband.loop.live import ManagerMetrics, next_slot
from streamband.loop.manager import LEASE_STEPS, Allocation, Lease, Manager
from streamband.loop.openflow import (
    ControllerLinkStats,
    MeterEnforcer,
    ShaperEnforcer,
    egress_ports,
    port_rates,
)
from streamband.loop.reports import ProfileReceiver, app_totals, throughput
from streamband.manage.config import (
    ClusterConfig,
    Network,
    TopologyConfig,
    check_policy,
    secret,
)
from streamband.manage.state import State
from streamband.model.routing import routing_matrix
from streamband.sdn.auth import LOOPBACK
from streamband.sdn.client import ControllerClient, ControllerError
from streamband.storm.engine import StormEngine

#: points of history the dashboard's charts show per topology
SERIES = 300
#: what each engine's pairs (one TCP connection each) are called
PAIRS = {"storm": "worker pairs", "flink": "TaskManager pairs"}


class StepCounters:
    """The controller's port and flow counters, read once per step and shared by every
    topology's link statistics and profiler (the ``client`` of ControllerLinkStats)."""

    def __init__(self, client: ControllerClient) -> None:
        self.client = client
        self._ports: list[dict[str, Any]] = []
        self._flows: list[dict[str, Any]] = []
        self._settled: set[tuple[Any, ...]] = set()

    def refresh(self) -> None:
        before = self.bytes_by_key()
        self._ports = self.client.ports()
        self._flows = self.client.flows()
        now = self.bytes_by_key()
        bps = {_key(m["flow"]): float(m["bps"]) for m in self._flows}
        # a counter is trusted once it was there a step ago, has not restarted, and shows
        # in its rate what it counted (a rule the controller just installed has bytes but
        # no rate until its second poll)
        self._settled = {k for k, b in now.items()
                         if k in before and b >= before[k] and (b == before[k] or bps[k] > 0)}

    def settled(self, keys: list[dict[str, Any]]) -> bool:
        """Whether every flow of ``keys`` has a measured rate the link statistics can use
        (not a counting rule installed since the last step: after a manager's restart or
        a controller's, a flow counted as 0 would read as cross traffic)."""
        return all(_key(k) in self._settled for k in keys)

    def ports(self) -> list[dict[str, Any]]:
        return self._ports

    def flows(self) -> list[dict[str, Any]]:
        return self._flows

    def bytes_by_key(self) -> dict[tuple[Any, ...], float]:
        """Cumulative bytes of every counted flow, by its match (sorted items)."""
        out = {}
        for m in self._flows:
            out[_key(m["flow"])] = float(m["bytes"])
        return out

    def link_used(self, net: Network) -> np.ndarray:
        return port_rates(self._ports, net.ports)


def _match(flow: dict[str, Any]) -> dict[str, Any]:
    """A controller flow key as the manager writes it (ports it leaves out dropped)."""
    k = {"src_ip": flow["src_ip"], "dst_ip": flow["dst_ip"], "proto": flow.get("proto", "tcp")}
    for p in ("src_port", "dst_port"):
        if flow.get(p):
            k[p] = flow[p]
    return k


def _key(flow: dict[str, Any]) -> tuple[Any, ...]:
    """A flow key as a hashable value (its items, sorted)."""
    return tuple(sorted(_match(flow).items()))


class _Collect:
    """The enforcer a topology's Manager sees: it keeps the rates, the service pushes
    every topology's together."""

    def __init__(self) -> None:
        self.rates = np.zeros(0)

    def enforce(self, rates_bps: np.ndarray) -> None:
        self.rates = np.asarray(rates_bps, float).copy()


def policy_fn(name: str) -> Any:
    """The loop function of ``name`` (``tcp``: the loop observes, caps nothing)."""
    return POLICIES["observe" if name == "tcp" else name].fn


@dataclass
class Managed:
    """One managed topology (or job): its engine, its policy, where it runs, its flows
    and their adapters."""

    cfg: TopologyConfig
    policy: str
    engine: str = "storm"
    id: str | None = None
    status: str = "not submitted"
    signature: tuple[Any, ...] | None = None
    placement: dict[str, Any] = field(default_factory=dict)
    mapping: FlowMapping | None = None
    profiler: SwitchMeasured | None = None
    linkstats: ControllerLinkStats | None = None
    manager: Manager | None = None
    collect: _Collect = field(default_factory=_Collect)
    rates: np.ndarray = field(default_factory=lambda: np.zeros(0))
    safe: np.ndarray | None = None
    decision: str = ""
    rebase: bool = True
    mapped_at: float = 0.0
    totals: dict[str, float] = field(default_factory=dict)
    totals_time: float = 0.0
    tput: float | None = None
    latency_s: float | None = None
    series: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=SERIES))

    @property
    def name(self) -> str:
        return self.cfg.name


class Service:
    """The manager service of one ``cluster.yaml`` (start, stop, one step, the views
    the dashboard serves)."""

    def __init__(self, cfg: ClusterConfig) -> None:
        self.cfg = cfg
        self.dt = cfg.manager.dt_s
        self.net = Network.from_config(cfg.network)
        self.token = self.check(cfg)
        self.metrics = ManagerMetrics()
        self.client = ControllerClient(cfg.controller.api, secret(cfg.controller.token_env),
                                       timeout=max(1.0, min(5.0, self.dt)))
        self.counters = StepCounters(self.client)
        #: every topology's flows are pushed as one batch through one enforcer, under
        #: one lease that late steps stretch (as every backend's Manager does)
        self.enforcer: MeterEnforcer = (
            ShaperEnforcer(self.client, [], [], self.dt, links=self.net.egress_rates())
            if cfg.enforce == "shaper" else MeterEnforcer(self.client, [], self.dt))
        self.metrics.enforce.labels(cfg.enforce).set(1)
        self.lease = Lease(self.dt)
        self.lease_s = LEASE_STEPS * self.dt  # the lease of the last push
        self.engines: dict[str, Engine] = {}
        if cfg.storm is not None:
            self.engines["storm"] = StormEngine(cfg.storm.nimbus, cfg.storm.placement_every_s)
        if cfg.flink is not None:
            self.engines["flink"] = FlinkEngine(cfg.flink.rest, cfg.flink.placement_every_s)
        self.state: State = None  # type: ignore[assignment]  # opened by start()
        #: one profile receiver per profiler address (engines may share one), each with
        #: its snapshot: profile.json, and profile-flink.json for a receiver of its own
        self.listen = profiler_addresses(cfg)
        self.snapshots: dict[str, Path] = {}
        for engine, addr in self.listen.items():
            if addr not in self.snapshots:
                self.snapshots[addr] = Path(cfg.manager.state_dir) / (
                    f"profile-{engine}.json" if self.snapshots else "profile.json")
        self.receivers: dict[str, ProfileReceiver] = {}
        self.tops = {t.name: Managed(t, t.policy, cfg.engine_of(t)) for t in cfg.topologies}
        for t in cfg.topologies:
            self.metrics.info.labels(t.name, cfg.engine_of(t)).set(1)
        self.lock = threading.RLock()
        self.alerts: dict[str, dict[str, Any]] = {}
        self.meters: list[dict[str, Any]] = []
        self.links: deque[dict[str, Any]] = deque(maxlen=SERIES)
        self.steps = 0
        self.starts = 0
        self.started_at = time.time()
        self._pushed = False
        #: topology -> (until, flow keys, rates, paths): a resumed allocation not yet
        #: re-mapped
        self.resumed: dict[str, tuple[float, list[dict[str, Any]], list[float],
                                      list[list[int]]]] = {}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    @staticmethod
    def check(cfg: ClusterConfig, ports: bool = False) -> str | None:
        """The API's token; raises when the config cannot run: off loopback without a
        token, a token an HTTP header cannot carry (this API's or the controller's) and,
        with ``ports``, a listen or profiler port that cannot be had now (both are bound
        as a start would bind them, then let go)."""
        token = secret(cfg.manager.token_env)
        secret(cfg.controller.token_env)
        host = cfg.manager.listen.rpartition(":")[0].strip("[]")
        if host not in LOOPBACK and not token:
            raise OptionError(f"manager.listen {cfg.manager.listen}: off loopback the API needs "
                              f"a token in ${cfg.manager.token_env or '(manager.token_env)'}")
        if ports:
            bind(cfg.manager.listen).close()
            held = []
            try:  # both at once: two engines' receivers on one port cannot both bind
                for engine, addr in profiler_addresses(cfg).items():
                    if addr not in [a for a, _ in held]:
                        held.append((addr, ProfileReceiver(addr, Path(os.devnull),
                                                           f"{engine}.profiler")))
            finally:
                for _, rx in held:
                    rx.stop()
        return token

    # -- life cycle ---------------------------------------------------------------------
    def start(self) -> Service:
        """Bind the profiler endpoints, resume from the state, start the loop and the
        placement watchers (one per engine)."""
        try:
            for engine, addr in self.listen.items():
                if addr not in self.receivers:
                    self.receivers[addr] = ProfileReceiver(addr, self.snapshots[addr],
                                                           f"{engine}.profiler")
            self.state = State(self.cfg.manager.state_dir, self.cfg.manager.keep_allocations)
        except BaseException:
            for rx in self.receivers.values():
                rx.stop()
            raise
        for rx in self.receivers.values():
            rx.start()
        for name, policy in self.state.policies().items():
            if name in self.tops:
                self.tops[name].policy = policy  # as last switched through the API
        self.starts = self.state.started()
        self.state.event("start", f"start {self.starts} (Δt {self.dt:g} s, state "
                         f"{self.cfg.manager.state_dir})")
        self.resume()
        for engine in self.engines.values():
            self._watch_safe(engine)
        t = threading.Thread(target=self._run, name="manager", daemon=True)
        t.start()
        self._threads.append(t)
        for engine in self.engines.values():
            t = threading.Thread(target=self._watch, args=(engine,),
                                 name=f"placement-{engine.name}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(10)
        for rx in self.receivers.values():
            rx.stop()
        self.client.close()
        if self.state is not None:
            self.state.close()

    def _run(self) -> None:
        nxt = time.monotonic()
        while not self._stop.is_set():
            try:
                self.step()
                self._clear("error:step")
            except Exception as exc:  # a failed step must not stop the service
                self._error("step", f"{type(exc).__name__}: {exc}")
            nxt = next_slot(nxt, self.dt)
            self._stop.wait(max(0.0, nxt - time.monotonic()))

    def _watch(self, engine: Engine) -> None:
        while not self._stop.wait(engine.every_s):
            self._watch_safe(engine)

    def _watch_safe(self, engine: Engine) -> None:
        """:meth:`watch_engine`; whatever it raises is an alert, never the watcher's end."""
        try:
            self.watch_engine(engine)
            self._clear(f"error:placement-{engine.name}")
        except Exception as exc:
            self.metrics.errors.labels("placement").inc()
            self._alert(f"error:placement-{engine.name}", "error",
                        f"{type(exc).__name__}: {exc}")

    def receiver(self, mt: Managed) -> ProfileReceiver:
        """The receiver of ``mt``'s engine's reports."""
        return self.receivers[self.listen[mt.engine]]

    # -- alerts -----------------------------------------------------------------------------
    def _alert(self, key: str, kind: str, message: str, topology: str = "") -> None:
        with self.lock:
            if key not in self.alerts:
                self.alerts[key] = {"kind": kind, "message": message, "topology": topology,
                                    "since": time.time()}
                self.state.event(kind, message, topology)
            else:
                self.alerts[key]["message"] = message

    def _clear(self, key: str, message: str = "") -> None:
        with self.lock:
            a = self.alerts.pop(key, None)
        if a and message:
            self.state.event("recovered", message, a["topology"])

    def _controller_failed(self, exc: ControllerError) -> None:
        """Count and alert a failed call to the controller: unreachable, or up and refusing
        (an answer is not an outage, e.g. a port the shaper cannot ``tc``)."""
        self.metrics.controller_up.set(0 if exc.status is None else 1)
        self.metrics.errors.labels("controller").inc()
        self._alert("controller", "controller unreachable" if exc.status is None
                    else "controller refused", str(exc))

    def _error(self, kind: str, message: str) -> None:
        self.metrics.errors.labels(kind).inc()
        self._alert(f"error:{kind}", "error", message)

    # -- resume -----------------------------------------------------------------------------
    def resume(self) -> None:
        """Re-apply each topology's last safe allocation if its lease would still run (the
        manager was down less than :data:`LEASE_STEPS` Δt), so a restart keeps the caps in
        place."""
        now = time.time()
        keys: list[dict[str, Any]] = []
        rates: list[float] = []
        paths: list[list[int]] = []
        kept = []
        routing = self.state.routing()
        for name, (when, flows, safe) in self.state.safe().items():
            if name not in self.tops or now - when > LEASE_STEPS * self.dt:
                continue
            kept.append(name)
            mine = [float(r) for r in safe]  # inf: uncapped
            until = when + (self.cfg.manager.hold_intervals + LEASE_STEPS) * self.dt
            routes = saved_paths(routing.get(name), flows)
            self.resumed[name] = (until, list(flows), mine, routes)
            keys += flows
            rates += mine
            paths += routes
        if not keys:
            return
        enf = self.aim(keys, paths)
        enf.lease_s = self.lease_s = self.lease.at(now)
        try:
            enf.enforce(np.array(rates))
            self.state.event("resume", f"re-applied the last safe allocation of "
                             f"{', '.join(kept)} ({len(keys)} flows)")
        except ControllerError as exc:
            self._controller_failed(exc)

    # -- the flow mapper --------------------------------------------------------------------
    def watch_once(self) -> None:
        """Re-read every engine's topologies and placements; re-map what changed."""
        for engine in self.engines.values():
            self.watch_engine(engine)

    def watch_engine(self, engine: Engine) -> None:
        """Re-read ``engine``'s topologies and placements; re-map what changed."""
        try:
            listing = engine.jobs()
        except EngineError as exc:
            self.metrics.errors.labels(engine.name).inc()
            self._alert(engine.name, f"{engine.api} unreachable", str(exc))
            return
        self._clear(engine.name, f"{engine.api} answers again")
        for mt in [m for m in self.tops.values() if m.engine == engine.name]:
            job = listing.get(mt.name)
            if job is None or job.gone:
                if mt.id is not None:
                    self._unmap(mt, f"{engine.noun} {mt.name} is gone from {engine.api} "
                                f"({mt.id})")
                mt.status = "not submitted" if job is None else job.status
                continue
            try:
                placed = engine.placement(job.id)
                mt.status = job.status
                if placed is None:
                    continue  # being scheduled
                sig, info = placed
                if sig != mt.signature or job.id != mt.id:
                    self._map(mt, engine, job.id, sig, info)
            except EngineError as exc:
                self.metrics.errors.labels(engine.name).inc()
                self._alert(f"{engine.name}:{mt.name}", f"{engine.api} unreachable", str(exc),
                            mt.name)
                continue
            self._clear(f"{engine.name}:{mt.name}")

    def _map(self, mt: Managed, engine: Engine, topology_id: str, signature: Any,
             info: dict[str, Any]) -> None:
        mapping = engine.flows(topology_id, info, self.net.topo, mt.cfg.tuple_bytes)
        rx = self.receiver(mt)
        with self.lock:
            old = mt.id
            if old and old != topology_id:
                rx.forget(old)
            mt.id, mt.placement, mt.mapping = topology_id, info, mapping
            mt.signature = signature
            mt.profiler = engine.profiler(rx.snapshot, topology_id, mapping,
                                          self.counters.bytes_by_key)
            mt.linkstats = ControllerLinkStats(self.counters, self.net.topo.capacities,  # type: ignore[arg-type]
                                               self.net.ports, mapping.routing, mapping.keys)
            weights = np.array([float(np.mean([mapping.bytes_hint[i] for i in idx]))
                                for idx in mapping.members])
            mt.manager = Manager(routing=mapping.routing, link_kind=self.net.topo.kinds,
                                 policy=policy_fn(mt.policy), profiler=mt.profiler,
                                 linkstats=mt.linkstats, enforcer=mt.collect, dt=self.dt,
                                 weights=weights, guard=self._guard(mt.policy),
                                 full_frac=self.cfg.manager.full_frac,
                                 paced=(None if mapping.sources is None else
                                        paced_links(mapping.routing, mapping.sources)))
            mt.rates = np.full(mapping.n, np.inf)
            mt.safe = self._saved(mt.name, mapping)
            mt.mapped_at = time.time()
            mt.rebase = True
            mt.series.clear()
            mt.totals, mt.totals_time = {}, 0.0
            self.metrics.flows(mt.name, mapping.names)
        self.state.set_routing(mt.name, topology_id, info, mapping.keys, mapping.paths)
        if mt.safe is None:
            self.state.drop_safe(mt.name)
        what = "placement read" if old is None else "placement changed, flows re-mapped"
        self.state.event("placement", f"{what}: {mapping.n} flows "
                         f"({len(mapping.pairs)} {PAIRS[mt.engine]}) on {len(mapping.paths)} "
                         "paths", mt.name)
        if mapping.unrouted:
            self._alert(f"unrouted:{mt.name}", "unmanaged flows", f"{len(mapping.unrouted)} "
                        f"{PAIRS[mt.engine]} between hosts the config does not list", mt.name)

    def _saved(self, name: str, mapping: FlowMapping) -> np.ndarray | None:
        """The stored last safe allocation of ``name`` if it is for these very flows and
        still within its hold (a restarted manager resumes with it)."""
        saved = self.state.safe().get(name)
        if saved is None:
            return None
        when, keys, rates = saved
        hold = (self.cfg.manager.hold_intervals + 3) * self.dt
        if keys != mapping.keys or time.time() - when > hold:
            return None
        return np.asarray(rates, float)

    def _unmap(self, mt: Managed, why: str) -> None:
        with self.lock:
            if mt.id:
                self.receiver(mt).forget(mt.id)
            mt.id, mt.signature, mt.mapping, mt.manager = None, None, None, None
            mt.profiler, mt.linkstats = None, None
            mt.rates, mt.safe = np.zeros(0), None
            self.metrics.flows(mt.name, [])
        self.state.drop_routing(mt.name)
        self.state.drop_safe(mt.name)
        self.state.event("placement", why, mt.name)

    # -- policies ---------------------------------------------------------------------------
    def _guard(self, policy: str) -> HarmGuard | None:
        """Do no harm (:mod:`streamband.loop.guard`) for a policy that caps, if the
        config asks for it."""
        return HarmGuard() if self.cfg.manager.guard and policy not in ("tcp",
                                                                        "observe") else None

    def set_policy(self, topology: str, policy: str) -> dict[str, Any]:
        """Switch ``topology``'s policy now (KeyError: no such topology; SpecError: no
        such policy)."""
        check_policy(policy)
        mt = self.tops[topology]
        with self.lock:
            old, mt.policy = mt.policy, policy
            if mt.manager is not None:
                mt.manager.policy = policy_fn(policy)
                mt.manager.guard = self._guard(policy)
        self.state.set_policy(topology, policy)
        self.state.event("policy", f"policy {old} -> {policy}", topology)
        return {"topology": topology, "policy": policy, "previous": old}

    # -- one step ---------------------------------------------------------------------------
    def step(self) -> None:
        """One allocation of every managed topology, pushed as one meter batch."""
        t0 = time.perf_counter()
        now = time.time()
        snaps = {addr: rx.write() for addr, rx in self.receivers.items()}
        snap = {name: snaps[self.listen[mt.engine]] for name, mt in self.tops.items()}
        self._count_rejected()
        try:
            self.counters.refresh()
        except ControllerError as exc:
            self._controller_failed(exc)
            with self.lock:  # the topologies' throughput is still seen (the profiler's)
                for mt in self.tops.values():
                    if mt.mapping is not None:
                        self._observe_app(mt, snap[mt.name], now)
            return
        with self.lock:
            keys: list[dict[str, Any]] = []
            rates: list[float] = []
            paths: list[list[int]] = []
            owners: list[str] = []
            done: list[tuple[Managed, Allocation | None, float]] = []
            for mt in self.tops.values():
                if mt.mapping is None or mt.manager is None:
                    continue
                alloc = self._decide(mt, now)
                keys += mt.mapping.keys
                rates += [float(r) for r in mt.rates]
                paths += mt.mapping.paths
                owners += [mt.name] * mt.mapping.n
                self._observe_app(mt, snap[mt.name], now)
                done.append((mt, alloc, now))
            for name, (until, kept_keys, kept_rates, kept_paths) in list(self.resumed.items()):
                if now < until and self.tops[name].mapping is None:
                    # resumed, not yet re-mapped: keep its caps a while
                    keys += kept_keys
                    rates += kept_rates
                    paths += kept_paths
                    owners += [name] * len(kept_keys)
                else:
                    del self.resumed[name]
            lease = self.lease.at(now)
            if not keys:
                return  # nothing to manage: whatever leases remain run out (fail-open)
            enf = self.aim(keys, paths)
            enf.lease_s = self.lease_s = lease
            meters = enf.meters(np.array(rates))
            try:
                enf.enforce(np.array(rates))
                res = enf.last
            except ControllerError as exc:
                self._controller_failed(exc)
                return
            self.metrics.controller_up.set(1)
            self._clear("controller", "the controller answers again; allocation installed")
            if res.get("installed") and self._pushed:
                self.state.event("installed", f"{res['installed']} of {len(meters)} flows "
                                 "installed on the controller (new flows, or a controller "
                                 "that lost them)")
            self._pushed = True
            self.state.set_leases([(o, m["flow"], m["rate_bps"])
                                   for o, m in zip(owners, meters, strict=True)], now + lease)
            spent = time.perf_counter() - t0
            self.metrics.latency.observe(spent)
            self.steps += 1
            for mt, alloc, when in done:
                self._account(mt, alloc, when, spent)
            self._account_links(now)
            self.meters = self.counters.flows()

    def aim(self, keys: list[dict[str, Any]], paths: list[list[int]]) -> MeterEnforcer:
        """The enforcer, set to push the flows ``keys`` (``paths[i]``: flow i's links) as
        one batch: each counted (and, with meters, metered) on its sender's edge switch;
        with the shaper, each one's classes on the switch egress ports of its path."""
        enf = self.enforcer
        enf.flows, enf.dpids = keys, [self.net.dpid.get(k["src_ip"]) for k in keys]
        if isinstance(enf, ShaperEnforcer):
            enf.ports = egress_ports(routing_matrix(paths, len(self.net.ports)),
                                     self.net.ports)
        return enf

    def _decide(self, mt: Managed, now: float) -> Allocation | None:
        """Set ``mt.rates`` and ``mt.decision``; returns the policy's allocation when the
        policy ran."""
        assert mt.manager is not None and mt.mapping is not None
        seen = self.receiver(mt).last_flow.get(mt.id or "")
        # silence counts from the last report, or from when this service began to listen
        age = now - (seen or max(self.started_at, mt.mapped_at))
        self.metrics.report_age.labels(mt.name).set(age)
        silence = f"no flow report for {age:.1f} s" if seen else "no flow report yet"
        stale_after = max(2.0, self.dt)
        open_after = max(stale_after + self.dt, self.cfg.manager.hold_intervals * self.dt)
        if age > stale_after:
            mt.rebase = True
            if mt.safe is not None and age <= open_after:
                mt.rates, mt.decision = mt.safe.copy(), "hold"
                self._alert(f"gap:{mt.name}", "profiler gap", f"{silence}: holding the "
                            "last safe allocation", mt.name)
            else:
                mt.rates, mt.decision = np.full(mt.mapping.n, np.inf), "fail-open"
                self._alert(f"gap:{mt.name}", "profiler gap", f"{silence}: failed open "
                            "(plain TCP)", mt.name)
            self.metrics.fail_open.labels(mt.name).set(1 if mt.decision == "fail-open" else 0)
            return None
        self._clear(f"gap:{mt.name}", "flow reports again")
        if mt.rebase or not self.counters.settled(mt.mapping.keys):
            # the first interval after a gap or a remap spans the silence; flows counted
            # by new rules have no rate yet, and their traffic would read as cross traffic
            mt.rebase = False
            try:
                mt.linkstats.allocatable()  # type: ignore[union-attr]
                mt.profiler.flow_state()  # type: ignore[union-attr]
            except GarbageState:
                pass
            mt.rates = mt.safe.copy() if mt.safe is not None else np.full(mt.mapping.n, np.inf)
            mt.decision = "hold"
            self.metrics.fail_open.labels(mt.name).set(0)
            return None
        try:
            alloc = mt.manager.step(now)
        except GarbageState as g:
            self.metrics.rejected.labels(g.reason).inc()
            self._alert(f"garbage:{mt.name}", "garbage metrics", f"a flow state with "
                        f"{g.reason} values was rejected", mt.name)
            mt.rates = mt.safe.copy() if mt.safe is not None else np.full(mt.mapping.n, np.inf)
            mt.decision = "hold"
            return None
        finally:
            del mt.manager.history[:-2]
            if mt.manager.guard is not None:
                del mt.manager.guard.decisions[:-2]
        rates = np.asarray(alloc.rates_bps, float)
        # 0 is an answer (000 eq. (4)'s x_f = max(0, ...): a receiver with backlog enough
        # for the interval), enforced at the meter floor; NaN and negatives are garbage
        if np.any(np.isnan(rates)) or np.any(rates < 0):
            self.metrics.rejected.labels("policy").inc()
            self._alert(f"garbage:{mt.name}", "garbage metrics", "the policy returned a rate "
                        "that is NaN or negative; not enforced", mt.name)
            mt.rates = mt.safe.copy() if mt.safe is not None else np.full(mt.mapping.n, np.inf)
            mt.decision = "hold"
            return None
        g = mt.manager.guard
        mt.decision = "guard" if g is not None and not g.capping else "policy"
        mt.rates, mt.safe = rates, rates.copy()
        self.metrics.fail_open.labels(mt.name).set(0)
        self.state.set_safe(mt.name, mt.mapping.keys, rates)
        return alloc

    def _count_rejected(self) -> None:
        got: Counter[str] = Counter()
        for rx in self.receivers.values():
            with rx.lock:
                got.update(rx.rejected)
                rx.rejected.clear()
        for why, n in got.items():
            self.metrics.rejected.labels(why).inc(n)
            self._alert("garbage:reports", "garbage metrics", f"{n} profiler reports with "
                        f"{why} values rejected")

    def _observe_app(self, mt: Managed, snap: dict[str, Any], now: float) -> None:
        tot = app_totals(snap, mt.id or "")
        if mt.totals_time and now - mt.totals_time >= 0.5:
            tput, lat = throughput(mt.totals, tot, now - mt.totals_time)
            mt.tput, mt.latency_s = tput, lat if lat is not None else mt.latency_s
            if tput is not None:
                self.metrics.throughput.labels(mt.name).set(tput)
            if mt.latency_s is not None:
                self.metrics.app_latency.labels(mt.name).set(mt.latency_s)
        if not mt.totals_time or now - mt.totals_time >= 0.5:
            mt.totals, mt.totals_time = tot, now

    def _account(self, mt: Managed, alloc: Allocation | None, now: float, spent: float) -> None:
        m = mt.mapping
        assert m is not None and mt.linkstats is not None
        measured = np.asarray(mt.linkstats.flow_rates if len(mt.linkstats.flow_rates) == m.n
                              else np.zeros(m.n), float)
        last = mt.profiler.last if mt.profiler and mt.profiler.last else {}
        ls = last.get("ls", [0.0] * m.n)
        lr = last.get("lr", [0.0] * m.n)
        self.metrics.allocations.labels(mt.name, mt.decision).inc()
        if alloc is not None:
            self.metrics.policy_seconds.labels(mt.name).observe(alloc.optimizer_s)
        for i, name in enumerate(m.names):
            self.metrics.rate.labels(mt.name, name).set(float(mt.rates[i]))
            self.metrics.measured.labels(mt.name, name).set(float(measured[i]))
            self.metrics.backlog.labels(mt.name, name, "sender").set(float(ls[i]))
            self.metrics.backlog.labels(mt.name, name, "receiver").set(float(lr[i]))
        self.state.record(mt.name, mt.policy, mt.decision, m.names, mt.rates,
                          alloc.optimizer_s * 1e3 if alloc else None, spent * 1e3, now)
        mt.series.append({"t": now, "rate": [None if not np.isfinite(r) else float(r)
                                             for r in mt.rates],
                          "measured": measured.tolist(), "ls": list(ls), "lr": list(lr),
                          "tput": mt.tput, "latency_s": mt.latency_s,
                          "decision": mt.decision})

    def _account_links(self, now: float) -> None:
        used = self.counters.link_used(self.net)
        cap = self.net.topo.capacities
        for i, name in enumerate(self.net.names):
            self.metrics.used.labels(name).set(float(used[i]))
            self.metrics.capacity.labels(name).set(float(cap[i]))
        flows = self.counters.flows()
        capped = sum(1 for f in flows if f["rate_bps"])
        if isinstance(self.enforcer, ShaperEnforcer):
            # the shaper's caps are rate classes, the flows' meters only count them
            capped = len({_key(i["flow"]) for i in self.enforcer.pushed
                          if i["rate_bps"] is not None})
        self.metrics.leases.labels("capped").set(capped)
        self.metrics.leases.labels("counted").set(len(flows) - capped)
        self.links.append({"t": now, "util": (used / cap).tolist()})

    # -- views ------------------------------------------------------------------------------
    def status(self, points: int = SERIES) -> dict[str, Any]:
        """Everything the dashboard shows, as JSON."""
        with self.lock:
            tops = []
            for mt in self.tops.values():
                m = mt.mapping
                tops.append({
                    "name": mt.name, "engine": mt.engine, "id": mt.id, "status": mt.status,
                    "policy": mt.policy,
                    "decision": mt.decision,
                    "guard": None if mt.manager is None or mt.manager.guard is None else {
                        "capping": mt.manager.guard.capping, "moved": mt.manager.guard.moved},
                    "flows": [] if m is None else [
                        {"name": n, "key": k, "pairs": [m.pairs[i].label for i in idx],
                         "path": [self.net.names[lk] for lk in path]}
                        for n, k, idx, path in zip(m.names, m.keys, m.members, m.paths,
                                                   strict=True)],
                    "unrouted": [] if m is None else m.unrouted,
                    "reporters": [] if mt.id is None else self.receiver(mt).reporters(mt.id),
                    "throughput_tps": mt.tput, "latency_s": mt.latency_s,
                    "totals": mt.totals,
                    "series": list(mt.series)[-points:],
                })
            return {
                "time": time.time(), "started": self.started_at, "starts": self.starts,
                "dt_s": self.dt, "steps": self.steps, "lease_s": self.lease_s,
                "enforce": self.cfg.enforce,
                "policies": ["tcp"] + [n for n, e in POLICIES.items() if e.kind == "loop"],
                "topologies": tops,
                "links": {"names": self.net.names,
                          "capacity_bps": self.net.topo.capacities.tolist(),
                          "series": list(self.links)[-points:]},
                "meters": self.meters,
                "rates": (self.enforcer.pushed if isinstance(self.enforcer, ShaperEnforcer)
                          else []),
                "alerts": sorted(self.alerts.values(), key=lambda a: a["since"]),
                "events": self.state.events(30),
            }


def saved_paths(routing: dict[str, Any] | None, keys: list[dict[str, Any]]
                ) -> list[list[int]]:
    """Each flow of ``keys``' path as the state's routing of its topology keeps it (no
    link where it keeps none: the flow is counted, never shaped)."""
    saved = {} if routing is None else {_key(k): p for k, p in zip(
        routing["flows"], routing["paths"], strict=True)}
    return [list(saved.get(_key(k), [])) for k in keys]


def profiler_addresses(cfg: ClusterConfig) -> dict[str, str]:
    """Engine -> the address its profiler endpoint listens on (engines may share one)."""
    out = {}
    for engine in ("storm", "flink"):
        section = getattr(cfg, engine)
        if section is not None:
            out[engine] = section.profiler
    return out


def bind(listen: str) -> socket.socket:
    """A listening TCP socket on ``HOST:PORT`` (one clear line if it cannot be had)."""
    host, _, port = listen.rpartition(":")
    host = host.strip("[]")
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        ipaddress.ip_address(host if host != "localhost" else "127.0.0.1")
    except ValueError:
        raise OptionError(f"manager.listen: {host!r} is not an IP address") from None
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((host, int(port)))
    except OSError as exc:
        s.close()
        raise PreconditionError(f"manager.listen: cannot listen on {listen}: "
                                f"{exc.strerror}") from None
    s.listen(64)
    return s


def serve(cfg: ClusterConfig) -> None:
    """Run the service until SIGTERM / SIGINT (the dashboard in this thread)."""
    import uvicorn

    from streamband.manage.dashboard import create_app

    service = Service(cfg)
    sock = bind(cfg.manager.listen)  # before anything is created: a busy port stops here
    try:
        service.start()
    except BaseException:
        sock.close()
        raise
    server = uvicorn.Server(uvicorn.Config(create_app(service), log_level="warning",
                                           access_log=False))
    try:
        server.run(sockets=[sock])
    finally:
        service.stop()
        sock.close()
