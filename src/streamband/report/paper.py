"""A bench's measured figures beside the paper's: one grouped bar chart per bench,
rows more than 2x off the paper hatched."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np

from streamband.report.html import Report


def add_vs_paper(report: Report, name: str, labels: Sequence[str],
                 measured: Sequence[float], paper: Sequence[float], ylabel: str,
                 flagged: Sequence[bool] | None = None, caption: str = "",
                 extra: dict[str, Sequence[float]] | None = None) -> None:
    """Bars of ``measured`` and ``paper`` (and any ``extra`` series, e.g. another
    backend) per row label; a flagged row's measured bar is hatched."""
    series = {"measured": list(measured), **(extra or {}), "paper": list(paper)}
    n = len(labels)
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(5.0, 0.55 * n * len(series) + 2.0), 3.8))
    colors = plt.get_cmap("tab10").colors
    for i, (label, vals) in enumerate(series.items()):
        xs = np.arange(n) + i * width
        bars = ax.bar(xs, [np.nan if v is None else v for v in vals], width, label=label,
                      color="lightgrey" if label == "paper" else colors[i])
        if label == "measured" and flagged is not None:
            for b, f in zip(bars, flagged, strict=True):
                if f:
                    b.set_hatch("//")
                    b.set_edgecolor("black")
    ax.set_xticks(np.arange(n) + width * (len(series) - 1) / 2)
    ax.set_xticklabels(labels, rotation=30 if n > 6 else 0, ha="right" if n > 6 else "center")
    ax.set_ylabel(ylabel)
    ax.axhline(0, color="black", lw=0.6)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    report.figure(fig, name, caption or f"measured vs paper: {ylabel}"
                  + ("; hatched: more than 2x off the paper" if flagged and any(flagged) else ""))
