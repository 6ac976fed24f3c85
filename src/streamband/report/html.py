"""One self-contained HTML report: headings, paragraphs, tables with legends and
matplotlib figures embedded as PNG data (the file can be mailed on its own).

Division of labour in ``report/``: :mod:`.html` writes documents and JSON;
:mod:`.experiment` draws the tables and plots of experiment runs; :mod:`.paper` draws
a bench's measured figures beside the paper's. Nothing here runs an experiment.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

#: readable defaults for every figure of every report
plt.rcParams.update({"font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11,
                     "xtick.labelsize": 10, "ytick.labelsize": 10, "legend.fontsize": 9,
                     "axes.grid": True, "grid.alpha": 0.3, "figure.dpi": 100})


@dataclass
class Report:
    """Collects sections, then writes ``out/report.html`` (figures embedded)."""

    title: str
    out: Path
    parts: list[str] = field(default_factory=list)
    figures: int = 0

    def heading(self, text: str, level: int = 2) -> None:
        self.parts.append(f"<h{level}>{html.escape(text)}</h{level}>")

    def para(self, text: str) -> None:
        self.parts.append(f"<p>{html.escape(text)}</p>")

    def table(self, header: Sequence[str], rows: Sequence[Sequence[Any]],
              legend: dict[str, str] | None = None) -> None:
        """A table; ``legend`` defines its columns (shown under it)."""
        def cell(v: Any) -> str:
            if isinstance(v, bool):
                return "<td>yes</td>" if v else "<td class='no'>NO</td>"
            if isinstance(v, float):
                return f"<td>{'-' if math.isnan(v) else f'{v:.4g}'}</td>"
            if isinstance(v, int):
                return f"<td>{v}</td>"
            text = "-" if v is None else str(v)
            numeric = text.replace(".", "", 1).replace("-", "", 1).replace("+", "", 1)
            cls = "" if numeric.rstrip("%").strip().isdigit() else " class='t'"
            return f"<td{cls}>{html.escape(text)}</td>"

        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(cell(v) for v in r) + "</tr>" for r in rows)
        self.parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        if legend:
            items = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>"
                            for k, v in legend.items())
            self.parts.append(f"<dl class='legend'>{items}</dl>")

    def figure(self, fig: plt.Figure, name: str, caption: str = "") -> None:
        """Embed ``fig`` as PNG data in the report."""
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
        plt.close(fig)
        data = base64.b64encode(buf.getvalue()).decode("ascii")
        cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
        img = f'<img src="data:image/png;base64,{data}" alt="{html.escape(name)}">'
        self.parts.append(f"<figure id='{html.escape(name)}'>{img}{cap}</figure>")
        self.figures += 1

    def write(self) -> Path:
        self.out.mkdir(parents=True, exist_ok=True)
        style = (
            "body{font-family:sans-serif;max-width:1200px;margin:2em auto;line-height:1.4}"
            "table{border-collapse:collapse;margin:1em 0;font-size:0.9em}"
            "td,th{border:1px solid #999;padding:3px 8px;text-align:right;}"
            "th{background:#eee;} td.t{text-align:left} td.no{color:#b00;font-weight:bold}"
            "img{max-width:100%;} figure{margin:1.5em 0}"
            "figcaption{font-size:0.9em;color:#333}"
            "dl.legend{font-size:0.85em;color:#333;display:grid;"
            "grid-template-columns:max-content auto;gap:0 1em}"
            "dl.legend dt{font-weight:bold} dl.legend dd{margin:0}"
        )
        doc = (
            f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(self.title)}"
            f"</title><style>{style}</style></head><body><h1>{html.escape(self.title)}</h1>"
            + "\n".join(self.parts)
            + "</body></html>"
        )
        path = self.out / "report.html"
        path.write_text(doc)
        return path


def write_json(path: Path, payload: dict[str, Any]) -> Path:
    """Write a results file (every printed result is also JSON with its spec)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, default=float) + "\n")
    return path
