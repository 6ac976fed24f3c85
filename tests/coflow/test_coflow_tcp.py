"""004 on real TCP, the parts that need no testbed: the scaled workload, the DSCP
mapping, and the receiver/sender agents over loopback TCP (real sockets, no switch):
every byte arrives, the receiver's decisions are the simulator's rule on the bytes it
counted, and plain TCP mode decides nothing."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from streamband.errors import OptionError
from streamband.experiments.base import Options
from streamband.experiments.paper004_testbed import (
    PORT_PKTS,
    TCP_LEAF_PKTS,
    Setting,
    plan,
    scaled_trace,
    setting,
    workload,
)
from streamband.sdn.priority import CLASSES, SEND_BUFFER_PKTS, PortShape, PriorityError
from streamband.sim.coflow.schedulers.stream import demoted
from streamband.sim.coflow.schedulers.thresholds import thresholds
from streamband.sim.coflow.trace import MIB, read_trace
from streamband.testbed.coflow import HEADER, launch, tos_of


@pytest.fixture
def trace(trace_path):
    return read_trace(trace_path)


def test_scaled_workload_keeps_the_trace_shape(trace):
    st = Setting()
    sc = scaled_trace(trace, st)
    assert len(sc.coflows) == st.coflows and sc.ports == st.senders + 1
    for c, o in zip(sc.coflows, trace.coflows, strict=False):
        assert c.reducers == (st.senders,)  # many-to-one: every receiver on one host
        assert set(c.mappers) == {m % st.senders for m in o.mappers}
        assert c.size_bytes == pytest.approx(min(o.size_bytes, st.cap_mib * MIB))
        assert c.arrival_s == pytest.approx((o.arrival_s - trace.coflows[0].arrival_s)
                                            * st.time_scale)
    wl = workload(trace, st)
    p = plan(wl, st, "stream", 0.0, {f"w{i}": f"10.0.0.{i}" for i in range(1, 9)}, 7100)
    got = np.bincount([f["coflow"] for f in p["flows"]],
                      weights=[f["bytes"] for f in p["flows"]])
    assert got == pytest.approx(wl.coflow_bytes() * st.size_scale, abs=st.senders)
    assert {f["sender"] for f in p["flows"]} <= {f"w{i}" for i in range(1, st.senders + 1)}
    assert p["receiver_ip"] == "10.0.0.7"
    assert p["tau"][:-1] == pytest.approx(list(thresholds(st.queues)[:-1] * st.size_scale))
    assert p["tau"][-1] is None and p["unit"] == pytest.approx(MIB * st.size_scale)


def test_queue_q_is_marked_for_class_base_plus_q():
    # sdn/priority.py's fallback filters: DSCP class selector CSn -> class 7 - n
    for cls in range(8):
        cs = tos_of(cls) >> 5
        assert 7 - cs == cls and tos_of(cls) & 0x1F == 0
    with pytest.raises(ValueError):
        tos_of(8)


def test_port_shapes_fit_the_send_buffer():
    """Stream's eight leaves hold the send buffer less the reserve's (as tcp-fifo's one
    queue), split over the queues a coflow under the cap can reach (0..3 with 1 GiB,
    20 each); tcp's one leaf in class 7 keeps 8 x 8; both trees, with the background's
    reserve, fit the switch's send buffer; a tree that does not is refused before tc is
    asked."""
    st = Setting()
    shapes = {m: PortShape(tuple(d["leaf_pkts"]), d["reserve_bps"], d["reserve_pkts"])
              for m in ("tcp", "stream") for d in [st.shape(m)]}
    assert st.reachable == 4 and replace(st, cap_mib=50.0).reachable == 2
    assert shapes["stream"].leaf_pkts == (20,) * 4 + (1,) * 4
    assert sum(shapes["stream"].leaf_pkts) == PORT_PKTS
    assert shapes["tcp"].leaf_pkts == (1,) * (CLASSES - 1) + (TCP_LEAF_PKTS,)
    assert TCP_LEAF_PKTS == 64
    for sh in shapes.values():
        sh.check("port", st.link_mbps * 1e6)
        assert sh.total_pkts <= SEND_BUFFER_PKTS == 92
        assert st.link_mbps * 1e6 * st.background < sh.reserve_bps < st.link_mbps * 1e6
    with pytest.raises(PriorityError, match="send buffer"):
        PortShape((8,) * 7 + (80,)).check("port", 20e6)
    with pytest.raises(PriorityError, match="reserve_bps"):
        PortShape(reserve_bps=25e6).check("port", 20e6)


@pytest.mark.parametrize(("opts", "words"), [
    (Options(backend="testbed", full_trace=True), "--full-trace"),
    (Options(backend="testbed", seconds=5.0), "--seconds"),
    (Options(backend="testbed", policy="appaware"), "--policy"),
])
def test_bad_options_stop_before_anything(opts, words):
    with pytest.raises(OptionError, match=words):
        setting(opts)


def _loopback(tmp_path: Path, mode: str, wl, st: Setting) -> tuple[dict, dict]:
    """The bench's launch (every agent ready before t0) with processes on 127.0.0.1."""
    ips = {f"w{i}": "127.0.0.1" for i in range(1, st.hosts + 1)}
    p = plan(wl, st, mode, 0.0, ips, 17500 + MODES.index(mode) + int(time.time()) % 400 * 3)
    p = dict(p, deadline_s=60.0, sync=str(tmp_path / f"{mode}.sync"))
    res = tmp_path / f"{mode}.json"
    with (tmp_path / f"{mode}.log").open("w") as log:
        rx, senders = launch(lambda _h, cmd, **kw: subprocess.Popen(cmd, **kw), p, "w7", res,
                             log)
        assert rx.wait(90) == 0
        assert [s.wait(30) for s in senders] == [0] * len(senders)
    return p, json.loads(res.read_text())


MODES = ("stream", "tcp", "stream-rto")


def test_agents_over_loopback(trace, tmp_path):
    st = replace(Setting(), coflows=10, time_scale=0.02)
    wl = workload(trace, st)
    for mode in MODES:
        p, r = _loopback(tmp_path, mode, wl, st)
        assert r["complete"] and r["errors"] == []
        lag = [v - f["start"] for v, f in zip(r["flow_seen_s"], p["flows"], strict=True)]
        assert max(lag) < 0.5, lag  # every process was up before t0: no flow late
        assert r["bytes"] == [f["bytes"] for f in p["flows"]]
        assert all(v is not None and v >= 0 for v in r["cct_s"])
        # every flow's TCP_INFO, read where tcp_stats expects it: its bytes sent less
        # those sent again are the flow's; stream-rto's sockets run under the 10 ms RTO
        # floor (Linux's: 200 ms)
        stats = {}
        for f in Path(p["sync"]).glob("*.tcp.json"):
            stats.update(json.loads(f.read_text()))
        assert sorted(map(int, stats)) == list(range(len(p["flows"])))
        for i, fl in enumerate(p["flows"]):
            st_i = stats[str(i)]  # bytes_sent counts retransmissions too
            assert st_i["bytes_sent"] - st_i["bytes_retrans"] == HEADER.size + fl["bytes"], st_i
        rto = sorted(v["rto_us"] for v in stats.values())
        assert rto[0] < 100_000 if mode == "stream-rto" else rto[0] >= 200_000, (mode, rto)
        if mode == "tcp":
            assert r["queues"] == []
            continue
        # the decisions follow eq. (2) on the bytes counted: queues never rise (no
        # starvation on an idle loopback), no coflow is demoted further than eq. (2)
        # allows at its whole size (the least limit: one flow seen, none ended), and a
        # coflow smaller than the first threshold is never demoted
        size = np.bincount([f["coflow"] for f in p["flows"]],
                           weights=[f["bytes"] for f in p["flows"]])
        tau = np.array([np.inf if t is None else t for t in p["tau"]])
        final = np.zeros(len(size), int)
        for _, c, q in r["queues"]:
            assert q >= final[c], r["queues"]
            final[c] = q
        most = demoted(np.zeros(len(size), int), size, np.ones(len(size)),
                       np.zeros(len(size)), 1.0, tau, p["alpha"], p["unit"])
        assert (final <= most).all(), (final, most)
        assert (final[size <= tau[0]] == 0).all()
        assert final.max() >= 1, final  # the large coflows were demoted
