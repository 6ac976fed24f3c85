"""Exact answers by hand, and the two engines (Python reference, compiled) against
each other and against the engine this one replaced."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import make_workload, units_workload
from streamband.model.fabric import big_switch
from streamband.sim.coflow import fast
from streamband.sim.coflow.engine import Simulation
from streamband.sim.coflow.schedulers.aalo import Aalo
from streamband.sim.coflow.schedulers.fs import FairSharing
from streamband.sim.coflow.schedulers.fs_static import StaticFairSharing
from streamband.sim.coflow.schedulers.registry import NAMES, make
from streamband.sim.coflow.schedulers.stream import Stream

G = 2**30  # 1 Gbit/s
C = G / 8  # bytes/s
MIB = 2**20


def test_two_flows_sharing_a_port():
    wl = make_workload([(0, 0, 1, MIB), (1, 0, 2, 2 * MIB)], [0.0, 0.0], 3)
    r = Simulation(wl, big_switch(3, G), FairSharing()).run()
    assert r.flow_finish[0] == 2 * MIB / C  # both at C/2 until the first ends
    assert r.flow_finish[1] == 2 * MIB / C + MIB / C  # then the second at C


def test_coflow_finishes_at_its_slowest_flow():
    wl = make_workload([(0, 0, 1, MIB), (0, 1, 2, 3 * MIB)], [0.5], 3)
    r = Simulation(wl, big_switch(3, G), FairSharing()).run()
    assert r.coflow_finish[0] == r.flow_finish.max() == 0.5 + 3 * MIB / C
    assert r.cct[0] == 3 * MIB / C


def test_three_port_maxmin_by_hand():
    # egress 2 carries three flows -> C/3 each; ingress 0 leaves 2C/3 to flow 0
    wl = make_workload([(0, 0, 1, MIB), (0, 0, 2, MIB), (0, 1, 2, MIB), (0, 2, 2, MIB)],
                       [0.0], 3)
    sim = Simulation(wl, big_switch(3, G), FairSharing())
    r = sim.share(np.arange(4), None)
    assert r == pytest.approx([2 * C / 3, C / 3, C / 3, C / 3], rel=1e-12)
    sim2 = Simulation(wl, big_switch(3, G), StaticFairSharing())
    r2 = sim2.sched.rates(np.arange(4), 0.0)
    assert r2 == pytest.approx([C / 2, C / 3, C / 3, C / 3], rel=1e-12)  # not work-conserving


def test_strict_priority_starves_until_the_guard_fires():
    # A (40 MiB) is demoted past 10 MiB at t = 10/128 s; B (9 MiB, stays in queue 0)
    # arrives at 0.1 s and takes the whole port; A starves until the guard fires.
    wl = make_workload([(0, 0, 1, 40 * MIB), (1, 0, 1, 9 * MIB)], [0.0, 0.1], 2)
    never = Simulation(wl, big_switch(2, G), Stream(queues=2, alpha=0.0, starve_s=10.0)).run()
    assert never.flow_finish[1] == pytest.approx(0.1 + 9 / 128, rel=1e-12)  # B alone
    assert never.flow_finish[0] == pytest.approx(49 / 128, rel=1e-12)
    guard = Simulation(wl, big_switch(2, G), Stream(queues=2, alpha=0.0, starve_s=0.05)).run()
    # 0.1..0.15 B at C (6.4 MiB), then A raised to queue 0: both at C/2
    assert guard.flow_finish[1] == pytest.approx(0.15 + 2.6 / 64, rel=1e-9)
    assert guard.flow_finish[0] == pytest.approx(49 / 128, rel=1e-9)  # work-conserving


# The compiled core is part of the build (Makefile installs rust/coflow_core): a missing
# crate fails at `from streamband.sim.coflow import fast`, it is never skipped.
@pytest.mark.parametrize("policy,cls", [("fs", FairSharing), ("fs-static", StaticFairSharing)])
def test_bigswitch_loop_matches_python_engine(trace_path, policy, cls):
    from streamband.sim.coflow.trace import read_trace
    from streamband.sim.coflow.workloads import from_trace

    wl = from_trace(read_trace(trace_path).head(30))
    a = Simulation(wl, big_switch(150, G), cls()).run()
    b = fast.run_bigswitch(wl, G, policy)
    np.testing.assert_allclose(a.flow_finish, b.flow_finish, rtol=1e-9)


# Every scheduler, on the cases where the run is well-conditioned at 1e-9 (a 1e-15
# perturbation of the sizes moves the Python engine's own results by less than that).
# Stream with the 10 ms starvation timer on the fat-tree is not: there the timer's
# churn (tens of thousands of re-rated flows) makes the Python engine move by ~5e-9
# under a 1e-15 perturbation, and the engines agree to that conditioning only.
CASES = ["big_switch", "fat_tree:k=4", "2-wave", "tao"]
RUNS = [(p, c, {}) for p in NAMES for c in CASES if not p.startswith("stream")]
RUNS += [(p, c, {"starve_s": 1.0}) for p in ("stream", "stream-oracle") for c in CASES]
RUNS += [(p, c, {}) for p in ("stream", "stream-oracle") for c in ("big_switch", "2-wave", "tao")]


@pytest.mark.parametrize("policy,case,opts", RUNS,
                         ids=[f"{p}-{c}-{'x'.join(o) or 'default'}" for p, c, o in RUNS])
def test_compiled_loop_matches_python_engine(trace_path, policy, case, opts):
    """Same events, same finish times (1e-9 relative) as the Python reference engine,
    for every registered scheduler (004 §IV-B)."""
    from streamband.sim.coflow.run import build_fabric
    from streamband.sim.coflow.trace import read_trace
    from streamband.sim.coflow.workloads import from_trace, many_to_many

    tr = read_trace(trace_path)
    if case == "2-wave":
        wl0, topo = from_trace(tr.head(12), waves=2), "big_switch"
    elif case == "tao":
        wl0, topo = many_to_many(tr.head(4), "tao"), "big_switch"
    else:
        wl0, topo = from_trace(tr.head(12 if case == "big_switch" else 6)), case
    wl, fab = build_fabric(wl0, topo, 1.0)
    a = Simulation(wl, fab, make(policy, **opts)).run()
    b = fast.run_compiled(wl, fab, make(policy, **opts))
    assert a.events == b.events
    np.testing.assert_allclose(b.flow_finish, a.flow_finish, rtol=1e-9)


REFERENCE = Path(__file__).resolve().parents[2] / "perf" / "data" / "coflow_reference_prefix60.json"


@pytest.mark.parametrize("policy", ["fs", "fs-static", "baraat", "aalo", "varys",
                                    "stream-oracle"])
def test_unchanged_rules_match_the_previous_engine(trace_path, policy):
    """The schedulers whose rules did not change give every coflow the CCT of the
    engine this one replaced (kept in perf/data by perf/coflow_reference.py, first 60
    coflows of FB2010 on the big switch; aalo's frozen again once its missed demotions
    were fixed, see the file's ``revisions``); stream-oracle with the old 1 s
    starvation timer is the old ``stream``."""
    from streamband.sim.coflow.run import simulate
    from streamband.sim.coflow.trace import read_trace
    from streamband.sim.coflow.workloads import from_trace

    ref = json.loads(REFERENCE.read_text())
    wl = from_trace(read_trace(trace_path).head(ref["coflows"]))
    opts = {"starve_s": 1.0} if policy == "stream-oracle" else {}
    got = simulate(wl, policy, **opts).result.cct
    old = np.array(ref["cct"]["stream" if policy == "stream-oracle" else policy])
    np.testing.assert_allclose(got, old, rtol=1e-9)


def test_compiled_starvation_guard_matches_by_hand():
    wl = make_workload([(0, 0, 1, 40 * MIB), (1, 0, 1, 9 * MIB)], [0.0, 0.1], 2)
    r = fast.run_compiled(wl, big_switch(2, G), Stream(queues=2, alpha=0.0, starve_s=0.05,
                                                         relay="none"))
    assert r.flow_finish[1] == pytest.approx(0.15 + 2.6 / 64, rel=1e-9)
    assert r.flow_finish[0] == pytest.approx(49 / 128, rel=1e-9)


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_aalo_weighted_sharing_between_queues_by_hand(engine):
    """D-CLAS (Aalo §4, 004's baseline): queues share by weight (K - q), not strictly.
    A (40 MiB) is in queue 1 after 10 MiB; B (9 MiB, t=0.1) in queue 0 gets 2/3 of the
    port, A keeps 1/3 instead of starving; the port stays full."""
    wl = make_workload([(0, 0, 1, 40 * MIB), (1, 0, 1, 9 * MIB)], [0.0, 0.1], 2)
    fab = big_switch(2, G)
    run = (Simulation(wl, fab, Aalo(queues=2)).run if engine == "python"
           else lambda: fast.run_compiled(wl, fab, Aalo(queues=2)))
    r = run()
    assert r.flow_finish[1] == pytest.approx(0.1 + 27 / 256, rel=1e-9)
    assert r.flow_finish[0] == pytest.approx(49 / 128, rel=1e-9)


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_aalo_demotes_at_the_planned_crossing_late_in_a_run(engine):
    """The event planned at a coflow's threshold crossing demotes it (Aalo §4), also at
    t ~ 1000 s where one ulp of time is worth more bytes than the 1e-12 slack: C (0 -> 1,
    queue 1 since 10 MiB) and A (t0: 64 MiB on 0 -> 1, 100 flows on ports of their own).
    In queue 0 A's shared flow gets 2/3 of the port (weights 2:1); once A has sent
    10 MiB it joins C in queue 1, behind C (FIFO), and waits for C. Judged from the
    bytes alone, the crossing event landed short and A kept 2/3 until its flow ended."""
    n, t0 = 100, 1000.3
    sc = C * (t0 + 2.0)
    flows = [(0, 0, 1, sc), (1, 0, 1, 64 * MIB)]
    flows += [(1, 2 + i, 2 + n + i, 128 * MIB) for i in range(n)]
    wl = make_workload(flows, [0.0, t0], 2 + 2 * n)
    fab = big_switch(2 + 2 * n, G)
    r = (Simulation(wl, fab, Aalo(queues=2)).run() if engine == "python"
         else fast.run_compiled(wl, fab, Aalo(queues=2)))
    d = 10 * MIB / (n * C + 2 * C / 3)  # A's time to its crossing
    fin_c = t0 + d + (sc - C * t0 - C * d / 3) / C
    assert r.flow_finish[0] == pytest.approx(fin_c, rel=1e-12)
    assert r.flow_finish[1] == pytest.approx(fin_c + (64 * MIB - 2 * C / 3 * d) / C, rel=1e-12)


VARYS_LATE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from conftest import make_workload
from streamband.model.fabric import big_switch
from streamband.sim.coflow import fast
from streamband.sim.coflow.engine import Simulation
from streamband.sim.coflow.schedulers.varys import Varys
G = 2**30
wl = make_workload([(0, 0, 1, 2**20), (0, 2, 3, 5e-6)], [1000.3], 4)
run = (Simulation(wl, big_switch(4, G), Varys()).run if sys.argv[2] == "python"
       else lambda: fast.run_compiled(wl, big_switch(4, G), Varys()))
print(json.dumps([float(x) for x in run().flow_finish]))
"""


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_varys_completes_a_flow_shorter_than_one_tick_of_the_clock(engine):
    """At t ~ 1000 s a flow 37 fs from its end (5e-6 bytes at 1 Gbit/s) moves the clock
    by less than one ulp: it is due at the event all the same (the engine's rule "not
    after t"), and the coflow's other flow ends at t0 + 1 MiB / C. The compiled varys
    had only the 1e-12 slack and never left t (the whole FB2010 trace at t = 701.6 s);
    run in a child so that a loop fails the test instead of hanging the suite."""
    import subprocess
    import sys

    here = str(Path(__file__).resolve().parent)
    p = subprocess.run([sys.executable, "-c", VARYS_LATE, here, engine], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    fin = json.loads(p.stdout)
    assert fin[1] == 1000.3
    assert fin[0] == pytest.approx(1000.3 + MIB / C, rel=1e-12)


@pytest.mark.parametrize("starving", [8, 6, 3])
def test_units_raised_and_demoted_together_match_python_engine(starving):
    """Stream's starvation mitigation raises every starving unit of a queue at one
    event and demotes them together when the hold ends; the compiled loop then moves
    the queue's level as a whole and only the units that do not follow (engine.rs
    ``relabel``). Coflow A: 8 receivers, 5 senders each, 40 MiB per flow, in queue 1
    after 10 MiB; coflows B1..B6 (t = 0.1 .. 0.631 s): 9.1 MiB flows in queue 0 to
    ``starving`` of A's receivers, which starve, are raised after 10 ms, held 10 ms,
    demoted, and so on until B ends. 8 and 6: most of A's flows move (the level takes
    the new key); 3: fewer than half (the units move one by one). Same events and
    finish times (1e-9) as the Python engine, which moves every unit."""
    R, S = 8, 5
    flows, units = [], [(0, 0)] * R
    for r in range(R):
        flows += [(r, 0, R + s, r, 40 * MIB) for s in range(S)]
    for b in range(6):
        for j in range(starving):
            u = len(units)
            units.append((1 + b, 1 + b))
            flows.append((u, 1 + b, R + S + j, j, 9.1 * MIB))
    # times off the 10 ms grid: no completion within an ulp of a timer (the engines sum
    # rates in different orders, and would split or merge such a pair of events)
    arr = [0.0, 0.1, 0.213, 0.317, 0.419, 0.523, 0.631]
    wl = units_workload(flows, units, arr, [()] * 7, R + S + R, arr)
    fab = big_switch(R + S + R, G)

    def sched():
        return Stream(queues=2, alpha=0.0, starve_s=0.01, relay="none")

    a = Simulation(wl, fab, sched()).run()
    b = fast.run_compiled(wl, fab, sched())
    assert a.events == b.events > 60
    np.testing.assert_allclose(b.flow_finish, a.flow_finish, rtol=1e-9)


def test_stream_matches_main_before_the_relabelling(trace_path):
    """``stream`` (decentralized Information-Relay, 10 ms timer) on the first 100
    coflows of FB2010: every CCT as main at 5962740 gave it (perf/data/coflow_cct_prefix100.json,
    perf/coflow_reference.py), before levels could change key as a whole; 2,649 events."""
    from streamband.sim.coflow.run import simulate
    from streamband.sim.coflow.trace import read_trace
    from streamband.sim.coflow.workloads import from_trace

    ref = json.loads(REFERENCE.with_name("coflow_cct_prefix100.json").read_text())
    wl = from_trace(read_trace(trace_path).head(ref["coflows"]))
    r = simulate(wl, "stream").result
    assert r.events == ref["events"]["stream"]
    np.testing.assert_allclose(r.cct, np.array(ref["cct"]["stream"]), rtol=1e-9)
