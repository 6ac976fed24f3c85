"""App-Fair: fairness between applications, not flows (000 §VII), and App-aware inside
App-Fair (``hierarchical``).

TCP shares a bottleneck per flow, so an application with five flows gets five shares.
000 §VII's point solution, every Δt:

1. each application's throughput, eq. (5):
   μ_i^(t+Δt) = α μ_i^(t) + (1 - α) μ_i^(Δt), where μ_i^(t) is its achieved average
   throughput up to t and μ_i^(Δt) its throughput over the last Δt (:func:`eq5`);
2. the applications clustered by μ into at most m groups (:func:`group`);
3. group -> strict-priority class, the group of lowest throughput highest (class 0);
4. the starvation rule: an application that got (almost) nothing over the last Δt is
   displaced to another group, one up, at the next schedule, so every application
   receives a non-zero bandwidth (:func:`displace_starved`);
5. every flow of an application in its application's class, on every egress port.

Reading eq. (5). 000 defines μ_i^(t) as "achieved average throughput up to time t" and
reports App-Fair at α = 1 as fair as at α = 0.25 (98 %). Read as a recursive moving
average (μ^(t) the previous output), α = 1 would freeze every score at its first value
and App-Fair could not rotate at all; so μ^(t) here is what 000 says it is: the average
throughput over [0, t], kept as bytes and seconds in the policy's memory. α weighs that
history against the last interval; α in (0, 1].

Clustering: single linkage in one dimension. Sorted scores are cut where the gap to the
next one exceeds ``similar`` x the largest score (applications closer than that are
"similar in achieved throughput" and share a class, 000 §VII); with more than m groups,
only at the m - 1 widest gaps. It needs no random start (k-means does), so the same
throughputs always give the same groups and the manager does not flap between schedules
on a seed; it is exact and O(A log A). ``similar`` defaults to 0 (only equal scores
share a group), so groups form when there are more applications than the m queues:
inside a class, sharing is per flow again, TCP's unfairness in small, and with a
tolerance the applications of a fair schedule (whose averages converge) would all
become "similar" and fall back into one class (checked on 000 Fig. 13's setting, 10
minutes on the simulator: with 10 % the index is 0.89, 0.97, 0.83, 0.98 at α = 0.25,
0.5, 0.75, 1; with 0, 0.999 at every α).

State across steps (the average up to t) lives in the :class:`~streamband.alloc.base.
Decision`'s ``memory``, which the manager loop hands back at the next step: the policy
stays a pure function of its inputs (exact-answer tests feed a memory in and read the
next one out), and the history lives exactly as long as the loop that enforces it.

``hierarchical``: App-Fair between applications (classes), and App-aware (000
Algorithm 1, meters) inside each application's share: on every link, what strict
priority leaves its class (:func:`metered_capacity`), divided among its own flows by
Algorithm 1. 000 leaves open how the two combine; this never takes from another
application, only moves an application's bandwidth between its own flows. On a downlink
whose receivers hold no backlog (a join that keeps its unmatched tuples in its own store),
problem (4) has no receiver pace to go by, and the share is split by the senders' need,
eq. (3), instead (:func:`sender_split_links`). It runs on
two periods in one manager loop: App-Fair regroups every Δt (10 s), App-aware re-splits
every step of the loop (1 s, ``appfair.split_s``), from the classes of the last
regrouping (:meth:`~streamband.alloc.registry.PolicyEntry.periods`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from streamband.alloc.appaware import appaware
from streamband.alloc.base import CLASSES, DOWNLINK, UPLINK, AllocProblem, Decision, FlowState
from streamband.alloc.priority import group_capacity, priority_rates

#: defaults of App-Fair's parameters (000 §VII: m = 8 queues; Δt = 10 s is the loop's)
DEFAULTS: dict[str, float] = {"alpha": 0.5, "groups": CLASSES, "similar": 0.0, "starve": 0.05}


def params_of(params: Mapping[str, float]) -> tuple[float, int, float, float]:
    """(α, m, similar, starve) from a policy's parameters, defaults filled in.

    Raises
    ------
    ValueError
        α outside (0, 1], m outside 1..8, similar or starve outside [0, 1).
    """
    unknown = set(params) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"appfair: unknown parameter(s) {sorted(unknown)}, expected "
                         f"{', '.join(DEFAULTS)}")
    p = {**DEFAULTS, **params}
    alpha, m = float(p["alpha"]), p["groups"]
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha: expected a weight in (0, 1], got {alpha:g}")
    if int(m) != m or not 1 <= m <= CLASSES:
        raise ValueError(f"groups: expected an integer in 1..{CLASSES} (strict-priority "
                         f"queues per port), got {m:g}")
    for key in ("similar", "starve"):
        if not 0.0 <= p[key] < 1.0:
            raise ValueError(f"{key}: expected a share in [0, 1), got {p[key]:g}")
    return alpha, int(m), float(p["similar"]), float(p["starve"])


def app_throughput(sent_bytes: np.ndarray, apps: np.ndarray, n_apps: int, dt: float
                   ) -> np.ndarray:
    """μ_i^(Δt): each application's throughput over the last interval, bit/s (the bytes
    its flows carried, 000 §VII c: recorded by the link statistics collector)."""
    return 8.0 * np.bincount(apps, weights=sent_bytes, minlength=n_apps) / dt


def eq5(mu_t: np.ndarray, mu_dt: np.ndarray, alpha: float) -> np.ndarray:
    """Eq. (5), 000 §VII: μ^(t+Δt) = α μ^(t) + (1 - α) μ^(Δt).

    Examples
    --------
    >>> eq5(np.array([4.0, 0.0]), np.array([0.0, 8.0]), 0.25).tolist()
    [1.0, 6.0]
    """
    return alpha * np.asarray(mu_t, float) + (1.0 - alpha) * np.asarray(mu_dt, float)


def group(scores: np.ndarray, m: int, similar: float = DEFAULTS["similar"]) -> np.ndarray:
    """Each application's group, 0 = lowest throughput: 1-D single linkage, cut where the
    gap to the next score exceeds ``similar`` x the largest score, at most ``m`` groups
    (then only at the m - 1 widest gaps; equal gaps: the lower one first).

    Examples
    --------
    >>> group(np.array([5.0, 1.0, 1.05, 9.0]), 8).tolist()
    [2, 0, 1, 3]
    >>> group(np.array([5.0, 1.0, 1.05, 9.0]), 8, similar=0.1).tolist()
    [1, 0, 0, 2]
    >>> group(np.array([5.0, 1.0, 1.05, 9.0]), 2).tolist()
    [0, 0, 0, 1]
    """
    s = np.asarray(scores, float)
    if len(s) == 0:
        return np.zeros(0, np.int64)
    order = np.argsort(s, kind="stable")
    gaps = np.diff(s[order])
    cut = gaps > similar * max(float(s.max()), 0.0)
    if cut.sum() > m - 1:
        widest = np.argsort(-gaps, kind="stable")[: m - 1]
        cut = np.zeros_like(cut)
        cut[widest] = True
    out = np.empty(len(s), np.int64)
    out[order] = np.concatenate(([0], np.cumsum(cut)))
    return out


def displace_starved(groups: np.ndarray, previous: np.ndarray | None, mu_dt: np.ndarray,
                     starve: float) -> np.ndarray:
    """000 §VII's starvation rule: an application whose throughput over the last Δt is
    below ``starve`` x the mean application's, and whose new group is not above the
    one it starved in (``previous``), is displaced one group up (towards 0) for the next
    schedule; an application that keeps starving climbs to the highest group, whose
    flows share first, so every application receives a non-zero bandwidth.

    Examples
    --------
    The third application starved in group 1 and would stay there: it moves to 0.

    >>> displace_starved(np.array([0, 2, 1]), np.array([1, 0, 1]),
    ...                  np.array([10.0, 5.0, 0.1]), 0.05).tolist()
    [0, 2, 0]
    """
    if previous is None or len(previous) != len(groups):
        return groups
    return np.where(starving(mu_dt, starve), np.minimum(groups, np.maximum(previous - 1, 0)),
                    groups)


def starving(mu_dt: np.ndarray, starve: float) -> np.ndarray:
    """(A,) the applications below ``starve`` x the mean application's throughput over
    the last Δt (none when nothing moved)."""
    mu = np.asarray(mu_dt, float)
    return mu < starve * (mu.mean() if len(mu) else 0.0)


def _apps(p: AllocProblem) -> tuple[np.ndarray, int]:
    apps = np.zeros(p.n_flows, np.int64) if p.apps is None else np.asarray(p.apps, np.int64)
    if apps.shape != (p.n_flows,):
        raise ValueError(f"apps: expected one application index per flow ({p.n_flows}), "
                         f"got shape {apps.shape}")
    return apps, int(apps.max()) + 1 if len(apps) else 0


def regroup_due(p: AllocProblem) -> bool:
    """Whether App-Fair regroups at this step: at every step when the loop's step is
    Δt (``p.class_dt`` None), else once the steps since the last regrouping (or since
    the start: ``p.memory["window_s"]``, plus this one) span ``p.class_dt``, so that
    the schedules fall at the same times as with one step per Δt."""
    if p.class_dt is None:
        return True
    return float(p.memory.get("window_s", 0.0)) + p.dt >= p.class_dt * (1.0 - 1e-9)


def app_classes(p: AllocProblem) -> tuple[np.ndarray, dict[str, Any]]:
    """Steps 1-4 of App-Fair: each application's class and the memory for the next step
    (``bytes``: what each application carried up to the last regrouping, ``seconds``:
    since when; ``window_bytes``/``window_s``: what it carried since, when the loop
    steps faster than Δt, see :attr:`~streamband.alloc.base.AllocProblem.class_dt`).
    Between regroupings (:func:`regroup_due`) the classes are held (before the first:
    every application in class 0, one class, as before any schedule); at a regrouping
    μ_i^(Δt) of eq. (5) is the window's throughput and μ_i^(t) the average before it."""
    alpha, m, similar, starve = params_of(p.params)
    apps, n = _apps(p)
    step = np.bincount(apps, weights=p.state.sent, minlength=n)
    seen = np.asarray(p.memory.get("bytes", np.zeros(n)), float)
    span = float(p.memory.get("seconds", 0.0))
    window = np.asarray(p.memory.get("window_bytes", np.zeros(n)), float)
    window_s = float(p.memory.get("window_s", 0.0))
    prev = p.memory.get("classes")
    if seen.shape != (n,) or window.shape != (n,) or np.shape(prev) not in ((n,), ()):
        seen, span, window, window_s, prev = np.zeros(n), 0.0, np.zeros(n), 0.0, None
    if not regroup_due(p):
        memory = {**p.memory, "bytes": seen, "seconds": span, "window_bytes": window + step,
                  "window_s": window_s + p.dt}
        if prev is None:  # no schedule yet (or the applications changed)
            memory.pop("classes", None)
        return (np.zeros(n, np.int64) if prev is None else np.asarray(prev, np.int64)), memory
    window, window_s = window + step, window_s + p.dt
    mu_dt = 8.0 * window / window_s  # μ_i^(Δt): the last Δt's throughput
    mu_t = 8.0 * seen / span if span > 0 else mu_dt  # achieved average up to t
    score = eq5(mu_t, mu_dt, alpha)
    cls = displace_starved(group(score, m, similar),
                           None if prev is None else np.asarray(prev, np.int64), mu_dt, starve)
    memory = {"bytes": seen + window, "seconds": span + window_s, "window_bytes": np.zeros(n),
              "window_s": 0.0, "score_bps": score, "classes": cls,
              "starved": starving(mu_dt, starve)}
    return cls, memory


def appfair(p: AllocProblem) -> Decision:
    """000 §VII App-Fair: every flow in its application's strict-priority class."""
    cls, memory = app_classes(p)
    apps, _ = _apps(p)
    return Decision(classes=cls[apps], memory=memory)


def served_state(p: AllocProblem, starved: np.ndarray, apps: np.ndarray
                 ) -> tuple[FlowState, np.ndarray]:
    """The flow state App-aware divides an application's share by, and each flow's
    receiver consumption ρ_f of eq. (4) to remember. An application that starved over
    the last Δt consumed nothing, so its ρ says nothing about how to split its next
    share (problem 4 would split it equally): its flows keep the ρ of the last interval
    in which they were served (``p.memory["rho"]``), folded into V_f so that eq. (4)
    reads it; its backlogs, and so its demand of eq. (3), are the current ones."""
    s = p.state
    rho = (s.sent - s.lr1 + s.lr0) / p.dt
    old = p.memory.get("rho")
    if old is None or np.shape(old) != rho.shape:
        return s, rho
    stale = starved[apps]
    rho = np.where(stale, np.asarray(old, float), rho)
    sent = np.where(stale, np.maximum(rho * p.dt + s.lr1 - s.lr0, 0.0), s.sent)
    return FlowState(s.ls0, s.ls1, s.lr0, s.lr1, sent), rho


#: hierarchical: the weight of the equal split in a metered application's division of its
#: share (the rest App-aware's): it keeps a join's input from being starved for a whole
#: split period when the readings jitter, at no cost in the per-application gains
#: (``docs/findings.md``)
EQUAL_PART = 0.25


#: hierarchical: the receivers on a downlink keep up with what arrives when the backlog
#: they hold at the end of the step, Σ_f L^r_f(t+Δt), is at most this share of what their
#: flows delivered in it, Σ_f V_f (on a 1-s step: 50 ms of arrivals). The simulator's joins
#: hold their early inputs in the receiver queues and never come under it on bench appfair
#: (its per-application results are the same with and without the rule); the testbed
#: harness's joins are always under it (L^r is their inbox, drained at once)
KEEP_UP = 0.05


def sender_split_links(routing: sp.spmatrix | sp.sparray, link_kind: np.ndarray,
                       state: FlowState, senders_hold: bool = False) -> np.ndarray:
    """(L,) the downlinks on which ``hierarchical`` splits an application's share by its
    senders' need, eq. (3), instead of its receivers' consumption, problem (4) (000
    §IV-B): those whose receivers keep up, Σ_f L^r_f(t+Δt) <= :data:`KEEP_UP` Σ_f V_f
    over the link's flows (receivers that hold nothing and received nothing included).

    Problem (4) reads ρ_f = [V_f - L^r_f(t+Δt) + L^r_f(t)] / Δt as the pace at which f's
    receiver consumes, and it is that only while the receiver holds a backlog. With none,
    ρ_f is V_f / Δt, what the last split let through, and (4) water-fills x_f ∝ ρ_f: it
    repeats the last step's split whatever it was, and after a step in which one input
    trickled (its application at the bottom of the priorities) it gives that input the
    whole share and the others ~0. A join that keeps its unmatched tuples in its own store
    instead of its inputs' queues (the testbed harness's) always looks so: L^r is 0 and
    the store that tells which input is behind is not in the flow state. The senders'
    backlogs still tell it: a join's sources emit the same tuple ids, so the input that is
    behind holds more at its sender (in tuples), and eq. (3)'s split at equal transfer
    times, x_f = C D_f / Σ D with D_f = V_f + 2 L^s_f(t+Δt) - L^s_f(t), brings every
    input to the same tuple at once.

    Examples
    --------
    Two flows into one downlink: receivers that keep up, then one that holds 1 MB.

    >>> r = sp.csr_matrix(np.ones((2, 1)))
    >>> z, v = np.zeros(2), np.array([1e6, 1e5])
    >>> sender_split_links(r, np.array([DOWNLINK]), FlowState(z, z, z, z, v)).tolist()
    [True]
    >>> held = np.array([0.0, 1e6])
    >>> sender_split_links(r, np.array([DOWNLINK]), FlowState(z, z, z, held, v)).tolist()
    [False]

    With ``senders_hold``, also the downlinks whose flows' senders hold at least what
    their receivers hold, Σ_f L^s_f(t+Δt) >= Σ_f L^r_f(t+Δt) > 0: there the backlog
    that decides which input is behind waits at the senders. Problem (4) reads ρ_f from
    one interval's deliveries wherever a join holds its early input in a store: the
    input that delivered most is ahead, holds most, and gets the floor the next step, so
    the caps swing from step to step. The senders' backlogs there (a source's unread
    records among them, :mod:`streamband.loop.source_backlog`) integrate each input's
    need less its service over the whole run, so eq. (3)'s split x_f = C L^s_f / Σ L^s
    follows the inputs' volumes, x_f = C g_f / Σ g for backlogs growing from zero, and
    moves slowly.

    >>> k, v = np.array([DOWNLINK]), np.array([1e5, 1e5])
    >>> sender_split_links(r, k, FlowState(z, np.array([5e6, 1e6]), z, held, v), True).tolist()
    [True]
    >>> sender_split_links(r, k, FlowState(z, np.array([1e5, 1e5]), z, held, v), True).tolist()
    [False]
    """
    on = _crosses(routing)
    if 0 in on.shape:
        return np.zeros(on.shape[1], bool)
    held = np.asarray(on.T @ np.maximum(state.lr1, 0.0)).ravel()
    arrived = np.asarray(on.T @ np.maximum(state.sent, 0.0)).ravel()
    has_flow = np.asarray(on.sum(axis=0)).ravel() > 0
    split = held <= KEEP_UP * arrived
    if senders_hold:
        waiting = np.asarray(on.T @ np.maximum(state.ls1, 0.0)).ravel()
        split |= (held > 0) & (waiting >= held)
    return (np.asarray(link_kind) == DOWNLINK) & has_flow & split


def event_time_links(routing: sp.spmatrix | sp.sparray, link_kind: np.ndarray,
                     state: FlowState) -> np.ndarray:
    """(L,) the downlinks every flow of which feeds a join's store with a known pace and
    event time (``FlowState.rho_event`` > 0, ``event_s``, :mod:`streamband.loop.event_pace`).

    Examples
    --------
    >>> r = sp.csr_matrix(np.array([[1.0, 0.0], [1.0, 1.0]]))
    >>> k, z, t = np.array([DOWNLINK, DOWNLINK]), np.zeros(2), np.array([9.0, 9.0])
    >>> event_time_links(r, k, FlowState(z, z, z, z, z, np.array([2.0, 1.0]), t)).tolist()
    [True, True]
    >>> event_time_links(r, k, FlowState(z, z, z, z, z, np.array([np.nan, 1.0]), t)).tolist()
    [False, True]
    """
    on = _crosses(routing)
    if state.rho_event is None or state.event_s is None or 0 in on.shape:
        return np.zeros(on.shape[1], bool)
    known = (np.nan_to_num(np.asarray(state.rho_event, float), nan=0.0) > 0) & ~np.isnan(
        np.asarray(state.event_s, float))
    flows = np.asarray(on.sum(axis=0)).ravel()
    known_on = np.asarray(on.T @ known.astype(float)).ravel()
    return (np.asarray(link_kind) == DOWNLINK) & (flows > 0) & (known_on == flows)


def event_time_state(routing: sp.spmatrix | sp.sparray, joins: np.ndarray, state: FlowState,
                     dt: float) -> FlowState:
    """``state`` with problem (4)'s terms read in event time on the ``joins`` links: L^r_f
    the bytes of f's event time ahead of the slowest flow into its join,
    ρ_f (event_s_f - min event_s) (0 for the slowest), and L^r_f(t) set so that
    ρ_f = (V_f - L^r_f(t+Δt) + L^r_f(t)) / Δt is ``rho_event``. A flow with nothing to
    send (no sender backlog, nothing sent) is no one's slowest and gets ρ_f = 0: behind
    in event time, it could use none of the share (4) would give it."""
    csc = _crosses(routing).tocsc()
    ev = np.asarray(state.event_s, float)
    idle = (np.asarray(state.ls1, float) <= 0) & (np.asarray(state.sent, float) <= 0)
    ahead = np.full(len(ev), np.inf)
    for lk in np.flatnonzero(joins):
        fl = csc.indices[csc.indptr[lk]:csc.indptr[lk + 1]]
        busy = fl[~idle[fl]]
        slowest = ev[busy].min() if len(busy) else ev[fl].min()
        ahead[fl] = np.minimum(ahead[fl], np.maximum(ev[fl] - slowest, 0.0))
    on = np.isfinite(ahead)
    rho = np.where(idle, 0.0, np.nan_to_num(np.asarray(state.rho_event, float)))
    lr1 = np.where(on, rho * np.where(on, ahead, 0.0), state.lr1)
    return replace(state, lr1=lr1, lr0=np.where(on, rho * dt - state.sent + lr1, state.lr0))


def appaware_store(p: AllocProblem) -> np.ndarray:
    """000 Algorithm 1 (:func:`~streamband.alloc.appaware.appaware`) for receivers that
    keep the tuples they wait with in a store of their own (a join's, an event-time
    aligner's) rather than in the input queues the profiler reads:

    - on the downlinks into a join whose inputs' paces and event times are known
      (:func:`event_time_links`), problem (4) read in event time
      (:func:`event_time_state`, :mod:`streamband.loop.event_pace`): the flow behind
      first, then every flow at its volume;
    - elsewhere, eq. (3) in place of problem (4) on the downlinks whose receivers keep up
      or whose senders hold more (:func:`sender_split_links` with ``senders_hold``). On
      spout-fed Storm, the Trending Topics aggregator and the Trucking IoT combiner hold
      their tuples so (L^r = 0), and problem (4) then repeats the last step's split:
      after a step in which the aggregator's inputs trickled it capped them to 0.5
      Mbit/s of a 10 Mbit/s link.

    Examples
    --------
    A join's two inputs into one 10 bit/s downlink, receivers holding nothing, the
    first input's sender 3 times as far behind: split 3:1 by eq. (3).

    >>> r = sp.csr_matrix(np.ones((2, 1)))
    >>> z, ls = np.zeros(2), np.array([3.0, 1.0])
    >>> p = AllocProblem(routing=r, capacity=np.array([10.0]),
    ...                  link_kind=np.array([DOWNLINK]), state=FlowState(ls, ls, z, z, z),
    ...                  dt=1.0)
    >>> appaware_store(p).tolist()
    [7.5, 2.5]

    The same senders, the join's paces known: 1 and 3 bytes per event second. The second
    input 2 s ahead: the first gets the whole step, 1.25 bytes (1.25 event seconds);
    0.25 s ahead: both end the step 0.5 s on; level: 1:3.

    >>> pace = np.array([1.0, 3.0])
    >>> s = FlowState(ls, ls, z, z, z, rho_event=pace, event_s=np.array([100.0, 102.0]))
    >>> appaware_store(replace(p, state=s)).tolist()
    [10.0, 0.0]
    >>> s = replace(s, event_s=np.array([100.0, 100.25]))
    >>> appaware_store(replace(p, state=s)).tolist()
    [4.0, 6.0]
    >>> s = replace(s, event_s=np.array([100.0, 100.0]))
    >>> appaware_store(replace(p, state=s)).tolist()
    [2.5, 7.5]

    The first input 2 s behind with nothing to send: the second takes the link.

    >>> idle = FlowState(np.array([0.0, 3.0]), np.array([0.0, 3.0]), z, z, z,
    ...                  rho_event=pace, event_s=np.array([100.0, 102.0]))
    >>> appaware_store(replace(p, state=idle)).round(6).tolist()
    [0.0, 10.0]
    """
    s = p.state
    joins = event_time_links(p.routing, p.link_kind, s)
    split = sender_split_links(p.routing, p.link_kind, s, senders_hold=True) & ~joins
    if joins.any():
        s = event_time_state(p.routing, joins, s, p.dt)
    kind = np.where(split, UPLINK, p.link_kind)
    return appaware(replace(p, link_kind=kind, state=s))


def _crosses(routing: sp.spmatrix | sp.sparray) -> sp.csr_matrix:
    """(F, L) 1.0 where a flow crosses a link."""
    return sp.csr_matrix(sp.csr_matrix(routing) != 0, dtype=float)


def _ranked(on: sp.csr_matrix, classes: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
    """Each crossing's class rank (8 for class 0 ... 1 for class 7), and per link the
    rank of the highest class crossing it (0: no flow)."""
    rank = CLASSES - np.asarray(classes, float)
    ranked = sp.csr_matrix(on.multiply(rank[:, None]))
    return ranked, ranked.max(axis=0).toarray().ravel()


def metered_apps(routing: sp.spmatrix | sp.sparray, classes: np.ndarray, apps: np.ndarray,
                 n_apps: int) -> np.ndarray:
    """(A,) the applications whose share does not rest on another application's predicted
    demand: no flow of a higher class (a lower number) crosses any of their links. Below
    one, a share is what the higher classes leave, and their demands of eq. (3) over a
    Δt are a guess (a starved application drains its backlog in seconds, then offers
    what it offers): a cap from that guess held 0.0-0.1 Mbit/s for Δt on the testbed
    while the class above used 7.9 of 20 Mbit/s."""
    on = _crosses(routing)
    if 0 in on.shape:  # no flow or no link: no class above anyone
        return np.ones(n_apps, bool)
    _, top = _ranked(on, classes)
    highest_met = sp.csr_matrix(on.multiply(top[None, :])).max(axis=1).toarray().ravel()
    below = highest_met > CLASSES - np.asarray(classes, float)  # a higher class shares a link
    return np.bincount(apps, weights=below, minlength=n_apps) == 0


def metered_capacity(routing: sp.spmatrix | sp.sparray, capacity: np.ndarray,
                     pred: np.ndarray, classes: np.ndarray, metered: np.ndarray) -> np.ndarray:
    """(L,) what the ``metered`` flows (bool per flow) may share on every link under
    strict priority: the capacity less what the unmetered flows of the link's highest
    class are predicted to use (``pred``, bit/s). A metered flow is in the highest class
    on each of its links (:func:`metered_apps`), so a lower class takes nothing it
    wants and is not subtracted: an application alone on top of a link may use all of
    it, whatever its demand of eq. (3) over the last step predicted.

    Examples
    --------
    One 10 bit/s link: the metered flow and an unmetered one of class 0 (predicted 3),
    one of class 1 (predicted 4, served after them).

    >>> metered_capacity(sp.csr_matrix(np.ones((3, 1))), np.array([10.0]),
    ...                  np.array([3.0, 3.0, 4.0]), np.array([0, 0, 1]),
    ...                  np.array([True, False, False])).tolist()
    [7.0]
    """
    on = _crosses(routing)
    cap = np.asarray(capacity, float)
    if 0 in on.shape:
        return cap.copy()
    ranked, top = _ranked(on, classes)
    ranked.data = (ranked.data == top[ranked.indices]).astype(float)  # in the link's top
    other = np.where(np.asarray(metered, bool), 0.0, np.where(np.isfinite(pred), pred, 0.0))
    used = np.asarray(ranked.T @ other).ravel()
    return np.maximum(cap - used, 0.0)


def hierarchical(p: AllocProblem) -> Decision:
    """App-Fair's classes between applications; inside each metered application's share
    (what strict priority leaves it on every link, :func:`metered_capacity`, divided
    between the metered applications of a link as :func:`~streamband.alloc.priority.
    group_capacity` does), App-aware's rates (000 Algorithm 1), its receivers'
    consumption taken from the last step the application was served in
    (:func:`served_state`), eq. (3) in place of problem (4) on the downlinks whose
    receivers keep up (:func:`sender_split_links`), mixed with the equal split of the
    share (weight :data:`EQUAL_PART`). Only the applications of :func:`metered_apps` are capped; the
    others, and an application predicted to get nothing, are left uncapped (``np.inf``:
    their class decides).

    Two periods in one loop (:attr:`~streamband.alloc.base.AllocProblem.class_dt`):
    the classes are regrouped every Δt (:func:`app_classes`) and held between, while
    the rates are re-made at every step from the last step's flow state, so that a
    split of one instant is never held for a whole Δt."""
    cls, memory = app_classes(p)
    apps, n = _apps(p)
    classes = cls[apps]
    demand = p.demand_bps()
    cap = np.asarray(p.capacity, float)
    pred = priority_rates(p.routing, cap, demand, classes)
    metered = metered_apps(p.routing, classes, apps, n)
    shares = group_capacity(p.routing, metered_capacity(p.routing, cap, pred, classes,
                                                        metered[apps]),
                            np.where(metered[apps], pred, 0.0), apps)
    rates = np.full(p.n_flows, np.inf)
    # served this step or not: the step's throughput, not the regrouping window's
    starved = starving(app_throughput(p.state.sent, apps, n, p.dt), params_of(p.params)[3])
    s, memory["rho"] = served_state(p, starved, apps)
    for a in range(n):
        idx = np.flatnonzero(apps == a)
        if not len(idx) or not metered[a] or not np.any(pred[idx] > 0):
            continue
        state = FlowState(s.ls0[idx], s.ls1[idx], s.lr0[idx], s.lr1[idx], s.sent[idx])
        routing = p.routing[idx]
        # eq. (3) in place of problem (4) where the receivers keep up: Algorithm 1 solves
        # (3) on the links it takes for uplinks (lines 17-19)
        kind = np.where(sender_split_links(routing, p.link_kind, state), UPLINK, p.link_kind)
        sub = AllocProblem(routing=routing, capacity=shares[a], link_kind=kind, state=state,
                           dt=p.dt, weights=None if p.weights is None else p.weights[idx])
        rates[idx] = ((1.0 - EQUAL_PART) * appaware(sub)
                      + EQUAL_PART * equal_split(sub.routing, shares[a]))
    return Decision(rates=rates, classes=classes, memory=memory)


def equal_split(routing: sp.spmatrix | sp.sparray, capacity: np.ndarray) -> np.ndarray:
    """(F,) each flow's equal part of every link it crosses, the least of them: a split
    that never overfills a link of ``capacity``."""
    on = _crosses(routing)
    if 0 in on.shape:  # no flow, or flows that cross no link
        return np.zeros(on.shape[0])
    n = np.maximum(np.asarray(on.sum(axis=0)).ravel(), 1.0)
    with np.errstate(divide="ignore"):
        per_bit = n / np.asarray(capacity, float)  # flows per bit/s; inf: no capacity
        tightest = sp.csr_matrix(on.multiply(per_bit[None, :])).max(axis=1).toarray().ravel()
        return np.where(tightest > 0, 1.0 / tightest, 0.0)


def jain_index(x: np.ndarray) -> float:
    """Jain's fairness index (Σ x)^2 / (n Σ x^2) (Jain, Chiu and Hawe 1984; 000 §VII's
    measure): 1 when all are equal, 1/n when one gets everything.

    Examples
    --------
    >>> round(jain_index(np.array([1.0, 2.0, 3.0, 4.0, 5.0])), 4)
    0.8182
    """
    x = np.asarray(x, float)
    if len(x) == 0:
        return float("nan")
    sq = float(np.sum(x * x))
    return float(np.sum(x)) ** 2 / (len(x) * sq) if sq > 0 else 1.0


def fair_shares(demand_bps: np.ndarray, capacity_bps: float) -> np.ndarray:
    """The applications' max-min fair shares of one link of ``capacity_bps``, each at
    most its demand (water-filling): the optimal fair allocation Jain's index is
    normalised by.

    Examples
    --------
    >>> fair_shares(np.array([2.0, 10.0, 10.0]), 12.0).tolist()
    [2.0, 5.0, 5.0]
    """
    d = np.asarray(demand_bps, float)
    out = np.zeros(len(d))
    left, todo = float(capacity_bps), list(np.argsort(d, kind="stable"))
    while todo:
        level = left / len(todo)
        i = todo[0]
        if d[i] > level:
            out[todo] = level
            break
        out[i] = d[i]
        left -= d[i]
        todo.pop(0)
    return out


def app_jain(throughput_bps: np.ndarray, demand_bps: np.ndarray, capacity_bps: float
             ) -> float:
    """Jain's index over the applications' throughputs, each normalised by its fair
    share of the link they compete on (:func:`fair_shares`): an application that wants
    less than its fair share counts as treated fairly when it gets what it wants.
    When every application wants at least its fair share (000 Fig. 13) this is Jain's
    index of the raw throughputs, as 000 §VII computes it.

    Examples
    --------
    >>> round(app_jain(np.array([2.0, 5.0, 5.0]), np.array([2.0, 10.0, 10.0]), 12.0), 6)
    1.0
    """
    fair = fair_shares(demand_bps, capacity_bps)
    x = np.where(fair > 0, np.asarray(throughput_bps, float) / np.where(fair > 0, fair, 1), 1.0)
    return jain_index(x)
