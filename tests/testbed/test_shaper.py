"""Per-flow rate classes on an egress port, for real (``PUT /v1/rates``,
:mod:`streamband.sdn.shaper`): two unpaced iperf3 TCP flows into one 20 Mbit/s
downlink, given 15 and 5 Mbit/s, carry about that; when the 5-Mbit/s one ends the other
borrows the link beyond its rate (the shaper lends what a flow leaves unused, a meter
would not); an unlisted flow keeps what TCP would give it. A port holds priority classes
or rate classes, never both; a lease that runs out leaves the link one HTB class again
(fail-open)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import pytest

from streamband.model.testbed import load_spec
from streamband.sdn.client import ControllerClient, ControllerError
from streamband.sdn.priority import link_rate_bps
from streamband.testbed.network import Testbed

from .conftest import expires, listening
from .test_priority import _mean, _tc_classes

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the testbed needs root")
SPEC = "star:hosts=3,link_mbps=20,api=127.0.0.1:8191,openflow=127.0.0.1:6663"
LINK_MBPS, RATES, SECONDS, ALONE_AT = 20.0, {"w1": 15.0, "w2": 5.0}, 14, 6


class Run(NamedTuple):
    intervals: list[dict]  # iperf3's one-second intervals, seconds from the flow's start
    ended: float  # time.monotonic() when its server exited


def _end(run: Run) -> float:
    """When the flow ended, in its own seconds."""
    return run.intervals[-1]["sum"]["end"]


def _iperf(tb: Testbed, runs: list[tuple[str, int, int]]) -> dict[int, Run]:
    """Each ``(source host, port, seconds)`` an iperf3 TCP flow into w3 (a one-shot
    server per port); per port, the server's one-second intervals and the monotonic time
    its server exited (the flow's end: a client started late under load ends late)."""
    servers = {p: tb.popen("w3", ["iperf3", "-s", "-1", "-J", "-p", str(p)],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
               for _, p, _ in runs}
    for p in servers:
        listening(tb, "w3", p)
    for src, p, seconds in runs:
        tb.popen(src, ["iperf3", "-c", tb.ip("w3"), "-p", str(p), "-t", str(seconds)],
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    longest = max(seconds for *_, seconds in runs)

    def wait(s: subprocess.Popen) -> Run:
        out = s.communicate(timeout=longest + 20)[0]
        return Run(json.loads(out)["intervals"], time.monotonic())

    with ThreadPoolExecutor(len(servers)) as pool:  # each exit timed as it happens
        return dict(zip(servers, pool.map(wait, servers.values()), strict=True))


def test_rate_classes_share_by_rate_lend_the_unused_and_expire(cleanup):
    spec = load_spec(SPEC)
    with Testbed(spec) as tb:
        client = ControllerClient(spec.api)
        client.wait_ready(1)
        port = tb.switch_port("w3")  # the bottleneck: the downlink to w3
        flows = {src: {"src_ip": tb.ip(src), "dst_ip": tb.ip("w3"), "dst_port": p}
                 for src, p in (("w1", 5201), ("w2", 5202))}
        r = client.put_rates([{"flow": flows[s], "rate_bps": RATES[s] * 1e6, "port": port}
                              for s in flows], lease_s=60)
        assert r["added"] == 2
        assert {(x["flow"]["dst_port"], x["rate_bps"]) for x in client.rates()} == {
            (5201, 15e6), (5202, 5e6)}
        # a port holds one tree: no priority classes beside the rate classes
        with pytest.raises(ControllerError, match="409"):
            client.put_classes([{"flow": flows["w1"], "cls": 0, "port": port}])
        runs = _iperf(tb, [("w1", 5201, SECONDS), ("w2", 5202, ALONE_AT)])
        w1, w2 = runs[5201], runs[5202]
        # w2's start and end in w1's seconds, from when each server exited (a client
        # started late on a loaded machine shifts w2's whole run)
        w2_end = _end(w1) - (w1.ended - w2.ended)
        w2_start = w2_end - _end(w2)
        lo, hi = max(w2_start, 0.0) + 2.0, w2_end  # both backlogged, past slow start
        assert hi - lo >= 2.0 and _end(w1) - (w2_end + 2.0) >= 2.0, (w2_start, w2_end)
        both = {"w1": _mean(w1.intervals, lo, hi),
                "w2": _mean(w2.intervals, lo - w2_start, hi - w2_start)}
        alone = _mean(w1.intervals, w2_end + 2.0, _end(w1))
        print(f"\nrate classes (Mbit/s) both {both}, w1 alone {alone:.2f} "
              f"(w2 ran {w2_start:.2f}-{w2_end:.2f} s of w1's)")
        # shares of what the port carried, which on a loaded machine is less than C
        carried = sum(both.values())
        for s, rate in RATES.items():  # HTB serves a backlogged leaf its rate
            assert both[s] > 0.85 * carried * rate / LINK_MBPS, both
        assert both["w1"] > 2.0 * both["w2"], both
        # it borrows: alone it takes more than its rate's share, half the rest beyond it
        lent = RATES["w1"] / LINK_MBPS + 0.5 * (1 - RATES["w1"] / LINK_MBPS)
        assert alone > lent * carried, (alone, carried)
        # an unlisted flow beside a listed one keeps what TCP would give it, C / (n + 1),
        # however much the listed rate asks (a shaper that assured it only the rest,
        # C - 18 Mbit/s, would squeeze cross traffic to a tenth of the port)
        assert client.delete_rates(port) == [port]
        client.put_rates([{"flow": flows["w1"], "rate_bps": 18e6, "port": port}], lease_s=60)
        got = {p: _mean(r.intervals, 2.0, ALONE_AT)
               for p, r in _iperf(tb, [("w1", 5201, ALONE_AT), ("w2", 5203, ALONE_AT)]).items()}
        share = got[5203] / (got[5201] + got[5203])
        print(f"unlisted beside an 18-Mbit/s class: {got} Mbit/s, share {share:.2f}")
        assert share > 0.85 / (1 + 1), got  # C / (n + 1) of C, n = 1 listed flow
        # a changed rate is changed in place; a 1-s lease then lapses to plain sharing
        r = client.put_rates([{"flow": flows["w1"], "rate_bps": 9e6, "port": port},
                              {"flow": flows["w2"], "rate_bps": 5e6, "port": port}],
                             lease_s=1.0)
        granted = time.monotonic()
        assert (r["changed"], r["unchanged"], r["added"]) == (1, 0, 1)
        assert len(_tc_classes(port)) == 1 + 1 + 2  # the link, the unlisted, 2 leaves
        expires(client.rates, max(0.0, granted + 1.0 - time.monotonic()))
        assert len(_tc_classes(port)) == 1  # one HTB class: plain sharing
        assert link_rate_bps(port) == pytest.approx(LINK_MBPS * 1e6)
        # nor rate classes on a port that holds priority classes
        client.put_classes([{"flow": flows["w2"], "cls": 1, "port": port}], lease_s=60)
        with pytest.raises(ControllerError, match="409"):
            client.put_rates([{"flow": flows["w1"], "rate_bps": 1e6, "port": port}])
        client.delete_classes()
        for bad in ({"rate_bps": -1.0, "port": port}, {"rate_bps": 1e6},
                    {"rate_bps": 2e13, "port": port}):
            r = client.http.put("/v1/rates", json={"rates": [{"flow": flows["w1"], **bad}]})
            assert r.status_code == 422, (bad, r.text)
        with pytest.raises(ControllerError, match="409"):
            client.put_rates([{"flow": flows["w1"], "rate_bps": 1e6, "port": "eth-none"}])
        assert client.delete_rates() == []
