"""001's fork-join on Storm on the testbed: TP1-TP3 under plain TCP and app-aware
meters (000 Alg. 1), REPEATS times, on one cluster; prints each run and the median and
spread of app-aware's gain over TCP (the baseline run in the same script).

Each placement runs one topology: warm-up, then the two policies one after the other on
the same running topology, in alternating order across repeats. The spout runs open loop
at 1.1x the app-aware optimum of the placement's bottleneck link (20 Mbit/s shared by
the tuple sizes that cross it), so TCP's equal split is the limit, not the source.

    flock /tmp/streamband-testbed.lock .venv/bin/python perf/storm_forkjoin.py OUT [REPEATS] [S]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from streamband.model.testbed import load_spec
from streamband.procs import clean, leftovers
from streamband.sdn.client import ControllerClient
from streamband.storm.cluster import StormCluster, testbed_spec, usage
from streamband.storm.managed import ManagedTopology
from streamband.storm.workloads import fork_join, fork_join_placement
from streamband.testbed.network import Testbed

BW = 20e6
BOTTLENECK_KB = {"TP1": 4 + 6, "TP2": 8 + 3, "TP3": 8 + 4}  # w1's uplink, 001 Fig. 1b


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "out/storm-forkjoin")
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 60.0
    out.mkdir(parents=True, exist_ok=True)
    clean()
    spec = load_spec({"topology": "star", "hosts": 2, "master": True, "link_mbps": BW / 1e6})
    rows = []
    try:
        with Testbed(spec, log_dir=out) as tb:
            ControllerClient(spec.api).wait_ready(1)
            cluster = StormCluster(testbed_spec(tb.state(), out / "cluster")).start()
            ips = (tb.ip("w1"), tb.ip("w2"))
            for rep in range(repeats):
                for tp, kb in BOTTLENECK_KB.items():
                    rate = round(1.1 * BW / 8 / (kb * 1024))
                    name = f"fj-{tp.lower()}-{rep}"
                    cluster.submit(cluster.jar, fork_join()[0].main, name, {
                        "bench.rate": rate,
                        "streamband.placement": fork_join_placement(tp, ips)})
                    mt = ManagedTopology(tb, cluster, cluster.wait_running(name), *fork_join())
                    time.sleep(15)
                    order = ("tcp", "appaware") if rep % 2 == 0 else ("appaware", "tcp")
                    for pol in order:
                        r = mt.run(pol, seconds, log=out / f"{name}-{pol}.jsonl")
                        r.update(placement=tp, repeat=rep, rate_tps=rate)
                        r.pop("meters")
                        rows.append(r)
                        print(tp, rep, pol, f"{r['throughput_tps']:.1f} tps",
                              f"latency {r['latency_ms'] or 0:.0f} ms failed {r['failed']:.0f}",
                              flush=True)
                        (out / "runs.json").write_text(json.dumps(rows, indent=1))
                    if rep == 0 and tp == "TP1":
                        use = usage(str(cluster.work))
                        (out / "usage.json").write_text(json.dumps(use, indent=1))
                        for role in sorted({u["role"] for u in use}):
                            us = [u for u in use if u["role"] == role]
                            print(f"  {role:11} x{len(us)}: RSS " + ", ".join(
                                f"{u['rss_mb']:.0f}" for u in us) + " MB; CPU " + ", ".join(
                                f"{u['cpu_s']:.0f}" for u in us) + " s", flush=True)
                    cluster.kill(name)
                    time.sleep(5)
            cluster.stop()
    finally:
        clean()
    print("left:", leftovers())
    print(f"{'placement':10} {'tcp tps':>10} {'appaware tps':>13} {'gain median':>12} "
          f"{'min..max':>16}")
    for tp in BOTTLENECK_KB:
        by = {p: [r["throughput_tps"] for r in rows if r["placement"] == tp and r["policy"] == p]
              for p in ("tcp", "appaware")}
        gains = [a / t - 1 for a, t in zip(by["appaware"], by["tcp"], strict=True) if t]
        if gains:
            print(f"{tp:10} {statistics.median(by['tcp']):10.1f} "
                  f"{statistics.median(by['appaware']):13.1f} {statistics.median(gains):+12.1%} "
                  f"{min(gains):+8.1%}..{max(gains):+.1%}")


if __name__ == "__main__":
    main()

