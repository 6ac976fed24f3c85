"""Issue 3 performance goal: the whole FB2010 trace on the big switch under fs and
fs-static, wall time, events/s and peak memory; the baseline is the Python event
engine (same model, no compiled loop) on a prefix, extrapolated per flow."""

from __future__ import annotations

import resource
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from streamband.sim.coflow.run import simulate
from streamband.sim.coflow.trace import read_trace
from streamband.sim.coflow.workloads import from_trace

TRACE = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "FB2010-1Hr-150-0.txt"


def main(repeats: int = 2, prefix: int = 150) -> None:
    tr = read_trace(TRACE)
    wl = from_trace(tr)
    tab = Table(title="coflow simulator speed, FB2010 on the 150-port big switch")
    for c in ("policy", "engine", "flows", "events", "wall s (best)", "events/s",
              "peak RSS MiB", "speed-up"):
        tab.add_column(c)
    for pol in ("fs", "fs-static"):
        walls = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            r = simulate(wl, pol)
            walls.append(time.perf_counter() - t0)
        small = from_trace(tr.head(prefix))
        t0 = time.perf_counter()
        b = simulate(small, pol, use_fast=False)
        base = (time.perf_counter() - t0) * wl.n_flows / small.n_flows
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        w = min(walls)
        tab.add_row(pol, "compiled", str(wl.n_flows), str(r.result.events), f"{w:.2f}",
                    f"{r.result.events / w:.0f}", f"{rss:.0f}", f"x{base / w:.0f}")
        tab.add_row(pol, f"python, {prefix} coflows, extrapolated", str(small.n_flows),
                    str(b.result.events), f"{base:.1f}", "", "", "x1")
    Console().print(tab)


if __name__ == "__main__":
    main()
