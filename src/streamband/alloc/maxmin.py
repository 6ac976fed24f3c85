"""Max-min fair sharing with demands: the TCP model (000 §I, §VII: "TCP variants
approximate max-min bandwidth fairness on a flow basis").

The allocation is the one progressive filling (water-filling) reaches: every flow
is either at its demand or crosses a saturated link on which no flow has a higher
rate (the bottleneck property; Bertsekas & Gallager, Data Networks §6.5.2).

:func:`maxmin_rates` freezes many links per round instead of one level at a time.
The fair level of link l is ``level_l = residual_l / n_l`` (n_l its unfrozen
flows). Levels never go down while filling (a flow frozen below ``level_l`` leaves
more for the others), so a link whose level is no higher than every bound its
flows see elsewhere (their other links' levels and their demands) saturates at
exactly that level: it and all links like it freeze in the same round. A flow
whose demand is below all its links' levels freezes at its demand. The global
minimum always qualifies, so every round makes progress; random instances take
a few tens of rounds, each O(active nonzeros). The rounds run in the compiled kernel
(``rust/alloc_core``); :func:`maxmin_rates_numpy` is the same rounds in numpy, its
reference (equal to the last bit).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import streamband_alloc_core as kernel  # built by `pip install ./rust/alloc_core`

from streamband.alloc.base import AllocProblem
from streamband.alloc.common import csr_index, entries, finish

_TIE = 1e-12  # relative slack when comparing levels, so equal levels freeze together


def maxmin_rates(
    routing: sp.spmatrix | sp.sparray, capacity: np.ndarray, demand: np.ndarray
) -> np.ndarray:
    """Max-min fair rates (bit/s) of the flows (rows of the binary CSR ``routing``)
    on links of ``capacity`` (bit/s), each flow capped at ``demand`` (bit/s, may be
    ``np.inf``: greedy). Flows crossing no link get ``np.inf``.
    """
    n_flows, n_links = routing.shape
    capacity, demand = _checked(n_flows, n_links, capacity, demand)
    indptr, indices = csr_index(routing)
    out = np.empty(n_flows)
    kernel.maxmin(indptr, indices, np.ascontiguousarray(capacity),
                  np.ascontiguousarray(demand), out)
    return out


def _checked(
    n_flows: int, n_links: int, capacity: np.ndarray, demand: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    capacity = np.asarray(capacity, float)
    demand = np.asarray(demand, float)
    if demand.shape != (n_flows,):
        raise ValueError(f"demand: expected {n_flows} values, got shape {demand.shape}")
    if capacity.shape != (n_links,):
        raise ValueError(f"capacity: expected {n_links} values, got shape {capacity.shape}")
    return capacity, demand


def maxmin_rates_numpy(
    routing: sp.spmatrix | sp.sparray, capacity: np.ndarray, demand: np.ndarray
) -> np.ndarray:
    """:func:`maxmin_rates` in numpy: its reference (and the baseline of
    perf/alloc_scale.py)."""
    e = entries(routing)
    n_flows, n_links = e.n_flows, e.n_links
    capacity, demand = _checked(n_flows, n_links, capacity, demand)
    rates = np.zeros(n_flows)
    resid = capacity.copy()
    rows, cols = e.rows, e.cols
    # drop flows whose demand is 0 right away: they never take capacity
    keep = demand[rows] > 0
    rows, cols = rows[keep], cols[keep]
    level = np.empty(n_links)
    while rows.size:
        starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
        seg = np.diff(np.append(starts, rows.size))
        flows = rows[starts]
        cnt = np.bincount(cols, minlength=n_links)
        level.fill(np.inf)
        used = cnt > 0
        level[used] = np.maximum(resid[used], 0.0) / cnt[used]
        lv = level[cols]
        fmin = np.minimum.reduceat(lv, starts)  # the lowest link level each flow sees
        dem = demand[flows]
        bound = np.minimum(fmin, dem)
        # a link freezes when no flow on it is bound lower elsewhere (or by demand)
        bad = np.repeat(bound, seg) < lv * (1.0 - _TIE)
        frozen_link = used & (np.bincount(cols[bad], minlength=n_links) == 0)
        done = (dem <= fmin) | np.logical_or.reduceat(frozen_link[cols], starts)
        rates[flows[done]] = bound[done]
        done_e = np.repeat(done, seg)
        resid -= np.bincount(
            cols[done_e], weights=np.repeat(bound[done], seg[done]), minlength=n_links
        )
        rows, cols = rows[~done_e], cols[~done_e]
    return finish(e, rates)


def maxmin(p: AllocProblem, demand_bps: np.ndarray | None = None) -> np.ndarray:
    """Policy: max-min fair rates with demands (default ``p.demand_bps()``, the
    numerator of 000 eq. (3) over Δt), the bandwidth TCP would give."""
    demand = p.demand_bps() if demand_bps is None else np.asarray(demand_bps, float)
    return maxmin_rates(p.routing, p.capacity, demand)


def maxmin_rates_reference(
    routing: sp.spmatrix | sp.sparray, capacity: np.ndarray, demand: np.ndarray
) -> np.ndarray:
    """Textbook progressive filling, one water level at a time (slow; the oracle
    for tests).

    All unfrozen flows rise together; at each step the next event is the lowest
    link saturation level or the lowest demand; the flows it concerns freeze.
    """
    r = sp.csr_matrix(routing)
    rt = r.T.tocsr()
    n_flows = r.shape[0]
    capacity = np.asarray(capacity, float)
    demand = np.asarray(demand, float)
    has_link = np.diff(r.indptr) > 0
    active = has_link & (demand > 0)
    rates = np.zeros(n_flows)
    level = 0.0
    while active.any():
        load = rt @ np.where(active, 0.0, rates)
        n = rt @ active.astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            sat = np.where(n > 0, (capacity - load) / n, np.inf)
        t = min(sat.min(), demand[active].min())
        level = max(level, t)
        rates[active] = level
        hit_dem = active & (demand <= level * (1 + 1e-12))
        hit_link = (r @ (sat <= level * (1 + 1e-12)).astype(float)) > 0
        freeze = hit_dem | (active & hit_link)
        rates[hit_dem] = demand[hit_dem]
        active &= ~freeze
    rates[~has_link] = np.inf
    return rates
