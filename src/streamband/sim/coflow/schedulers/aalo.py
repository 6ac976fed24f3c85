"""``aalo``: D-CLAS (Aalo, SIGCOMM'15) as 004 §IV-B compares it: centralized,
instantaneous coflow-level bytes sent, K strict-priority queues with exponentially
spaced thresholds, FIFO (by coflow arrival) inside a queue."""

from __future__ import annotations

import numpy as np

from streamband.sim.coflow.engine import Scheduler
from streamband.sim.coflow.schedulers.thresholds import thresholds


class Aalo(Scheduler):
    name = "aalo"

    def __init__(self, queues: int = 4) -> None:
        self.K = queues
        self.tau = thresholds(queues)

    def bind(self, sim) -> None:
        super().bind(sim)
        C = sim.wl.n_coflows
        self.sent = np.zeros(C)
        self.rank = np.empty(C, np.int64)
        self.rank[np.argsort(sim.wl.coflow_arrival, kind="stable")] = np.arange(C)
        self.r_c = np.zeros(C)

    def on_advance(self, act, rates, dt) -> None:
        self.sent += np.bincount(self.sim.wl.coflow[act], weights=rates * dt,
                                 minlength=len(self.sent))

    def queue(self) -> np.ndarray:
        return np.minimum(np.searchsorted(self.tau, self.sent * (1 + 1e-12), side="right"),
                          self.K - 1)

    def levels(self, act, t) -> np.ndarray:
        c = self.sim.wl.coflow[act]
        lv = self.queue()[c] * len(self.sent) + self.rank[c]
        _, dense = np.unique(lv, return_inverse=True)
        return dense

    def rates(self, act, t) -> np.ndarray:
        r = super().rates(act, t)
        self.r_c = np.bincount(self.sim.wl.coflow[act], weights=r, minlength=len(self.sent))
        return r

    def next_event(self, t: float) -> float:
        live = self.r_c > 0
        if not live.any():
            return np.inf
        nxt = self.tau[self.queue()[live]]
        tc = t + (nxt - self.sent[live]) / self.r_c[live]
        tc = tc[np.isfinite(tc) & (tc > t * (1 + 1e-12) + 1e-12)]
        return float(tc.min()) if tc.size else np.inf
