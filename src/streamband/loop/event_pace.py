"""Problem (4)'s consumption pace read in event time (000 §IV-B), for the flows into a join
that aligns its inputs on event time in a store of its own (Storm's ``JoinStore``): the
bytes a flow carries per second of its input's event time.

Problem (4) reads ρ_f = [V_f - L^r_f(t+Δt) + L^r_f(t)] / Δt, the bytes f's receiver
consumed in the interval. Such a join consumes an input only as far as its slowest input's
event time has come, so for the input that is behind ρ_f is what its last cap let through,
and (4) gives it that again; the inputs ahead hold their early tuples in the store, L^r.
Its pace per input is the input's volume per second of event time: with that ρ_f, (4)'s
water-filling to a common drain time, x_f = 8 (T ρ_f - L^r_f) / Δt, is the split that
brings every input to the same event time soonest (the input behind, holding nothing in
the store, served first), and then keeps them there (x_f ∝ ρ_f).
"""

from __future__ import annotations

import numpy as np

#: seconds the event time a join has received of a flow must have advanced since it was first
#: seen before the flow's pace is measured (before: NaN)
MIN_ADVANCE_S = 1.0


class EventPace:
    """Per flow, the bytes it carried per second the event time its join has received of it
    advanced, over every interval since that event time was first seen; the last measure
    holds while it is not reported, has not advanced :data:`MIN_ADVANCE_S`, or went back
    (a new topology).

    Over all intervals, not the last one: in one interval a flow carries what its cap let
    through, and the flow capped to the floor advances its event time by nothing.

    Examples
    --------
    Two flows into a join: the first carries 3 MB per event second, the second 1 MB; the
    third flow feeds no join.

    >>> p, nan = EventPace(3), float("nan")
    >>> p.update(np.zeros(3), np.array([100.0, 100.0, nan])).tolist()
    [nan, nan, nan]
    >>> p.update(np.array([6e6, 1e6, 5.0]), np.array([102.0, 101.0, nan])).tolist()
    [3000000.0, 1000000.0, nan]
    >>> p.update(np.array([0.0, 1e6, 5.0]), np.array([102.0, 102.0, nan])).tolist()
    [3000000.0, 1000000.0, nan]
    """

    def __init__(self, n: int) -> None:
        self._start = np.full(n, np.nan)  # the event time when first seen, s
        self._carried = np.zeros(n)  # bytes carried since then
        self.rho = np.full(n, np.nan)

    def update(self, carried: np.ndarray, event_s: np.ndarray) -> np.ndarray:
        """Each flow's pace, bytes per second of event time, after an interval in which it
        carried ``carried`` bytes and after which its join has received it up to event
        time ``event_s`` (NaN: the flow feeds no join, or its join has not reported)."""
        wm = np.asarray(event_s, float)
        seen = ~np.isnan(wm)
        first = seen & np.isnan(self._start)
        self._start[first] = wm[first]
        counted = seen & ~first
        self._carried[counted] += np.asarray(carried, float)[counted]
        with np.errstate(invalid="ignore"):
            advance = wm - self._start
            ok = counted & (advance >= MIN_ADVANCE_S)
        self.rho[ok] = self._carried[ok] / advance[ok]
        return self.rho.copy()

    def fields(self, carried: np.ndarray, event_s: np.ndarray) -> dict[str, np.ndarray | None]:
        """:meth:`update`, as the flow state's ``rho_event`` and ``event_s``: both None
        while no flow's pace is known (no join behind any flow)."""
        pace = self.update(carried, event_s)
        if np.isnan(pace).all():
            return {"rho_event": None, "event_s": None}
        return {"rho_event": pace, "event_s": np.asarray(event_s, float)}


def nulls(a: np.ndarray) -> list[float | None]:
    """``a`` (event times, paces) as a JSON list, NaN as null."""
    return [None if np.isnan(v) else float(v) for v in a]
