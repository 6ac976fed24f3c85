"""How long the Swift store of paper 002 takes to start, and what it holds.

The store runs every server of a host as green threads of one process
(``streamband.swift.node``); the baseline, measured here too, is one process per
server and one for each replicator (how Swift's own tools run it): 1 proxy + 3
storage hosts x (object, object replication, container, account servers +
replicator) = 16 Python processes instead of 4. One testbed, ``--repeat`` start-ups
of each (default 3); median and spread of the start-up time (from writing the
rings to every server listening), the store's resident memory and the CPU time
its processes spent starting.

Run as root, alone on the testbed:
``flock /tmp/streamband-testbed.lock .venv/bin/python perf/swift_startup.py``.
"""

from __future__ import annotations

import statistics
import sys
import time

from streamband.procs import clean
from streamband.swift.cluster import SwiftCluster, check_tools
from streamband.swift.spec import load
from streamband.testbed.network import Testbed


def measure(tb: Testbed, spec: object, split: bool) -> dict[str, float]:
    cluster = SwiftCluster(tb, spec, split=split)  # type: ignore[arg-type]
    try:
        cluster.start()
        time.sleep(0.5)
        use = cluster.usage()
        return {"startup_s": cluster.startup_s, "rss_mb": use["rss_mb"],
                "cpu_s": use["cpu_s"], "processes": use["processes"]}
    finally:
        cluster.stop()


def main() -> None:
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
    check_tools()
    spec = load({"testbed": {"api": "127.0.0.1:8191", "openflow": "127.0.0.1:6663"}})
    clean()
    rows: dict[str, list[dict[str, float]]] = {"one process per host": [],
                                               "one process per server": []}
    try:
        with Testbed(spec.testbed) as tb:
            for _ in range(repeat):
                for name, split in (("one process per host", False),
                                    ("one process per server", True)):
                    rows[name].append(measure(tb, spec, split))
    finally:
        clean()
    med = {n: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for n, rs in rows.items()}
    for name, rs in rows.items():
        t = [r["startup_s"] for r in rs]
        print(f"{name:24s} start-up {med[name]['startup_s']:5.2f} s "
              f"(spread {min(t):.2f}-{max(t):.2f}, {len(t)} runs), "
              f"{med[name]['processes']:.0f} processes, {med[name]['rss_mb']:.0f} MB resident, "
              f"{med[name]['cpu_s']:.1f} s CPU")
    base, ours = med["one process per server"], med["one process per host"]
    ratio = {k: base[k] / ours[k] for k in ("startup_s", "rss_mb", "cpu_s")}
    print(f"ratio (per server / per host): start-up x{ratio['startup_s']:.1f}, "
          f"memory x{ratio['rss_mb']:.1f}, CPU x{ratio['cpu_s']:.1f}")


if __name__ == "__main__":
    main()
