"""Strict-priority sharing: classes served in order (0 first), max-min fair among the
flows of one class on what the classes before it left (000 §VII c: "a multi-level
strict priority scheduler among a set Q = {q1, ..., qm} of queues" on every egress
port; 004 §III-B: K strict-priority queues, per-flow fair sharing inside a queue).

This is the network's sharing when flows carry classes (what the fluid simulator
does every step, and what the testbed's HTB ``prio`` classes approximate), and the
model :func:`class_capacity` uses to tell an application the capacity its class leaves
it. Work-conserving: a class takes nothing a higher one wants, and leaves nothing a
lower one could use.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from streamband.alloc.maxmin import maxmin_rates


def priority_rates(routing: sp.spmatrix | sp.sparray, capacity: np.ndarray,
                   demand: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Rates (bit/s) of the flows (rows of the binary ``routing``) on links of
    ``capacity`` (bit/s), each capped at ``demand`` (bit/s, ``np.inf``: greedy), under
    strict priority between ``classes`` (int per flow, lower served first) and max-min
    fairness inside a class. Flows crossing no link get ``np.inf``.

    Examples
    --------
    One 10 bit/s link: class 0 wants 4 and gets it, the two greedy flows of class 1
    share the rest.

    >>> r = sp.csr_matrix(np.ones((3, 1)))
    >>> priority_rates(r, np.array([10.0]), np.array([4.0, np.inf, np.inf]),
    ...                np.array([0, 1, 1])).tolist()
    [4.0, 3.0, 3.0]
    """
    r = sp.csr_matrix(routing)
    demand = np.asarray(demand, float)
    classes = np.asarray(classes)
    n = r.shape[0]
    if classes.shape != (n,) or demand.shape != (n,):
        raise ValueError(f"classes and demand: expected {n} values each, got shapes "
                         f"{classes.shape} and {demand.shape}")
    resid = np.asarray(capacity, float).copy()
    rates = np.zeros(n)
    for c in np.unique(classes):
        idx = np.flatnonzero(classes == c)
        sub = r[idx]
        got = maxmin_rates(sub, np.maximum(resid, 0.0), demand[idx])
        rates[idx] = got
        resid -= sub.T @ np.where(np.isfinite(got), got, 0.0)
    return rates


def group_capacity(routing: sp.spmatrix | sp.sparray, capacity: np.ndarray,
                   rates: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """(G, L) the capacity each group of flows (``groups``: int per flow, 0..G-1, e.g.
    its application) may divide among its own members on every link: what its flows get
    under the sharing ``rates`` (:func:`priority_rates`), plus an equal part of what
    nobody uses there. However the groups divide their capacities, no link is overfull
    and no group takes from another.

    Examples
    --------
    A 10 bit/s link: group 0 gets 4, group 1 gets 3; each may use 1.5 of the spare 3.

    >>> r = sp.csr_matrix(np.ones((3, 1)))
    >>> group_capacity(r, np.array([10.0]), np.array([4.0, 1.0, 2.0]),
    ...                np.array([0, 1, 1])).tolist()
    [[5.5], [4.5]]
    """
    r = sp.csr_matrix(routing)
    groups = np.asarray(groups, np.int64)
    n_groups = int(groups.max()) + 1 if len(groups) else 0
    member = sp.csr_matrix((np.ones(len(groups)), (groups, np.arange(len(groups)))),
                           shape=(n_groups, len(groups)))
    finite = np.where(np.isfinite(rates), rates, 0.0)
    used = member @ r.multiply(finite[:, None]).tocsr()  # (G, L)
    present = (member @ r) > 0  # (G, L): the group has a flow on the link
    used, present = np.asarray(used.todense()), np.asarray(present.todense())
    spare = np.maximum(np.asarray(capacity, float) - used.sum(axis=0), 0.0)
    n = np.maximum(present.sum(axis=0), 1)
    return used + present * (spare / n)
