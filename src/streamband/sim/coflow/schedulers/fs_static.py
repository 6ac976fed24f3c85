"""``fs-static``: each flow gets min(port rate / flows at its sender, port rate / flows
at its receiver) — the simple per-end share some published simulators use. Not
work-conserving; a baseline only."""

from __future__ import annotations

import numpy as np

from streamband.sim.coflow.engine import Scheduler
from streamband.sim.coflow.sharing import static_share


class StaticFairSharing(Scheduler):
    name = "fs-static"

    def rates(self, act: np.ndarray, t: float) -> np.ndarray:
        sim = self.sim
        pid = sim.pid[act]
        cnt = np.bincount(pid, minlength=sim.n_paths)
        used = np.flatnonzero(cnt)
        g = static_share(sim.path_links[used], cnt[used].astype(float), sim.cap)
        per_path = np.zeros(sim.n_paths)
        per_path[used] = g
        return per_path[pid]
