"""004's receiver-driven priorities on real TCP (streamband.testbed.coflow): a coflow
that the receiver demotes past its threshold is served below a fresh one at the
switch. Two coflows into w3 on a 20 Mbit/s star: A (12 MB from w1) starts first and
is demoted once it passes the 3 MB threshold; B (2.5 MB from w2) starts 2 s later and
stays in the top queue. Under Stream B finishes about as fast as alone (1 s at
20 Mbit/s) and the port's counters show A's bytes in the demoted class; under plain
TCP B shares the link with A (about 2 s). Nothing is left running afterwards."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from streamband.control.api_client import ControllerClient
from streamband.experiments.paper004_testbed import LEASE_S, one_run
from streamband.sim.coflow.trace import MIB
from streamband.testbed.clean import leftovers
from streamband.testbed.network import Testbed
from streamband.testbed.spec import load_spec

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the testbed needs root")
SPEC = "star:hosts=3,link_mbps=20,api=127.0.0.1:8193,openflow=127.0.0.1:6665"
A_BYTES, B_BYTES, B_START = 12_000_000, 2_500_000, 2.0
TAU0 = 3_000_000
ALONE_S = B_BYTES * 8 / 20e6  # B alone on the link: 1.0 s


def _plan(mode: str, ip: str, port: int) -> dict:
    return {"mode": mode, "t0": 0.0, "port": port, "receiver_ip": ip, "queues": 2,
            "tau": [TAU0, None], "alpha": 0.5, "unit": MIB * TAU0 / (10 * MIB),
            "starve_s": 30.0, "lease_s": LEASE_S, "class_base": 1, "deadline_s": 40.0,
            "coflows": [{"id": 0, "arrival": 0.0}, {"id": 1, "arrival": B_START}],
            "flows": [{"coflow": 0, "sender": "w1", "bytes": A_BYTES, "start": 0.0},
                      {"coflow": 1, "sender": "w2", "bytes": B_BYTES, "start": B_START}]}


def test_demoted_coflow_is_served_below_a_fresh_one(cleanup, tmp_path):
    t_start = time.monotonic()
    spec = load_spec(SPEC)
    rows = {}
    with Testbed(spec, log_dir=tmp_path / "logs") as tb:
        client = ControllerClient(spec.api)
        client.wait_ready(1)
        port = tb.switch_port("w3")
        # the port's classes exist under a lease, as in the bench (one listed flow)
        client.put_classes([{"flow": {"src_ip": tb.ip("w1"), "dst_ip": tb.ip("w3"),
                                      "dst_port": 9}, "cls": 0, "port": port}], lease_s=60)
        for i, mode in enumerate(("stream", "tcp")):
            rows[mode] = one_run(tb, client, port, "w3", _plan(mode, tb.ip("w3"), 7200 + i),
                                 tmp_path / mode, np.zeros(2, int))
        running = [p.args for p in tb.procs if p.poll() is None]
        assert running == [], running  # every receiver and sender ended on its own
    st, tcp = rows["stream"], rows["tcp"]
    print(f"\nB's CCT stream {st['cct_s'][1]:.2f} s, tcp {tcp['cct_s'][1]:.2f} s (alone "
          f"{ALONE_S:.1f} s); class bytes stream {st['class_bytes']}, tcp "
          f"{tcp['class_bytes']}; decisions {st['decisions']}; "
          f"{time.monotonic() - t_start:.0f} s")
    for r in (st, tcp):
        assert r["complete"], r["errors"]
    # the receiver demoted A (queue 1), never B
    assert [d[1:] for d in st["decisions"]] == [[0, 1]], st["decisions"]
    assert st["decisions"][0][0] < B_START  # A passed 3 MB before B came
    # the switch served the decision: A's later bytes in class 2, B's in class 1
    cb = st["class_bytes"]
    assert cb[2] > 0.5 * (A_BYTES - TAU0), cb
    assert B_BYTES < cb[1] < B_BYTES + 1.5 * TAU0, cb
    assert tcp["class_bytes"][7] > 0.99 * (A_BYTES + B_BYTES), tcp["class_bytes"]
    # B ahead of A: about as fast as alone under Stream, sharing under TCP
    assert st["cct_s"][1] < 1.5 * ALONE_S, st["cct_s"]
    assert tcp["cct_s"][1] > 1.3 * st["cct_s"][1], (tcp["cct_s"], st["cct_s"])
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
