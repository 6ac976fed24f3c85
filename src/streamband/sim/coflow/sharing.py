"""Bandwidth sharing primitives: max-min water-filling, strict priority between
levels, and the per-end static share. All rates in bytes/s, capacities likewise.

Flows that cross the same links at the same priority level get the same max-min rate,
so every primitive works on *groups* (a path and a weight = number of flows); on a big
switch a group is a (sender port, receiver port) pair, at most P^2 of them however many
flows are active. This is the structure that keeps the event loop cheap.
"""

from __future__ import annotations

import numpy as np

#: Residual capacity below this (bytes/s) counts as none, in both engines, so a
#: float residue of a full link never gives a lower level a meaningless trickle.
SNAP = 1e-3


def water_fill(links: np.ndarray, weight: np.ndarray, resid: np.ndarray) -> np.ndarray:
    """Max-min fair rate per flow of every group (progressive filling, 004 "FS").

    ``links`` is (n, W) link ids per group, padded with ``len(resid) - 1`` whose
    capacity is ``inf``; ``weight`` the flows per group; ``resid`` the capacities
    left, reduced in place by what the groups take. Every round fixes all groups that
    cross a link whose fair share is the smallest (up to 1e-9 relative)."""
    n, w_ = links.shape
    L1 = len(resid)
    rate = np.zeros(n)
    live = np.arange(n)
    while live.size:
        lk = links[live]
        w = np.repeat(weight[live], w_)
        cnt = np.bincount(lk.ravel(), weights=w, minlength=L1)
        cnt[-1] = 0.0
        used = cnt > 0
        share = np.full(L1, np.inf)
        share[used] = resid[used] / cnt[used]
        m = share.min()
        if not np.isfinite(m):
            break
        bott = share <= m * (1 + 1e-9) + 1e-12
        fr = bott[lk].any(axis=1)
        rate[live[fr]] = m
        resid -= np.bincount(lk[fr].ravel(), weights=w.reshape(-1, w_)[fr].ravel(),
                             minlength=L1) * m
        resid[resid < SNAP] = 0.0
        resid[-1] = np.inf
        live = live[~fr]
    return rate


def priority_fill(
    links: np.ndarray, weight: np.ndarray, level: np.ndarray, resid: np.ndarray
) -> np.ndarray:
    """Strict priority between levels (0 first), max-min fair inside a level (004 §III-B:
    K strict-priority queues, per-flow fair sharing inside a queue). Work-conserving."""
    rate = np.zeros(len(weight))
    if len(weight) == 0:
        return rate
    order = np.argsort(level, kind="stable")
    lv = level[order]
    cuts = np.flatnonzero(np.diff(lv)) + 1
    for idx in np.split(order, cuts):
        if not np.any(resid[:-1] > 0):
            break
        rate[idx] = water_fill(links[idx], weight[idx], resid)
    return rate


def static_share(links: np.ndarray, weight: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """``fs-static``: each flow gets the smallest ``cap_l / n_l`` over its links, n_l the
    flows on link l — per-end fair share, not work-conserving."""
    w_ = links.shape[1]
    cnt = np.bincount(links.ravel(), weights=np.repeat(weight, w_), minlength=len(cap))
    share = np.full(len(cap), np.inf)
    used = cnt > 0
    share[used] = cap[used] / cnt[used]
    share[-1] = np.inf
    return share[links].min(axis=1)
