"""``baraat``: FIFO with limited multiplexing (Baraat, SIGCOMM'14), 004's decentralized
baseline. Coflows are served in arrival order, each at strict priority over later ones;
once a coflow has sent more than ``heavy_bytes`` it is *heavy* and the next coflow
shares its level (max-min inside the level) instead of waiting behind it. The event
planned at the crossing marks it heavy even if its bytes land a rounding error short
(:mod:`.crossing`)."""

from __future__ import annotations

import numpy as np

from streamband.sim.coflow.engine import Scheduler
from streamband.sim.coflow.schedulers.crossing import SLACK, Crossings
from streamband.sim.coflow.trace import MIB


class Baraat(Scheduler):
    name = "baraat"

    def __init__(self, heavy_bytes: float = 1024 * MIB) -> None:
        self.heavy_bytes = heavy_bytes

    def params(self) -> dict:
        return {"heavy_bytes": self.heavy_bytes}

    def compiled_params(self, fabric) -> dict:
        return {"policy": self.name, "heavy_bytes": float(self.heavy_bytes)}

    def bind(self, sim) -> None:
        super().bind(sim)
        C = sim.wl.n_coflows
        self.sent = np.zeros(C)
        self.order = np.argsort(sim.wl.coflow_arrival, kind="stable")
        self.r_c = np.zeros(C)
        self.heavy = np.zeros(C, bool)  # marked at the last fill
        self.cross = Crossings(C)

    def on_advance(self, act, rates, dt) -> None:
        self.sent += np.bincount(self.sim.wl.coflow[act], weights=rates * dt,
                                 minlength=len(self.sent))

    def _mark(self, t: float) -> np.ndarray:
        """Heavy once past the threshold, or when its planned crossing is due now."""
        self.heavy |= (self.sent * (1 + SLACK) >= self.heavy_bytes) | self.cross.due(t)
        return self.heavy

    def levels(self, act, t) -> np.ndarray:
        c = self.sim.wl.coflow[act]
        present = np.zeros(len(self.sent), bool)
        present[c] = True
        fifo = self.order[present[self.order]]
        heavy = self._mark(t)[fifo]
        # a heavy coflow lets the next one share its level (limited multiplexing)
        lv_fifo = np.concatenate([[0], np.cumsum(~heavy[:-1])])
        lv = np.zeros(len(self.sent), np.int64)
        lv[fifo] = lv_fifo
        return lv[c]

    def rates(self, act, t) -> np.ndarray:
        r = super().rates(act, t)
        self.r_c = np.bincount(self.sim.wl.coflow[act], weights=r, minlength=len(self.sent))
        self.cross.plan(t, (self.r_c > 0) & ~self.heavy, self.sent, self.r_c,
                        np.full(len(self.sent), float(self.heavy_bytes)))
        return r

    def next_event(self, t: float) -> float:
        return self.cross.next(t)
