"""``aalo``: D-CLAS (Aalo, SIGCOMM'15 §4) as 004 §IV-B compares it: centralized,
instantaneous coflow-level bytes sent (no coordination delay), K = 4 queues with
exponentially spaced thresholds (004 §III-D), FIFO (by coflow arrival) inside a queue,
and *weighted sharing between queues* (not strict priority, so large coflows in the
last queue are not starved): queue q has weight ``K - q``.

Flow-level reading of the weighted sharing (the compiled rule in
``rust/coflow_core/src/fabric.rs`` ``fill_aalo`` is the same): pass 1 gives every
queue present on a link ``cap * w_q / sum(w of the queues present)`` of it and fills
that queue's coflows FIFO (strict by arrival rank, max-min inside a coflow) within it;
pass 2 fills what pass 1 left (bottlenecks elsewhere, absent queues) in (queue, rank)
order, so the rule is work-conserving.

A coflow is demoted when its bytes sent reach the queue's threshold; the event planned
at that crossing demotes it even if the bytes land a rounding error short
(:mod:`.crossing`), and a coflow never rises back."""

from __future__ import annotations

import numpy as np

from streamband.sim.coflow.engine import Scheduler
from streamband.sim.coflow.schedulers.crossing import SLACK, Crossings
from streamband.sim.coflow.schedulers.thresholds import thresholds
from streamband.sim.coflow.sharing import SNAP, priority_fill


class Aalo(Scheduler):
    name = "aalo"

    def __init__(self, queues: int = 4) -> None:
        self.K = queues
        self.tau = thresholds(queues)

    def params(self) -> dict:
        return {"queues": self.K}

    def compiled_params(self, fabric) -> dict:
        return {"policy": self.name, "tau": [float(x) for x in self.tau]}

    def bind(self, sim) -> None:
        super().bind(sim)
        C = sim.wl.n_coflows
        self.sent = np.zeros(C)
        self.rank = np.empty(C, np.int64)
        self.rank[np.argsort(sim.wl.coflow_arrival, kind="stable")] = np.arange(C)
        self.r_c = np.zeros(C)
        self.q = np.zeros(C, np.int64)  # the queue decided at the last fill
        self.cross = Crossings(C)

    def on_advance(self, act, rates, dt) -> None:
        self.sent += np.bincount(self.sim.wl.coflow[act], weights=rates * dt,
                                 minlength=len(self.sent))

    def queue(self, t: float) -> np.ndarray:
        """Queue per coflow at ``t``: past every threshold its bytes reached, one past
        the queue it was in when its crossing is due now; never back up."""
        q = np.searchsorted(self.tau, self.sent * (1 + SLACK), side="right")
        q = np.maximum(q, np.where(self.cross.due(t), self.q + 1, self.q))
        return np.minimum(q, self.K - 1)

    def levels(self, act, t) -> np.ndarray:
        c = self.sim.wl.coflow[act]
        lv = self.queue(t)[c] * len(self.sent) + self.rank[c]
        _, dense = np.unique(lv, return_inverse=True)
        return dense

    def weights(self) -> np.ndarray:
        """Queue weights ``K - q`` (queue 0 the heaviest)."""
        return (self.K - np.arange(self.K)).astype(float)

    def rates(self, act, t) -> np.ndarray:
        sim = self.sim
        c = sim.wl.coflow[act]
        self.q = self.queue(t)
        q = self.q[c]
        lv = q * len(self.sent) + self.rank[c]
        npth = sim.n_paths
        key = lv * npth + sim.pid[act]
        ukey, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
        inv = inv.ravel()
        w = cnt.astype(float)
        g_lv = ukey // npth
        g_q = g_lv // len(self.sent)
        links = sim.path_links[ukey % npth]
        L1 = len(sim.cap)
        wq = self.weights()
        present = np.zeros((self.K, L1), bool)
        present[np.repeat(g_q, links.shape[1]), links.ravel()] = True
        tot = wq @ present
        rate1 = np.zeros(len(ukey))
        for qq in np.unique(g_q):
            sel = np.flatnonzero(g_q == qq)
            with np.errstate(divide="ignore", invalid="ignore"):
                resid = np.where(present[qq], sim.cap * wq[qq] / tot, 0.0)
            resid[-1] = np.inf
            rate1[sel] = priority_fill(links[sel], w[sel], g_lv[sel], resid)
        used = np.bincount(links.ravel(), weights=np.repeat(rate1 * w, links.shape[1]),
                           minlength=L1)
        resid = sim.cap - used
        resid[resid < SNAP] = 0.0
        resid[-1] = np.inf
        g_rate = rate1 + priority_fill(links, w, g_lv, resid)
        r = g_rate[inv]
        self.r_c = np.bincount(self.sim.wl.coflow[act], weights=r, minlength=len(self.sent))
        self.cross.plan(t, self.r_c > 0, self.sent, self.r_c, self.tau[self.q])
        return r

    def next_event(self, t: float) -> float:
        return self.cross.next(t)
