"""maxmin: the max-min fair TCP model (progressive filling with demands)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import streamband_alloc_core as kernel
from hypothesis import given, settings
from hypothesis import strategies as st

from streamband.alloc import maxmin, maxmin_rates
from streamband.alloc.base import AllocProblem
from streamband.alloc.maxmin import maxmin_rates_numpy, maxmin_rates_reference
from test_alloc_cases import (
    MBIT,
    TOPOLOGIES,
    assert_feasible,
    int64_index,
    paper_problems,
    problems,
    random_routing,
    topology,
)


def csr(paths: list[list[int]], n_links: int) -> sp.csr_matrix:
    rows = [f for f, p in enumerate(paths) for _ in p]
    cols = [lk for p in paths for lk in p]
    return sp.csr_matrix((np.ones(len(cols)), (rows, cols)), shape=(len(paths), n_links))


def assert_maxmin_fair(r: sp.csr_matrix, cap: np.ndarray, dem: np.ndarray, x: np.ndarray) -> None:
    """Bottleneck property: each flow is at its demand or crosses a saturated link on
    which no flow has a higher rate."""
    has = np.diff(r.indptr) > 0
    load = r.T @ np.where(has, x, 0.0)
    assert np.all(load <= cap * (1 + 1e-9))
    assert np.all(x[has] <= dem[has] * (1 + 1e-9))
    for f in np.flatnonzero(has):
        if x[f] >= dem[f] * (1 - 1e-9):
            continue
        links = r.indices[r.indptr[f] : r.indptr[f + 1]]
        ok = False
        for lk in links:
            on = r.getcol(lk).nonzero()[0]
            if load[lk] >= cap[lk] * (1 - 1e-9) and x[f] >= x[on].max() * (1 - 1e-9):
                ok = True
        assert ok, f"flow {f} (rate {x[f]}) has no bottleneck link"


def test_three_links_by_hand() -> None:
    # links: a=10, b=4, c=9 Mbit/s; flows: 0 on a,b; 1 on b; 2 on a,c; 3 on c; 4 on a.
    # b: 4/2 = 2 -> flows 0,1 get 2. then a: (10-2)/2 = 4, c: 9/2 = 4.5 -> a first:
    # flows 2,4 get 4; then c: 9 - 4 = 5 for flow 3.
    r = csr([[0, 1], [1], [0, 2], [2], [0]], 3)
    cap = np.array([10, 4, 9]) * MBIT
    x = maxmin_rates(r, cap, np.full(5, np.inf))
    np.testing.assert_allclose(x, np.array([2, 2, 4, 5, 4]) * MBIT, rtol=1e-12)


def test_demands_cap_flows_and_free_capacity_goes_to_others() -> None:
    # one 10 Mbit/s link, demands 1, 3, inf, inf -> 1, 3, 3, 3
    r = csr([[0], [0], [0], [0]], 1)
    x = maxmin_rates(r, np.array([10 * MBIT]), np.array([1, 3, np.inf, np.inf]) * MBIT)
    np.testing.assert_allclose(x, np.array([1, 3, 3, 3]) * MBIT)


def test_flows_without_links_get_inf_and_zero_demand_gets_zero() -> None:
    r = csr([[], [0], [0]], 1)
    x = maxmin_rates(r, np.array([8.0]), np.array([5.0, 0.0, np.inf]))
    assert np.isinf(x[0]) and x[1] == 0.0 and x[2] == pytest.approx(8.0)


def test_no_flows() -> None:
    x = maxmin_rates(csr([], 2), np.array([1.0, 2.0]), np.zeros(0))
    assert x.shape == (0,)


def test_bad_shapes_raise() -> None:
    with pytest.raises(ValueError, match="demand"):
        maxmin_rates(csr([[0]], 1), np.array([1.0]), np.zeros(2))


def test_kernel_refuses_to_write_over_an_input() -> None:
    r, cap, dem = csr([[0], [0, 1]], 2), np.array([2.0, 3.0]), np.array([5.0, 5.0])
    out = np.empty(2)
    kernel.maxmin(r.indptr, r.indices, cap, dem, out)
    np.testing.assert_allclose(out, [1.0, 1.0])
    with pytest.raises(ValueError, match="out: shares memory with an input"):
        kernel.maxmin(r.indptr, r.indices, cap, dem, dem)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    name=st.sampled_from(TOPOLOGIES),
    n=st.integers(1, 30),
    greedy=st.floats(0, 1),
)
def test_random_instances_are_maxmin_fair_and_match_progressive_filling(
    seed: int, name: str, n: int, greedy: float
) -> None:
    rng = np.random.default_rng(seed)
    topo, _ = topology(name)
    r = random_routing(rng, name, n)
    cap = topo.capacities * rng.uniform(0.2, 1.0, len(topo.links))
    dem = rng.uniform(0, 15 * MBIT, n)
    dem[rng.random(n) < greedy] = np.inf
    dem[rng.random(n) < 0.1] = 0.0
    x = maxmin_rates(r, cap, dem)
    assert_maxmin_fair(r, cap, dem, x)
    np.testing.assert_allclose(x, maxmin_rates_reference(r, cap, dem), rtol=1e-9)


@settings(max_examples=40, deadline=None)
@given(problems)
def test_policy_is_feasible_and_uses_state_demand(p: AllocProblem) -> None:
    x = maxmin(p)
    assert_feasible(p, x)
    assert_maxmin_fair(p.routing, p.capacity, p.demand_bps(), x)


def test_many_equal_levels_freeze_together() -> None:
    # 200 flows over 20 links in a chain of equal capacity: every level ties
    paths = [[i % 20, (i + 1) % 20] for i in range(200)]
    r = csr(paths, 20)
    x = maxmin_rates(r, np.full(20, 20.0), np.full(200, np.inf))
    np.testing.assert_allclose(x, 1.0)


# -- the compiled kernel against the numpy implementation, to the last bit ------------


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    name=st.sampled_from(TOPOLOGIES),
    n=st.integers(1, 60),
    odd=st.sampled_from([0.0, 0.1, 0.5]),
)
def test_kernel_equals_numpy_to_the_bit(seed: int, name: str, n: int, odd: float) -> None:
    rng = np.random.default_rng(seed)
    topo, _ = topology(name)
    r = random_routing(rng, name, n)
    cap = topo.capacities * rng.uniform(0.2, 1.0, len(topo.links))
    cap[rng.random(len(cap)) < odd / 4] = np.inf
    dem = rng.uniform(0, 15 * MBIT, n)
    for value in (np.inf, 0.0, np.nan, -1.0):  # greedy, idle, unknown, nonsense
        dem[rng.random(n) < odd] = value
    for routing in (r, int64_index(r)):
        with np.errstate(invalid="ignore"):  # inf - inf on an infinite link, in both
            want = maxmin_rates_numpy(routing, cap, dem)
        np.testing.assert_array_equal(maxmin_rates(routing, cap, dem), want)


def test_kernel_equals_numpy_on_the_papers_problems() -> None:
    for p in paper_problems(30.0):
        d = p.demand_bps()
        np.testing.assert_array_equal(maxmin(p), maxmin_rates_numpy(p.routing, p.capacity, d))
