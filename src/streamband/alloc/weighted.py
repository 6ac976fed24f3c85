"""Weight-based allocation and the brute-force sweep of 001 §III-D.

001 finds, by sweeping (x, y) = (b - kΔb, kΔb) over two bottlenecked flows, that
the best split is proportional to the flows' tuple sizes; ``weighted`` applies
that rule on every bottlenecked link, ``sweep_pair``/``sweep_search`` are the
search itself (generalised to k > 2 flows by coordinate search).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from streamband.alloc.base import AllocProblem
from streamband.alloc.common import (
    backfill,
    bottlenecked_links,
    enforce_capacity,
    entries,
    finish,
    flow_min,
)


def weighted(p: AllocProblem) -> np.ndarray:
    """001 §III-D: x_f = C_l · w_f / Σ_{g ∋ l} w_g on each bottlenecked link l, the
    min over a flow's bottlenecked links; other flows get their demand; then R·x <= C
    and the backfill pass of 000 §VI-C. ``p.weights`` (e.g. tuple sizes) default 1."""
    e = entries(p.routing)
    cap = np.asarray(p.capacity, float)
    demand = p.demand_bps()
    if p.weights is None:
        w = np.ones(e.n_flows)
    else:
        w = np.asarray(p.weights, float)
        if w.shape != (e.n_flows,) or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError(
                f"weights: expected {e.n_flows} finite non-negative values, got {p.weights!r}"
            )
    bott = bottlenecked_links(e, cap, demand, p.bottlenecked)
    on = bott[e.cols]
    rows, cols = e.rows[on], e.cols[on]
    total = np.bincount(cols, weights=w[rows], minlength=e.n_links)
    count = np.bincount(cols, minlength=e.n_links)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(
            total[cols] > 0, cap[cols] * w[rows] / total[cols], cap[cols] / count[cols]
        )
    x = flow_min(rows, share, e.n_flows, np.inf)
    x = np.where(np.isfinite(x), x, demand)
    x = enforce_capacity(e, cap, x)
    return finish(e, backfill(e, cap, x, bott))


def sweep_pair(capacity_bps: float, step_frac: float = 0.025) -> list[tuple[float, float]]:
    """001 §III-D: (x, y) = (b - kΔb, kΔb) for k = 1 .. 1/step_frac - 1, Δb = step_frac·b."""
    n = _steps(step_frac)
    db = capacity_bps / n
    return [(capacity_bps - k * db, k * db) for k in range(1, n)]


def _steps(step_frac: float) -> int:
    n = round(1.0 / step_frac) if step_frac > 0 else 0
    if n < 2 or abs(n * step_frac - 1.0) > 1e-9:
        raise ValueError(
            f"step_frac: expected 1/n for an integer n >= 2 (e.g. 0.025), got {step_frac!r}"
        )
    return n


Trace = list[tuple[dict[int, float], float]]


def sweep_search(
    flows: list[int],
    capacity_bps: float,
    evaluate: Callable[[dict[int, float]], float],
    step_frac: float = 0.025,
    max_evals: int = 10_000,
) -> tuple[dict[int, float], float, Trace]:
    """001 §III-D brute-force search for the split of ``capacity_bps`` among ``flows``
    that maximises ``evaluate(rates)`` (e.g. the app's throughput with those caps).

    2 flows: every (b - kΔb, kΔb) of :func:`sweep_pair`. k > 2 flows: start from the
    equal split (in units of Δb) and, while the score improves, take the best move of
    Δb from one flow to another (every ordered pair; a flow keeps at least Δb).
    Returns (best rates, best score, trace of every (rates, score) evaluated).
    """
    if not flows or len(set(flows)) != len(flows):
        raise ValueError(f"flows: expected distinct flow indices, got {flows!r}")
    n = _steps(step_frac)
    k = len(flows)
    if k > n:
        raise ValueError(f"step_frac: {k} flows cannot each get a step of {step_frac}")
    db = capacity_bps / n
    trace: Trace = []
    seen: dict[tuple[int, ...], float] = {}

    def score(units: tuple[int, ...]) -> float:
        if units not in seen:
            rates = {f: u * db for f, u in zip(flows, units, strict=True)}
            seen[units] = float(evaluate(rates))
            trace.append((rates, seen[units]))
        return seen[units]

    if k == 1:
        best: tuple[int, ...] = (n,)
        score(best)
    elif k == 2:
        best = max(((n - j, j) for j in range(1, n)), key=score)
    else:
        best = tuple(n // k + (i < n % k) for i in range(k))
        while len(seen) < max_evals:
            moves = [
                tuple(u - (m == i) + (m == j) for m, u in enumerate(best))
                for i in range(k)
                for j in range(k)
                if i != j and best[i] > 1
            ]
            cand = max(moves, key=score, default=best)
            if score(cand) <= score(best):
                break
            best = cand
    return {f: u * db for f, u in zip(flows, best, strict=True)}, score(best), trace
