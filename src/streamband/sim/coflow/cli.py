"""``streamband coflow sim``: run one policy over the trace (issue 3 item 4)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from streamband.sim.coflow.run import parse_topology, simulate
from streamband.sim.coflow.schedulers.registry import NAMES as POLICIES
from streamband.sim.coflow.trace import TraceError, read_trace
from streamband.sim.coflow.workloads import from_trace

app = typer.Typer(help="Coflow scheduling of paper 004 (Stream).", no_args_is_help=True)
console = Console()


def _fail(msg: str) -> None:
    Console(stderr=True).print(f"[red]error:[/red] {msg}", highlight=False)
    raise typer.Exit(2)


@app.callback()
def _main() -> None:
    """Coflow simulator and schedulers of paper 004."""


@app.command()
def sim(
    trace: Path = typer.Option(..., help="coflow-benchmark trace file"),
    policy: str = typer.Option(..., help="|".join(POLICIES)),
    topology: str = typer.Option("big_switch", help="big_switch | fat_tree:k=K"),
    link_gbps: float = typer.Option(1.0, help="link rate, Gbit/s (1 Gbit = 2^30 bit)"),
    queues: int = typer.Option(4, help="priority queues (stream, aalo), 2..8"),
    waves: int = typer.Option(1, help="multi-wave coflows, 1..4 (004 Table 2)"),
    bursty: bool = typer.Option(False, help="every coflow arrives at t=0"),
    json_out: Path | None = typer.Option(None, "--json", help="write the summary as JSON"),
    per_coflow: Path | None = typer.Option(None, help="write id, arrival, finish, CCT as CSV"),
) -> None:
    """Simulate ``policy`` over ``trace`` and print a summary."""
    if policy not in POLICIES:
        _fail(f"--policy: expected one of {', '.join(POLICIES)}, got {policy!r}")
    try:
        parse_topology(topology)
    except ValueError as e:
        _fail(str(e))
    if not 2 <= queues <= 8:
        _fail(f"--queues: expected 2..8, got {queues}")
    if not 1 <= waves <= 4:
        _fail(f"--waves: expected 1..4 (004 Table 2), got {waves}")
    if waves > 1 and bursty:
        _fail("--waves and --bursty: expected one of them, got both")
    if not link_gbps > 0:
        _fail(f"--link-gbps: expected a positive rate, got {link_gbps}")
    try:
        tr = read_trace(trace)
    except TraceError as e:
        _fail(str(e))
    wl = from_trace(tr, waves=waves, bursty=bursty)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                  TextColumn("{task.completed}/{task.total} flows"), TimeElapsedColumn(),
                  console=console, transient=True) as prog:
        task = prog.add_task(f"{policy} on {topology}", total=wl.n_flows)
        run = simulate(wl, policy, topology, link_gbps, queues,
                       progress=lambda t, n: prog.update(task, completed=n))
    s = run.summary()
    tab = Table(title=f"{policy} · {topology} · {link_gbps:g} Gbit/s · {wl.name}")
    tab.add_column("metric")
    tab.add_column("value", justify="right")
    for k in ("coflows", "flows", "avg_cct_s", "p95_cct_s", "mice_avg_cct_s", "events",
              "wall_s"):
        v = s[k]
        tab.add_row(k, f"{v:.4g}" if isinstance(v, float) else str(v))
    for c, v in s["avg_cct_by_category"].items():
        tab.add_row(f"avg CCT cat {c} (s)", "-" if v is None else f"{v:.4g}")
    console.print(tab)
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(s, indent=2) + "\n")
    if per_coflow:
        per_coflow.parent.mkdir(parents=True, exist_ok=True)
        r = run.result
        with per_coflow.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["id", "arrival_s", "finish_s", "cct_s"])
            for i in range(wl.n_coflows):
                w.writerow([int(wl.coflow_id[i]), f"{wl.coflow_arrival[i]:.9g}",
                            f"{r.coflow_finish[i]:.9g}", f"{r.cct[i]:.9g}"])
