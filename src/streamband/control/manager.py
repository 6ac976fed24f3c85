"""The manager loop of 000 Fig. 4 / Algorithm 1: every Δt, observe the flow states
(profiler) and the links' allocatable capacities (link statistics), decide with a
policy, act through an enforcer. One loop for every backend (sim, testbed, cluster).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from streamband.alloc.base import AllocProblem, FlowState, Policy


class Profiler(Protocol):
    def flow_state(self) -> FlowState:
        """The 5-metric tuple of every flow (FlowMap order) over the last interval."""
        ...


class LinkStats(Protocol):
    def allocatable(self) -> np.ndarray:
        """Allocatable capacity of every link in bit/s (000 §IV-A2)."""
        ...


class Enforcer(Protocol):
    def enforce(self, rates_bps: np.ndarray) -> None:
        """Cap each flow at its rate; ``np.inf`` removes a flow's cap."""
        ...


def bottlenecked_links(p: AllocProblem) -> np.ndarray:
    """Links the caller marked, else links whose flows need at least their capacity
    in the next interval (Σ demand_bps >= C)."""
    if p.bottlenecked is not None:
        return np.asarray(p.bottlenecked, bool)
    load = p.routing.T @ p.demand_bps()
    return load >= p.capacity * (1.0 - 1e-3)


@dataclass
class Allocation:
    time: float
    rates_bps: np.ndarray
    optimizer_s: float


@dataclass
class Manager:
    """One observe -> decide -> act step per call of :meth:`step`."""

    routing: object  # scipy.sparse F x L
    link_kind: np.ndarray
    policy: Policy
    profiler: Profiler
    linkstats: LinkStats
    enforcer: Enforcer
    dt: float
    weights: np.ndarray | None = None
    history: list[Allocation] = field(default_factory=list)

    def step(self, now: float) -> Allocation:
        problem = AllocProblem(
            routing=self.routing,  # type: ignore[arg-type]
            capacity=self.linkstats.allocatable(),
            link_kind=self.link_kind,
            state=self.profiler.flow_state(),
            dt=self.dt,
            weights=self.weights,
        )
        t0 = time.perf_counter()
        rates = self.policy(problem)
        spent = time.perf_counter() - t0
        # Algorithm 1 outputs rates for the bottlenecked flows F^b (line 9); every
        # other flow keeps plain TCP sharing, so it is left uncapped.
        hot = bottlenecked_links(problem)
        on_hot = np.asarray(problem.routing[:, hot].sum(axis=1)).ravel() > 0
        rates = np.where(on_hot, rates, np.inf)
        self.enforcer.enforce(rates)
        alloc = Allocation(now, rates, spent)
        self.history.append(alloc)
        return alloc
