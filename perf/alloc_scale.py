"""How long one allocation takes, for ``appaware`` and ``maxmin``.

(a) the papers' apps: the allocation problems the manager loop solves for 001's
    fork-join and 000's Trending Topics and Trucking IoT, captured from simulator runs
    (000 §VI-D reports 6 ms for its optimizer); and (a') 10-40 random flows on a star
    of 8 hosts at 20 Mbit/s; goal <= 1 ms.
(b) 100,000 flows between random hosts of fat_tree(48) (27,648 hosts), states that
    bottleneck most links; goal <= 200 ms.

Baselines, measured here too: ``maxmin_rates_reference`` (progressive filling one
water level at a time, scipy.sparse) and Algorithm 1 with a Python loop over the
bottlenecked links calling the one-link solvers (lines 17-29), then the same
capacity cap and backfill. Run: ``.venv/bin/python bench/alloc_scale.py [--quick]``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

from streamband.alloc import appaware, maxmin
from streamband.alloc.appaware import appaware_reference
from streamband.alloc.base import AllocProblem, FlowState
from streamband.alloc.common import bottlenecked_links, entries
from streamband.alloc.maxmin import maxmin_rates_reference
from streamband.model.routing import Router, routing_matrix
from streamband.model.topology import Topology, fat_tree, star

appaware_loop = appaware_reference


def maxmin_reference(p: AllocProblem) -> np.ndarray:
    return maxmin_rates_reference(p.routing, p.capacity, p.demand_bps())


def random_problem(
    rng: np.random.Generator, topo: Topology, paths: list[list[int]], link_bps: float
) -> AllocProblem:
    """Random 5-metric states (000 §IV-A1); per flow about half a link's worth of
    demand, so host links with 2+ flows are bottlenecked."""
    n, dt = len(paths), 1.0
    scale = link_bps / 8 * dt / 2

    def metric() -> np.ndarray:
        return rng.uniform(0, scale, n) * (rng.random(n) < 0.8)

    state = FlowState(metric(), metric(), metric(), metric(), metric())
    r = routing_matrix(paths, len(topo.links))
    return AllocProblem(r, topo.capacities, topo.kinds, state, dt)


def median_s(
    f: Callable[[AllocProblem], np.ndarray], probs: list[AllocProblem], reps: int
) -> float:
    times = []
    for _ in range(reps):
        for p in probs:
            t0 = time.perf_counter()
            f(p)
            times.append(time.perf_counter() - t0)
    return float(np.median(times))


def timed(f: Callable[[AllocProblem], np.ndarray], p: AllocProblem) -> tuple[np.ndarray, float]:
    t0 = time.perf_counter()
    x = f(p)
    return x, time.perf_counter() - t0


def subset(p: AllocProblem, n: int) -> AllocProblem:
    """The first ``n`` flows of ``p``."""
    st = p.state
    state = FlowState(st.ls0[:n], st.ls1[:n], st.lr0[:n], st.lr1[:n], st.sent[:n])
    return AllocProblem(p.routing[:n], p.capacity, p.link_kind, state, p.dt)


def report(label: str, goal_s: float, probs: list[AllocProblem], reps: int, ref_flows: int) -> None:
    """Median of ``appaware``/``maxmin`` over ``probs``; the baseline runs once on the
    first problem (cut to ``ref_flows`` flows for the slow maxmin reference), and the
    speed-up compares it with the policy on that same problem."""
    b = probs[0]
    nb = bottlenecked_links(entries(b.routing), b.capacity, b.demand_bps(), None)
    print(f"\n{label}: {b.n_flows} flows, {int(nb.sum())}/{len(nb)} links bottlenecked (first)")
    small = ref_flows >= b.n_flows
    pols = (("appaware", appaware, appaware_loop), ("maxmin", maxmin, maxmin_reference))
    for name, fast, slow in pols:
        base = probs if small else [subset(b, ref_flows) if name == "maxmin" else b]
        t = median_s(fast, probs, reps)
        runs = [timed(slow, p) for p in base]
        tb = float(np.median([sec for _, sec in runs]))
        got = [x for x, _ in runs]
        for p, want in zip(base, got, strict=True):  # same answer as the baseline
            np.testing.assert_allclose(fast(p), want, rtol=1e-6, atol=1e-3)
        tf = median_s(fast, base, reps)
        ok = "ok" if t <= goal_s else "OVER GOAL"
        on = f" (both on {base[0].n_flows} flows)" if base[0].n_flows != b.n_flows else ""
        print(
            f"  {name:9s} median {t * 1e3:9.3f} ms (goal {goal_s * 1e3:g} ms, {ok}); "
            f"baseline {tb * 1e3:10.3f} ms, speed-up x{tb / tf:,.1f}{on}"
        )


def paper_problems(duration_s: float) -> list[AllocProblem]:
    """The allocation problems the manager loop really solves for the papers' apps:
    001's fork-join (TP1-TP3) and 000's Trending Topics and Trucking IoT (edge and
    multi-hop, 10-20 Mbit/s), captured from fluid-simulator runs under appaware."""
    from streamband.alloc import appaware
    from streamband.alloc.registry import POLICIES, PolicyEntry
    from streamband.backends.sim import sim_config, simulate
    from streamband.experiments.runner import plan
    from streamband.experiments.spec import load_spec

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
    return probs


def main() -> None:
    quick = "--quick" in sys.argv
    rng = np.random.default_rng(0)

    apps = paper_problems(30.0 if quick else 120.0)
    sizes = sorted({p.n_flows for p in apps})
    report(f"(a) the papers' apps ({len(apps)} allocations, {sizes[0]}-{sizes[-1]} flows)",
           1e-3, apps, reps=3 if quick else 10, ref_flows=max(sizes))

    topo = star(8, 20e6)
    router = Router(topo)
    small = []
    for _ in range(50):
        n = int(rng.integers(10, 41))
        pairs = [(topo.hosts[i], topo.hosts[j]) for i, j in rng.integers(8, size=(n, 2))]
        small.append(random_problem(rng, topo, router.paths(pairs), 20e6))
    report("(a') star(8), 10-40 random flows", 1e-3, small, reps=5 if quick else 40,
           ref_flows=41)

    t0 = time.perf_counter()
    big_topo = fat_tree(48)
    hosts = big_topo.hosts
    n = 20_000 if quick else 100_000
    idx = rng.integers(len(hosts), size=(n, 2))
    paths = Router(big_topo).paths([(hosts[i], hosts[j]) for i, j in idx])
    print(f"\nfat_tree(48): {len(hosts)} hosts, {len(big_topo.links)} links, "
          f"built and routed {n} flows in {time.perf_counter() - t0:.1f} s")
    big = [random_problem(rng, big_topo, paths, 1e9) for _ in range(3)]
    report(f"(b) fat_tree(48), {n} flows", 0.2, big, reps=3, ref_flows=5_000 if quick else 20_000)


if __name__ == "__main__":
    main()
