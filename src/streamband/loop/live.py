"""The live manager loop (000 Fig. 4, Algorithm 1) around :class:`Manager`: one
step every Δt against real adapters, every allocation logged as one JSON line, and
Prometheus metrics (flow rates, link capacities, optimizer time).

``python -m streamband.loop.live LOOP.json`` runs it as its own process (the
lease test of the selftest ``kill -9``\\ s exactly this process)."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    start_http_server,
)

from streamband.loop.manager import MIN_INTERVAL_FRAC, Allocation, Manager

disable_created_metrics()  # no *_created series: every counter starts with the manager

#: seconds; from a policy's tenth of a millisecond to a slow controller's seconds
LATENCY_BUCKETS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0, 10.0)


class ManagerMetrics:
    """Prometheus metrics of one manager, in its own registry (served on ``port`` when
    given). Names follow Prometheus's conventions: base units (seconds, bytes, bits per
    second) in the name, ``_total`` on counters. An uncapped flow's rate is ``+Inf``."""

    def __init__(self, port: int | None = None, addr: str = "127.0.0.1") -> None:
        r = self.registry = CollectorRegistry()
        self.allocations = Counter(
            "streamband_allocations", "allocations made, by topology and decision (policy, "
            "guard: TCP's split kept, the allocation moving too little; hold: the last safe "
            "allocation kept, fail-open: every cap lifted)",
            ["topology", "decision"], registry=r)
        self.errors = Counter("streamband_errors", "failed steps and calls, by kind",
                              ["kind"], registry=r)
        self.rejected = Counter("streamband_rejected_samples", "profiler reports and flow "
                                "states rejected as garbage (never enforced), by reason",
                                ["reason"], registry=r)
        self.policy_seconds = Histogram(
            "streamband_policy_duration_seconds", "time in the allocation policy "
            "(000 Algorithm 1)", ["topology"], registry=r, buckets=LATENCY_BUCKETS)
        self.latency = Histogram(
            "streamband_allocation_latency_seconds", "one allocation from observe to "
            "enforced: profiler, link statistics, policies, the controller's reply",
            registry=r, buckets=LATENCY_BUCKETS)
        self.rate = Gauge("streamband_flow_rate_bits_per_second", "allocated rate of a flow "
                          "(+Inf: uncapped)", ["topology", "flow"], registry=r)
        self.measured = Gauge("streamband_flow_measured_bits_per_second", "a flow's rate "
                              "measured by its counting rule", ["topology", "flow"], registry=r)
        self.backlog = Gauge("streamband_flow_backlog_bytes", "a flow's sender or receiver "
                             "backlog (000 §IV-A1)", ["topology", "flow", "side"], registry=r)
        self.capacity = Gauge("streamband_link_allocatable_bits_per_second", "a link's "
                              "allocatable capacity (000 §IV-A2)", ["link"], registry=r)
        self.used = Gauge("streamband_link_used_bits_per_second", "a link's measured rate",
                          ["link"], registry=r)
        self.leases = Gauge("streamband_leases", "managed flows holding a lease on the "
                            "controller, by state (capped, counted)", ["state"], registry=r)
        self.expired = Gauge("streamband_controller_leases_expired", "leases the controller "
                             "let run out since it started (fail-open events)", registry=r)
        self.report_age = Gauge("streamband_profiler_report_age_seconds", "age of the newest "
                                "flow report of a topology", ["topology"], registry=r)
        self.throughput = Gauge("streamband_topology_throughput_tuples_per_second",
                                "tuples per second at the sinks", ["topology"], registry=r)
        self.app_latency = Gauge("streamband_topology_latency_seconds", "mean event-time "
                                 "latency at the sinks", ["topology"], registry=r)
        self.fail_open = Gauge("streamband_fail_open", "1 while a topology's flows are "
                               "failed open (plain TCP)", ["topology"], registry=r)
        self.controller_up = Gauge("streamband_controller_up", "1 when the controller "
                                   "answered the last step", registry=r)
        self.info = Gauge("streamband_topology_info", "a managed topology (Storm) or job "
                          "(Flink) and its engine; always 1", ["topology", "engine"],
                          registry=r)
        self.enforce = Gauge("streamband_enforcement_info", "how the rates are enforced: "
                             "meter (OpenFlow meters that police) or shaper (HTB classes on "
                             "the switch egress ports that queue); always 1", ["enforce"],
                             registry=r)
        self._flows: dict[str, list[str]] = {}
        if port is not None:
            start_http_server(port, addr=addr, registry=r)

    def flows(self, topology: str, names: list[str]) -> None:
        """The flows of ``topology`` are now ``names`` (a remap drops the old series)."""
        for old in self._flows.get(topology, []):
            if old in names:
                continue
            for g in (self.rate, self.measured):
                try:
                    g.remove(topology, old)
                except KeyError:
                    pass
            for side in ("sender", "receiver"):
                try:
                    self.backlog.remove(topology, old, side)
                except KeyError:
                    pass
        self._flows[topology] = list(names)

    def observe(self, alloc: Allocation, capacity: np.ndarray, topology: str = "",
                names: list[str] | None = None, decision: str = "policy") -> None:
        names = names or [str(i) for i in range(len(alloc.rates_bps))]
        self.allocations.labels(topology, decision).inc()
        self.policy_seconds.labels(topology).observe(alloc.optimizer_s)
        for name, r in zip(names, alloc.rates_bps, strict=True):
            self.rate.labels(topology, name).set(float(r))
        for i, c in enumerate(capacity):
            self.capacity.labels(str(i)).set(float(c))


class AllocationLog:
    """One JSON line per allocation: time, rates (null = uncapped), classes (when the
    policy decides them), the links found bottlenecked at this step (``hot``) and those
    treated so (``held``, with the manager's hysteresis), optimizer ms, the step's
    phases in ms (``phase_ms``: link statistics, profile, decide, enforce), each link's
    measured load over its capacity (``util``, where the backend counts it), the flow
    state and the capacities the policy saw."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.f = open(path, "a", buffering=1)  # noqa: SIM115 - lives as long as the loop

    def write(self, alloc: Allocation, capacity: np.ndarray, extra: dict[str, Any]) -> None:
        rec = {
            "time": alloc.time,
            "rates_bps": [None if not np.isfinite(r) else float(r) for r in alloc.rates_bps],
            "optimizer_ms": alloc.optimizer_s * 1e3,
            "capacity_bps": [float(c) for c in capacity],
            **({"classes": [int(c) for c in alloc.classes]} if alloc.classes is not None else {}),
            **({"hot": np.flatnonzero(alloc.hot).tolist()} if alloc.hot is not None else {}),
            **({"held": np.flatnonzero(alloc.held).tolist()} if alloc.held is not None else {}),
            **({"phase_ms": {k: round(v * 1e3, 1) for k, v in alloc.phase_s.items()}}
               if alloc.phase_s is not None else {}),
            **({"util": [round(float(u), 3) for u in alloc.util]}
               if alloc.util is not None else {}),
            **extra,
        }
        self.f.write(json.dumps(rec) + "\n")

    def close(self) -> None:
        self.f.close()


class _Recording:
    """Wraps a LinkStats so the loop can log what the policy saw."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.last = np.zeros(0)

    def allocatable(self) -> np.ndarray:
        self.last = self.inner.allocatable()
        return self.last

    def __getattr__(self, name: str) -> Any:
        # utilisation() and flow_rates, when the backend has them; private and dunder
        # names are not forwarded (copy and pickle look them up before ``inner`` exists)
        if name.startswith("_") or name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


def next_slot(nxt: float, dt: float) -> float:
    """The monotonic time the step after the one of slot ``nxt`` starts: Δt later, or,
    when that has passed (a stalled or starved step), :data:`MIN_INTERVAL_FRAC` x Δt from
    now: the missed slots are dropped."""
    # catch-up steps back to back would each read a near-empty interval and push the
    # stalled gap out of the lease's window (Lease)
    return max(nxt + dt, time.monotonic() + MIN_INTERVAL_FRAC * dt)


class LiveLoop:
    """Run ``manager.step`` every ``manager.dt`` seconds until :meth:`stop`."""

    def __init__(self, manager: Manager, log: Path | None = None,
                 metrics_port: int | None = None) -> None:
        self.manager = manager
        self._stats = _Recording(manager.linkstats)
        manager.linkstats = self._stats
        self.log = AllocationLog(log) if log else None
        self.metrics = ManagerMetrics(metrics_port)
        self._stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.errors: list[str] = []
        #: called after every step (e.g. to sample the measured rates)
        self.on_step: Callable[[], None] | None = None

    def step(self) -> Allocation | None:
        try:
            alloc = self.manager.step(time.time())
        except Exception as exc:  # a failed step must not stop the loop; leases cover it
            self.metrics.errors.labels("step").inc()
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return None
        state = self.manager.profiler.last if hasattr(self.manager.profiler, "last") else None
        self.metrics.observe(alloc, self._stats.last)
        if self.log:
            extra: dict[str, Any] = {"state": state} if state else {}
            g = self.manager.guard
            if g is not None:
                extra["guard"] = {"capping": g.capping, "moved": g.moved}
            self.log.write(alloc, self._stats.last, extra)
        if self.on_step is not None:
            self.on_step()
        return alloc

    def run(self) -> None:
        """Step every Δt on a fixed cadence; a step that ends past its slot (a stalled or
        starved manager) drops the slots it missed, and the next step starts at least
        :data:`MIN_INTERVAL_FRAC` x Δt after it."""
        nxt = time.monotonic()
        while not self._stop.is_set():
            self.step()
            nxt = next_slot(nxt, self.manager.dt)
            self._stop.wait(max(0.0, nxt - time.monotonic()))

    def start(self) -> LiveLoop:
        self.thread = threading.Thread(target=self.run, name="manager", daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self.thread:
            self.thread.join(10)
        if self.log:
            self.log.close()


class _Fixed:
    """A policy that returns fixed rates (the lease test's manager)."""

    def __init__(self, rates: list[float]) -> None:
        self.rates = np.asarray(rates, float)

    def __call__(self, problem: Any) -> np.ndarray:
        return self.rates.copy()


def main(argv: list[str] | None = None) -> None:
    """Run a manager with fixed rates from ``LOOP.json``: ``{"api", "dt", "flows":
    [FlowKey dicts], "rates_bps": [...], "log"?}`` until killed."""
    import scipy.sparse as sp

    from streamband.alloc.base import FlowState
    from streamband.loop.openflow import MeterEnforcer
    from streamband.sdn.client import ControllerClient

    cfg = json.loads(Path((argv or sys.argv[1:])[0]).read_text())
    n = len(cfg["flows"])
    client = ControllerClient(cfg["api"])

    class _Idle:
        def flow_state(self) -> FlowState:
            return FlowState.zeros(n)

        def allocatable(self) -> np.ndarray:
            return np.ones(1)

    idle = _Idle()
    mgr = Manager(routing=sp.csr_matrix((n, 1)), link_kind=np.zeros(1), policy=_Fixed(
        cfg["rates_bps"]), profiler=idle, linkstats=idle,
        enforcer=MeterEnforcer(client, cfg["flows"], cfg["dt"]), dt=cfg["dt"])
    loop = LiveLoop(mgr, Path(cfg["log"]) if cfg.get("log") else None)
    loop.run()


if __name__ == "__main__":
    main()
