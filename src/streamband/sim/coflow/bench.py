"""``streamband bench paper-004``: 004's tables as improvement factors (other scheme's
average CCT / stream's, 004 §IV), with results.json and report.html.

Scale: the Python engine runs the priority schedulers, so the bench replays a prefix
of the trace (``N_COFLOWS``) on fat-tree k=8 (004's "8 pods" setting) to stay within
~15 min on 2 cores; fs / fs-static on the full trace run in the compiled loop.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from rich.console import Console
from rich.table import Table

from streamband.report.html import Report, write_json
from streamband.sim.coflow.run import simulate
from streamband.sim.coflow.trace import read_trace
from streamband.sim.coflow.workloads import CATEGORIES, from_trace, many_to_many

TRACE = Path("../shared/data/FB2010-1Hr-150-0.txt")
N_COFLOWS = 120
N_DAGS = 30
OTHERS = ("fs", "baraat", "aalo")
PAPER = {"fs": 1.77, "baraat": 1.4, "aalo": 0.87, "mice_fs": 5.1}


def _factors(wl, topology: str, gbps: float, queues: int = 4) -> dict:
    runs = {p: simulate(wl, p, topology, gbps, queues).summary() for p in ("stream", *OTHERS)}
    s = runs["stream"]
    out = {"runs": runs}
    for p in OTHERS:
        o = runs[p]
        out[p] = o["avg_cct_s"] / s["avg_cct_s"]
        if o["mice_avg_cct_s"] and s["mice_avg_cct_s"]:
            out[f"mice_{p}"] = o["mice_avg_cct_s"] / s["mice_avg_cct_s"]
        out[f"cat_{p}"] = {c: (o["avg_cct_by_category"][c] / s["avg_cct_by_category"][c]
                               if s["avg_cct_by_category"][c] else None) for c in CATEGORIES}
    return out


def run(out: Path, trace: Path = TRACE, n_coflows: int = N_COFLOWS) -> dict:
    console = Console()
    tr = read_trace(trace)
    sub = tr.head(n_coflows)
    spec = {"trace": str(trace), "n_coflows": n_coflows, "n_dags": N_DAGS, "queues": 4,
            "thresholds": "10 MiB x 10^k", "fabric": "fat-tree k=8 (128 hosts), big switch"}
    res: dict = {"spec": spec, "paper": PAPER}
    wl = from_trace(sub)
    res["single_wave"] = {
        f"{topo} {g}G": _factors(wl, topo, g)
        for topo, g in (("bigswitch", 1), ("fattree:8", 1), ("fattree:8", 10))
    }
    res["multi_wave"] = {w: _factors(from_trace(sub, waves=w), "fattree:8", 1) for w in (2, 3, 4)}
    res["bursty"] = {f"{g}G": _factors(from_trace(sub, bursty=True), "fattree:8", g)
                     for g in (1, 10)}
    res["many_to_many"] = {d: _factors(many_to_many(tr.head(N_DAGS), d), "fattree:8", 1)
                           for d in ("tpcds", "tao")}
    res["queues"] = {}
    fs = simulate(wl, "fs", "fattree:8", 1).summary()["avg_cct_s"]
    for k in range(2, 8):
        st = simulate(wl, "stream", "fattree:8", 1, queues=k).summary()["avg_cct_s"]
        res["queues"][k] = fs / st
    full = {p: simulate(from_trace(tr), p).summary() for p in ("fs", "fs-static")}
    res["full_trace_bigswitch"] = full
    _report(out, res, console)
    return res


def _report(out: Path, res: dict, console: Console) -> None:
    rep = Report("Paper 004 (Stream): improvement factors", out)
    rep.para(f"Spec: {res['spec']}. Factor = other scheme's average CCT / stream's "
             "(>1: stream faster). Paper: x1.77 vs FS, x1.4 vs Baraat, 0.87 vs Aalo, "
             "mice x5.1 vs FS (1G).")
    head = ["scenario", "vs FS", "vs Baraat", "vs Aalo", "mice vs FS"]
    rows = []
    for sect in ("single_wave", "multi_wave", "bursty", "many_to_many"):
        for k, f in res[sect].items():
            rows.append([f"{sect} {k}", f["fs"], f["baraat"], f["aalo"], f.get("mice_fs", "-")])
    rep.table(head, rows)
    tab = Table(title="004: stream's improvement factors")
    for h in head:
        tab.add_column(h)
    for r in rows:
        tab.add_row(*[f"{v:.2f}" if isinstance(v, float) else str(v) for v in r])
    console.print(tab)
    cat = res["single_wave"]["fattree:8 1G"]
    rep.heading("Per category (Table 3A), fat-tree k=8 1G (Fig. 7)")
    rep.table(["scheme", *CATEGORIES], [[p, *[cat[f"cat_{p}"][c] or "-" for c in CATEGORIES]]
                                        for p in OTHERS])
    fig, ax = plt.subplots(figsize=(7, 3.5))
    x = np.arange(len(CATEGORIES))
    for i, p in enumerate(OTHERS):
        ax.bar(x + i * 0.25, [cat[f"cat_{p}"][c] or 0 for c in CATEGORIES], 0.25, label=p)
    ax.axhline(1, color="k", lw=0.8)
    ax.set_xticks(x + 0.25, CATEGORIES)
    ax.set_ylabel("improvement (x)")
    ax.legend()
    rep.figure(fig, "fig7_categories", "Fig. 7-like: improvement per category")
    fig, ax = plt.subplots(figsize=(5, 3))
    ks = sorted(res["queues"])
    ax.plot(ks, [res["queues"][k] for k in ks], "o-")
    ax.set_xlabel("queues K")
    ax.set_ylabel("FS CCT / stream CCT")
    rep.figure(fig, "fig11_queues", "Fig. 11-like: number of queues")
    rep.heading("Full trace, big switch (compiled loop)")
    rep.table(["policy", "avg CCT (s)", "events", "wall (s)"],
              [[p, s["avg_cct_s"], s["events"], s["wall_s"]]
               for p, s in res["full_trace_bigswitch"].items()])
    rep.write()
    write_json(out / "results.json", res)
