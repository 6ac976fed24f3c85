"""Tables and plots of several applications sharing a network (000 §VII, Fig. 13):
each application's throughput, latency and Mbit/s per run, Jain's index across them,
and each application's throughput over time. Units: Mbit/s = 10^6 bit/s, seconds."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from rich.table import Table

from streamband.model.apps import flow_apps
from streamband.report.html import Report

HEADER = ["run", "app", "tuples/s", "latency s", "Mbit/s", "offered Mbit/s", "Jain"]
LEGEND = {
    "tuples/s": "the application's throughput: tuples/s its measured operators complete",
    "latency s": "its mean event-time latency (sources are open loop: with more offered "
                 "than carried, queues and latency grow with the run's length)",
    "Mbit/s": "what its flows carried on average over the measured period (000 §VII's "
              "aggregate throughput of an application)",
    "offered Mbit/s": "what its sources offered",
    "Jain": "Jain's index over the applications' Mbit/s on the link they contend for most, "
            "each normalised by its max-min fair share of it (000 §VII's index when every "
            "application offers at least its share)",
}


def app_rows(rows: Sequence[dict], label: Any = None) -> list[list[Any]]:
    """One line per run x application (``label(row)`` names the run; default: policy)."""
    out = []
    for r in rows:
        name = label(r) if label else r["policy"]
        for i, (app, a) in enumerate(r.get("apps", {}).items()):
            out.append([name, app, a["throughput_tps"], a["latency_s"], a["mbps"],
                        a["offered_mbps"], r.get("jain", math.nan) if i == 0 else None])
    return out


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def rich_app_table(title: str, rows: Sequence[dict], label: Any = None) -> Table:
    t = Table(title=f"{title}: per application")
    for h in HEADER:
        t.add_column(h, justify="right")
    for line in app_rows(rows, label):
        t.add_row(*(_cell(v) for v in line))
    return t


def add_app_table(report: Report, title: str, rows: Sequence[dict], label: Any = None) -> None:
    report.heading(f"{title}: per application", 3)
    report.table(HEADER, [[_cell(v) for v in line] for line in app_rows(rows, label)],
                 legend=LEGEND)


def app_series(rec: Any, names: list[str], window_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Each application's Mbit/s over time from a run's per-flow rates, averaged over
    consecutive windows of ``window_s`` (the manager's Δt): window end times and
    (windows x applications)."""
    apps = flow_apps([f.split("->")[0] for f in rec.flow_ids], names)
    per = np.stack([rec.rates_mbps[:, (apps == i) & rec.external].sum(axis=1)
                    for i in range(len(names))], axis=1) if len(rec.times) else \
        np.zeros((0, len(names)))
    if not len(rec.times):
        return np.zeros(0), per
    edges = np.arange(0.0, rec.times[-1] + window_s - 1e-9, window_s)
    ends, means = [], []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        sel = (rec.times > lo + 1e-9) & (rec.times <= hi + 1e-9)
        if sel.any():
            ends.append(hi)
            means.append(per[sel].mean(axis=0))
    return np.array(ends), np.array(means).reshape(-1, len(names))


def add_app_series(report: Report, name: str, caption: str, records: dict[str, Any],
                   names: list[str], window_s: float) -> None:
    """One panel per run (shared y-axis): each application's Mbit/s per ``window_s``
    (thin) and its running average since the start (thick), 000 Fig. 13's quantity."""
    fig, axes = plt.subplots(1, len(records), figsize=(3.6 * len(records) + 1.6, 3.6),
                             squeeze=False, sharey=True)
    colors = plt.get_cmap("tab10").colors
    for ax, (title, rec) in zip(axes[0], records.items(), strict=True):
        t, per = app_series(rec, names, window_s)
        for i, app in enumerate(names):
            if not len(t):
                continue
            ax.step(t, per[:, i], where="post", color=colors[i % 10], lw=0.8, alpha=0.6)
            run = np.cumsum(per[:, i]) / np.arange(1, len(t) + 1)
            ax.plot(t, run, color=colors[i % 10], lw=2.2, label=app)
        ax.set_title(title)
        ax.set_xlabel("time (s)")
    axes[0][0].set_ylabel("application throughput (Mbit/s)")
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), title="application")
    fig.tight_layout()
    report.figure(fig, name, caption)


def add_app_bars(report: Report, name: str, caption: str, runs: dict[str, dict],
                 key: str, ylabel: str) -> None:
    """Grouped bars: each application's ``key`` (``mbps``, ``throughput_tps``) per run."""
    labels = list(runs)
    apps = list(next(iter(runs.values()))["apps"]) if runs else []
    width = 0.8 / max(len(labels), 1)
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(apps) * max(len(labels), 1) / 2 + 2),
                                    3.6))
    colors = plt.get_cmap("tab10").colors
    for i, lab in enumerate(labels):
        vals = [runs[lab]["apps"][a][key] for a in apps]
        ax.bar(np.arange(len(apps)) + i * width, vals, width, label=lab, color=colors[i % 10])
    ax.set_xticks(np.arange(len(apps)) + width * (len(labels) - 1) / 2)
    ax.set_xticklabels(apps)
    ax.set_ylabel(ylabel)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    report.figure(fig, name, caption)
