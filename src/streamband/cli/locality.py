"""``streamband locality``: the experiments of 003 from the command line.

``streamband locality bench --workload synthetic|flights [--parallelism N]
[--locality P] [--padding BYTES] [--period 7d] [--json OUT]``
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from streamband.cli.command import App, number, out_file
from streamband.errors import OptionError
from streamband.locality.criteria import SPAN_H, flights_result, synthetic_result
from streamband.locality.evaluation import POLICIES_SYN

app = App(help="Locality-aware key routing (paper 003).", no_args_is_help=True)
console = Console()


@app.callback()
def _group() -> None:
    """Locality-aware key routing (paper 003)."""

def parse_period(text: str) -> float:
    """'7d', '12h', '90m', '3600s' -> hours."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([dhms])\s*", text)
    if not m or float(m.group(1)) <= 0:
        raise OptionError(f"--period: expected a positive duration like 7d, 12h, 90m, got {text!r}")
    return float(m.group(1)) * {"d": 24.0, "h": 1.0, "m": 1 / 60, "s": 1 / 3600}[m.group(2)]


def validate(workload: str, parallelism: int, locality: float, padding: int, period: str,
             json_out: str | None, bw_gbps: float) -> float:
    if workload not in ("synthetic", "flights"):
        raise OptionError(f"--workload: expected synthetic or flights, got {workload!r}")
    if not 1 <= parallelism <= 64:
        raise OptionError(f"--parallelism: expected an integer in 1..64, got {parallelism}")
    number(locality, "--locality", 0.0, 1.0, unit="(a fraction)")
    if not 0 <= padding <= 10_000_000:
        raise OptionError(f"--padding: expected bytes in 0..10000000, got {padding}")
    number(bw_gbps, "--link-gbps", 0.0, 1e4, low_open=True, unit="Gbit/s")
    if json_out is not None:
        out_file(json_out, "--json")
    hours = parse_period(period)
    if workload == "flights" and not 1 / 60 <= hours <= SPAN_H:
        raise OptionError(f"--period: expected between a minute and the data's span "
                          f"({SPAN_H:g} h, the year 2013), got {period!r}")
    return hours


def show(res: dict[str, Any]) -> None:
    t = Table(title=f"003 locality: {res['workload']}, parallelism {res['parallelism']}")
    t.add_column("routing")
    t.add_column("locality", justify="right")
    t.add_column("throughput (tuples/s)", justify="right")
    for p in res["locality"]:
        t.add_row(p, f"{res['locality'][p]:.3f}", f"{res['throughput_tps'][p]:,.0f}")
    console.print(t)
    console.print(f"1/n = {1 / res['parallelism']:.3f}; imbalance after reconfiguration "
                  f"(max) = {res['imbalance_after_reconfig_max']:.3f}")
    if "criteria" in res:
        c = Table(title="restated flights criteria (method: 003's reset; extension: "
                        f"statistics x{res['extension']['decay']:g} per reconfiguration)")
        for col in ("figure", "measured", "needs", "holds"):
            c.add_column(col)
        for k, (v, need) in res["criteria"].items():
            ok = v >= need if k.endswith("over_hash") else v <= need
            c.add_row(k, f"{v:.3f}", (">= " if k.endswith("over_hash") else "<= ") + f"{need:g}",
                      "yes" if ok else "[bold red]NO[/]")
        for part in ("method", "extension"):
            c.add_row(f"{part}: weekly imbalance below hash's every week",
                      str(res[part]["imbalance_below_hash_every_week"]), "True",
                      "yes" if res[part]["imbalance_below_hash_every_week"] else
                      "[bold red]NO[/]")
        console.print(c)


@app.command()
def bench(
    workload: str = typer.Option("synthetic", help="synthetic or flights"),
    parallelism: int = typer.Option(6, help="instances per operator = servers"),
    locality: float = typer.Option(0.6, help="synthetic: share of tuples with i = j"),
    padding: int = typer.Option(4096, help="bytes of padding per tuple"),
    period: str = typer.Option("7d", help="flights: re-partitioning period (7d, 12h, ...)"),
    bw_gbps: float = typer.Option(1.0, "--link-gbps",
                                  help="server link bandwidth, Gbit/s (10^9 bit/s)"),
    json_out: str | None = typer.Option(None, "--json", metavar="PATH",
                                        help="write the results here"),
) -> None:
    """Run one experiment of 003 §4 and print locality and throughput per routing."""
    period_h = validate(workload, parallelism, locality, padding, period, json_out, bw_gbps)
    bw = bw_gbps * 1e9
    if workload == "synthetic":
        res = synthetic_result(parallelism, locality, padding, bw)
    else:
        res = flights_result(parallelism, period_h, padding, bw)
    show(res)
    if json_out is not None:
        Path(json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(json_out).write_text(json.dumps(res, indent=2, default=float) + "\n")
        console.print(f"wrote {json_out}")


__all__ = ["app", "POLICIES_SYN"]
