"""Speed of the coflow simulator: every scheduler on the whole FB2010 trace (526
coflows, 706,397 flows) on the 150-port 1 Gbit/s (2^30 bit/s) big switch.

Per scheduler, in a fresh process (so the peak memory is its own): wall time, CPU
time of the run (the machine is shared: CPU time moves less with the load), events,
events/s, peak RSS, average CCT, and the largest relative CCT difference from the
engine this one replaced (``perf/data/coflow_frozen_big_switch_full.json``, made by
``perf/coflow_reference.py`` from that engine, every run label). Baselines: a plain
time-stepped max-min simulator run in the same script (fixed step, rates re-solved
every step, remaining bytes decremented) on the same trace, the ratio its wall time
over each scheduler's; and CoflowSim's time-stepped DARK (309 s) and FAIR (520 s) on
this machine kind, over each scheduler's CPU time (issue 36's goal: 10x, so 30 s).

    .venv/bin/python perf/coflow_speed.py [--policies a,b] [--baseline-coflows N]
                                          [--step 0.01] [--no-baseline] [--timeout S]
                                          [--coflows N] [--topology T]

``--coflows N`` runs the schedulers on the first N coflows only (how time, events and
memory grow with the trace); they are compared, by label, with
``perf/data/coflow_frozen_big_switch_prefixN.json`` when it exists (100 and 200), and
not compared otherwise.

With a core built with the ``counts`` feature (``rust/coflow_core/src/counts.rs``), each
run's work counts per event are printed too (``STREAMBAND_COUNTS_WINDOW=a,b``: events
a..b only, and the run stops at b).

``--topology fat_tree:k=8`` (any ``parse_topology`` form, 1 Gbit/s links) times the
schedulers on another fabric (``bench paper-004``'s fat-trees); the references and the
time-stepped baseline are the big switch's, so there the CCTs are not compared and the
baseline is not run.

The ratio column needs the baseline on the whole trace (``--baseline-coflows 0``);
by default it runs on the first 60 coflows beside the event-driven fs on them.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from streamband.errors import StreambandError
from streamband.model.fabric import big_switch
from streamband.shared import FB2010_TRACE, shared_dir
from streamband.sim.coflow.engine import path_table
from streamband.sim.coflow.run import GBIT, parse_topology, simulate
from streamband.sim.coflow.sharing import water_fill
from streamband.sim.coflow.trace import read_trace
from streamband.sim.coflow.workloads import from_trace

ROOT = Path(__file__).resolve().parents[1]
TRACE = shared_dir().joinpath(*FB2010_TRACE)  # $STREAMBAND_SHARED, else ../shared
REFERENCE = ROOT / "perf" / "data" / "coflow_frozen_big_switch_full.json"
#: CoflowSim's time-stepped simulators on the whole trace on this machine kind, s
COFLOWSIM = {"DARK": 309.0, "FAIR": 520.0}
BIG = "big_switch"
#: (label, registry name, options)
RUNS = [
    ("fs", "fs", {}),
    ("fs-static", "fs-static", {}),
    ("baraat", "baraat", {}),
    ("aalo", "aalo", {}),
    ("varys", "varys", {}),
    ("stream", "stream", {}),
    ("stream-oracle", "stream-oracle", {}),
    ("stream-oracle (1 s timer)", "stream-oracle", {"starve_s": 1.0}),
]


def time_stepped_fs(wl, port_bps: float, dt: float) -> np.ndarray:
    """Per-coflow CCTs under per-flow max-min fair sharing, stepped by ``dt``: every
    step the rates of the active flows are solved (water-filling over the port pairs)
    and their remaining bytes decremented."""
    fab = big_switch(wl.n_nodes, port_bps)
    pid, links = path_table(wl, fab)
    cap = fab.cap_bps / 8.0
    rel = wl.group_arrival[wl.group]
    order = np.argsort(rel, kind="stable")
    rem = wl.size.astype(float).copy()
    fin = np.full(wl.n_flows, np.nan)
    act = np.zeros(0, np.int64)
    nxt, t = 0, 0.0
    while nxt < len(order) or act.size:
        j = np.searchsorted(rel[order], t, side="right")
        if j > nxt:
            act = np.concatenate([act, order[nxt:j]])
            nxt = j
        if act.size:
            cnt = np.bincount(pid[act], minlength=len(links))
            used = np.flatnonzero(cnt)
            g = water_fill(links[used], cnt[used].astype(float), cap.copy())
            r = np.zeros(len(links))
            r[used] = g
            rem[act] -= r[pid[act]] * dt
            done = rem[act] <= 1e-3
            fin[act[done]] = t + dt
            act = act[~done]
            t += dt
        else:
            t = max(t + dt, float(rel[order[nxt]]))
    out = np.full(wl.n_coflows, -np.inf)
    np.maximum.at(out, wl.coflow, fin)
    return out - wl.coflow_arrival


def _child(i: int, coflows: int = 0, topology: str = BIG) -> None:
    import os
    import resource

    import streamband_coflow_core as core

    label, name, opts = RUNS[i]
    tr = read_trace(TRACE)
    wl = from_trace(tr.head(coflows) if coflows else tr)
    cpu0 = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    try:
        r = simulate(wl, name, topology, 1.0, **opts)
    except ValueError as e:  # a counts build ends a run at its window's last event
        if "STREAMBAND_COUNTS_WINDOW" not in os.environ:
            raise
        print(json.dumps({"stopped": str(e), "counts": core.counts()}))
        return
    s = r.summary()
    print(json.dumps({"wall": r.result.wall_s, "events": r.result.events,
                      "cpu": resource.getrusage(resource.RUSAGE_SELF).ru_utime - cpu0,
                      "avg": s["avg_cct_s"], "cct": [float(x) for x in r.result.cct],
                      "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "counts": core.counts()}))


def _print_counts(console: Console, label: str, counts: list[tuple[str, int]]) -> None:
    """A counts build's work counts per event (the window's if one was set)."""
    win = [c for c in counts if ", events " in c[0]] or counts
    ev = next((v for n, v in win if n.startswith("events")), 0)
    if ev:
        console.print(f"{label}, work per event: " + "; ".join(
            f"{n.split(', events ')[0]} {v / ev:,.1f}" for n, v in win[1:]), highlight=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policies", default=",".join(r[0] for r in RUNS),
                    help="labels to run, comma-separated")
    ap.add_argument("--baseline-coflows", type=int, default=60,
                    help="run the time-stepped baseline on the first N coflows (0: all; "
                         "the whole trace takes over an hour at 10 ms steps)")
    ap.add_argument("--step", type=float, default=0.01, help="time-stepped step, s")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--timeout", type=float, default=None,
                    help="stop a scheduler's run after this many seconds wall (reported as "
                         "not finished)")
    ap.add_argument("--coflows", type=int, default=0,
                    help="run the schedulers on the first N coflows (0: the whole trace)")
    ap.add_argument("--topology", default=BIG,
                    help="fabric, 1 Gbit/s links (e.g. fat_tree:k=8); CCTs are compared "
                         "with the references and the baseline runs on the big switch only")
    a = ap.parse_args()
    try:
        big = parse_topology(a.topology).kind == BIG
    except StreambandError as e:
        ap.error(str(e))
    want = a.policies.split(",")
    path = REFERENCE if not a.coflows else REFERENCE.with_name(
        f"coflow_frozen_big_switch_prefix{a.coflows}.json")
    ref = json.loads(path.read_text()) if path.is_file() else {"cct": {}}
    console = Console(width=160)
    rows = []
    for i, (label, _, _) in enumerate(RUNS):
        if label not in want:
            continue
        t0 = time.perf_counter()
        try:
            p = subprocess.run([sys.executable, __file__, "--child", str(i), str(a.coflows),
                                a.topology],
                               capture_output=True, text=True, timeout=a.timeout)
        except subprocess.TimeoutExpired:
            console.print(f"{label}: not finished after {a.timeout:g} s wall (stopped)",
                          highlight=False)
            continue
        if p.returncode:
            console.print(f"{label}: failed\n{p.stderr[-2000:]}")
            continue
        o = json.loads(p.stdout.strip().splitlines()[-1])
        _print_counts(console, label, o["counts"])
        if "stopped" in o:
            console.print(f"{label}: {o['stopped']}", highlight=False)
            continue
        diff = "-"
        if big and label in ref["cct"]:
            old, new = np.array(ref["cct"][label]), np.array(o["cct"])
            rel = np.abs(new - old) / np.abs(old)
            diff = f"{rel.max():.1e} ({int((rel > 1e-9).sum())} > 1e-9)"
        rows.append((label, o, diff, time.perf_counter() - t0))
        console.print(f"{label}: {o['wall']:.1f} s wall, {o['cpu']:.1f} s CPU, {o['events']} "
                      f"events, peak RSS {o['rss']:.0f} MiB, avg CCT {o['avg']:.3f} s, vs "
                      f"previous engine {diff}", highlight=False)
    base_wall = None
    base_note = ""
    if not a.no_baseline and big:
        tr = read_trace(TRACE)
        n = a.baseline_coflows
        wl = from_trace(tr.head(n) if n else tr)
        t0 = time.perf_counter()
        cct = time_stepped_fs(wl, GBIT, a.step)
        base_wall = time.perf_counter() - t0
        ev = simulate(wl, "fs").result
        base_note = (f"time-stepped fs ({a.step * 1e3:g} ms steps, numpy) on "
                     f"{wl.n_coflows} coflows: {base_wall:.1f} s, avg CCT {cct.mean():.3f} s; "
                     f"event-driven fs on the same: {ev.wall_s:.3f} s, avg CCT "
                     f"{ev.cct.mean():.3f} s (x{base_wall / ev.wall_s:.0f})")
        console.print(base_note, highlight=False)
    span = f"first {a.coflows} coflows" if a.coflows else "whole trace"
    fabric = ("150-port 1 Gbit/s (2^30 bit/s) big switch" if big
              else f"{a.topology}, 1 Gbit/s (2^30 bit/s) links")
    tab = Table(title=f"FB2010, {span}, {fabric}")
    for c in ("scheduler", "events", "wall s", "CPU s", "events/s", "peak RSS MiB", "avg CCT s",
              "vs previous engine (max rel. CCT diff)", "time-stepped / this",
              *(f"CoflowSim {k} {v:g} s / this CPU" for k, v in COFLOWSIM.items())):
        tab.add_column(c, justify="right")
    whole = big and not a.coflows
    for label, o, diff, _ in rows:
        ratio = ("-" if base_wall is None or a.baseline_coflows or a.coflows
                 else f"x{base_wall / o['wall']:.1f}")
        tab.add_row(label, str(o["events"]), f"{o['wall']:.1f}", f"{o['cpu']:.1f}",
                    f"{o['events'] / o['wall']:,.0f}", f"{o['rss']:.0f}", f"{o['avg']:.3f}",
                    diff, ratio,
                    *(f"x{v / o['cpu']:.1f}" if whole else "-" for v in COFLOWSIM.values()))
    console.print(tab)
    if base_note:
        console.print(f"baseline: {base_note}", highlight=False)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        _child(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    else:
        main()
