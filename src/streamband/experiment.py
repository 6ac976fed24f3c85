"""Run an experiment spec on the fluid simulator: every network x bandwidth x
placement x policy, plus 001's brute-force sweep (§III-D) as the policy ``sweep``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from streamband.alloc.weighted import sweep_pair, sweep_search
from streamband.model.flows import FlowMap
from streamband.model.placement import (
    PlacementError,
    explicit,
    joint,
    random_placement,
    round_robin,
    tuple_size_rule,
)
from streamband.model.topology import Topology
from streamband.sim.fluid import SimConfig, SimResult, simulate
from streamband.spec import ExperimentSpec, NetworkSpec, PlacementSpec, SpecError

RUN_KEYS = (
    "experiment", "app", "placement", "network", "bandwidth_mbps", "policy", "throughput_tps",
    "latency_ms", "link_utilization", "optimizer_ms", "dropped_tuples",
)


def make_placement(spec: ExperimentSpec, topo: Topology, name: str, p: PlacementSpec
                   ) -> dict[str, str]:
    try:
        if p.strategy == "round_robin":
            return round_robin(spec.app, topo.hosts)
        if p.strategy == "random":
            return random_placement(spec.app, topo.hosts, p.seed)
        if p.strategy == "explicit":
            return explicit(spec.app, topo.hosts, p.map or {})
        if p.strategy == "joint":
            return joint(spec.app, topo)
        return tuple_size_rule(spec.app, topo)
    except PlacementError as err:
        raise SpecError(f"placements.{name}: {err}") from None


@dataclass
class Case:
    """One network at one bandwidth with one placement: the flows to simulate."""

    network: NetworkSpec
    bandwidth_mbps: float
    placement: str
    flowmap: FlowMap


def plan(spec: ExperimentSpec) -> list[Case]:
    """Build every case before anything runs, so a bad spec fails before it starts."""
    cases = []
    for net in spec.networks:
        for bw in net.bandwidth_mbps:
            topo = net.build(bw)
            for name, p in spec.placements.items():
                pl = make_placement(spec, topo, name, p)
                cases.append(Case(net, bw, name, FlowMap(spec.app, topo, pl)))
    return cases


def sim_config(spec: ExperimentSpec, duration_s: float | None = None) -> SimConfig:
    s = spec.sim
    return SimConfig(
        duration_s=duration_s or s.duration_s, step_s=s.step_s, interval_s=s.interval_s,
        sample_s=s.sample_s, warmup_s=s.warmup_s, buffer_tuples=s.buffer_tuples,
        backpressure=s.backpressure,
    )


@dataclass
class SweepOutcome:
    result: SimResult
    flows: list[str]
    best_caps_mbps: dict[str, float]
    points: list[tuple[dict[str, float], float]] = field(default_factory=list)


def run_sweep(spec: ExperimentSpec, case: Case, progress: Callable[[float], None] | None = None
              ) -> SweepOutcome:
    """001 §III-D: find the bottlenecked flows under TCP, then search static caps
    moving Δb = step_frac · b between them; the best caps run for the full duration."""
    fm = case.flowmap
    short = sim_config(spec, spec.sweep.duration_s)
    probe = simulate(fm, "tcp", short)
    hot = probe.bottleneck_links
    R = fm.routing
    on_hot = np.flatnonzero(np.asarray(R[:, hot].sum(axis=1)).ravel() > 0) if hot else []
    flows = [int(f) for f in on_hot if fm.external[f]]
    ids = [fm.flows[f].id for f in flows]
    if len(flows) < 2:
        res = simulate(fm, "tcp", sim_config(spec), progress=progress)
        return SweepOutcome(res, ids, {})
    cap = float(min(fm.topo.capacities[hot]))
    points: list[tuple[dict[str, float], float]] = []

    def evaluate(caps: dict[int, float]) -> float:
        score = simulate(fm, "static", short, caps=caps).throughput_tps
        points.append(({fm.flows[k].id: v / 1e6 for k, v in caps.items()}, score))
        return score

    if len(flows) == 2:
        best, best_score = None, -1.0
        pairs = sweep_pair(cap, spec.sweep.step_frac)
        for i, (x, y) in enumerate(pairs):
            caps = {flows[0]: x, flows[1]: y}
            score = evaluate(caps)
            if score > best_score:
                best, best_score = caps, score
            if progress:
                progress(0.8 * (i + 1) / len(pairs))
    else:
        best, best_score, _ = sweep_search(flows, cap, evaluate, spec.sweep.step_frac)
    assert best is not None
    res = simulate(fm, "static", sim_config(spec), caps=best)
    if progress:
        progress(1.0)
    return SweepOutcome(res, ids, {fm.flows[k].id: v / 1e6 for k, v in best.items()}, points)


@dataclass
class RunRecord:
    row: dict
    result: SimResult
    sweep: SweepOutcome | None = None


def run_case(spec: ExperimentSpec, case: Case, policy: str,
             progress: Callable[[float], None] | None = None,
             reference_links: list[int] | None = None) -> RunRecord:
    """One policy on one case. ``reference_links``: the links whose utilisation to
    report (the bottlenecks of the tcp run of the same case, so that every policy is
    measured on the same links, 000 §VI-C); default: this run's own bottlenecks."""
    fm = case.flowmap
    weights = np.array([f.tuple_bytes for f in fm.flows])
    sweep = None
    if policy == "sweep":
        sweep = run_sweep(spec, case, progress)
        res = sweep.result
    else:
        res = simulate(fm, policy, sim_config(spec), weights=weights, progress=progress)
    row = {
        "experiment": spec.experiment,
        "app": spec.app.name,
        "placement": case.placement,
        "network": case.network.name,
        "bandwidth_mbps": case.bandwidth_mbps,
        "policy": policy,
        "throughput_tps": res.throughput_tps,
        "latency_ms": res.latency_ms,
        "link_utilization": (
            float(np.mean(res.link_util[reference_links])) if reference_links
            else res.link_utilization
        ),
        "optimizer_ms": res.optimizer_ms,
        "dropped_tuples": res.dropped_tuples,
        "goodput_mbps": res.goodput_mbps,
        "allocations": res.allocations,
    }
    if sweep is not None:
        row["sweep_flows"] = sweep.flows
        row["sweep_best_caps_mbps"] = sweep.best_caps_mbps
        row["sweep_points"] = len(sweep.points)
    return RunRecord(row, res, sweep)
