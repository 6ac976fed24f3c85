"""What every backend provides, and what a run on it returns.

A backend is one module of :mod:`streamband.backends` holding, at its top, its three
adapters of the manager loop (000 Fig. 4): a profiler (``flow_state()``: the 5-metric
tuple of every flow), link statistics (``allocatable()``: each link's allocatable
capacity) and an enforcer (``enforce(rates)``: caps, ``inf`` = uncapped) — the
interfaces of :mod:`streamband.control.manager` — and a :class:`Runner` that runs one
:class:`Case` of an experiment under one policy and returns a :class:`RunRecord`.
To add a backend: write its module and add one line to ``BACKENDS`` in
:mod:`streamband.backends`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from streamband.experiments.spec import ExperimentSpec, NetworkSweep
    from streamband.model.flows import FlowMap

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
