"""appaware: 000 Algorithm 1 (problems (3), (4), lines 22-29) and the backfill pass."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from streamband.alloc import POLICIES, appaware, solve_downlink, solve_uplink
from streamband.alloc.appaware import RHO_EPS, appaware_numpy, appaware_reference
from streamband.alloc.base import AllocProblem, FlowState, as_decision
from streamband.alloc.common import bottlenecked_links, entries
from streamband.model.routing import Router, routing_matrix
from streamband.model.topology import Topology, fat_tree, star
from test_alloc_cases import (
    MBIT,
    assert_feasible,
    int64_index,
    paper_problems,
    problems,
    random_state,
)

# -- per-link solvers against an LP oracle --------------------------------------------


def lp_uplink_optimum(d: np.ndarray, cap: float) -> float:
    """(3) with y = 1/T: max y s.t. D_f y <= x_f, Σ x = C, x >= 0; returns T* = 1/y*."""
    n = len(d)
    c = np.zeros(n + 1)
    c[-1] = -1.0
    a_ub = np.hstack([-np.eye(n), d[:, None]])
    a_eq = np.hstack([np.ones((1, n)), np.zeros((1, 1))])
    res = linprog(c, a_ub, np.zeros(n), a_eq, [cap], bounds=[(0, None)] * (n + 1))
    assert res.status == 0
    return 1.0 / res.x[-1]


def lp_downlink_optimum(lr1: np.ndarray, rho: np.ndarray, cap: float, dt: float) -> float:
    """(4): min T s.t. (L^r_f + x_f Δt / 8) / ρ_f <= T, Σ x = C, x >= 0 (x in bit/s).

    Solved in MB (z_f = x_f Δt / 8e6, the MB sent next interval) so HiGHS's absolute
    tolerances mean the same at every scale."""
    n = len(lr1)
    c = np.zeros(n + 1)
    c[-1] = 1.0
    a_ub = np.hstack([np.eye(n), -rho[:, None] / 1e6])
    a_eq = np.hstack([np.ones((1, n)), np.zeros((1, 1))])
    b_eq = [cap * dt / 8e6]
    res = linprog(c, a_ub, -lr1 / 1e6, a_eq, b_eq, bounds=[(0, None)] * (n + 1))
    assert res.status == 0
    return res.x[-1]


def test_uplink_by_hand_4_to_6() -> None:
    np.testing.assert_allclose(solve_uplink(np.array([4.0, 6.0]), 20 * MBIT), [8 * MBIT, 12 * MBIT])


def test_uplink_zero_demands_split_equally_and_negative_counts_as_zero() -> None:
    np.testing.assert_allclose(solve_uplink(np.zeros(4), 20.0), 5.0)
    np.testing.assert_allclose(solve_uplink(np.array([-3.0, 1.0]), 20.0), [0.0, 20.0])


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 12))
def test_uplink_matches_lp_optimum(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    d = rng.uniform(0.01, 5.0, n) * 10 ** rng.integers(0, 3, n)
    cap = float(rng.uniform(1, 100))
    x = solve_uplink(d, cap)
    assert x.sum() == pytest.approx(cap, rel=1e-12)
    assert np.max(d / x) == pytest.approx(lp_uplink_optimum(d, cap), rel=1e-6)


def test_downlink_by_hand() -> None:
    # 20 Mbit/s, Δt = 1 s; L^r = (0.5 MB, 0), ρ = (1, 3) MB/s -> T = 0.75 s, x = (2, 18)
    x = solve_downlink(np.array([0.5e6, 0.0]), np.array([1e6, 3e6]), 20 * MBIT, 1.0)
    np.testing.assert_allclose(x, [2 * MBIT, 18 * MBIT])
    # empty receiver queues: proportional to consumption
    x = solve_downlink(np.zeros(2), np.array([1e6, 3e6]), 20 * MBIT, 1.0)
    np.testing.assert_allclose(x, [5 * MBIT, 15 * MBIT])


def test_downlink_flow_with_huge_backlog_gets_nothing() -> None:
    # flow 0's queue already takes 10 s to drain: every byte goes to flow 1
    x = solve_downlink(np.array([1e7, 0.0]), np.array([1e6, 1e6]), 8e6, 1.0)
    np.testing.assert_allclose(x, [0.0, 8e6])


def test_downlink_idle_receivers() -> None:
    # ρ <= 0 on one flow: it gets ~0; on all flows: equal split
    x = solve_downlink(np.array([0.0, 1e5, 0.0]), np.array([0.0, 2e6, 2e6]), 20 * MBIT, 1.0)
    assert x[0] <= 20 * MBIT * 1e-6 and x.sum() == pytest.approx(20 * MBIT)
    assert RHO_EPS < 1e-6
    x = solve_downlink(np.array([5.0, 0.0, 1e6]), np.array([0.0, -3.0, 0.0]), 9.0, 1.0)
    np.testing.assert_allclose(x, 3.0)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 12), dt=st.sampled_from([0.1, 1.0, 5.0]))
def test_downlink_matches_lp_optimum(seed: int, n: int, dt: float) -> None:
    rng = np.random.default_rng(seed)
    cap = float(rng.uniform(1, 100)) * MBIT
    lr1 = rng.uniform(0, 2e6, n) * (rng.random(n) < 0.7)
    rho = rng.uniform(1e4, 3e6, n)
    x = solve_downlink(lr1, rho, cap, dt)
    assert np.all(x >= 0) and x.sum() == pytest.approx(cap, rel=1e-9)
    ours = np.max((lr1 + x * dt / 8) / rho)
    assert ours == pytest.approx(lp_downlink_optimum(lr1, rho, cap, dt), rel=1e-6)


# -- Algorithm 1 on small networks ------------------------------------------------------


def problem(
    topo: Topology, pairs: list[tuple[str, str]], state: FlowState, dt: float = 1.0
) -> AllocProblem:
    r = routing_matrix(Router(topo).paths(pairs), len(topo.links))
    return AllocProblem(r, topo.capacities, topo.kinds, state, dt)


def sender_state(need_bytes: list[float]) -> FlowState:
    """V = need, no backlog: D_f = need bytes over Δt."""
    s = FlowState.zeros(len(need_bytes))
    s.sent = np.asarray(need_bytes, float)
    return s


def test_uplink_split_4_to_6_end_to_end() -> None:
    # h1 sends 16 and 24 Mbit/s worth to h2, h3 over its 20 Mbit/s uplink
    p = problem(star(3, 20 * MBIT), [("h1", "h2"), ("h1", "h3")], sender_state([2e6, 3e6]))
    np.testing.assert_allclose(appaware(p), [8 * MBIT, 12 * MBIT])


def two_racks(internal_bps: float) -> Topology:
    t = Topology("two_racks")
    t.add_switch("s1")
    t.add_switch("s2")
    for h, s in (("h1", "s1"), ("h2", "s1"), ("h3", "s2"), ("h4", "s2")):
        t.add_host(h)
        t.connect_host(h, s, 20 * MBIT)
    t.connect_switches("s1", "s2", internal_bps)
    return t


def test_internal_link_scales_line_27() -> None:
    # demands 8 and 24 Mbit/s cross a 10 Mbit/s internal link; flow 1's uplink and
    # downlink are bottlenecked alone (x = 20), flow 0 keeps 8: D(c) = 28 -> x·10/28
    p = problem(two_racks(10 * MBIT), [("h1", "h3"), ("h2", "h4")], sender_state([1e6, 3e6]))
    np.testing.assert_allclose(appaware(p), np.array([80, 200]) / 28 * MBIT)


def test_no_bottleneck_gives_demand_and_internal_flows_inf() -> None:
    p = problem(star(3, 20 * MBIT), [("h1", "h2"), ("h2", "h3"), ("h3", "h3")],
                sender_state([1e6, 0.5e6, 9e9]))
    x = appaware(p)
    np.testing.assert_allclose(x[:2], [8 * MBIT, 4 * MBIT])
    assert np.isinf(x[2])


def test_backfill_gives_leftover_to_unblocked_flows() -> None:
    # h1 -> h2 and h1 -> h3 share h1's uplink 1:1 by (3); h4 -> h3 also sends into
    # h3's downlink, where (4) gives flow 1 only a quarter (its receiver is slow).
    # Flow 1 is held at 5 Mbit/s by the downlink, so flow 0 backfills h1's uplink.
    s = FlowState.zeros(3)
    s.sent = np.array([3e6, 3e6, 3e6])
    s.lr0 = np.array([0.0, 2.25e6, 0.0])
    s.lr1 = np.array([0.0, 4.5e6, 0.0])  # ρ_1 = (3 - 4.5 + 2.25) MB/s = 0.75 MB/s
    p = problem(star(4, 20 * MBIT), [("h1", "h2"), ("h1", "h3"), ("h4", "h3")], s)
    x = appaware(p)
    # downlink h3: flow 1 has L^r/ρ = 6 s > flow 2's T = 20e6 / (8·3e6) s -> x_1 = 0
    assert x[1] == pytest.approx(0.0, abs=1e-6)
    assert x[2] == pytest.approx(20 * MBIT)
    assert x[0] == pytest.approx(20 * MBIT)  # backfilled from 10 to the whole uplink


reference_lines_17_to_29 = appaware_reference


@settings(max_examples=60, deadline=None)
@given(problems)
def test_random_problems_feasible_and_match_loop_reference(p: AllocProblem) -> None:
    x = appaware(p)
    assert_feasible(p, x)
    np.testing.assert_allclose(x, reference_lines_17_to_29(p), rtol=1e-9, atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(problems)
def test_backfill_leaves_no_usable_capacity_on_bottlenecked_links(p: AllocProblem) -> None:
    x = appaware(p)
    e = entries(p.routing)
    bott = bottlenecked_links(e, p.capacity, p.demand_bps(), None)
    load = e.link_sum(np.where(e.has_link, x, 0.0))
    full = load >= p.capacity * (1 - 1e-6)
    blocked = np.zeros(p.n_flows, bool)
    np.logical_or.at(blocked, e.rows, full[e.cols])
    for lk in np.flatnonzero(bott & ~full):
        fl = e.rows[e.cols == lk]
        movable = fl[(x[fl] > 0) & ~blocked[fl]]
        assert movable.size == 0, f"link {lk} has room but flows {movable} were not backfilled"


def test_given_bottlenecked_links_override_detection() -> None:
    p = problem(star(3, 20 * MBIT), [("h1", "h2"), ("h1", "h3")], sender_state([0.5e6, 1.5e6]))
    np.testing.assert_allclose(appaware(p), [4 * MBIT, 12 * MBIT])  # no bottleneck: demand
    p.bottlenecked = np.zeros(len(p.capacity), bool)
    p.bottlenecked[0] = True  # h1's uplink: (3) splits 20 as 1:3, no backfill needed
    np.testing.assert_allclose(appaware(p), [5 * MBIT, 15 * MBIT])
    p.bottlenecked = np.ones(2, bool)
    with pytest.raises(ValueError, match="bottlenecked"):
        appaware(p)


def test_empty_problem() -> None:
    kinds = np.zeros(3, np.int8)
    p = AllocProblem(sp.csr_matrix((0, 3)), np.ones(3), kinds, FlowState.zeros(0), 1.0)
    for entry in POLICIES.values():
        if entry.kind == "loop":
            d = as_decision(entry.fn(p))
            assert all(x is None or x.shape == (0,) for x in (d.rates, d.classes))


# -- the compiled kernel against the numpy implementation, to the last bit ------------


@settings(max_examples=80, deadline=None)
@given(p=problems, int64=st.booleans(), named=st.one_of(st.none(), st.integers(0, 2**32 - 1)))
def test_kernel_equals_numpy_to_the_bit(p: AllocProblem, int64: bool, named: int | None) -> None:
    if named is not None:  # the caller names the bottlenecked links
        p.bottlenecked = np.random.default_rng(named).random(len(p.capacity)) < 0.5
    if int64:
        p.routing = int64_index(p.routing)
    np.testing.assert_array_equal(appaware(p), appaware_numpy(p))


def test_kernel_equals_numpy_on_the_papers_problems() -> None:
    probs = paper_problems(30.0)
    assert len(probs) >= 60 and max(p.n_flows for p in probs) >= 10
    for p in probs:
        np.testing.assert_array_equal(appaware(p), appaware_numpy(p))


@pytest.mark.parametrize("seed", range(3))
def test_kernel_equals_numpy_on_a_fat_tree_with_many_rounds(seed: int) -> None:
    # 3,000 flows on fat_tree(8): backfill takes several rounds, with links cut in them
    rng = np.random.default_rng(seed)
    topo = fat_tree(8, 20 * MBIT)
    h = topo.hosts
    pairs = [(h[i], h[j]) for i, j in rng.integers(len(h), size=(3000, 2))]
    r = routing_matrix(Router(topo).paths(pairs), len(topo.links))
    state = random_state(rng, 3000, 1.0, 20 * MBIT / 8 / 2)
    p = AllocProblem(r, topo.capacities, topo.kinds, state, 1.0)
    np.testing.assert_array_equal(appaware(p), appaware_numpy(p))


def test_kernel_refuses_inconsistent_inputs() -> None:
    p = problem(star(3, 20 * MBIT), [("h1", "h2"), ("h1", "h3")], sender_state([2e6, 3e6]))
    short = FlowState(*(v[:1] for v in (p.state.ls0, p.state.ls1, p.state.lr0, p.state.lr1,
                                        p.state.sent)))
    with pytest.raises(ValueError, match="ls0: expected 2 values, got 1"):
        appaware(AllocProblem(p.routing, p.capacity, p.link_kind, short, p.dt))
    bad = p.routing.copy()
    bad.indices = bad.indices.copy()
    bad.indices[0] = 99  # a link that does not exist
    with pytest.raises(ValueError, match="outside 0..6"):
        appaware(AllocProblem(bad, p.capacity, p.link_kind, p.state, p.dt))
