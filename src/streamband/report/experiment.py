"""Tables and plots of experiment runs: throughput and latency per policy and
bandwidth, per-flow rates over time."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from rich.table import Table

from streamband.report.html import Report

COLUMNS = (
    ("placement", "placement", "{}"),
    ("network", "network", "{}"),
    ("bandwidth_mbps", "Mbit/s", "{:g}"),
    ("policy", "policy", "{}"),
    ("throughput_tps", "tuples/s", "{:.1f}"),
    ("goodput_mbps", "goodput Mbit/s", "{:.2f}"),
    ("gain_pct", "vs tcp", "{:+.1f}%"),
    ("latency_ms", "latency ms", "{:.0f}"),
    ("link_utilization", "util", "{:.3f}"),
    ("optimizer_ms", "opt ms", "{:.3f}"),
    ("dropped_tuples", "dropped", "{:.0f}"),
)


def with_gains(rows: Sequence[dict]) -> list[dict]:
    """Each row plus ``gain_pct``: its throughput against tcp's in the same case."""
    base = {
        (r["app"], r["placement"], r["network"], r["bandwidth_mbps"]): r["throughput_tps"]
        for r in rows if r["policy"] == "tcp"
    }
    out = []
    for r in rows:
        key = (r["app"], r["placement"], r["network"], r["bandwidth_mbps"])
        b = base.get(key)
        gain = 100.0 * (r["throughput_tps"] / b - 1.0) if b else None
        out.append({**r, "gain_pct": gain})
    return out


def _fmt(fmt: str, v: object) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "-"
    return fmt.format(v)


def rich_table(title: str, rows: Sequence[dict]) -> Table:
    t = Table(title=title)
    for _, head, _ in COLUMNS:
        t.add_column(head, justify="right")
    for r in with_gains(rows):
        t.add_row(*(_fmt(fmt, r.get(key)) for key, _, fmt in COLUMNS))
    return t


def add_runs(report: Report, title: str, rows: Sequence[dict], series: dict, slug: str) -> None:
    """The table, throughput and latency per policy x bandwidth, and flow rates."""
    rows = with_gains(rows)
    report.heading(title)
    report.table(
        [head for _, head, _ in COLUMNS],
        [[_fmt(fmt, r.get(key)) for key, _, fmt in COLUMNS] for r in rows],
    )
    groups = sorted({(r["network"], r["placement"]) for r in rows})
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    for metric, label in (("throughput_tps", "throughput (tuples/s)"),
                          ("latency_ms", "average end-to-end latency (ms)")):
        fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 3.4), squeeze=False)
        for ax, (net, pl) in zip(axes[0], groups, strict=True):
            sub = [r for r in rows if r["network"] == net and r["placement"] == pl]
            bws = sorted({r["bandwidth_mbps"] for r in sub})
            width = 0.8 / max(len(policies), 1)
            for i, pol in enumerate(policies):
                vals = [next((r[metric] for r in sub if r["policy"] == pol
                              and r["bandwidth_mbps"] == bw), np.nan) for bw in bws]
                ax.bar(np.arange(len(bws)) + i * width, vals, width, label=pol)
            ax.set_xticks(np.arange(len(bws)) + width * (len(policies) - 1) / 2)
            ax.set_xticklabels([f"{bw:g} Mbit/s" for bw in bws])
            ax.set_title(f"{pl} / {net}")
            ax.set_ylabel(label)
        axes[0][0].legend(fontsize=8)
        fig.tight_layout()
        report.figure(fig, f"{slug}-{metric}", f"{title}: {label} per policy and bandwidth")
    for (net, pl, bw), per_policy in series.items():
        fig, axes = plt.subplots(1, len(per_policy), figsize=(4.2 * len(per_policy), 3.2),
                                 squeeze=False, sharey=True)
        for ax, (pol, (times, ids, rates, external)) in zip(axes[0], per_policy.items(),
                                                          strict=True):
            for j, fid in enumerate(ids):
                if external[j]:
                    ax.plot(times, rates[:, j], label=fid, lw=1.2)
            ax.set_title(f"{pol}")
            ax.set_xlabel("time (s)")
        axes[0][0].set_ylabel("rate (Mbit/s)")
        axes[0][-1].legend(fontsize=7)
        fig.suptitle(f"external flow rates: {pl} / {net} at {bw:g} Mbit/s", fontsize=10)
        fig.tight_layout()
        report.figure(fig, f"{slug}-rates-{net}-{pl}-{bw:g}".replace("/", "_"),
                      f"per-flow rates over time, {pl} on {net} at {bw:g} Mbit/s")


def add_sweeps(report: Report, records: Sequence, slug: str) -> None:
    """001 Fig. 4: throughput over the brute-force search of static allocations."""
    fig, axes = plt.subplots(1, len(records), figsize=(4.2 * len(records), 3.2), squeeze=False)
    for ax, rec in zip(axes[0], records, strict=True):
        pts = rec.sweep.points
        first = rec.sweep.flows[0]
        xs = [caps.get(first, np.nan) for caps, _ in pts]
        ax.plot(xs, [score for _, score in pts], marker=".", lw=1)
        best = rec.sweep.best_caps_mbps.get(first)
        if best is not None:
            ax.axvline(best, color="grey", ls="--", lw=0.8)
        ax.set_xlabel(f"rate of {first} (Mbit/s)")
        ax.set_title(f"{rec.row['placement']}: {' vs '.join(rec.sweep.flows)}", fontsize=8)
    axes[0][0].set_ylabel("throughput (tuples/s)")
    fig.tight_layout()
    report.figure(fig, f"{slug}-sweep", "001 Fig. 4: the brute-force search, Δb = 0.025 b; "
                  "the dashed line is the best allocation")
