"""weighted (001 §III-D), the sweep search, and the policy registry."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings

from streamband.alloc import POLICIES, get_policy, sweep_pair, sweep_search, weighted
from streamband.alloc.base import AllocProblem, FlowState
from streamband.errors import SpecError
from streamband.model.routing import Router, routing_matrix
from streamband.model.topology import star
from test_alloc_cases import MBIT, assert_feasible, problems

# the allocating policies (observe caps nothing: np.inf everywhere, no capacity contract;
# the policies deciding classes are tested in test_appfair)
LOOP = {n: e.fn for n, e in POLICIES.items()
        if e.kind == "loop" and e.decides == "rates" and n != "observe"}


def fork(weights: list[float] | None, need_bytes: list[float]) -> AllocProblem:
    """h1 sends one flow to each of h2.. over its 20 Mbit/s uplink (Δt = 1 s)."""
    n = len(need_bytes)
    topo = star(n + 1, 20 * MBIT)
    pairs = [("h1", f"h{i + 2}") for i in range(n)]
    r = routing_matrix(Router(topo).paths(pairs), len(topo.links))
    s = FlowState.zeros(n)
    s.sent = np.asarray(need_bytes, float)
    w = None if weights is None else np.asarray(weights, float)
    return AllocProblem(r, topo.capacities, topo.kinds, s, 1.0, w)


def test_weights_split_the_bottlenecked_uplink() -> None:
    x = weighted(fork([1, 2, 5], [2e6, 2e6, 2e6]))
    np.testing.assert_allclose(x, np.array([2.5, 5, 12.5]) * MBIT)


def test_default_weights_split_equally_and_idle_link_gives_demand() -> None:
    np.testing.assert_allclose(weighted(fork(None, [2e6, 2e6])), [10 * MBIT, 10 * MBIT])
    np.testing.assert_allclose(weighted(fork([1, 9], [0.5e6, 1e6])), [4 * MBIT, 8 * MBIT])


def test_tp1_tuple_size_ratio() -> None:
    # 001's TP1 ratio: f2:f3 = 8:4 tuple sizes -> 13.33/6.67 Mbit/s
    np.testing.assert_allclose(weighted(fork([8, 4], [2e6, 2e6])), [40 / 3 * MBIT, 20 / 3 * MBIT])


def test_bad_weights_raise() -> None:
    with pytest.raises(ValueError, match="weights"):
        weighted(fork([1, -1], [2e6, 2e6]))
    with pytest.raises(ValueError, match="weights"):
        weighted(fork([1, 1, 1], [2e6, 2e6]))


@settings(max_examples=50, deadline=None)
@given(problems)
def test_every_policy_keeps_the_contract(p: AllocProblem) -> None:
    for policy in LOOP.values():
        assert_feasible(p, policy(p))


@settings(max_examples=40, deadline=None)
@given(problems)
def test_without_bottlenecks_every_flow_gets_its_demand(p: AllocProblem) -> None:
    p.bottlenecked = np.zeros(len(p.capacity), bool)
    d = p.demand_bps()
    has = np.diff(p.routing.indptr) > 0
    assume(np.all(p.routing.T @ np.where(has, d, 0) <= p.capacity))
    for name in ("appaware", "appaware-store", "weighted"):
        np.testing.assert_allclose(LOOP[name](p)[has], d[has], err_msg=name)


def test_registry() -> None:
    assert set(LOOP) == {"maxmin", "appaware", "appaware-store", "weighted"}
    assert {n: e.kind for n, e in POLICIES.items() if e.kind != "loop"} == {
        "tcp": "per-step", "static": "static", "sweep": "search"}
    assert get_policy("weighted") is weighted
    with pytest.raises(SpecError, match="unknown policy 'wieghted'.*did you mean 'weighted'"):
        get_policy("wieghted")
    with pytest.raises(SpecError, match="kind .search."):
        get_policy("sweep")


# -- the brute-force sweep -------------------------------------------------------------


def test_sweep_pair_grid() -> None:
    pairs = sweep_pair(20 * MBIT)
    assert len(pairs) == 39
    assert pairs[0] == pytest.approx((19.5 * MBIT, 0.5 * MBIT))
    assert pairs[-1] == pytest.approx((0.5 * MBIT, 19.5 * MBIT))
    assert all(x + y == pytest.approx(20 * MBIT) for x, y in pairs)
    assert len(sweep_pair(1.0, 0.25)) == 3
    with pytest.raises(ValueError, match="step_frac"):
        sweep_pair(1.0, 0.3)


def test_sweep_two_flows_is_exhaustive_and_finds_the_tuple_size_ratio() -> None:
    # a join that needs one 8 KB tuple from f0 per 4 KB tuple from f1
    def throughput(rates: dict[int, float]) -> float:
        return min(rates[7] / 8e3, rates[3] / 4e3)

    best, score, trace = sweep_search([7, 3], 20 * MBIT, throughput)
    assert len(trace) == 39
    assert score == max(s for _, s in trace)
    # 2:1 is not on the 0.5 Mbit/s grid; the best grid points are 13/7 or 13.5/6.5
    assert best[7] in (pytest.approx(13 * MBIT), pytest.approx(13.5 * MBIT))
    assert score == pytest.approx(6.5 * MBIT / 4e3)


def test_sweep_many_flows_coordinate_search_reaches_the_optimum() -> None:
    # proportional-fair utility Σ s_f log x_f: optimum x ∝ s = 1:2:5 -> 5, 10, 25 of 40 steps
    s = {0: 1.0, 1: 2.0, 2: 5.0}

    def utility(rates: dict[int, float]) -> float:
        return sum(s[f] * math.log(r) for f, r in rates.items())

    best, score, trace = sweep_search([0, 1, 2], 40.0, utility)
    assert best == pytest.approx({0: 5.0, 1: 10.0, 2: 25.0})
    assert score == pytest.approx(utility(best))
    assert len(trace) < 741  # far fewer than the 741 points of the full 3-flow grid
    assert all(abs(sum(r.values()) - 40.0) < 1e-9 for r, _ in trace)


def test_sweep_one_flow_and_bad_input() -> None:
    best, score, trace = sweep_search([4], 10.0, lambda r: r[4])
    assert best == {4: 10.0} and score == 10.0 and len(trace) == 1
    with pytest.raises(ValueError, match="flows"):
        sweep_search([], 10.0, lambda r: 0.0)
    with pytest.raises(ValueError, match="flows"):
        sweep_search([1, 1], 10.0, lambda r: 0.0)
