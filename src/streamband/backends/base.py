"""What every backend provides, and what a run on it returns.

A backend is one module of :mod:`streamband.backends` holding, at its top, its three
adapters of the manager loop (000 Fig. 4): a profiler (``flow_state()``: the 5-metric
tuple of every flow), link statistics (``allocatable()``: each link's allocatable
capacity) and an enforcer (``enforce(rates)``: caps, ``inf`` = uncapped; and
``assign(classes)``: strict-priority classes, 000 §VII) — the interfaces of
:mod:`streamband.loop.manager` — and a :class:`Runner` that runs one :class:`Case`
of an experiment under one policy and returns a :class:`RunRecord` (with
:func:`app_results` when several applications share the network).
To add a backend: write its module and add one line to ``BACKENDS`` in
:mod:`streamband.backends`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from streamband.alloc.appfair import app_jain
from streamband.model.apps import flow_apps, per_app

#: the master host's link on a star, Mbit/s, where a Kafka broker or a Flink JobManager
#: runs: it serves every source and ships every job's jar, so it must not be one more
#: bottleneck beside the links under test (1 Gbit/s is what the testbed's switch carries)
MASTER_MBPS = 1000.0

if TYPE_CHECKING:
    from streamband.model.flows import FlowMap
    from streamband.model.spec import ExperimentSpec, NetworkSweep

#: the columns of a run's row, in the order tables show them
RUN_KEYS = (
    "experiment", "app", "placement", "network", "bandwidth_mbps", "policy", "backend",
    "throughput_tps", "goodput_mbps", "latency_s", "latency_p50_s", "latency_p99_s",
    "link_utilization", "optimizer_ms", "dropped_tuples", "allocations",
)


@dataclass
class Case:
    """One network at one bandwidth with one placement: the flows to run."""

    network: NetworkSweep
    bandwidth_mbps: float
    placement: str
    flowmap: FlowMap


@dataclass
class RunRecord:
    """One policy on one case: the row of the results table, each flow's rate over
    time (Mbit/s, samples x flows) and the links found bottlenecked."""

    row: dict[str, Any]
    times: np.ndarray
    flow_ids: list[str]
    rates_mbps: np.ndarray
    external: np.ndarray
    bottleneck_links: list[int] = field(default_factory=list)
    sweep: Any = None  # the search's outcome for a ``search`` policy


class Runner(Protocol):
    """Runs cases of one experiment on one backend (a context manager: what it starts
    for the runs it stops on exit)."""

    name: str

    def __enter__(self) -> Runner: ...

    def __exit__(self, *exc: object) -> None: ...

    def check(self, spec: ExperimentSpec, case: Case) -> None:
        """Raise :class:`~streamband.errors.StreambandError` if ``case`` cannot run here
        (called for every case before the first run starts)."""
        ...

    def run(self, spec: ExperimentSpec, case: Case, policy: str,
            progress: Callable[[float], None] | None = None,
            reference_links: list[int] | None = None) -> RunRecord:
        """Run ``policy`` on ``case``; ``reference_links``: the links whose utilisation
        to report (the tcp run's bottlenecks, so every policy is measured on the same
        links, 000 §VI-C)."""
        ...


def offered_bps(fm: FlowMap) -> np.ndarray:
    """(F,) the load each flow's sources offer, bit/s (its nominal tuples/s x size)."""
    return 8.0 * fm.nominal_rates() * np.array([f.tuple_bytes for f in fm.flows])


def contended_link(fm: FlowMap, apps: np.ndarray) -> int:
    """The link the applications contend for most: of the links two or more of them
    cross, the one whose offered load is the largest multiple of its capacity."""
    r = fm.routing.tocsc()
    load = r.T @ offered_bps(fm) / fm.topo.capacities
    best, best_load = -1, -1.0
    for lk in range(r.shape[1]):
        flows = r.indices[r.indptr[lk]: r.indptr[lk + 1]]
        if len(set(apps[flows].tolist())) >= 2 and load[lk] > best_load:
            best, best_load = lk, float(load[lk])
    return best


def app_results(spec: ExperimentSpec, fm: FlowMap, flow_mbps: np.ndarray,
                by_operator: dict[str, tuple[float, float]]) -> dict[str, Any]:
    """The per-application part of a run's row (000 §VII): each application's
    throughput (tuples/s at its measured operators), mean latency, the Mbit/s its
    flows carried (``flow_mbps``: each flow's mean over the measured period) and
    offered; Jain's index over the applications' Mbit/s on the link they contend for
    most, each normalised by its max-min fair share of that link given what it
    offers there (:func:`~streamband.alloc.appfair.app_jain`: an application that
    offers less than its fair share counts as fairly treated when it gets what it
    offers; when all offer more, this is Jain's index of the raw throughputs)."""
    names = spec.app_names
    apps = flow_apps([f.src for f in fm.flows], names)
    ext = fm.external
    n = len(names)
    mbps = np.bincount(apps[ext], weights=flow_mbps[ext], minlength=n)
    offered = offered_bps(fm) / 1e6
    on = np.bincount(apps[ext], weights=offered[ext], minlength=n)
    tps = per_app(by_operator, names)
    lk = contended_link(fm, apps)
    out: dict[str, Any] = {"apps": {
        name: {"throughput_tps": tps[name][0], "latency_s": tps[name][1],
               "mbps": float(mbps[i]), "offered_mbps": float(on[i])}
        for i, name in enumerate(names)}}
    if lk >= 0:
        crosses = np.asarray(fm.routing[:, lk].todense()).ravel() > 0
        sel = ext & crosses
        got = np.bincount(apps[sel], weights=flow_mbps[sel], minlength=n)
        want = np.bincount(apps[sel], weights=offered[sel], minlength=n)
        link = fm.topo.links[lk]
        out["jain"] = app_jain(got, want, link.capacity_bps / 1e6)
        out["jain_link"] = f"{link.src}->{link.dst}"
    return out
