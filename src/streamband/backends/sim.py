"""The simulator as a backend: the fluid simulator stands in for engine and network.

Its three adapters read and act on a :class:`~streamband.sim.fluid.FluidSim`:
:class:`SimProfiler` (the 5-metric tuple from the simulated queues),
:class:`SimLinkStats` (the links' capacities: no cross traffic in the simulator) and
:class:`SimEnforcer` (rate caps on the simulated flows, as meters, and their
strict-priority classes, as egress queues). :func:`simulate`
runs one policy of the registry on one placed application; :func:`run_sweep` is 001's
offline search (§III-D); :class:`SimRunner` runs an experiment's cases. No root, any
machine, datacenter scale.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from streamband.alloc.base import FlowState
from streamband.alloc.registry import policy_entry
from streamband.alloc.weighted import sweep_pair, sweep_search
from streamband.backends.base import Case, RunRecord, app_results
from streamband.loop.manager import Manager
from streamband.model.apps import flow_apps
from streamband.model.flows import FlowMap
from streamband.sim.fluid import FluidSim, SimConfig, SimResult

if TYPE_CHECKING:
    from streamband.model.spec import ExperimentSpec


class SimProfiler:
    """The application profiler: the 5-metric tuple (000 §IV-A1) of every flow over
    the last interval, from the simulator's queues."""

    def __init__(self, sim: FluidSim) -> None:
        self.sim = sim
        self.prev = sim.snapshot()

    def flow_state(self) -> FlowState:
        now = self.sim.snapshot()
        ls0, lr0, sent0 = self.prev
        ls1, lr1, sent1 = now
        self.prev = now
        return FlowState(ls0, ls1, lr0, lr1, sent1 - sent0)


class SimLinkStats:
    """The link statistics collector: allocatable capacity = capacity (the simulator
    carries no cross traffic)."""

    def __init__(self, capacity: np.ndarray) -> None:
        self.capacity = capacity

    def allocatable(self) -> np.ndarray:
        return self.capacity.copy()


class SimEnforcer:
    """The bandwidth enforcer: rate caps on the simulated external flows (meters) and
    their strict-priority classes (000 §VII's queues on every egress port)."""

    def __init__(self, sim: FluidSim) -> None:
        self.sim = sim

    def enforce(self, rates_bps: np.ndarray) -> None:
        self.sim.caps = np.where(self.sim.external, rates_bps, np.inf)

    def assign(self, classes: np.ndarray) -> None:
        self.sim.classes = np.asarray(classes, np.int64).copy()


def simulate(
    fm: FlowMap,
    policy: str,
    cfg: SimConfig | None = None,
    caps: dict[int, float] | None = None,
    weights: np.ndarray | None = None,
    progress: Callable[[float], None] | None = None,
    apps: np.ndarray | None = None,
    params: dict[str, float] | None = None,
    split_s: float | None = None,
) -> SimResult:
    """Run ``fm``'s application under the registered ``policy``: ``tcp`` (max-min every
    step), ``static`` with ``caps`` (bit/s by flow index), or a ``loop`` policy in the
    manager loop every Δt with these adapters (``weights``: per-flow weights such as
    tuple sizes, 001 §III-D; ``apps``: each flow's application when several share the
    network; ``params``: the policy's, e.g. App-Fair's α and m; ``split_s``: the step of
    a policy on two periods, :meth:`~streamband.alloc.registry.PolicyEntry.periods`).

    Raises
    ------
    SpecError
        For an unknown policy, or a ``search`` policy (run it with :func:`run_sweep`).
    """
    entry = policy_entry(policy)
    if entry.kind == "search":
        from streamband.errors import SpecError

        raise SpecError(f"policy {policy!r} is an offline search: run it with run_sweep")
    sim = FluidSim(fm, policy, cfg, caps if entry.kind == "static" else None)
    if entry.kind == "loop":
        assert entry.fn is not None
        enforcer = SimEnforcer(sim)
        dt, class_dt = entry.periods(sim.cfg.interval_s, split_s or sim.cfg.interval_s)
        sim.manager = Manager(
            routing=fm.routing, link_kind=fm.topo.kinds, policy=entry.fn,
            profiler=SimProfiler(sim), linkstats=SimLinkStats(sim.capacity),
            enforcer=enforcer, dt=dt, weights=weights, apps=apps,
            params=params or {}, classer=enforcer, class_dt=class_dt,
        )
    return sim.run(progress)


@dataclass
class SweepOutcome:
    """001 §III-D's search: the best static caps, every probe and the full run."""

    result: SimResult
    flows: list[str]
    best_caps_mbps: dict[str, float]
    points: list[tuple[dict[str, float], float]] = field(default_factory=list)


def sweep_flows(fm: FlowMap, probe: SimConfig) -> tuple[list[int], list[int]]:
    """The external flows on the links a tcp ``probe`` run finds bottlenecked, and
    those links (001 §III-D searches between these flows).

    Raises
    ------
    SpecError
        If fewer than two such flows exist: there is nothing to move between flows,
        and a tcp run labelled ``sweep`` would mislead.
    """
    from streamband.errors import SpecError

    hot = simulate(fm, "tcp", probe).bottleneck_links
    on_hot = (np.flatnonzero(np.asarray(fm.routing[:, hot].sum(axis=1)).ravel() > 0)
              if hot else [])
    flows = [int(f) for f in on_hot if fm.external[f]]
    if len(flows) < 2:
        ids = ", ".join(fm.flows[f].id for f in flows) or "none"
        raise SpecError(f"policy sweep: {len(flows)} bottlenecked flow(s) on {fm.topo.name} "
                        f"({ids}); expected at least two to move bandwidth between")
    return flows, hot


def run_sweep(fm: FlowMap, full: SimConfig, probe: SimConfig, step_frac: float,
              progress: Callable[[float], None] | None = None) -> SweepOutcome:
    """001 §III-D: find the bottlenecked flows under TCP (a ``probe`` run), then search
    static caps moving Δb = ``step_frac`` · b between them; the best caps run for the
    ``full`` configuration.

    Raises
    ------
    SpecError
        If fewer than two external flows are bottlenecked: there is nothing to move
        between flows, and a tcp run labelled ``sweep`` would mislead.
    """
    flows, hot = sweep_flows(fm, probe)
    ids = [fm.flows[f].id for f in flows]
    cap = float(min(fm.topo.capacities[hot]))
    points: list[tuple[dict[str, float], float]] = []

    def evaluate(caps: dict[int, float]) -> float:
        score = simulate(fm, "static", probe, caps=caps).throughput_tps
        points.append(({fm.flows[k].id: v / 1e6 for k, v in caps.items()}, score))
        return score

    if len(flows) == 2:
        best, best_score = None, -1.0
        pairs = sweep_pair(cap, step_frac)
        for i, (x, y) in enumerate(pairs):
            caps = {flows[0]: x, flows[1]: y}
            score = evaluate(caps)
            if score > best_score:
                best, best_score = caps, score
            if progress:
                progress(0.8 * (i + 1) / len(pairs))
    else:
        best, best_score, _ = sweep_search(flows, cap, evaluate, step_frac)
    assert best is not None
    res = simulate(fm, "static", full, caps=best)
    res.policy = "sweep"
    if progress:
        progress(1.0)
    return SweepOutcome(res, ids, {fm.flows[k].id: v / 1e6 for k, v in best.items()}, points)


def sim_config(spec: ExperimentSpec, duration_s: float | None = None) -> SimConfig:
    """The simulator's configuration from a spec's ``sim`` section."""
    s = spec.sim
    return SimConfig(
        duration_s=duration_s or s.duration_s, step_s=s.step_s, interval_s=s.interval_s,
        sample_s=s.sample_s, warmup_s=s.warmup_s, buffer_tuples=s.buffer_tuples,
        backpressure=s.backpressure,
    )


class SimRunner:
    """Runs an experiment's cases on the fluid simulator (nothing to start or stop)."""

    name = "sim"

    def __enter__(self) -> SimRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def check(self, spec: ExperimentSpec, case: Case) -> None:
        """Preconditions of the case that only a probe shows (sweep's flows)."""
        if "sweep" in spec.policies:
            sweep_flows(case.flowmap, sim_config(spec, spec.sweep.duration_s))

    def run(self, spec: ExperimentSpec, case: Case, policy: str,
            progress: Callable[[float], None] | None = None,
            reference_links: list[int] | None = None) -> RunRecord:
        fm = case.flowmap
        sweep = None
        if policy_entry(policy).kind == "search":
            sweep = run_sweep(fm, sim_config(spec), sim_config(spec, spec.sweep.duration_s),
                              spec.sweep.step_frac, progress)
            res = sweep.result
        else:
            weights = np.array([f.tuple_bytes for f in fm.flows])
            apps = (flow_apps([f.src for f in fm.flows], spec.app_names) if spec.apps
                    else None)
            res = simulate(fm, policy, sim_config(spec), weights=weights, progress=progress,
                           apps=apps, params=spec.appfair.params(),
                           split_s=spec.appfair.split_s)
        row = {
            "experiment": spec.experiment,
            "app": spec.app.name,
            "placement": case.placement,
            "network": case.network.name,
            "bandwidth_mbps": case.bandwidth_mbps,
            "policy": policy,
            "backend": "sim",
            "throughput_tps": res.throughput_tps,
            "goodput_mbps": res.goodput_mbps,
            "latency_s": res.latency_ms / 1e3,
            "latency_p50_s": res.latency_p50_s,
            "latency_p99_s": res.latency_p99_s,
            "link_utilization": (
                float(np.mean(res.link_util[reference_links])) if reference_links
                else res.link_utilization
            ),
            "optimizer_ms": res.optimizer_ms,
            "dropped_tuples": res.dropped_tuples,
            "allocations": res.allocations,
        }
        if spec.apps:
            keep = res.sample_times > spec.sim.warmup_s
            row.update(app_results(spec, fm, res.flow_rates_mbps[keep].mean(axis=0),
                                   res.by_operator))
        if sweep is not None:
            row["sweep_flows"] = sweep.flows
            row["sweep_best_caps_mbps"] = sweep.best_caps_mbps
            row["sweep_points"] = len(sweep.points)
        return RunRecord(row, res.sample_times, res.flow_ids, res.flow_rates_mbps,
                         fm.external, res.bottleneck_links, sweep)


Runner = SimRunner
Profiler, LinkStats, Enforcer = SimProfiler, SimLinkStats, SimEnforcer
