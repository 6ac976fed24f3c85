"""``streamband testbed selftest``: does the testbed do what 000 §V needs?

On a star with 20 Mbit/s links:

a. iperf3 TCP through a meter at 2, 5, 10, 15 Mbit/s: goodput vs meter rate;
b. link statistics (switch port counters, read by the controller) vs iperf3's
   own byte count: the downlink to the receiver (after the meter, so what was
   delivered), L2 bytes less 66 header bytes per packet (Ethernet 14, IPv4 20,
   TCP 20 + timestamps 12), against the bytes the iperf3 server received;
c. time to install and to modify 1, 10 and 100 meters in one request (p50, p99
   over repeated samples after a warm-up; the paper reports 0.1-10 ms): the
   controller's time from sending the batch to the switch's barrier reply, and the
   manager's HTTP round trip;
d. lease expiry: a manager process holding meters (Δt = 1 s, lease 3 Δt) is
   ``kill -9``\\ ed; time until the controller has removed its meters;
e. clean-up leaves nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from streamband.model.testbed import load_spec
from streamband.procs import clean, leftovers, marked_env
from streamband.sdn.client import ControllerClient
from streamband.testbed.network import Testbed

HEADER_BYTES = 66
IPERF_PORT = 5201


def _iperf(tb: Testbed, src: str, dst: str, seconds: float, omit: int = 1) -> dict[str, Any]:
    out = tb.node(src).cmd(
        f"iperf3 -c {tb.ip(dst)} -p {IPERF_PORT} -t {seconds} -O {omit} -J")
    return json.loads(out)


def meter_goodput(tb: Testbed, client: ControllerClient, rates_mbps: list[float],
                  seconds: float) -> tuple[list[dict[str, float]], list[float]]:
    """(a) and (b): one iperf3 run per meter rate; link-stats error of each run."""
    src, dst = "w1", "w2"
    flow = {"src_ip": tb.ip(src), "dst_ip": tb.ip(dst), "dst_port": IPERF_PORT}
    port = tb.switch_port(dst)  # the downlink to dst: after the meter, as delivered
    meters, errors = [], []
    for rate in rates_mbps:
        client.put_meters([{"flow": flow, "rate_bps": rate * 1e6}], lease_s=600, replace=True)
        before = {p["name"]: p for p in client.ports(fresh=True)}[port]
        res = _iperf(tb, src, dst, seconds, omit=0)
        after = {p["name"]: p for p in client.ports(fresh=True)}[port]
        goodput = res["end"]["sum_received"]["bits_per_second"] / 1e6
        # the iperf3 server's bytes (data connection; its control connection is tiny)
        sent = res["end"]["sum_received"]["bytes"]
        l2 = after["tx_bytes"] - before["tx_bytes"]
        payload = l2 - HEADER_BYTES * (after["tx_packets"] - before["tx_packets"])
        err = abs(payload - sent) / sent
        meters.append({"rate_mbps": rate, "goodput_mbps": goodput,
                       "ratio": goodput / rate, "linkstats_bytes": payload,
                       "iperf3_bytes": sent, "linkstats_rel_error": err})
        errors.append(err)
    client.delete_meters()
    return meters, errors


def meter_update_times(tb: Testbed, client: ControllerClient, counts: list[int],
                       samples: int, warmup: int = 5) -> dict[str, Any]:
    """(c): install and modify ``n`` meters in one request, ``samples`` times each."""
    src, dst = "w1", "w2"
    out: dict[str, Any] = {}
    rng = np.random.default_rng(1)
    for n in counts:
        flows = [{"src_ip": tb.ip(src), "dst_ip": tb.ip(dst), "dst_port": 20000 + i}
                 for i in range(n)]
        install, modify, http = [], [], []
        for k in range(warmup + samples):
            client.delete_meters()
            t0 = time.perf_counter()
            r = client.put_meters([{"flow": f, "rate_bps": 5e6} for f in flows], 60,
                                  replace=True)
            wall = (time.perf_counter() - t0) * 1e3
            if k >= warmup:
                install.append(r["elapsed_ms"])
            rates = rng.uniform(1e6, 19e6, n)
            t0 = time.perf_counter()
            r = client.put_meters([{"flow": f, "rate_bps": float(x)}
                                   for f, x in zip(flows, rates, strict=True)], 60, replace=True)
            wall = (time.perf_counter() - t0) * 1e3
            if k >= warmup:
                modify.append(r["elapsed_ms"])
                http.append(wall)
        client.delete_meters()

        def pct(v: list[float]) -> dict[str, float]:
            return {"p50": float(np.percentile(v, 50)), "p99": float(np.percentile(v, 99)),
                    "samples": len(v)}

        out[str(n)] = {**pct(modify), "install": pct(install), "http_modify": pct(http)}
    return out


def lease_expiry(tb: Testbed, client: ControllerClient, dt: float = 1.0) -> dict[str, Any]:
    """(d): a manager holds two meters, is ``kill -9``\\ ed; seconds until they are gone."""
    flows = [{"src_ip": tb.ip("w1"), "dst_ip": tb.ip("w2"), "dst_port": 30000 + i}
             for i in range(2)]
    cfg = {"api": tb.spec.api, "dt": dt, "flows": flows, "rates_bps": [5e6, 7e6]}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cfg, f)
    mgr = subprocess.Popen([sys.executable, "-m", "streamband.loop.live", f.name],
                           env=marked_env(), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while len(client.meters()) < 2:
            if time.monotonic() > deadline or mgr.poll() is not None:
                raise RuntimeError("lease test: the manager did not install its meters")
            time.sleep(0.05)
        time.sleep(2.5 * dt)  # a few refreshes
        held = len(client.meters())
        os.kill(mgr.pid, signal.SIGKILL)
        killed = time.monotonic()
        mgr.wait()
        while client.meters():
            if time.monotonic() - killed > 10 * dt:
                break
            time.sleep(0.02)
        gone = time.monotonic() - killed
    finally:
        if mgr.poll() is None:
            mgr.kill()
        os.unlink(f.name)
    left = len(client.meters())
    return {"lease_expiry_s": gone, "dt_s": dt, "lease_s": 3 * dt, "held_before_kill": held,
            "left_after": left, "ok": left == 0 and gone <= 3 * dt + 0.5}


def selftest(out: Path | None = None, quick: bool = False) -> dict[str, Any]:
    """Run (a)-(e); returns the report (written to ``out`` as JSON when given)."""
    spec = load_spec({"topology": "star", "hosts": 2, "link_mbps": 20})
    report: dict[str, Any] = {"spec": spec.model_dump(), "time": time.time()}
    clean()
    try:
        with Testbed(spec) as tb:
            client = ControllerClient(spec.api)
            client.wait_ready(1)
            tb.popen("w2", ["iperf3", "-s", "-p", str(IPERF_PORT)],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
            _iperf(tb, "w1", "w2", 1, omit=0)  # warm-up
            meters, errs = meter_goodput(tb, client, [2.0, 5.0, 10.0, 15.0],
                                         4 if quick else 6)
            report["meters"] = meters
            report["linkstats_max_rel_error"] = max(errs)
            report["meter_update_ms"] = meter_update_times(
                tb, client, [1, 10, 100], 20 if quick else 100)
            report["lease"] = lease_expiry(tb, client)
            report["lease_expiry_s"] = report["lease"]["lease_expiry_s"]
    finally:
        clean()
    report["leftovers"] = leftovers()
    m100 = report["meter_update_ms"]["100"]
    report["checks"] = {
        "goodput_within_10pct": all(abs(m["ratio"] - 1) <= 0.10 for m in report["meters"]),
        "linkstats_within_5pct": report["linkstats_max_rel_error"] <= 0.05,
        "meter_update_p99_100_le_10ms": m100["p99"] <= 10.0,
        "lease_expiry_ok": report["lease"]["ok"],
        "clean": not report["leftovers"],
    }
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=1))
    return report
