"""Issue 3 performance goal, measured honestly.

1. Per policy, the whole FB2010 trace on the 150-port 1G big switch through the
   compiled loops: wall (best of ``repeats``), events, events/s, peak RSS. Each run is
   a fresh subprocess, so the peak memory is that policy's own.
2. Baseline: a straightforward *time-stepped* max-min fair-sharing simulator (fixed
   step ``DT``, rates re-solved every step by water-filling, remaining bytes decremented)
   on the same prefix subset as the event engine's ``fs``; both are timed on that
   subset and the ratio is printed, with the CCT difference the step causes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from streamband.model.fabric import big_switch
from streamband.sim.coflow.engine import path_table
from streamband.sim.coflow.run import GBIT, simulate
from streamband.sim.coflow.sharing import water_fill
from streamband.sim.coflow.trace import read_trace
from streamband.sim.coflow.workloads import from_trace

TRACE = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "FB2010-1Hr-150-0.txt"
DT = 0.01  # s, the time-stepped baseline's step


def time_stepped_fs(wl, port_bps: float, dt: float = DT) -> np.ndarray:
    """Coflow finish times under per-flow max-min fair sharing, stepped by ``dt``."""
    fab = big_switch(wl.n_nodes, port_bps)
    pid, links = path_table(wl, fab)
    cap = fab.cap_bps / 8.0
    rel = wl.group_arrival[wl.group]
    rem = wl.size.astype(float).copy()
    fin = np.full(wl.n_flows, np.nan)
    t = 0.0
    while np.isnan(fin).any():
        act = np.flatnonzero((rel <= t) & np.isnan(fin))
        if act.size:
            cnt = np.bincount(pid[act], minlength=len(links))
            used = np.flatnonzero(cnt)
            g = water_fill(links[used], cnt[used].astype(float), cap.copy())
            r = np.zeros(len(links))
            r[used] = g
            rem[act] -= r[pid[act]] * dt
            fin[act[rem[act] <= 1e-3]] = t + dt
        t += dt
    out = np.full(wl.n_coflows, -np.inf)
    np.maximum.at(out, wl.coflow, fin)
    return out - wl.coflow_arrival


def _child(policy: str) -> None:
    import resource

    wl = from_trace(read_trace(TRACE))
    r = simulate(wl, policy)
    print(json.dumps({"wall": r.result.wall_s, "events": r.result.events,
                      "avg": r.summary()["avg_cct_s"],
                      "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def main(policies: tuple[str, ...] = ("fs", "fs-static", "baraat", "aalo", "stream"),
         repeats: int = 2, prefix: int = 60) -> None:
    tab = Table(title="FB2010 full trace, 150-port 1G big switch, compiled loops")
    for c in ("policy", "flows", "events", "wall s (runs)", "events/s", "peak RSS MiB",
              "avg CCT s"):
        tab.add_column(c)
    for pol in policies:
        outs = []
        for _ in range(repeats if pol != "stream" else 1):
            p = subprocess.run([sys.executable, __file__, "--child", pol], capture_output=True,
                               text=True, check=True)
            outs.append(json.loads(p.stdout.strip().splitlines()[-1]))
        best = min(outs, key=lambda o: o["wall"])
        tab.add_row(pol, "706397", str(best["events"]),
                    " / ".join(f"{o['wall']:.2f}" for o in outs),
                    f"{best['events'] / best['wall']:.0f}", f"{max(o['rss'] for o in outs):.0f}",
                    f"{best['avg']:.3f}")
    Console().print(tab)
    small = from_trace(read_trace(TRACE).head(prefix))
    t0 = time.perf_counter()
    ev = simulate(small, "fs")
    t_ev = time.perf_counter() - t0
    t0 = time.perf_counter()
    cct = time_stepped_fs(small, GBIT)
    t_ts = time.perf_counter() - t0
    base = Table(title=f"baseline: time-stepped fs (step {DT * 1e3:g} ms) vs event engine, "
                       f"first {prefix} coflows ({small.n_flows} flows)")
    for c in ("engine", "wall s", "avg CCT s", "ratio"):
        base.add_column(c)
    base.add_row("time-stepped (numpy)", f"{t_ts:.2f}", f"{cct.mean():.4f}", "x1")
    base.add_row("event-driven (compiled)", f"{t_ev:.3f}", f"{ev.result.cct.mean():.4f}",
                 f"x{t_ts / t_ev:.0f}")
    Console().print(base)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        _child(sys.argv[2])
    else:
        main()
