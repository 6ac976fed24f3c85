"""A threshold on a coflow's bytes sent as an event (Aalo's demotion to the next queue,
Aalo §4 / 004 §IV-B; Baraat's heavy mark): the crossing time is planned after each
fill from the bytes and the rate, and the event planned for a crossing *applies* it,
whatever the rounding of the bytes at that instant.

Why: at t ~ 10^3 s one ulp of time is ~1e-13 s; a coflow sending 2 GB/s moves ~5e-4
bytes per ulp, more than a 1e-12 relative slack on a 100 MiB threshold (1e-4 bytes).
Judged from the bytes alone, the event planned at a crossing can land a rounding error
short, and the crossing, now "due", is never planned again: the coflow stays in its
queue until some unrelated event (on FB2010 under aalo, coflow 236 was demoted 22 ms
and 46 MB late). Both engines follow this rule."""

from __future__ import annotations

import numpy as np

#: bytes within this relative slack of a threshold have crossed it
SLACK = 1e-12


def now(t: float) -> float:
    """The latest time that counts as ``t`` (the engines' event resolution)."""
    return t * (1 + 1e-12) + 1e-12


class Crossings:
    """Per coflow, the planned time its bytes reach its next threshold (inf if none)."""

    def __init__(self, n: int) -> None:
        self.at = np.full(n, np.inf)

    def due(self, t: float) -> np.ndarray:
        """Coflows whose planned crossing is now."""
        return self.at <= now(t)

    def plan(self, t: float, live: np.ndarray, sent: np.ndarray, rate: np.ndarray,
             thr: np.ndarray) -> None:
        """Plan from the bytes ``sent`` at ``t`` and the rates after the fill; ``live``
        selects the coflows that are served and have a finite threshold ``thr``."""
        self.at[:] = np.inf
        with np.errstate(invalid="ignore"):
            tc = t + (thr[live] - sent[live]) / rate[live]
        self.at[live] = np.where(np.isfinite(tc), tc, np.inf)

    def next(self, t: float) -> float:
        """The next planned crossing; ``t`` itself (a zero-length event) when one is due
        now but was not applied at this fill."""
        m = float(self.at.min(initial=np.inf))
        return t if m <= now(t) else m
