"""004's receiver-driven priorities on real TCP (streamband.testbed.coflow): a coflow
that the receiver demotes past its threshold is served below a fresh one at the
switch. Two coflows into w3 on a 20 Mbit/s star: A (12 MB from w1) starts first and
is demoted once it passes the 3 MB threshold; B (2.5 MB from w2) starts 2 s later and
stays in the top queue. Under Stream B finishes about as fast as B alone on the same
testbed in the same test (1.0 s at 20 Mbit/s on an idle machine; the link carries less
on a busy one, so the nominal figure is no bar) and the port's counters show A's bytes
in the demoted class; under plain TCP B shares the link with A (1.2-4.1 s in single
runs, so the median of three runs is compared). Nothing is left running afterwards."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from streamband.experiments.paper004_testbed import LEASE_S, one_run
from streamband.model.testbed import load_spec
from streamband.procs import leftovers
from streamband.sdn.client import ControllerClient
from streamband.sim.coflow.trace import MIB
from streamband.testbed.network import Testbed

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the testbed needs root")
SPEC = "star:hosts=3,link_mbps=20,api=127.0.0.1:8193,openflow=127.0.0.1:6665"
A_BYTES, B_BYTES, B_START = 12_000_000, 2_500_000, 2.0
TAU0 = 3_000_000
#: plain TCP runs whose median B's CCT is compared with Stream's: in 20 single runs (session
#: 13) B took 1.23-4.07 s under TCP, against 1.05-1.06 s under Stream in every run (a
#: newcomer in slow start against A's backed-off window sometimes takes most of the link
#: for a while); 4 of those 20 were below the old bar (one run, 1.3x Stream's). The median
#: of three was 1.69-2.98 s in 4 tests
TCP_RUNS = ("tcp#1", "tcp#2", "tcp#3")
TCP_SLOWER = 1.15


def _plan(mode: str, ip: str, port: int) -> dict:
    """A then B; mode ``alone``: B by itself under Stream (its CCT is coflow 0's)."""
    both = mode != "alone"
    coflows = [{"id": 0, "arrival": 0.0}, {"id": 1, "arrival": B_START}]
    flows = [{"coflow": 0, "sender": "w1", "bytes": A_BYTES, "start": 0.0},
             {"coflow": 1, "sender": "w2", "bytes": B_BYTES, "start": B_START}]
    return {"mode": mode if both else "stream", "t0": 0.0, "port": port,
            "receiver_ip": ip, "queues": 2, "tau": [TAU0, None], "alpha": 0.5,
            "unit": MIB * TAU0 / (10 * MIB), "starve_s": 30.0, "lease_s": LEASE_S,
            "class_base": 1, "deadline_s": 40.0,
            "coflows": coflows if both else [{"id": 0, "arrival": 0.0}],
            "flows": flows if both else [dict(flows[1], coflow=0, start=0.0)]}


def test_demoted_coflow_is_served_below_a_fresh_one(cleanup, tmp_path):
    t_start = time.monotonic()
    spec = load_spec(SPEC)
    rows = {}
    with Testbed(spec, log_dir=tmp_path / "logs") as tb:
        client = ControllerClient(spec.api)
        client.wait_ready(1)
        port = tb.switch_port("w3")
        for i, mode in enumerate(("alone", "stream", *TCP_RUNS)):
            # the port's classes exist under a lease, as in the bench (one listed flow),
            # granted again before each run (a run's deadline is within the lease)
            client.put_classes([{"flow": {"src_ip": tb.ip("w1"), "dst_ip": tb.ip("w3"),
                                          "dst_port": 9}, "cls": 0, "port": port}], lease_s=60)
            plan = _plan(mode.split("#")[0], tb.ip("w3"), 7200 + i)
            rows[mode] = one_run(tb, client, port, "w3", plan, tmp_path / mode.replace("#", "-"),
                                 np.zeros(len(plan["coflows"]), int))
        running = [p.args for p in tb.procs if p.poll() is None]
        assert running == [], running  # every receiver and sender ended on its own
    st, tcps = rows["stream"], [rows[m] for m in TCP_RUNS]
    b_tcps = [r["cct_s"][1] for r in tcps]
    b_tcp = float(np.median(b_tcps))
    alone = rows["alone"]["cct_s"][0]
    print(f"\nB's CCT stream {st['cct_s'][1]:.2f} s, tcp "
          f"{', '.join(f'{b:.2f}' for b in b_tcps)} s, alone {alone:.2f} s; "
          f"class bytes stream {st['class_bytes']}, tcp {tcps[0]['class_bytes']}; "
          f"decisions {st['decisions']}; {time.monotonic() - t_start:.0f} s")
    for r in rows.values():
        assert r["complete"], r["errors"]
    # the receiver demoted A (queue 1), never B
    assert [d[1:] for d in st["decisions"]] == [[0, 1]], st["decisions"]
    assert st["decisions"][0][0] < B_START  # A passed 3 MB before B came
    # the switch served the decision: A's later bytes in class 2, B's in class 1
    cb = st["class_bytes"]
    assert cb[2] > 0.5 * (A_BYTES - TAU0), cb
    assert B_BYTES < cb[1] < B_BYTES + 1.5 * TAU0, cb
    for r in tcps:
        assert r["class_bytes"][7] > 0.99 * (A_BYTES + B_BYTES), r["class_bytes"]
    # B ahead of A: under Stream nearer its CCT alone than its CCT sharing under TCP (the
    # median of TCP_RUNS: how plain TCP splits the link in B's first second varies from run
    # to run), both measured here, so a machine that forwards less moves all three alike
    assert st["cct_s"][1] < (alone + b_tcp) / 2, (st["cct_s"], alone, b_tcps)
    assert b_tcp > TCP_SLOWER * st["cct_s"][1], ([r["cct_s"] for r in tcps], st["cct_s"])
    # no agent outlives the run (checked before the fixture's clean; Mininet's own
    # controller shell "mininet:c0" may still be going, the fixture removes it)
    agents = [c for c in map(_cmd, leftovers()) if "streamband.testbed.coflow" in c]
    assert agents == []


def _cmd(item: str) -> str:
    """A leftover with its command line, when it is a process."""
    kind, _, pid = item.partition(" ")
    if kind != "process":
        return item
    try:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ")  # noqa: SIM115
    except OSError:
        return item
    return f"{item}: {cmd.decode(errors='replace')[:200]}"
