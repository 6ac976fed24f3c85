"""The manager loop of 000 Fig. 4 / Algorithm 1: every Δt, observe the flow states
(profiler) and the links' allocatable capacities (link statistics), decide with a
policy, act through an enforcer (rates, as meters) and a class enforcer (strict-priority
classes, 000 §VII). One loop for every backend; it also keeps what a policy carries
from one step to the next (App-Fair's history of eq. 5).

Division of labour in ``loop/``: :mod:`.manager` is the loop and the three adapter
interfaces it talks to (:class:`Profiler`, :class:`LinkStats`, :class:`Enforcer`);
the OpenFlow adapters (link statistics, meters, classes) are :mod:`.openflow`, each
engine's profiler lives with the engine (:mod:`streamband.storm.profiler`);
:mod:`.live` runs the loop in real time (allocation log, Prometheus metrics).
Policies live in :mod:`streamband.alloc`; the loop never decides, a policy never
sees a backend.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from streamband.alloc.base import AllocProblem, FlowState, Policy, as_decision
from streamband.alloc.common import bottlenecked_links, entries
from streamband.errors import PreconditionError
from streamband.loop.guard import HarmGuard

#: Δt steps a link stays bottlenecked after the last step whose demands reached its
#: capacity (hysteresis of the cap / no-cap decision; 1: none). On Storm the demands of
#: a capped link drop below C once its backlogs drain, so without it the caps were lifted
#: and reinstated at consecutive 1-s steps, each switch adding or removing meters.
HOLD_STEPS = 3
#: an enforcer's lease (meters, classes) lasts this many steps: of Δt, or of the longest
#: of the last LEASE_WINDOW gaps between steps when the loop runs late (so a slow step does
#: not let the caps lapse mid-run, while a dead manager still fails open)
LEASE_STEPS = 3
#: gaps between steps a late one stays in the lease (a starved CPU stalls a manager again
#: a few steps later, not within the next LEASE_STEPS; CI measured a lapse 3 steps on)
LEASE_WINDOW = 10
#: a link counts as bottlenecked (000 Algorithm 1 line 11) only while the switch's port
#: counters show it carrying at least this share of its capacity, where the link
#: statistics measure it (:meth:`LinkStats.utilisation`): line 11 reads the demands of
#: eq. (3), whose 2 L^s term also grows when a sender's backlog waits for something other
#: than the link (a CPU-bound worker, a slow receiver), and capping a link that is not
#: full takes bandwidth from no one to give it to no one; a bottleneck under TCP runs
#: near 1.0 of its capacity, so 0.8 separates the two.
FULL_FRAC = 0.8


class Profiler(Protocol):
    def flow_state(self) -> FlowState:
        """The 5-metric tuple of every flow (FlowMap order) over the last interval. A
        profiler on a real clock may also set ``interval_s``: the seconds that interval
        lasted (the manager then reads the state over it, not over Δt)."""
        ...


#: a flow state covering less than this share of Δt is read over this share (a step
#: right after a late one: its bytes over a near-zero interval are not a rate)
MIN_INTERVAL_FRAC = 0.25


class LinkStats(Protocol):
    """Link statistics (000 §IV-A2). A backend whose switch counts each link's load also
    has ``utilisation() -> ndarray (L,)``: each link's load over the last poll as a share
    of its capacity, cross traffic included (the manager then holds as bottlenecked only
    the links that are full, :data:`FULL_FRAC`); the simulator's has none."""

    def allocatable(self) -> np.ndarray:
        """Allocatable capacity of every link in bit/s (000 §IV-A2)."""
        ...


class Enforcer(Protocol):
    def enforce(self, rates_bps: np.ndarray) -> None:
        """Cap each flow at its rate; ``np.inf`` removes a flow's cap."""
        ...


class ClassEnforcer(Protocol):
    def assign(self, classes: np.ndarray) -> None:
        """Put each flow in its strict-priority class (0 served first) on the egress
        ports it crosses (000 §VII c), under a lease like the meters'."""
        ...


@dataclass
class Allocation:
    """One step's decision. ``hot``: the links whose demands reached capacity at this
    step (000 Algorithm 1 line 11); ``held``: those the policy treated as bottlenecked
    (``hot`` plus the links still held by the manager's hysteresis); ``phase_s``: seconds
    the step spent reading the link statistics, the profile, deciding and enforcing."""

    time: float
    rates_bps: np.ndarray
    optimizer_s: float
    classes: np.ndarray | None = None
    hot: np.ndarray | None = None
    held: np.ndarray | None = None
    phase_s: dict[str, float] | None = None
    util: np.ndarray | None = None


@dataclass
class Lease:
    """The lease of one enforcement, seconds: :data:`LEASE_STEPS` x the longer of Δt and
    the last :data:`LEASE_WINDOW` gaps between the steps' ``now``, so that steps that run
    late stretch it and never let the caps lapse mid-run, and a dead manager's caps
    expire (fail-open) within a few of its own recent steps."""

    dt: float
    _last: float | None = field(default=None, repr=False)
    _gaps: list[float] = field(default_factory=list, repr=False)

    def at(self, now: float) -> float:
        """The lease of the step at ``now`` (records ``now``)."""
        if self._last is not None and now > self._last:
            self._gaps = [*self._gaps[-(LEASE_WINDOW - 1):], now - self._last]
        self._last = now
        return LEASE_STEPS * max([self.dt, *self._gaps])


@dataclass
class Manager:
    """One observe -> decide -> act step per call of :meth:`step`.

    Parameters
    ----------
    routing : scipy.sparse matrix, F x L
        R[f, l] = 1 iff flow f crosses link l (000 eq. 1a), flows in the profiler's order.
    link_kind : ndarray (L,)
        UPLINK / DOWNLINK / INTERNAL per link (:mod:`streamband.alloc.base`).
    policy : Policy
        The allocation function (a ``loop`` policy of :mod:`streamband.alloc.registry`).
    profiler, linkstats, enforcer
        The backend's adapters.
    dt : float
        Seconds between steps (allocations): Δt, or the shorter step of a policy on two
        periods (:meth:`~streamband.alloc.registry.PolicyEntry.periods`).
    weights : ndarray (F,), optional
        Per-flow weights a policy may use (tuple sizes, 001 §III-D).
    apps : ndarray (F,), optional
        The application of every flow when several share the network (000 §VII).
    params : mapping, optional
        The policy's parameters (App-Fair's α, m).
    classer : ClassEnforcer, optional
        Enforces the classes of a policy that decides them (strict priority).
    memory : dict
        What the policy carried from its last step (App-Fair's achieved averages):
        kept here, in the loop, so that the policy stays a pure function of its inputs.
    class_dt : float, optional
        Δt of the strict-priority classes when the loop steps every ``dt`` < ``class_dt``
        (handed to the policy as :attr:`AllocProblem.class_dt`: it regroups once per
        ``class_dt`` and re-makes its rates every step); None: classes every step.
    guard : HarmGuard, optional
        Do no harm (:mod:`.guard`): keep TCP's measured split unless the allocation moves
        enough bandwidth to pay for metering it. None (the simulator: metering is free
        there): always enforce.
    hold : int
        Hysteresis of the bottleneck decision (000 Algorithm 1, line 11): a link found
        bottlenecked stays so until its flows' demands have stayed below its capacity
        for ``hold`` consecutive steps; the policy and the cap / no-cap mask both see
        these links (``AllocProblem.bottlenecked``). 1: the current step alone.
    paced : ndarray (L,) of bool, optional
        Links left to TCP whatever their load: their flows' engine already paces them
        together (:func:`~streamband.loop.guard.paced_links`); the policy does not see
        them as bottlenecked, and a flow on no other bottlenecked link stays uncapped.
    full_frac : float, optional
        A link whose demands reach its capacity counts as bottlenecked only while its
        measured load is at least this share of its capacity (:data:`FULL_FRAC`), when the
        link statistics measure it (``utilisation()``); None: the demands alone, as
        Algorithm 1 line 11 is written.
    history : list of Allocation
        Every allocation made, in order (``rates_bps`` as enforced).

    The enforcers' ``lease_s`` (when they have one) is set at every step to
    :data:`LEASE_STEPS` times the longer of Δt and the longest of the last
    :data:`LEASE_WINDOW` gaps between the steps' ``now`` (:meth:`lease_s`).
    """

    routing: object  # scipy.sparse F x L
    link_kind: np.ndarray
    policy: Policy
    profiler: Profiler
    linkstats: LinkStats
    enforcer: Enforcer
    dt: float
    weights: np.ndarray | None = None
    apps: np.ndarray | None = None
    params: Mapping[str, float] = field(default_factory=dict)
    classer: ClassEnforcer | None = None
    memory: dict[str, Any] = field(default_factory=dict)
    class_dt: float | None = None
    guard: HarmGuard | None = None
    hold: int = HOLD_STEPS
    full_frac: float | None = FULL_FRAC
    paced: np.ndarray | None = None
    history: list[Allocation] = field(default_factory=list)
    #: per link, consecutive steps whose demands stayed below capacity
    _calm: np.ndarray | None = field(default=None, repr=False)
    _lease: Lease | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.hold < 1:
            raise ValueError(f"hold: expected at least 1 step, got {self.hold}")
        if self.full_frac is not None and not 0.0 <= self.full_frac <= 1.0:
            raise ValueError(f"full_frac: expected a share of capacity in [0, 1], got "
                             f"{self.full_frac}")

    def held(self, now_hot: np.ndarray) -> np.ndarray:
        """(L,) bool: the links bottlenecked now or at one of the last ``hold - 1``
        steps (``now_hot``: this step's test, 000 Algorithm 1 line 11)."""
        calm = (self._calm if self._calm is not None and self._calm.shape == now_hot.shape
                else np.full(now_hot.shape, self.hold))
        self._calm = np.where(now_hot, 0, calm + 1)
        return self._calm < self.hold

    def interval(self) -> float:
        """Seconds the last flow state covers: the profiler's measured ``interval_s``
        when it has one (a real loop's steps come late under load: V and the backlogs
        of eq. 3 then span 2-4 Δt, and spread over Δt they made every link look
        bottlenecked), else Δt."""
        measured = getattr(self.profiler, "interval_s", None)
        if measured is None:
            return self.dt
        return max(float(measured), MIN_INTERVAL_FRAC * self.dt)

    def lease_s(self, now: float) -> float:
        """The lease of this step's enforcement, seconds: :data:`LEASE_STEPS` x the
        longer of Δt and the recent gaps between steps (records ``now``)."""
        if self._lease is None:
            self._lease = Lease(self.dt)
        self._lease.dt = self.dt
        return self._lease.at(now)

    def step(self, now: float) -> Allocation:
        lease = self.lease_s(now)
        for enf in (self.enforcer, self.classer):
            if enf is not None and hasattr(enf, "lease_s"):
                enf.lease_s = lease
        t_stats = time.perf_counter()
        capacity = self.linkstats.allocatable()
        t_profile = time.perf_counter()
        state = self.profiler.flow_state()
        t_decide = time.perf_counter()
        problem = AllocProblem(
            routing=self.routing,  # type: ignore[arg-type]
            capacity=capacity,
            link_kind=self.link_kind,
            state=state,
            dt=self.interval(),
            weights=self.weights,
            apps=self.apps,
            params=self.params,
            memory=self.memory,
            class_dt=self.class_dt,
        )
        e = entries(problem.routing)
        now_hot = bottlenecked_links(e, problem.capacity, problem.demand_bps(), None)
        measure = getattr(self.linkstats, "utilisation", None)
        util = None if measure is None else np.asarray(measure(), float)
        if util is not None and self.full_frac is not None:
            now_hot &= util >= self.full_frac
        problem.bottlenecked = self.held(now_hot)
        if self.paced is not None:
            problem.bottlenecked &= ~self.paced
        t0 = time.perf_counter()
        decision = as_decision(self.policy(problem))
        spent = time.perf_counter() - t0
        if decision.classes is not None and self.classer is None:
            raise PreconditionError("the policy decides strict-priority classes; this "
                                    "backend's manager has no class enforcer")
        rates = (decision.rates if decision.rates is not None
                 else np.full(problem.n_flows, np.inf))
        # Algorithm 1 outputs rates for the bottlenecked flows F^b (line 9); every
        # other flow keeps plain TCP sharing, so it is left uncapped.
        hot = problem.bottlenecked
        on_hot = np.zeros(e.n_flows, bool)
        on_hot[e.rows[hot[e.cols]]] = True
        rates = np.where(on_hot, rates, np.inf)
        if self.guard is not None and not self.guard.decide(
                e, problem.capacity, hot, rates, 8.0 * problem.state.sent / problem.dt):
            rates = np.full(e.n_flows, np.inf)  # TCP's own split: the move is too small
        t_enforce = time.perf_counter()
        self.enforcer.enforce(rates)
        if decision.classes is not None:
            assert self.classer is not None
            self.classer.assign(decision.classes)
        self.memory = decision.memory
        phases = {"linkstats": t_profile - t_stats, "profile": t_decide - t_profile,
                  "decide": t_enforce - t_decide, "enforce": time.perf_counter() - t_enforce}
        alloc = Allocation(now, rates, spent, decision.classes, now_hot, hot, phases, util)
        self.history.append(alloc)
        return alloc
