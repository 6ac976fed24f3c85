"""One self-contained HTML report: headings, paragraphs, tables and PNG plots.

Plots are matplotlib figures saved as PNG beside the report and linked from it.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


@dataclass
class Report:
    """Collects sections, then writes ``report.html`` (and its PNGs) into ``out``."""

    title: str
    out: Path
    parts: list[str] = field(default_factory=list)

    def heading(self, text: str, level: int = 2) -> None:
        self.parts.append(f"<h{level}>{html.escape(text)}</h{level}>")

    def para(self, text: str) -> None:
        self.parts.append(f"<p>{html.escape(text)}</p>")

    def table(self, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        def cell(v: Any) -> str:
            if isinstance(v, float):
                return f"{v:.4g}"
            return html.escape(str(v))

        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in r) + "</tr>" for r in rows)
        self.parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")

    def figure(self, fig: plt.Figure, name: str, caption: str = "") -> Path:
        """Save ``fig`` as ``out/name.png`` and show it in the report."""
        self.out.mkdir(parents=True, exist_ok=True)
        path = self.out / f"{name}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
        img = f'<img src="{path.name}" alt="{html.escape(name)}">'
        self.parts.append(f"<figure>{img}{cap}</figure>")
        return path

    def write(self) -> Path:
        self.out.mkdir(parents=True, exist_ok=True)
        style = (
            "body{font-family:sans-serif;max-width:1100px;margin:2em auto;}"
            "table{border-collapse:collapse;margin:1em 0;}"
            "td,th{border:1px solid #999;padding:3px 8px;text-align:right;}"
            "th{background:#eee;} img{max-width:100%;}"
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
