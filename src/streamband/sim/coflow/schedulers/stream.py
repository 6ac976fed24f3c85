"""``stream``: 004's receiver-driven C-SJF (§III-B/C/D).

The decision unit is a receiver's sub-coflow (a trace coflow's reducer; a DAG node's
reducer). Each receiver decides from what it has seen:

- own bytes received ``x`` (sum of x_f of eq. 2), flows seen ``n_c`` and finished
  ``n_c^fnsh`` (eq. 3; n_c grows as new waves arrive, "adjusted as new information
  becomes available");
- Information-Relay (eq. 5): ``S`` = bytes received by the other receivers of the same
  coflow, relayed by the shared senders; the receiver learns it at events (the relay
  piggybacks on data, so between events it does not move: the information delay);
- Child-to-Parent: completed children's sizes, added to ``S`` of the parent's receivers;
- Weighted-Priority (eq. 4): ``W = alpha * log(m + 1)`` for m > 1 sub-coflows (m = the
  internal id of Algorithm 1), else 1.

Reading of eq. (2): a unit in queue k stays while ``min(1, (tau_k + alpha H_c) /
(W (beta S + x))) = 1`` and is demoted to k+1 otherwise (repeated until it fits), with
exponentially spaced tau_k (§III-D); priorities never rise back (P_f = max(P_f, P_f')).
The exact crossing time is known in closed form (rates are constant between events),
so demotions are events, not ticks. Starvation mitigation (§III-D): a unit whose flows
got no bandwidth for ``starve_s`` is raised one queue and held there for ``starve_s``.
"""

from __future__ import annotations

import numpy as np

from streamband.sim.coflow.engine import Scheduler
from streamband.sim.coflow.schedulers.thresholds import thresholds
from streamband.sim.coflow.trace import MIB


class Stream(Scheduler):
    name = "stream"

    def __init__(self, queues: int = 4, alpha: float = 0.5, beta: float = 1.0,
                 starve_s: float = 1.0, relay: bool = True) -> None:
        if not 2 <= queues <= 8:
            raise ValueError(f"queues: expected 2..8 (004 §III-D), got {queues}")
        self.K, self.alpha, self.beta, self.starve_s, self.relay = (
            queues, alpha, beta, starve_s, relay)
        self.tau = thresholds(queues)

    def bind(self, sim) -> None:
        super().bind(sim)
        wl = sim.wl
        U, C, G = len(wl.unit_coflow), wl.n_coflows, len(wl.group_arrival)
        self.x = np.zeros(U)
        self.q = np.zeros(U, np.int64)
        self.n_seen = np.zeros(U)
        self.n_fin = np.zeros(U)
        self.cof_bytes = np.zeros(C)
        self.cp = np.zeros(G)
        self.group_bytes = np.bincount(wl.group, weights=wl.size, minlength=G)
        self.W = self.unit_weights(wl)
        self.r_u = np.zeros(U)
        self.has_active = np.zeros(U, bool)
        self.starve_since = np.full(U, np.nan)
        self.hold_until = np.full(U, -np.inf)

    def unit_weights(self, wl) -> np.ndarray:
        """Weighted-Priority (eq. 4): W = alpha log(m + 1) for sub-coflow id m > 1."""
        m = wl.unit_subid.astype(float)
        return np.maximum(np.where(m > 1, self.alpha * np.log(m + 1), 1.0), 1e-9)

    # -- what the receiver has seen --------------------------------------------
    def on_release(self, flows: np.ndarray, t: float) -> None:
        self.n_seen += np.bincount(self.sim.wl.unit[flows], minlength=len(self.x))

    def on_complete(self, flows: np.ndarray, t: float) -> None:
        wl, sim = self.sim.wl, self.sim
        self.n_fin += np.bincount(wl.unit[flows], minlength=len(self.x))
        for g in np.unique(wl.group[flows]):
            if sim.group_left[g] == 0:  # Child-to-Parent: report the child's size
                for p in sim.group_parents[g]:
                    self.cp[p] += self.group_bytes[g]

    def on_advance(self, act: np.ndarray, rates: np.ndarray, dt: float) -> None:
        wl = self.sim.wl
        b = rates * dt
        self.x += np.bincount(wl.unit[act], weights=b, minlength=len(self.x))
        self.cof_bytes += np.bincount(wl.coflow[act], weights=b, minlength=len(self.cof_bytes))

    # -- eq. (2)-(5) ---------------------------------------------------------
    def _seen(self) -> np.ndarray:
        wl = self.sim.wl
        peers = self.cof_bytes[wl.unit_coflow] - self.x if self.relay else 0.0
        return self.x + self.beta * (peers + self.cp[wl.unit_group])

    def _limit(self, q: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Right side of the eq. (2) test, tau_k + alpha H_c with H_c of eq. (3)."""
        tau = self.tau[q]
        n = np.maximum(self.n_seen, 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            h = tau * (self.n_fin / n + np.where(y > 0, n * MIB / np.maximum(y, 1e-300), 1e300))
            lim = tau + self.alpha * h
        return np.where(np.isfinite(tau), lim, np.inf)  # the last queue has no limit

    def _decide(self, t: float) -> None:
        y = self._seen()
        free = self.hold_until <= t
        for _ in range(self.K - 1):
            dem = free & (self.q < self.K - 1) & (self.W * y > self._limit(self.q, y))
            if not dem.any():
                break
            self.q[dem] += 1  # never rises back: P_f = max(P_f, P_f')

    def levels(self, act: np.ndarray, t: float) -> np.ndarray:
        self._decide(t)
        return self.q[self.sim.wl.unit[act]]

    def rates(self, act: np.ndarray, t: float) -> np.ndarray:
        r = super().rates(act, t)
        unit = self.sim.wl.unit[act]
        U = len(self.x)
        self.r_u = np.bincount(unit, weights=r, minlength=U)
        self.has_active = np.bincount(unit, minlength=U) > 0
        starving = self.has_active & (self.r_u <= 0)
        newly = starving & np.isnan(self.starve_since)
        self.starve_since[newly] = t
        self.starve_since[~starving] = np.nan
        return r

    def next_event(self, t: float) -> float:
        cand = [np.inf]
        live = self.has_active & (self.r_u > 0) & (self.q < self.K - 1)
        if live.any():
            y = self._seen()[live]
            q = self.q[live]
            tau = self.tau[q]
            n = np.maximum(self.n_seen[live], 1.0)
            W = self.W[live]
            b = tau * (1 + self.alpha * self.n_fin[live] / n)
            c = self.alpha * tau * n * MIB
            ystar = (b + np.sqrt(b * b + 4 * W * c)) / (2 * W)
            tc = t + np.maximum(ystar - y, 0) / self.r_u[live]
            tc = np.maximum(tc, self.hold_until[live])
            tc = tc[tc > t * (1 + 1e-12) + 1e-12]
            if tc.size:
                cand.append(float(tc.min()))
        s = self.starve_since + self.starve_s
        s = s[np.isfinite(s)]
        if s.size:
            cand.append(float(s.min()))
        return min(cand)

    def on_event(self, t: float) -> None:
        due = self.starve_since + self.starve_s <= t * (1 + 1e-12) + 1e-12
        if due.any():  # starvation mitigation: raise one queue, hold it
            self.q[due] = np.maximum(self.q[due] - 1, 0)
            self.hold_until[due] = t + self.starve_s
            self.starve_since[due] = np.nan
