"""Tables and plots of experiment runs: throughput and latency per policy and
bandwidth, per-flow rates over time, 001's sweep. Units: Mbit/s = 10^6 bit/s,
latency in seconds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
    ("spread", "spread", "{}"),
    ("goodput_mbps", "goodput Mbit/s", "{:.2f}"),
    ("gain_pct", "vs tcp", "{:+.1f}%"),
    ("latency_s", "latency s", "{:.3g}"),
    ("latency_p50_s", "p50 s", "{:.3g}"),
    ("latency_p99_s", "p99 s", "{:.3g}"),
    ("link_utilization", "util", "{:.3f}"),
    ("optimizer_ms", "opt ms", "{:.3f}"),
    ("dropped_tuples", "dropped", "{:.0f}"),
)

LEGEND = {
    "Mbit/s": "the swept capacity (10^6 bit/s) of the throttled links: host links on an "
              "edge network, internal links on a multi-hop one",
    "tuples/s": "application throughput: tuples/s taken in by the measured operators "
                "(the spec's throughput_at; default the operators without outputs), "
                "after the warm-up; the median over repetitions",
    "spread": "min-max of tuples/s over repetitions (noisy backends, --repeat N)",
    "goodput Mbit/s": "bytes/s the measured operators took in, as Mbit/s (001's unit)",
    "vs tcp": "throughput change against tcp on the same network, bandwidth and placement",
    "latency s": "mean event-time latency: from a tuple's source time to its arrival at "
                 "a measured operator. Sources are open loop: where the offered load "
                 "exceeds what the network carries, queues and latency grow with run length",
    "p50 s / p99 s": "median and 99th percentile of that latency",
    "util": "mean utilisation of the bottleneck links of the tcp run of the same case "
            "(full, >= 95 %, while a crossing flow waits, in most samples), so every policy "
            "is measured on the same links (000 §VI-C)",
    "opt ms": "mean time the policy took per allocation (manager-loop policies only)",
    "dropped": "tuples lost to bounded queues (0 with the papers' unbounded queues)",
}

#: distinguishable styles for many lines: 10 colours x 4 dash patterns, the pattern
#: changing from one line to the next, so lines that coincide stay visible
LINE_STYLES = [{"color": plt.get_cmap("tab10").colors[k % 10],
                "ls": ("-", "--", ":", "-.")[(k + k // 10) % 4]} for k in range(40)]

CASE = ("app", "placement", "network", "bandwidth_mbps")


def aggregate(rows: Sequence[dict]) -> list[dict]:
    """One row per case x policy: medians over repetitions, the throughput's spread,
    and ``gain_pct`` against tcp in the same case."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r.get(k) for k in (*CASE, "policy")), []).append(r)
    out = []
    for reps in groups.values():
        row = dict(reps[0])
        for k, v in reps[0].items():
            vals = [x.get(k) for x in reps]
            if isinstance(v, float | int) and not isinstance(v, bool) and all(
                    isinstance(x, float | int) for x in vals):
                row[k] = float(np.median(vals))
        tps = [x["throughput_tps"] for x in reps]
        row["repeats"] = len(reps)
        row["spread"] = f"{min(tps):.1f}-{max(tps):.1f}" if len(reps) > 1 else None
        out.append(row)
    base = {tuple(r.get(k) for k in CASE): r["throughput_tps"]
            for r in out if r["policy"] == "tcp"}
    for r in out:
        b = base.get(tuple(r.get(k) for k in CASE))
        r["gain_pct"] = 100.0 * (r["throughput_tps"] / b - 1.0) if b else None
    return out


def _fmt(fmt: str, v: object) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "-"
    return fmt.format(v)


def _columns(rows: Sequence[dict]) -> list[tuple[str, str, str]]:
    """The columns that say something for these rows (spread only with repetitions)."""
    return [c for c in COLUMNS if c[0] != "spread" or any(r.get("spread") for r in rows)]


def rich_table(title: str, rows: Sequence[dict]) -> Table:
    rows = aggregate(rows)
    cols = _columns(rows)
    t = Table(title=title)
    for _, head, _ in cols:
        t.add_column(head, justify="right")
    for r in rows:
        t.add_row(*(_fmt(fmt, r.get(key)) for key, _, fmt in cols))
    return t


def add_runs(report: Report, title: str, rows: Sequence[dict], series: dict, slug: str) -> None:
    """The table with its legend, throughput and latency per policy x bandwidth, and
    each flow's rate over time."""
    rows = aggregate(rows)
    cols = _columns(rows)
    report.heading(title)
    report.table([head for _, head, _ in cols],
                 [[_fmt(fmt, r.get(key)) for key, _, fmt in cols] for r in rows],
                 legend={k: v for k, v in LEGEND.items()
                         if k in {h for _, h, _ in cols} or k == "p50 s / p99 s"})
    groups = sorted({(r["network"], r["placement"]) for r in rows})
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    colors = dict(zip(policies, plt.get_cmap("tab10").colors, strict=False))
    for metric, label in (("throughput_tps", "throughput (tuples/s)"),
                          ("latency_s", "event-time latency (s): mean, p99 as a tick")):
        fig, axes = plt.subplots(1, len(groups), figsize=(4.4 * len(groups), 3.6),
                                 squeeze=False, sharey=True)
        for ax, (net, pl) in zip(axes[0], groups, strict=True):
            sub = [r for r in rows if r["network"] == net and r["placement"] == pl]
            bws = sorted({r["bandwidth_mbps"] for r in sub})
            width = 0.8 / max(len(policies), 1)
            for i, pol in enumerate(policies):
                pick = [next((r for r in sub if r["policy"] == pol
                              and r["bandwidth_mbps"] == bw), None) for bw in bws]
                xs = np.arange(len(bws)) + i * width
                vals = [np.nan if r is None or r.get(metric) is None else r[metric] for r in pick]
                ax.bar(xs, vals, width, label=pol, color=colors[pol])
                if metric == "latency_s":
                    p99 = [np.nan if r is None or r.get("latency_p99_s") is None
                           else r["latency_p99_s"] for r in pick]
                    ax.plot(xs, p99, "_", color="black", ms=10, mew=2)
            ax.set_xticks(np.arange(len(bws)) + width * (len(policies) - 1) / 2)
            ax.set_xticklabels([f"{bw:g} Mbit/s" for bw in bws])
            ax.set_title(f"{pl} / {net}")
        axes[0][0].set_ylabel(label)
        axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), title="policy")
        fig.tight_layout()
        report.figure(fig, f"{slug}-{metric}", f"{title}: {label} per policy and bandwidth")
    for (net, pl, bw), per_policy in series.items():
        add_rates(report, f"{slug}-rates-{net}-{pl}-{bw:g}",
                  f"each external flow's rate over time, {pl} on {net} at {bw:g} Mbit/s",
                  per_policy)


def add_rates(report: Report, name: str, caption: str, per_policy: dict[str, Any]) -> None:
    """One panel per policy (shared y-axis), one line per external flow, the legend
    outside the axes; ``per_policy`` maps a policy to a RunRecord."""
    fig, axes = plt.subplots(1, len(per_policy), figsize=(3.2 * len(per_policy) + 1.6, 3.4),
                             squeeze=False, sharey=True)
    handles: dict[str, Any] = {}
    for ax, (pol, rec) in zip(axes[0], per_policy.items(), strict=True):
        k = 0
        for j, fid in enumerate(rec.flow_ids):
            if rec.external[j] and len(rec.times):
                (line,) = ax.plot(rec.times, rec.rates_mbps[:, j], lw=1.6, **LINE_STYLES[
                    k % len(LINE_STYLES)])
                handles.setdefault(fid, line)
                k += 1
        ax.set_title(pol)
        ax.set_xlabel("time (s)")
    axes[0][0].set_ylabel("rate (Mbit/s)")
    fig.legend(handles.values(), handles.keys(), loc="upper left", bbox_to_anchor=(1.0, 0.95),
               ncol=1 + len(handles) // 16, title="flow")
    fig.tight_layout()
    report.figure(fig, name.replace("/", "_"), caption)


def add_sweeps(report: Report, records: Sequence, slug: str) -> None:
    """001 Fig. 4: throughput over the brute-force search of static allocations."""
    fig, axes = plt.subplots(1, len(records), figsize=(4.2 * len(records), 3.4), squeeze=False,
                             sharey=True)
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
