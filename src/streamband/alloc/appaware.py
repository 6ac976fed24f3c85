"""App-aware allocation: 000 Algorithm 1 plus the backfill pass of 000 §VI-C.

Per bottlenecked uplink, problem (3) (000 §IV-B) gives x^u; per bottlenecked
downlink, problem (4) gives x^d; a flow takes the min (line 22); bottlenecked
internal links scale their flows down when over capacity (lines 24-29). Flows in
no bottlenecked link keep their demand. A final scale-down makes R·x <= C hold on
every link, then the leftover capacity of the bottlenecked links is backfilled.

:func:`appaware` runs the compiled kernel (``rust/alloc_core``); :func:`appaware_numpy`
is the same computation in numpy, its reference (equal to the last bit), where both
per-link problems are solved for all links at once, grouped over the CSR nonzeros of R
(``solve_uplink``/``solve_downlink`` are the one-link views); :func:`appaware_reference`
reads Algorithm 1 literally, a loop over links.

Units: rates bit/s, backlogs and volumes bytes, Δt seconds.
"""

from __future__ import annotations

import numpy as np
import streamband_alloc_core as kernel  # built by `pip install ./rust/alloc_core`

from streamband.alloc.base import DOWNLINK, INTERNAL, UPLINK, AllocProblem
from streamband.alloc.common import (
    backfill,
    bottlenecked_links,
    csr_index,
    enforce_capacity,
    entries,
    finish,
    flow_min,
    given_bottlenecked,
)

#: ρ_f <= 0 (the receiver consumed nothing) is replaced by RHO_EPS x the largest ρ on
#: the link, so the flow's term of (4) is huge and it gets ~0 unless every flow is idle
RHO_EPS = 1e-9


def uplink_shares(link: np.ndarray, d: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Problem (3), 000 §IV-B, for every (flow, link) entry at once.

    min_x max_f D_f / x_f s.t. Σ_f x_f = C, x >= 0 is solved by equal transfer
    times D_f / x_f = T, so x_f = C · D_f / Σ D (eq. 3 closed form). ``d`` is D_f
    (any unit; negative values count as 0); Σ D = 0 splits C equally.
    """
    d = np.maximum(d, 0.0)
    n_links = len(capacity)
    total = np.bincount(link, weights=d, minlength=n_links)
    count = np.bincount(link, minlength=n_links)
    tot_e, cap_e = total[link], capacity[link]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(tot_e > 0, cap_e * d / tot_e, cap_e / count[link])


def downlink_shares(
    link: np.ndarray, lr1: np.ndarray, rho: np.ndarray, capacity: np.ndarray, dt: float
) -> np.ndarray:
    """Problem (4), 000 §IV-B, for every (flow, link) entry at once.

    min_x max_f (L^r_f(t+Δt) + x_f Δt) / ρ_f s.t. Σ_f x_f = C, x >= 0, with
    ρ_f = [V_f - L^r_f(t+Δt) + L^r_f(t)] / Δt (bytes/s the receiver consumed).
    Each term is a receiver's time to drain its backlog plus the next interval's
    data; water-filling to a common drain time T is optimal:
    x_f = max(0, 8 (T ρ_f - L^r_f(t+Δt)) / Δt) bit/s with T such that Σ x = C.
    (When some L^r_f/ρ_f exceeds that T, the optimum of (4) is that flow's term and
    is not unique; the water-filling point is one optimum.)

    ρ_f <= 0: replaced by ``RHO_EPS`` x the link's largest ρ, so the flow gets ~0;
    if no flow on the link has ρ > 0, C is split equally.
    """
    n_links = len(capacity)
    n = len(link)
    if n == 0:
        return np.zeros(0)
    pos = rho > 0
    rmax = np.zeros(n_links)
    np.maximum.at(rmax, link[pos], rho[pos])
    rho = np.where(pos, rho, RHO_EPS * rmax[link])
    idle = rmax[link] <= 0  # every flow on this link is idle: equal split
    rho[idle] = 1.0
    lr1 = np.where(idle, 0.0, np.maximum(lr1, 0.0))
    a = 8.0 * rho / dt  # x_f = a_f T - b_f once T passes t_f = b_f / a_f
    b = 8.0 * lr1 / dt
    t = lr1 / rho
    order = np.lexsort((t, link))
    ls, a_s, b_s, t_s = link[order], a[order], b[order], t[order]
    first = np.flatnonzero(np.concatenate(([True], ls[1:] != ls[:-1])))
    seg = np.diff(np.append(first, n))
    sa, sb = _segmented_cumsum(a_s, first, seg), _segmented_cumsum(b_s, first, seg)
    # Σ x at T = t_k, over the flows already above 0: non-decreasing in k per link
    g = t_s * sa - sb
    idx = np.where(g <= capacity[ls], np.arange(n), -1)
    k = np.maximum.reduceat(idx, first)  # last breakpoint below C (first is always)
    level = np.empty(n_links)
    level[ls[first]] = (capacity[ls[first]] + sb[k]) / sa[k]
    x = np.maximum(a * level[link] - b, 0.0)
    return x


def _segmented_cumsum(v: np.ndarray, first: np.ndarray, seg: np.ndarray) -> np.ndarray:
    c = np.cumsum(v)
    base = c[first] - v[first]
    return c - np.repeat(base, seg)


def solve_uplink(d: np.ndarray, capacity_bps: float) -> np.ndarray:
    """Problem (3) on one uplink of ``capacity_bps``: x_f = C D_f / Σ D (bit/s)."""
    d = np.asarray(d, float)
    return uplink_shares(np.zeros(len(d), np.int64), d, np.array([float(capacity_bps)]))


def solve_downlink(
    lr1: np.ndarray, rho: np.ndarray, capacity_bps: float, dt: float
) -> np.ndarray:
    """Problem (4) on one downlink: ``lr1`` L^r_f(t+Δt) in bytes, ``rho`` ρ_f in
    bytes/s, ``capacity_bps`` C in bit/s; returns x^d in bit/s (Σ = C)."""
    lr1, rho = np.asarray(lr1, float), np.asarray(rho, float)
    link = np.zeros(len(lr1), np.int64)
    return downlink_shares(link, lr1, rho, np.array([float(capacity_bps)]), dt)


def appaware(p: AllocProblem) -> np.ndarray:
    """000 Algorithm 1 (lines 17-29) then the backfill pass of 000 §VI-C, in the compiled
    kernel; the result equals :func:`appaware_numpy`'s."""
    indptr, indices = csr_index(p.routing)
    cap = np.ascontiguousarray(p.capacity, float)
    kind = np.asarray(p.link_kind)
    if kind.dtype != np.int8:  # any other value is no kind, as in ``kind == UPLINK``
        kind = np.where(np.isin(kind, (UPLINK, DOWNLINK, INTERNAL)), kind, -1).astype(np.int8)
    bott = None
    if p.bottlenecked is not None:
        bott = np.ascontiguousarray(given_bottlenecked(p.bottlenecked, len(cap))).view(np.uint8)
    s = p.state
    f64 = [np.ascontiguousarray(v, float) for v in (s.ls0, s.ls1, s.lr0, s.lr1, s.sent)]
    out = np.empty(p.n_flows)
    kernel.appaware(indptr, indices, cap, np.ascontiguousarray(kind), *f64, float(p.dt), bott,
                    out)
    return out


def appaware_numpy(p: AllocProblem) -> np.ndarray:
    """000 Algorithm 1 (lines 17-29) then the backfill pass of 000 §VI-C, in numpy: the
    reference of :func:`appaware` (and the baseline of perf/alloc_scale.py)."""
    e = entries(p.routing)
    cap = np.asarray(p.capacity, float)
    s = p.state
    demand = p.demand_bps()  # ∝ V + 2 L^s(t+Δt) - L^s(t), the D_f of eq. (3)
    bott = bottlenecked_links(e, cap, demand, p.bottlenecked)  # line 11
    kind = np.asarray(p.link_kind)
    rows, cols = e.rows, e.cols
    b_e = bott[cols]
    kind_e = kind[cols]

    # lines 17-19: problem (3) on every bottlenecked uplink
    up = b_e & (kind_e == UPLINK)
    xu = flow_min(rows[up], uplink_shares(cols[up], demand[rows[up]], cap), e.n_flows, np.inf)

    # lines 20-21: problem (4) on every bottlenecked downlink
    dn = b_e & (kind_e == DOWNLINK)
    rho = (s.sent - s.lr1 + s.lr0) / p.dt  # ρ_f, bytes/s, eq. (4)
    fd = rows[dn]
    xd = flow_min(fd, downlink_shares(cols[dn], s.lr1[fd], rho[fd], cap, p.dt), e.n_flows, np.inf)

    # line 22: x_f = min(x^u_f, x^d_f); a flow on neither starts from its demand
    x = np.minimum(xu, xd)
    x = np.where(np.isfinite(x), x, demand)

    # lines 24-29: scale each over-full bottlenecked internal link to C; min over links
    ic = b_e & (kind_e == INTERNAL)
    if ic.any():
        d_c = e.link_sum(x, ic)  # line 25, D(c_k)
        factor = np.ones(e.n_links)
        over = d_c > cap
        factor[over] = cap[over] / d_c[over]  # line 27
        x = x * flow_min(rows[ic], factor[cols[ic]], e.n_flows, 1.0)  # line 29

    # flows on no bottlenecked link keep their demand; make R·x <= C everywhere (1a)
    x = enforce_capacity(e, cap, x)
    # 000 §VI-C: leftover capacity of bottlenecked links, in proportion to x
    x = backfill(e, cap, x, bott)
    return finish(e, x)


def appaware_reference(p: AllocProblem) -> np.ndarray:
    """Algorithm 1 read literally: a Python loop over the bottlenecked links calling
    the one-link solvers (lines 17-29), then the same capacity cap and backfill.
    A test oracle for :func:`appaware`."""
    r = p.routing.tocsc()
    s, dt = p.state, p.dt
    demand = p.demand_bps()
    e = entries(p.routing)
    bott = bottlenecked_links(e, p.capacity, demand, p.bottlenecked)
    xu = np.full(p.n_flows, np.inf)
    xd = np.full(p.n_flows, np.inf)
    rho = (s.sent - s.lr1 + s.lr0) / dt
    for lk in np.flatnonzero(bott):
        fl = r.indices[r.indptr[lk] : r.indptr[lk + 1]]
        if p.link_kind[lk] == UPLINK:
            xu[fl] = np.minimum(xu[fl], solve_uplink(demand[fl], p.capacity[lk]))
        elif p.link_kind[lk] == DOWNLINK:
            xd[fl] = np.minimum(xd[fl], solve_downlink(s.lr1[fl], rho[fl], p.capacity[lk], dt))
    x = np.minimum(xu, xd)
    x = np.where(np.isfinite(x), x, demand)
    scaled = x.copy()
    for lk in np.flatnonzero(bott & (p.link_kind == INTERNAL)):
        fl = r.indices[r.indptr[lk] : r.indptr[lk + 1]]
        d_c = x[fl].sum()
        if d_c > p.capacity[lk]:
            scaled[fl] = np.minimum(scaled[fl], x[fl] * p.capacity[lk] / d_c)
    x = backfill(e, p.capacity, enforce_capacity(e, p.capacity, scaled), bott)
    return finish(e, x)
