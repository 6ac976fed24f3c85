"""The testbed as a backend: Mininet hosts, Open vSwitch (userspace datapath,
OpenFlow 1.3 meters), the os-ken controller and real TCP, with the traffic harness
(:mod:`streamband.testbed.harness`) as the workload.

Adapters: :class:`HarnessProfiler` (the application profiler of 000 §V-A2: the
5-metric tuple of every flow, 000 §IV-A1, from the snapshots the harness workers write
every half second), and the network half shared by every real backend
(:mod:`streamband.loop.openflow`): :class:`ControllerLinkStats`,
:class:`MeterEnforcer` and, for policies that decide strict-priority classes,
:class:`ClassEnforcer`. :class:`TestbedRunner` runs an experiment's cases: one testbed
per network x bandwidth, kept up across placements and policies.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from streamband.alloc.base import FlowState
from streamband.alloc.registry import policy_entry
from streamband.backends.base import Case, RunRecord, app_results
from streamband.backends.engines import case_testbed, check_loop_policies
from streamband.errors import PreconditionError
from streamband.loop.guard import HarmGuard
from streamband.loop.openflow import (
    ClassEnforcer,
    ControllerLinkStats,
    CountingEnforcer,
    MeterEnforcer,
)
from streamband.model.apps import flow_apps
from streamband.model.routing import routing_matrix

if TYPE_CHECKING:
    from streamband.model.spec import ExperimentSpec
    from streamband.testbed.network import Testbed


class HarnessProfiler:
    """Flow ``i`` is harness edge ``edge_ids[i]``; ``sent`` is cumulative in the
    snapshots, backlogs are instantaneous (bytes). ``last``: the flow state of the last
    read as lists (bytes), which the allocation log records beside each decision.

    The receiver backlog L^r is the harness's inbox: a join takes every tuple off it at
    once and keeps the unmatched ones in its own store, which L^r does not count."""

    def __init__(self, run_dir: Path, edge_ids: list[int]) -> None:
        self.run_dir = Path(run_dir)
        self.edge_ids = edge_ids
        n = len(edge_ids)
        self._sent = np.zeros(n)
        self._ls = np.zeros(n)
        self._lr = np.zeros(n)
        self.last: dict[str, list[float]] | None = None

    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Cumulative sent bytes, sender backlog, receiver backlog of every flow."""
        sent, ls, lr = self._sent.copy(), self._ls.copy(), self._lr.copy()
        index = {e: i for i, e in enumerate(self.edge_ids)}
        for f in self.run_dir.glob("stats-*.json"):
            try:
                snap = json.loads(f.read_text())
            except (OSError, json.JSONDecodeError):
                continue  # a snapshot being replaced; the next read has it
            for eid, st in snap.get("edges", {}).items():
                i = index.get(int(eid))
                if i is None:
                    continue
                if "sent" in st:
                    sent[i], ls[i] = st["sent"], st["ls"]
                if "lr" in st:
                    lr[i] = st["lr"]
        return sent, ls, lr

    def flow_state(self) -> FlowState:
        sent, ls, lr = self.snapshot()
        state = FlowState(ls0=self._ls, ls1=ls, lr0=self._lr, lr1=lr,
                          sent=np.maximum(sent - self._sent, 0.0))
        self._sent, self._ls, self._lr = sent, ls, lr
        self.last = {k: getattr(state, k).tolist() for k in ("ls0", "ls1", "lr0", "lr1", "sent")}
        return state


class TestbedRunner:
    """Runs an experiment's cases on the testbed.

    Parameters
    ----------
    out : Path
        Where each run's harness files and allocation log go.
    seconds : float
        Length of each run, seconds (warm-up: a third of it, at most 5 s).
    dt : float
        Δt of the live manager loop, seconds (000 Fig. 4; the meters' lease is 3 steps).
        A policy deciding classes runs on App-Fair's Δt, the spec's ``sim.interval_s``
        (000 §VII), and one on two periods steps every ``spec.appfair.split_s``.
    guard : bool
        Do no harm (:class:`~streamband.loop.guard.HarmGuard`): cap only when an
        allocation moves enough bandwidth from TCP's measured split.
    control : dict
        Control-plane fields of the testbed spec (``api``, ``openflow``).
    """

    __test__ = False
    name = "testbed"

    def __init__(self, out: Path, seconds: float = 60.0, dt: float = 1.0, guard: bool = True,
                 **control: Any) -> None:
        if os.geteuid() != 0:
            raise PreconditionError("--backend testbed: needs root (network namespaces, "
                                    "Open vSwitch)")
        self.out, self.seconds, self.dt, self.control = Path(out), seconds, dt, control
        self.guard = guard
        self.tb: Testbed | None = None
        self.key: tuple[str, float] | None = None

    def __enter__(self) -> TestbedRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def _stop(self) -> None:
        if self.tb is not None:
            self.tb.__exit__(None, None, None)
            self.tb, self.key = None, None

    def check(self, spec: ExperimentSpec, case: Case) -> None:
        """Preconditions: the harness runs the app, the policies run on a real network."""
        from streamband.testbed.harness.dag import Dag

        Dag.from_flowmap(case.flowmap)
        check_loop_policies(spec, "the testbed")

    def testbed(self, case: Case) -> Testbed:
        """The testbed of ``case``'s network at its bandwidth (started if needed)."""
        from streamband.sdn.client import ControllerClient
        from streamband.testbed.network import Testbed

        key = (case.network.name, case.bandwidth_mbps)
        if self.tb is None or self.key != key:
            self._stop()
            spec = case_testbed(case, self.control)
            self.tb = Testbed(spec, log_dir=self.out).__enter__()
            self.key = key
            ControllerClient(spec.api).wait_ready(1)
        return self.tb

    def run(self, spec: ExperimentSpec, case: Case, policy: str,
            progress: Callable[[float], None] | None = None,
            reference_links: list[int] | None = None) -> RunRecord:
        from streamband.loop.live import LiveLoop
        from streamband.loop.manager import Manager
        from streamband.sdn.client import ControllerClient
        from streamband.testbed.harness.dag import Dag
        from streamband.testbed.harness.run import run_dag

        tb = self.testbed(case)
        fm = case.flowmap
        dag = Dag.from_flowmap(fm)
        dag.seconds, dag.warmup_s = self.seconds, min(5.0, self.seconds / 3)
        dag.ips = {h: tb.ip(h) for h in dag.hosts()}
        ext = np.flatnonzero(fm.external)
        flows = [dag.edges[i] for i in ext]
        keys: list[dict[str, Any] | None] = [dag.flow_key(e) for e in flows]
        topo = tb.topo
        paths = tb.paths([(fm.flows[i].src_host, fm.flows[i].dst_host) for i in ext])
        routing = routing_matrix(paths, len(topo.links))  # as the switches route
        client = ControllerClient(tb.spec.api)
        client.delete_meters()
        client.delete_classes()
        slug = re.sub(r"[^\w.=-]+", "_", spec.experiment)
        tag = f"{slug}-{case.network.name}-{case.bandwidth_mbps:g}-{case.placement}-{policy}"
        run_dir = self.out / tag
        profiler = HarnessProfiler(run_dir, [e.id for e in flows])
        linkstats = ControllerLinkStats(client, topo.capacities, tb.link_ports(), routing, keys)
        entry = policy_entry(policy)
        # App-Fair's Δt is the spec's (sim.interval_s, 000 §VII); rates step every dt
        dt = spec.sim.interval_s if entry.classes else self.dt
        step, class_dt = entry.periods(dt, spec.appfair.split_s)
        enforcer = (CountingEnforcer(client, keys, step) if entry.kind == "per-step"
                    else MeterEnforcer(client, keys, step))
        classer = None
        if entry.classes:  # each flow's class on the switch egress ports of its path
            refs = tb.link_ports()
            classer = ClassEnforcer(client, keys, [
                [refs[lk].port for lk in path if refs[lk].direction == "tx"]
                for path in paths], step)
        apps = (flow_apps([fm.flows[i].src for i in ext], spec.app_names) if spec.apps
                else None)
        assert entry.fn is not None
        manager = Manager(routing=routing, link_kind=topo.kinds, policy=entry.fn,
                          profiler=profiler, linkstats=linkstats, enforcer=enforcer, dt=step,
                          weights=np.array([float(e.tuple_bytes) for e in flows]), apps=apps,
                          params=spec.appfair.params(), classer=classer, class_dt=class_dt,
                          guard=HarmGuard() if self.guard and entry.kind == "loop" else None)
        enforcer.enforce(np.full(len(flows), np.inf))  # counting rules before traffic
        loop = LiveLoop(manager, log=run_dir.parent / f"{run_dir.name}.alloc.jsonl")
        before = {p["name"]: p for p in client.ports(fresh=True)}
        samples: list[tuple[float, np.ndarray]] = []
        carried: list[tuple[float, np.ndarray]] = []  # each flow's bytes sent so far
        t0 = time.monotonic()
        go = [t0]  # when the workers started (the harness's time 0)

        def on_step() -> None:
            samples.append((time.monotonic() - t0, linkstats.flow_rates.copy()))
            carried.append((time.monotonic() - go[0], profiler.snapshot()[0]))
            if progress:
                progress(min(1.0, (time.monotonic() - t0) / self.seconds))

        def start() -> None:
            go[0] = time.monotonic()
            loop.start()

        loop.on_step = on_step
        res = run_dag(tb, dag, run_dir, on_start=start)
        span = time.monotonic() - t0
        loop.stop()
        after = {p["name"]: p for p in client.ports(fresh=True)}
        client.delete_meters()
        client.delete_classes()
        used = np.zeros(len(topo.links))
        for lid, ref in enumerate(tb.link_ports()):
            col = f"{ref.direction}_bytes"
            used[lid] = 8.0 * (after[ref.port][col] - before[ref.port][col]) / span
        util = used / topo.capacities
        links = reference_links or [lid for lid in range(len(topo.links))
                                    if routing[:, lid].nnz and util[lid] >= 0.9]
        opt = [a.optimizer_s * 1e3 for a in manager.history]
        measured_in = sum(e.tuple_bytes for e in fm.app.edges
                          if e.dst in fm.app.measured())
        times = np.array([t for t, _ in samples])
        rates = np.zeros((len(samples), len(fm.flows)))
        for k, (_, r) in enumerate(samples):
            rates[k, ext] = r / 1e6
        row = {
            "experiment": spec.experiment, "app": spec.app.name, "placement": case.placement,
            "network": case.network.name, "bandwidth_mbps": case.bandwidth_mbps,
            "policy": policy, "backend": "testbed",
            "throughput_tps": res["throughput_tps"],
            # bytes/s the measured operators took in, as the simulator reports it
            "goodput_mbps": res["throughput_tps"] * measured_in * 8.0 / 1e6,
            "latency_s": res["latency_s"], "latency_p50_s": res["latency_p50_s"],
            "latency_p99_s": res["latency_p99_s"],
            "link_utilization": float(np.mean(util[links])) if links else None,
            "optimizer_ms": float(np.mean(opt)) if opt and entry.kind == "loop" else None,
            "dropped_tuples": res["dropped_tuples"],
            "allocations": len(manager.history),
            "seconds": self.seconds, "loop_errors": loop.errors[:3],
            "capped_share": _capped(manager),
        }
        if spec.apps:
            starts, times, rates = _carried_rates(carried, ext, len(fm.flows))
            keep = (starts >= dag.warmup_s - 0.5) & (times <= dag.seconds + 0.5)
            flow_mbps = rates[keep].mean(axis=0) if keep.any() else np.zeros(len(fm.flows))
            row.update(app_results(spec, fm, flow_mbps, {
                op: (o["throughput_tps"], o["latency_s"] if o["latency_s"] is not None
                     else float("nan")) for op, o in res["ops"].items()}))
        return RunRecord(row, times, [f.id for f in fm.flows], rates, fm.external,
                         [int(lk) for lk in links])


def _carried_rates(carried: list[tuple[float, np.ndarray]], ext: np.ndarray, n: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each flow's Mbit/s between consecutive readings of the bytes it carried (the
    manager's steps): interval start and end times, and (intervals x flows) rates."""
    times = np.array([t for t, _ in carried])
    rates = np.zeros((max(len(carried) - 1, 0), n))
    for k in range(1, len(carried)):
        span = max(carried[k][0] - carried[k - 1][0], 1e-9)
        rates[k - 1, ext] = 8.0 * (carried[k][1] - carried[k - 1][1]) / span / 1e6
    return times[:-1], times[1:], rates


def _capped(manager: Any) -> float | None:
    """The share of the run's allocations the guard let through (None: no guard)."""
    g = manager.guard
    return float(np.mean(g.decisions)) if g is not None and g.decisions else None


Runner = TestbedRunner
Profiler, LinkStats, Enforcer = HarnessProfiler, ControllerLinkStats, MeterEnforcer
