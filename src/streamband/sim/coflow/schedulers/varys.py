"""``varys``: clairvoyant Smallest-Effective-Bottleneck-First with MADD (Varys,
SIGCOMM'14), an upper reference: coflows in order of their bottleneck time
Gamma = max_l (remaining bytes on l) / capacity_l, each flow at remaining / Gamma so a
coflow's flows finish together, then the leftover backfilled max-min (work-conserving)."""

from __future__ import annotations

import numpy as np

from streamband.sim.coflow.engine import Scheduler
from streamband.sim.coflow.sharing import water_fill


class Varys(Scheduler):
    name = "varys"

    def compiled_params(self, fabric) -> dict:
        return {"policy": self.name}

    def rates(self, act, t) -> np.ndarray:
        sim = self.sim
        links = sim.path_links[sim.pid[act]]
        W = links.shape[1]
        rem = sim.rem[act]
        cof = sim.wl.coflow[act]
        L1 = len(sim.cap)
        ucof, inv = np.unique(cof, return_inverse=True)
        # Gamma per coflow on the empty fabric: the SEBF order
        gam = np.zeros(len(ucof))
        for i in range(len(ucof)):
            m = inv == i
            load = np.bincount(links[m].ravel(), weights=np.repeat(rem[m], W), minlength=L1)
            gam[i] = np.max(load[:-1] / sim.cap[:-1])
        resid = sim.cap.copy()
        rate = np.zeros(len(act))
        for i in np.argsort(gam, kind="stable"):
            m = np.flatnonzero(inv == i)
            load = np.bincount(links[m].ravel(), weights=np.repeat(rem[m], W), minlength=L1)
            used = load[:-1] > 0
            with np.errstate(divide="ignore", invalid="ignore"):
                g = np.max(np.where(used, load[:-1] / np.maximum(resid[:-1], 0), 0))
            if not np.isfinite(g) or g <= 0:
                continue
            rate[m] = rem[m] / g
            resid -= np.bincount(links[m].ravel(), weights=np.repeat(rate[m], W), minlength=L1)
            np.maximum(resid, 0, out=resid)
            resid[-1] = np.inf
        # backfill: max-min over the leftover
        rate += water_fill(links, np.ones(len(act)), resid)
        return rate
