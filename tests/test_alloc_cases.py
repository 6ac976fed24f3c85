"""Allocation problems for the alloc tests: random ones (small topologies from
``streamband.model.topology``, random flow sets routed by ``Router``, random flow
states (000 §IV-A1) scaled so that some links are bottlenecked) and the papers' own
(captured from the manager loop in simulator runs of 000's and 001's apps)."""

from __future__ import annotations

from functools import cache

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from streamband.alloc.base import AllocProblem, FlowState
from streamband.model.routing import Router, routing_matrix
from streamband.model.topology import Topology, fat_tree, leaf_spine, star, two_tier

MBIT = 1e6
TOPOLOGIES = ("star", "two_tier", "leaf_spine", "fat_tree4")
REL = 1e-6  # the contract's tolerance on R·x <= C


@cache
def topology(name: str) -> tuple[Topology, Router]:
    topo = {
        "star": lambda: star(6, 20 * MBIT),
        "two_tier": lambda: two_tier(3, 2, 2, 20 * MBIT, 15 * MBIT),
        "leaf_spine": lambda: leaf_spine(3, 2, 2, 20 * MBIT, 10 * MBIT),
        "fat_tree4": lambda: fat_tree(4, 20 * MBIT, 10 * MBIT),
    }[name]()
    return topo, Router(topo)


def random_routing(rng: np.random.Generator, name: str, n_flows: int) -> sp.csr_matrix:
    topo, router = topology(name)
    h = topo.hosts
    pairs = [(h[rng.integers(len(h))], h[rng.integers(len(h))]) for _ in range(n_flows)]
    return routing_matrix(router.paths(pairs, list(range(n_flows))), len(topo.links))


def random_state(rng: np.random.Generator, n: int, dt: float, scale_bytes: float) -> FlowState:
    """Backlogs and volumes in bytes; about a third of each metric is 0."""

    def metric() -> np.ndarray:
        v = rng.uniform(0, scale_bytes, n)
        v[rng.random(n) < 0.3] = 0.0
        return v

    return FlowState(ls0=metric(), ls1=metric(), lr0=metric(), lr1=metric(), sent=metric())


def random_problem(seed: int, name: str, n_flows: int, load: float = 1.0) -> AllocProblem:
    """A problem on topology ``name``; ``load`` scales demands (1: about a link's worth
    per flow at Δt = 1 s, so most host links end up bottlenecked)."""
    rng = np.random.default_rng(seed)
    topo, _ = topology(name)
    dt = float(rng.choice([0.5, 1.0, 2.0]))
    r = random_routing(rng, name, n_flows)
    state = random_state(rng, n_flows, dt, load * 20 * MBIT / 8 * dt / 2)
    weights = rng.integers(1, 9, n_flows).astype(float)
    return AllocProblem(r, topo.capacities, topo.kinds, state, dt, weights)


problems = st.builds(
    random_problem,
    seed=st.integers(0, 2**32 - 1),
    name=st.sampled_from(TOPOLOGIES),
    n_flows=st.integers(1, 25),
    load=st.sampled_from([0.05, 0.5, 1.0, 4.0]),
)


@cache
def paper_problems(duration_s: float) -> tuple[AllocProblem, ...]:
    """The allocation problems the manager loop solves for the papers' apps: 001's
    fork-join (TP1-TP3) and 000's Trending Topics and Trucking IoT (edge and multi-hop,
    10-20 Mbit/s), captured from fluid-simulator runs of ``duration_s`` under appaware
    (one problem per Δt; shared, not to be changed). perf/alloc_scale.py times the
    policies on them too."""
    from streamband.alloc import appaware
    from streamband.alloc.registry import POLICIES, PolicyEntry
    from streamband.backends.sim import sim_config, simulate
    from streamband.experiments.runner import plan
    from streamband.model.spec import load_spec

    probs: list[AllocProblem] = []

    def capture(p: AllocProblem) -> np.ndarray:
        probs.append(p)
        return appaware(p)

    POLICIES["capture"] = PolicyEntry("capture", "loop", capture, "appaware, recorded")
    try:
        for name in ("paper-001", "paper-000-tt", "paper-000-ti"):
            spec = load_spec(name)
            for case in plan(spec):
                simulate(case.flowmap, "capture", sim_config(spec, duration_s))
    finally:
        del POLICIES["capture"]
    return tuple(probs)


def assert_feasible(p: AllocProblem, x: np.ndarray) -> None:
    """The contract of alloc/base.py."""
    has_link = np.diff(p.routing.indptr) > 0
    assert x.shape == (p.n_flows,)
    assert np.all(np.isinf(x[~has_link])), "flows crossing no link must get inf"
    assert np.all(np.isfinite(x[has_link])), "flows crossing links must get a finite rate"
    assert np.all(x[has_link] >= 0)
    load = p.routing.T @ np.where(has_link, x, 0.0)
    assert np.all(load <= p.capacity * (1 + REL)), (load - p.capacity).max()


@settings(max_examples=30, deadline=None)
@given(problems)
def test_random_problems_are_well_formed(p: AllocProblem) -> None:
    assert p.routing.shape == (p.n_flows, len(p.capacity))
    assert set(np.unique(p.routing.data)) <= {1.0}
    d = p.demand_bps()
    assert np.all(d >= 0) and np.all(np.isfinite(d))


def int64_index(r: sp.csr_matrix) -> sp.csr_matrix:
    """``r`` with its indices stored as int64 (scipy keeps int32 when they fit)."""
    out = r.copy()
    out.indptr, out.indices = r.indptr.astype(np.int64), r.indices.astype(np.int64)
    return out
