"""004 §III-C/D rules of ``stream`` by hand: Information-Relay through shared senders
only and after the information delay, Child-to-Parent counted once, Weighted-Priority,
in both engines (Python reference and compiled).

All cases: K = 2 queues (tau_0 = 10 MiB), alpha = 0 (the limit is tau_0), beta = 1,
1 Gbit/s = 2^30 bit/s ports (128 MiB/s), starvation timer 1 s (out of the way)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import units_workload
from streamband.model.fabric import big_switch
from streamband.sim.coflow import fast
from streamband.sim.coflow.engine import Simulation
from streamband.sim.coflow.schedulers.registry import make
from streamband.sim.coflow.schedulers.stream import wp_weight

MIB = 2**20
PORT = 128.0  # MiB/s
ENGINES = ["python", "compiled"]


def run(wl, engine: str, policy: str = "stream", **kw):
    fab = big_switch(wl.n_nodes, 2**30)
    opts = dict(queues=2, alpha=0.0, starve_s=1.0, **kw)
    if engine == "python":
        return Simulation(wl, fab, make(policy, **opts)).run()
    return fast.run_compiled(wl, fab, make(policy, **opts))


def two_receivers():
    """Coflow A: receivers R1 (port 4) and R2 (port 5), 8 MiB each, from S1 (port 0)
    and S2 (port 1): no sender in common; coflow B: 20 MiB from S3 (port 2) into R1's
    port, so R1's queue decides who gets port 4."""
    flows = [(0, 0, 0, 4, 8 * MIB), (1, 0, 1, 5, 8 * MIB), (2, 1, 2, 4, 20 * MIB)]
    return units_workload(flows, [(0, 0), (0, 0), (1, 1)], [0.0, 0.0], [(), ()], 6,
                          [0.0, 0.0])


@pytest.mark.parametrize("engine", ENGINES)
def test_no_shared_sender_no_relay(engine):
    """R1 and R2 share no sender: the decentralized R1 never learns R2's 8 MiB and is
    not demoted (A1 finishes at 8/64 s); with the central view it is demoted when R2
    completes (t = 1/16 s, y = 4 + 8 MiB > 10) and waits behind B."""
    wl = two_receivers()
    dec = run(wl, engine, "stream")
    assert dec.flow_finish[0] == pytest.approx(8 / 64, rel=1e-12)
    orc = run(wl, engine, "stream-oracle")
    t_b = 1 / 16 + 6 / PORT  # B alone on port 4 until its own 10 MiB
    assert orc.flow_finish[0] == pytest.approx(t_b + 4 / 64, rel=1e-12)
    # B: demoted at t_b, then shares with A1 until A1 ends, then alone
    assert orc.flow_finish[2] == pytest.approx(t_b + 4 / 64 + 6 / PORT, rel=1e-12)


def shared_sender():
    """Coflow A: R1 (port 4) and R2 (port 5) both served by S1 (port 0), 16 MiB each;
    B: 40 MiB from S3 (port 2) into port 4; C: 1 MiB on other ports at t = 0.09 s, an
    event at which the receivers decide. Until then every flow gets 64 MiB/s."""
    flows = [(0, 0, 0, 4, 16 * MIB), (1, 0, 0, 5, 16 * MIB), (2, 1, 2, 4, 40 * MIB),
             (3, 2, 3, 6, 1 * MIB)]
    return units_workload(flows, [(0, 0), (0, 0), (1, 1), (2, 2)], [0.0, 0.0, 0.09],
                          [(), (), ()], 7, [0.0, 0.0, 0.09])


@pytest.mark.parametrize("engine", ENGINES)
def test_shared_sender_relays_after_the_delay(engine):
    """Through S1, R1 learns R2's bytes as they were one information delay earlier.
    With no delay R1 is demoted at C's arrival (t = 0.09: 5.76 + 5.76 MiB > 10); with
    a 50 ms delay it only sees 2.56 MiB of R2 then and is demoted later, when its own
    bytes plus the delayed relay pass 10 MiB; without relay, later still."""
    wl = shared_sender()
    now = run(wl, engine, "stream", info_delay_s=0.0)
    late = run(wl, engine, "stream", info_delay_s=0.05)
    orc = run(wl, engine, "stream-oracle")
    none = run(wl, engine, "stream", relay="none")
    # demoted at 0.09 with A2 (both in queue 1): B alone on port 4 and A2 alone on S1
    # until B passes 10 MiB too; then A1, A2, B all share at 64 MiB/s
    np.testing.assert_allclose(now.flow_finish, orc.flow_finish, rtol=1e-12)
    x = 64 * 0.09
    t_b = 0.09 + (10 - x) / PORT
    assert now.flow_finish[1] == pytest.approx(t_b + (16 - 10) / 64, rel=1e-12)
    # 50 ms late: at C's end (t_e) R1 sees R2's bytes of t_e - 0.05 and predicts its
    # crossing from its own rate; it is demoted there (t_d) with 64 t_d MiB of its own
    t_e = 0.09 + 1 / PORT
    t_d = t_e + (10 - 64 * t_e - 64 * (t_e - 0.05)) / 64
    t_b = t_d + (10 - 64 * t_d) / PORT
    assert late.flow_finish[1] == pytest.approx(t_b + (16 - 10) / 64, rel=1e-12)
    # the later the relay, the later R1 leaves queue 0, the sooner A1 finishes
    assert now.flow_finish[0] > late.flow_finish[0] > none.flow_finish[0]


def child_and_parent():
    """A DAG coflow: child sub-coflow (unit 0, group 0) 3 MiB S1 -> port 4; its parent
    (unit 1, group 1, released when the child completes) 8 MiB S1 -> port 5; B (unit 2)
    20 MiB from S2 into port 5 from t = 0.01."""
    flows = [(0, 0, 0, 4, 3 * MIB), (1, 1, 0, 5, 8 * MIB), (2, 2, 1, 5, 20 * MIB)]
    return units_workload(flows, [(0, 0), (0, 1), (1, 2)], [0.0, 0.0, 0.01],
                          [(), (0,), ()], 6, [0.0, 0.01], subid=[2, 1, 1])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("policy", ["stream", "stream-oracle"])
def test_child_to_parent_counts_the_child_once(engine, policy):
    """The child's 3 MiB reach the parent once (CP), not again through the coflow's
    byte count: the parent leaves queue 0 when its own 7 MiB + 3 pass 10 MiB (not at
    4 + 3 + 3). Counted twice, it would finish at 0.1818 s instead of 0.1584 s."""
    wl = child_and_parent()
    r = run(wl, engine, policy, weight="max1")
    t_c = 3 / PORT  # the child completes, the parent is released
    xb = PORT * (t_c - 0.01)  # B alone on port 5 so far
    t_p = t_c + 7 / 64  # parent demoted with 7 MiB of its own
    t_b = t_p + (10 - (xb + 7)) / PORT  # B alone until its 10 MiB, then both in queue 1
    assert r.flow_finish[1] == pytest.approx(t_b + 1 / 64, rel=1e-12)


def test_weighted_priority_forms():
    """Eq. (4) literally gives W < 1 for sub-coflow ids 2..6 at alpha = 0.5 (slower
    demotion of later sub-coflows); the default max(1, .) never goes below 1."""
    m = np.arange(1, 9)
    lit = wp_weight(m, 0.5, "literal")
    assert lit[0] == 1.0 and np.all(lit[1:6] < 1.0) and lit[6] > 1.0
    assert np.all(wp_weight(m, 0.5, "max1") >= 1.0)
    np.testing.assert_allclose(wp_weight(m, 0.5, "max1")[6:], lit[6:])
