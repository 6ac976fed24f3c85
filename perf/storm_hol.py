"""Head-of-line blocking in one Storm worker (one transfer thread drains all of a
worker's remote sends): 001's fork-join in TP3 (A on w1 sends A->B 8 KB and A->C 4 KB
to w2 from one worker), source at 150 tuples/s (14.7 Mbit/s, under w1's 20 Mbit/s
uplink). After a free phase, a meter holds A->C at 2 Mbit/s (less than its 4.9 Mbit/s);
the script logs every second the kernel-measured rate of both connections, Netty's
pending messages and the sink's joins, for Netty's default write-buffer watermarks
(16/8 MiB) and for small ones (1/0.5 MiB), then for a meter pair in the tuple-size
ratio (A->B 4, A->C 2 Mbit/s: the allocation app-aware makes on a fork).

    flock /tmp/streamband-testbed.lock .venv/bin/python perf/storm_hol.py OUT
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from streamband.loop.reports import app_totals, read_snapshot, worker_reports
from streamband.model.testbed import load_spec
from streamband.procs import clean, leftovers
from streamband.sdn.client import ControllerClient
from streamband.storm.cluster import StormCluster, testbed_spec
from streamband.storm.managed import ManagedTopology
from streamband.storm.profiler import StormProfiler
from streamband.storm.workloads import fork_join, fork_join_placement
from streamband.testbed.network import Testbed

FREE_S, METERED_S = 20, 80
CASES = {  # name: (Netty high/low watermark bytes or None, meters {edge: bps})
    "default-watermark": (None, {"A->C": 2e6}),
    "1MiB-watermark": ((1 << 20, 1 << 19), {"A->C": 2e6}),
    "ratio-meters": (None, {"A->C": 2e6, "A->B": 4e6}),
}


def series(mt: ManagedTopology, client: ControllerClient, meters: dict[str, float],
           seconds: float, phase: str, log: list[dict]) -> None:
    prof = StormProfiler(mt.cluster.work / "profile.json", mt.info["id"], mt.pairs, mt.read,
                         mt.bytes)
    prof.flow_state()
    labels = [p.label.replace("[0]", "") for p in mt.pairs]
    last = app_totals(read_snapshot(mt.cluster.work / "profile.json"), mt.info["id"])
    for s in range(int(seconds)):
        if meters:
            client.put_meters([{"flow": k, "rate_bps": meters[lab]}
                               for k, lab in zip(mt.keys, labels, strict=True) if lab in meters],
                              3.0, replace=True)
        time.sleep(1.0)
        st = prof.flow_state()
        snap = read_snapshot(mt.cluster.work / "profile.json")
        tot = app_totals(snap, mt.info["id"])
        reps = worker_reports(snap, mt.info["id"])
        pend = {lab: reps.get((p.src.host, p.src.port), {}).get("clients", {}).get(
            f"{p.dst.host}:{p.dst.port}", {}).get("pending", 0)
            for p, lab in zip(mt.pairs, labels, strict=True)}
        row = {"phase": phase, "t": s,
               "mbps": {lab: 8 * v / 1e6 for lab, v in zip(labels, st.sent, strict=True)},
               "pending": pend, "joins": tot.get("sink.count", 0) - last.get("sink.count", 0)}
        last = tot
        log.append(row)
        print(json.dumps(row), flush=True)


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "out/storm-hol")
    out.mkdir(parents=True, exist_ok=True)
    clean()
    spec = load_spec({"topology": "star", "hosts": 2, "master": True, "link_mbps": 20})
    log: list[dict] = []
    try:
        with Testbed(spec, log_dir=out) as tb:
            client = ControllerClient(spec.api)
            client.wait_ready(1)
            cluster = StormCluster(testbed_spec(tb.state(), out / "cluster")).start()
            ips = (tb.ip("w1"), tb.ip("w2"))
            for i, (case, (wm, meters)) in enumerate(CASES.items()):
                conf = {"bench.rate": 150, "streamband.placement": fork_join_placement("TP3", ips)}
                if wm:
                    conf["storm.messaging.netty.buffer.high.watermark"] = wm[0]
                    conf["storm.messaging.netty.buffer.low.watermark"] = wm[1]
                name = f"hol{i}"
                cluster.submit(cluster.jar, fork_join()[0].main, name, conf)
                mt = ManagedTopology(tb, cluster, cluster.wait_running(name), *fork_join())
                mt.pairs, mt.keys, mt.bytes = zip(*[
                    (p, k, b) for p, k, b in zip(mt.pairs, mt.keys, mt.bytes, strict=True)
                    if p.label.startswith("A")], strict=True)
                time.sleep(10)
                client.delete_meters()
                series(mt, client, {}, FREE_S, f"{case}/free", log)
                series(mt, client, meters, METERED_S, f"{case}/metered", log)
                client.delete_meters()
                cluster.kill(name)
                time.sleep(5)
                (out / "hol.json").write_text(json.dumps(log, indent=1))
            cluster.stop()
    finally:
        clean()
    print("left:", leftovers())
    for case in CASES:
        for phase in ("free", "metered"):
            rows = [r for r in log if r["phase"] == f"{case}/{phase}"]
            for part, sel in (("first 20 s", rows[:20]), ("last 20 s", rows[-20:])):
                if not sel:
                    continue
                ab = sum(r["mbps"].get("A->B", 0) for r in sel) / len(sel)
                ac = sum(r["mbps"].get("A->C", 0) for r in sel) / len(sel)
                j = sum(r["joins"] for r in sel) / len(sel)
                print(f"{case:18} {phase:8} {part:10} A->B {ab:5.2f} Mbit/s  A->C {ac:5.2f} "
                      f"Mbit/s  joins {j:6.1f}/s")


if __name__ == "__main__":
    main()

