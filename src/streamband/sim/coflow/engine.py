"""The event-driven flow-level simulator of 004 §IV-B ("it accounts for the flow arrival
and departure events ... updates the rate and the remaining volume of each flow when an
event occurs").

Rates change only at events: a release (coflow arrival, next wave, a DAG node whose
children completed), a completion, or a scheduler event (a priority change, a
starvation guard). Between events every flow moves at a constant rate, so the next
completion time is exact. Flows finishing at the same instant are completed in one
batch. Schedulers are small subclasses of :class:`Scheduler` (CoflowSim's shape): they
say which flows share which level, the engine does the rest.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from streamband.errors import RunError
from streamband.model.fabric import Fabric
from streamband.sim.coflow.sharing import priority_fill
from streamband.sim.coflow.workloads import Workload

#: a flow whose remaining bytes are within TOL_REL x its size + TOL_BYTES is complete
#: (float residue); small, so that when an event finds a flow just within it, the
#: flow finishes early by a negligible time even at a trickle of a rate
TOL_REL = 1e-12
TOL_BYTES = 1e-6


class SimulationError(RunError):
    """The run cannot go on (e.g. active flows that no event will ever serve)."""


def path_table(wl: Workload, fabric: Fabric) -> tuple[np.ndarray, np.ndarray]:
    """(path id per flow, link ids per path): flows that cross the same links share a
    max-min rate. A path is the host pair: on the big switch the port pair, on the
    fat-tree the ECMP path hashed on the host pair (004 §IV-B "ECMP ... each flow
    traverses along one path"; hashing the addresses, not the flow id, keeps the table
    at most hosts^2 long whatever the flow count)."""
    key = wl.src * fabric.n_hosts + wl.dst
    ukey, pid = np.unique(key, return_inverse=True)
    links = fabric.paths(ukey // fabric.n_hosts, ukey % fabric.n_hosts, ukey)
    return pid.astype(np.int64).ravel(), links


#: a full-size Ethernet frame (bytes), for the fabric's round trip
MTU_BYTES = 1500


def fabric_rtt(fabric: Fabric) -> float:
    """One round trip (s) over the fabric's longest path: a full-size frame stored and
    forwarded on every link of the path, both ways, no queueing (the default
    information delay of Information-Relay, 004 §III-C: a receiver's bytes reach a
    sender on its ACK and a peer receiver on the sender's data)."""
    n = fabric.n_hosts
    links = fabric.paths(np.array([0]), np.array([n - 1]), np.array([0]))[0]
    links = links[links < fabric.n_links]
    return 2.0 * float(np.sum(MTU_BYTES * 8.0 / fabric.cap_bps[links]))


class Scheduler:
    """Base class: per-flow max-min fair sharing in one queue. Override :meth:`rates`
    (or :meth:`levels`) and the hooks; keep all state in numpy arrays."""

    name = "base"

    def params(self) -> dict:
        """The scheduler's parameters by name (reports, JSON)."""
        return {}

    def compiled_params(self, fabric: Fabric) -> dict:
        """Keyword arguments of the compiled core's ``SchedParams`` for this scheduler."""
        return {"policy": self.name}

    def unit_weights(self, wl: Workload) -> np.ndarray:
        """Priority weight per decision unit (1 unless the scheduler weighs them)."""
        return np.ones(len(wl.unit_coflow))

    def bind(self, sim: Simulation) -> None:
        self.sim = sim

    # -- hooks (defaults do nothing) -------------------------------------------
    def on_release(self, flows: np.ndarray, t: float) -> None: ...
    def on_complete(self, flows: np.ndarray, t: float) -> None: ...
    def on_advance(self, act: np.ndarray, rates: np.ndarray, dt: float) -> None: ...

    def next_event(self, t: float) -> float:
        """Time of the scheduler's next own event (priority change, tick); inf if none."""
        return np.inf

    def on_event(self, t: float) -> None: ...

    # -- allocation ------------------------------------------------------------
    def levels(self, act: np.ndarray, t: float) -> np.ndarray | None:
        """Priority level per active flow (0 = highest); None = one level."""
        return None

    def rates(self, act: np.ndarray, t: float) -> np.ndarray:
        """Rates (bytes/s) of the active flows: strict priority between
        :meth:`levels`, max-min fair inside a level."""
        return self.sim.share(act, self.levels(act, t))


@dataclass
class Result:
    """Per-flow and per-coflow outcome of a run."""

    flow_finish: np.ndarray
    coflow_finish: np.ndarray
    cct: np.ndarray
    events: int
    wall_s: float


class Simulation:
    """The Python reference engine: runs ``workload`` (flows with their coflows, units
    and release groups) on ``fabric`` (link capacities and a path per host pair) under
    ``scheduler`` (a :class:`Scheduler`, bound to this simulation)."""

    def __init__(self, workload: Workload, fabric: Fabric, scheduler: Scheduler) -> None:
        wl = workload
        if wl.src.max(initial=0) >= fabric.n_hosts or wl.dst.max(initial=0) >= fabric.n_hosts:
            raise ValueError(
                f"workload uses {wl.n_nodes} nodes, fabric {fabric.name} has {fabric.n_hosts}"
            )
        self.wl, self.fabric, self.sched = wl, fabric, scheduler
        self.cap = fabric.cap_bps / 8.0  # bytes/s
        F = wl.n_flows
        self.pid, self.path_links = path_table(wl, fabric)
        self.n_paths = len(self.path_links)
        self.rem = wl.size.astype(float).copy()
        self.tol = TOL_REL * wl.size + TOL_BYTES
        self.finish = np.full(F, np.nan)
        self.release_time = np.full(F, np.nan)
        order = np.argsort(wl.group, kind="stable")
        G = len(wl.group_arrival)
        self._g_flows = np.split(order, np.searchsorted(wl.group[order], np.arange(1, G)))
        self.group_left = np.bincount(wl.group, minlength=G)
        self.group_done = np.zeros(G, bool)
        self.group_deps_left = np.array([len(d) for d in wl.group_deps])
        parents: list[list[int]] = [[] for _ in range(G)]
        for g, deps in enumerate(wl.group_deps):
            for d in deps:
                parents[d].append(g)
        self.group_parents = parents
        self.act = np.zeros(0, np.int64)
        self.t = 0.0
        self.events = 0
        self.n_done = 0
        scheduler.bind(self)

    # -- sharing helper used by schedulers ----------------------------------
    def share(self, act: np.ndarray, level: np.ndarray | None) -> np.ndarray:
        """Strict priority between ``level`` values, max-min inside; flows grouped by
        (level, path) so the water-filling runs over groups, not flows."""
        pid = self.pid[act]
        npth = self.n_paths
        if level is None:
            key = pid
            span = npth
        else:
            level = np.asarray(level, np.int64)
            key = level * npth + pid
            span = (int(level.max(initial=0)) + 1) * npth
        if span <= 4 * len(act) + 100_000:
            cnt = np.bincount(key, minlength=span)
            ukey = np.flatnonzero(cnt)
            pos = np.zeros(span, np.int64)
            pos[ukey] = np.arange(len(ukey))
            inv, w = pos[key], cnt[ukey].astype(float)
        else:
            ukey, inv, w = np.unique(key, return_inverse=True, return_counts=True)
            w = w.astype(float)
        resid = self.cap.copy()
        g_rate = priority_fill(self.path_links[ukey % npth], w, ukey // npth, resid)
        return g_rate[inv]

    # -- event loop --------------------------------------------------------
    def _release(self, g: int, t: float, heap: list) -> None:
        fl = self._g_flows[g]
        self.release_time[fl] = t
        zero = fl[self.rem[fl] <= self.tol[fl]]
        live = fl[self.rem[fl] > self.tol[fl]]
        self.act = np.concatenate([self.act, live])
        self.sched.on_release(fl, t)
        if len(zero):
            self._complete(zero, t, heap)

    def _complete(self, fl: np.ndarray, t: float, heap: list) -> None:
        self.n_done += len(fl)
        self.rem[fl] = 0.0
        self.finish[fl] = t
        gs, cnt = np.unique(self.wl.group[fl], return_counts=True)
        self.group_left[gs] -= cnt
        self.sched.on_complete(fl, t)
        for g in gs[self.group_left[gs] == 0]:
            self.group_done[g] = True
            for p in self.group_parents[g]:
                self.group_deps_left[p] -= 1
                if self.group_deps_left[p] == 0:
                    heapq.heappush(heap, (max(t, float(self.wl.group_arrival[p])), int(p)))

    def run(self, progress: Callable[[float, int], None] | None = None) -> Result:
        """Run every flow to its end; ``progress(t, flows_done)``, if given, is called
        at every event where flows finish and once at the end."""
        wl = self.wl
        t0 = time.perf_counter()
        heap = [(float(wl.group_arrival[g]), g) for g in range(len(wl.group_arrival))
                if self.group_deps_left[g] == 0]
        heapq.heapify(heap)
        t = 0.0
        while heap or self.act.size:
            while heap and heap[0][0] <= t:
                _, g = heapq.heappop(heap)
                self._release(g, t, heap)
            act = self.act
            if act.size == 0:
                if heap:
                    t = heap[0][0]
                    continue
                break
            if self.sched.next_event(t) <= t:
                self.sched.on_event(t)
            rates = self.sched.rates(act, t)
            t_s = self.sched.next_event(t)
            rem = self.rem[act]
            with np.errstate(divide="ignore", invalid="ignore"):
                tf = np.where(rates > 0, rem / rates, np.inf)
            dt_f = tf.min()
            t_rel = heap[0][0] if heap else np.inf
            t_next = min(t + dt_f, t_rel, t_s)
            if not np.isfinite(t_next):
                raise SimulationError(
                    f"t={t:.6g}s: {act.size} active flows get no bandwidth and no event is due"
                )
            dt = t_next - t
            t_prev = t
            rem -= rates * dt
            self.rem[act] = rem
            self.sched.on_advance(act, rates, dt)
            t = t_next
            self.t = t
            self.events += 1
            done = (rem <= self.tol[act]) | (tf <= dt * (1 + 1e-12)) | (t_prev + tf <= t)
            if done.any():
                fin = act[done]
                self.act = act[~done]
                self._complete(fin, t, heap)
                if progress is not None:
                    progress(t, self.n_done)
            if t >= t_s:
                self.sched.on_event(t)
        if progress is not None:
            progress(t, self.n_done)
        cof_fin = np.full(wl.n_coflows, -np.inf)
        np.maximum.at(cof_fin, wl.coflow, self.finish)
        cct = cof_fin - wl.coflow_arrival
        return Result(self.finish, cof_fin, cct, self.events, time.perf_counter() - t0)
