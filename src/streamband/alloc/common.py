"""Pieces every allocation policy shares: the flow x link entries of R (000 eq. 1a),
per-flow and per-link reductions, bottleneck detection, the final capacity cap and
the backfill pass of 000 §VI-C.

Everything works on the nonzeros of the CSR routing matrix, kept in CSR order
(sorted by flow), so per-flow reductions are ``np.minimum.reduceat`` and per-link
sums are ``np.bincount``: no Python loop over flows or links.

``appaware`` and ``maxmin`` run in the compiled kernel ``streamband_alloc_core``
(``rust/alloc_core``), which takes R as it is stored (:func:`csr_index`); the numpy
functions here stay the reference it equals to the last bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

#: a link is bottlenecked when its flows' demands reach this share of capacity
BOTTLENECK_FRAC = 1.0 - 1e-3


@dataclass(frozen=True)
class Entries:
    """The nonzeros of R in CSR order: ``rows[i]`` crosses ``cols[i]``."""

    rows: np.ndarray  # (nnz,) flow index, sorted
    cols: np.ndarray  # (nnz,) link index
    n_flows: int
    n_links: int

    @property
    def has_link(self) -> np.ndarray:
        """(F,) True for flows crossing at least one link."""
        out = np.zeros(self.n_flows, bool)
        out[self.rows] = True
        return out

    def link_sum(self, x: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """(L,) Σ_{f ∋ l} x_f, the load R^T x (optionally over the entries in ``mask``)."""
        if mask is None:
            return np.bincount(self.cols, weights=x[self.rows], minlength=self.n_links)
        return np.bincount(self.cols[mask], weights=x[self.rows[mask]], minlength=self.n_links)


def csr_index(routing: sp.spmatrix | sp.sparray) -> tuple[np.ndarray, np.ndarray]:
    """R's ``indptr`` and ``indices`` as the compiled kernel takes them: contiguous, one
    dtype, int32 or int64 (scipy's own arrays, not copied, when they already are)."""
    r = routing if sp.issparse(routing) and routing.format == "csr" else sp.csr_matrix(routing)
    indptr, indices = r.indptr, r.indices
    if indptr.dtype != indices.dtype or indptr.dtype not in (np.int32, np.int64):
        indptr, indices = indptr.astype(np.int64), indices.astype(np.int64)
    return np.ascontiguousarray(indptr), np.ascontiguousarray(indices)


def entries(routing: sp.spmatrix | sp.sparray) -> Entries:
    """The nonzeros of the (binary) routing matrix R, flow-sorted."""
    r = routing if sp.isspmatrix_csr(routing) else sp.csr_matrix(routing)
    n_flows, n_links = r.shape
    counts = np.diff(r.indptr)
    rows = np.repeat(np.arange(n_flows, dtype=np.int64), counts)
    return Entries(rows, r.indices.astype(np.int64, copy=False), n_flows, n_links)


def flow_min(rows: np.ndarray, vals: np.ndarray, n_flows: int, fill: float) -> np.ndarray:
    """(F,) min of ``vals`` over each flow's entries; ``fill`` for flows with none.

    ``rows`` must be sorted (any subset of CSR entries is)."""
    out = np.full(n_flows, fill, dtype=float)
    if rows.size == 0:
        return out
    starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
    out[rows[starts]] = np.minimum.reduceat(vals, starts)
    return out


def bottlenecked_links(
    e: Entries, capacity: np.ndarray, demand_bps: np.ndarray, given: np.ndarray | None
) -> np.ndarray:
    """(L,) bool: ``given`` if the caller knows, else links whose flows' demands sum to at
    least ``BOTTLENECK_FRAC`` of capacity (000 Algorithm 1, line 11: ω^b, φ^b, ϕ^b)."""
    if given is not None:
        return given_bottlenecked(given, e.n_links)
    return e.link_sum(demand_bps) >= capacity * BOTTLENECK_FRAC


def given_bottlenecked(given: np.ndarray, n_links: int) -> np.ndarray:
    """(L,) bool: the caller's bottlenecked links, checked to be one flag per link."""
    b = np.asarray(given, bool)
    if b.shape != (n_links,):
        raise ValueError(
            f"bottlenecked: expected one bool per link ({n_links}), got shape {b.shape}"
        )
    return b


def enforce_capacity(e: Entries, capacity: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Scale flows down so that R·x <= C (eq. 1a): on every overloaded link l the
    factor is C_l / load_l and a flow takes the smallest factor over its links."""
    load = e.link_sum(x)
    over = load > capacity
    if not over.any():
        return x
    factor = np.ones(e.n_links)
    factor[over] = capacity[over] / load[over]
    return x * flow_min(e.rows, factor[e.cols], e.n_flows, 1.0)


def backfill(
    e: Entries,
    capacity: np.ndarray,
    x: np.ndarray,
    links: np.ndarray,
    max_iter: int = 50,
    rtol: float = 1e-9,
) -> np.ndarray:
    """The backfill pass of 000 §VI-C: capacity left on the ``links`` (bool (L,), the
    bottlenecked ones) goes to their flows in proportion to the previous pass's rates.

    Per iteration, only flows that can still grow (crossing no full link) share a
    link's leftover, in proportion to their rates (equally if all of them are at 0);
    a flow's increase is its smallest share over its ``links``, then cut down so no
    link at all goes over capacity. Sharing among the growable flows only (not among
    all flows, whose blocked members would waste their part) reaches the fixed point
    in a few rounds instead of geometrically. Stops when nothing more can be handed
    out, or after ``max_iter`` rounds. Keeps R·x <= C.
    """
    x = x.copy()
    floor = rtol * capacity
    resid = capacity - e.link_sum(x)
    full = resid <= floor
    # growable flows: on some bottlenecked link, on no full link. A full link stays
    # full (rates only go up), so the set only shrinks; work on its entries only.
    touch = np.zeros(e.n_flows, bool)
    touch[e.rows[links[e.cols]]] = True
    keep = touch[e.rows] & ~_any_per_flow(e.rows, full[e.cols], e.n_flows)[e.rows]
    rows, cols = e.rows[keep], e.cols[keep]
    top = rtol * capacity[links].max(initial=0.0)
    if rows.size == 0:
        return x
    # work in the compact index space of the flows and links still in play, so every
    # round costs O(their entries), not O(F + L)
    flows_u, rows = np.unique(rows, return_inverse=True)
    links_u, cols = np.unique(cols, return_inverse=True)
    n_f, n_l = len(flows_u), len(links_u)
    xc, res, bl = x[flows_u], resid[links_u], links[links_u]
    fl = full[links_u]
    for _ in range(max_iter):
        if rows.size == 0:
            break
        res[fl] = 0.0
        on = bl[cols]
        rb, cb = rows[on], cols[on]
        xb = xc[rb]
        den = np.bincount(cb, weights=xb, minlength=n_l)[cb]
        cnt = np.bincount(cb, minlength=n_l)[cb]
        res_b = res[cb]
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(den > 0, res_b * xb / den, res_b / cnt)
        inc = flow_min(rb, share, n_f, 0.0)
        inc_load = np.bincount(cols, weights=inc[rows], minlength=n_l)
        cut = inc_load > res
        if cut.any():
            factor = np.ones(n_l)
            factor[cut] = res[cut] / inc_load[cut]
            inc *= flow_min(rows, factor[cols], n_f, 1.0)
            inc_load = np.bincount(cols, weights=inc[rows], minlength=n_l)
        xc += inc
        res -= inc_load
        fl = res <= floor[links_u]
        if inc.max(initial=0.0) <= top:
            break
        blocked = _any_per_flow(rows, fl[cols], n_f)
        if blocked.any():
            keep = ~blocked[rows]
            rows, cols = rows[keep], cols[keep]
    x[flows_u] = xc
    return x


def _any_per_flow(rows: np.ndarray, flags: np.ndarray, n_flows: int) -> np.ndarray:
    """(F,) True for flows with a flagged entry."""
    out = np.zeros(n_flows, bool)
    out[rows[flags]] = True
    return out


def finish(e: Entries, x: np.ndarray) -> np.ndarray:
    """The contract of base.py: ``np.inf`` for flows crossing no link, >= 0 elsewhere."""
    out = np.maximum(x, 0.0)
    out[~e.has_link] = np.inf
    return out
