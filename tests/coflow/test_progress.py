"""Progress of the compiled loops: ``progress(t_sim_s, flows_done)`` as the run goes and
at its end, the same results with or without it, and a run stopped by its exception
or by ctrl-C (SIGINT)."""

from __future__ import annotations

import os
import signal
import threading

import numpy as np
import pytest

from conftest import make_workload
from streamband.sim.coflow import fast
from streamband.sim.coflow.run import GBIT, build_fabric, simulate
from streamband.sim.coflow.schedulers.registry import make
from streamband.sim.coflow.trace import MIB, read_trace
from streamband.sim.coflow.workloads import Workload, from_trace

#: (policy, topology): the port-pair loop, the fabric loop, Varys's loop
LOOPS = [("fs", "big_switch"), ("stream", "fat_tree:k=4"), ("varys", "fat_tree:k=4")]


def _workload(n_cof: int = 200, ports: int = 16, seed: int = 1) -> Workload:
    """Coflows of 1..11 flows between random ports, lognormal sizes around 1 MiB,
    arriving over 20 s, and one flow of no bytes (it finishes at its release)."""
    rng = np.random.default_rng(seed)
    flows = []
    for c in range(n_cof):
        for _ in range(rng.integers(1, 12)):
            s, d = rng.choice(ports, 2, replace=False)
            flows.append((c, int(s), int(d), float(MIB * rng.lognormal(0.0, 2.0))))
    flows.append((n_cof - 1, 0, 1, 0.0))
    return make_workload(flows, sorted(rng.uniform(0.0, 20.0, n_cof)), ports)


def _run(wl: Workload, policy: str, topology: str, progress=None, progress_s: float = 0.0):
    """The compiled loop ``simulate`` picks, called directly for ``progress_s``."""
    wl2, fab = build_fabric(wl, topology, 1.0)
    if topology == "big_switch" and fast.bigswitch_supports(wl2, policy):
        return fast.run_bigswitch(wl2, GBIT, policy, progress, progress_s)
    return fast.run_compiled(wl2, fab, make(policy), progress, progress_s)


@pytest.mark.parametrize(("policy", "topology"), LOOPS)
def test_reports_go_forward_and_end_with_every_flow(policy, topology):
    wl = _workload()
    calls: list[tuple[float, int]] = []
    res = _run(wl, policy, topology, lambda t, n: calls.append((t, n)))
    assert len(calls) > 3  # a report every 16 events with progress_s = 0, and the last
    t, n = np.array(calls).T
    assert np.all(np.diff(t) >= 0) and np.all(np.diff(n) >= 0)
    assert calls[-1] == (res.flow_finish.max(), wl.n_flows)
    assert all(isinstance(x, float) and isinstance(k, int) for x, k in calls)


@pytest.mark.parametrize(("policy", "topology"), LOOPS)
def test_results_are_the_same_bit_for_bit_with_or_without_reports(policy, topology):
    wl = _workload()
    with_ = _run(wl, policy, topology, lambda t, n: None)
    without = _run(wl, policy, topology)
    assert with_.flow_finish.tobytes() == without.flow_finish.tobytes()
    assert with_.events == without.events


@pytest.mark.parametrize(("policy", "topology"), [*LOOPS, ("aalo", "fat_tree:k=4")])
def test_simulate_hands_progress_to_the_loop_it_runs(policy, topology):
    wl = _workload()
    calls: list[tuple[float, int]] = []
    simulate(wl, policy, topology, progress=lambda t, n: calls.append((t, n)))
    assert calls and calls[-1][1] == wl.n_flows


def test_the_reference_counts_flows_of_no_bytes_too():
    wl = _workload(n_cof=20)
    calls: list[tuple[float, int]] = []
    simulate(wl, "fs", "big_switch", use_fast=False,
             progress=lambda t, n: calls.append((t, n)))
    assert calls[-1][1] == wl.n_flows


class Stop(Exception):
    pass


@pytest.mark.parametrize(("policy", "topology"), LOOPS)
def test_an_exception_of_progress_stops_the_run(policy, topology):
    wl = _workload()
    seen: list[int] = []

    def stop(t: float, n: int) -> None:
        seen.append(n)
        raise Stop(f"at {t} s")

    with pytest.raises(Stop):
        _run(wl, policy, topology, stop)
    assert seen and seen[0] < wl.n_flows  # at the first report, not at the end


def test_ctrl_c_stops_a_compiled_run_without_progress(trace_path):
    """SIGINT while the loop runs without the GIL and without a callback: the loop
    checks Python's signals, so the handler's exception ends the run."""
    wl = from_trace(read_trace(trace_path).head(200))  # stream: seconds on the big switch

    def interrupted(signum, frame):
        raise Stop("SIGINT")

    old = signal.signal(signal.SIGINT, interrupted)
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    try:
        with pytest.raises(Stop, match="SIGINT"):
            timer.start()
            _run(wl, "stream", "big_switch")
    finally:
        timer.cancel()
        timer.join()
        signal.signal(signal.SIGINT, old)


def test_progress_and_progress_s_are_checked_before_the_run():
    wl = _workload(n_cof=5)
    with pytest.raises(ValueError, match="progress_s"):
        _run(wl, "stream", "fat_tree:k=4", None, -1.0)
    with pytest.raises(TypeError, match="progress: expected a callable"):
        _run(wl, "fs", "big_switch", 3)
