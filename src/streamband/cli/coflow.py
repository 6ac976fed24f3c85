"""``streamband coflow sim``: one scheduler over the trace, a summary, optional JSON and
per-coflow CSV. Every option, the trace and the output paths are checked before the
simulation starts; a bad one ends it with one line on stderr and exit code 2, and no
file is written. Units: the trace's convention, 1 Gbit/s = 2^30 bit/s, MiB = 2^20
bytes, seconds."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from typer.core import TyperCommand

from streamband.cli.command import App, number, out_file
from streamband.errors import OptionError, nearest
from streamband.sim.coflow.run import TOPOLOGIES, UNITS, parse_topology, simulate
from streamband.sim.coflow.schedulers.registry import NAMES, REGISTRY
from streamband.sim.coflow.schedulers.stream import WEIGHTS
from streamband.sim.coflow.trace import read_trace
from streamband.sim.coflow.workloads import from_trace

app = App(help=f"Coflow scheduling of paper 004 (Stream). Units: {UNITS}.",
          no_args_is_help=True)
console = Console()


#: Click's usage error as Typer uses it (Typer may carry its own copy of Click)
USAGE_ERROR: type[Exception] = next(c for c in typer.BadParameter.__mro__
                                    if c.__name__ == "UsageError")


class OneLineCommand(TyperCommand):
    """A command whose option parsing errors (a value of the wrong type) are one line
    on stderr and exit code 2, like every other bad input."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except USAGE_ERROR as err:
            msg = " ".join(err.format_message().split())  # type: ignore[attr-defined]
            typer.echo(f"error: {msg}", err=True)
            raise typer.Exit(2) from None


@app.callback()
def _main() -> None:
    """Coflow simulator and schedulers of paper 004."""


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it (never half a file)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.absolute().parent)
    try:
        with os.fdopen(fd, "w", newline="") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _weight(value: str, flag: str) -> str:
    if value not in WEIGHTS:
        raise OptionError(f"{flag}: expected one of {', '.join(WEIGHTS)}, got {value!r}")
    return value


def _out(given: str | None, option: str) -> Path | None:
    if given is None:
        return None
    path = out_file(given, option)
    if not path.absolute().parent.is_dir():
        raise OptionError(f"{option}: {path.absolute().parent} does not exist, expected an "
                          f"existing directory for {path.name}")
    return path


@app.command(cls=OneLineCommand)
def sim(
    trace: Path = typer.Option(..., help="coflow-benchmark trace file (FB2010 format)"),
    policy: str = typer.Option(..., help="|".join(NAMES)),
    topology: str = typer.Option("big_switch", help=TOPOLOGIES),
    link_gbps: float = typer.Option(1.0, help="link rate, Gbit/s (1 Gbit/s = 2^30 bit/s), "
                                    "1e-6..1000"),
    queues: int = typer.Option(4, help="priority queues (stream, stream-oracle, aalo), 2..8"),
    waves: int = typer.Option(1, help="multi-wave coflows, 1..4 (004 Table 2)"),
    bursty: bool = typer.Option(False, help="every coflow arrives at t=0"),
    starvation_s: float = typer.Option(None, help="stream: starvation timer, s, (0, 3600] "
                                       "(default 0.01, 004 §IV-A)"),
    info_delay_s: float = typer.Option(None, help="stream: Information-Relay delay, s, "
                                       "[0, 60] (default one round trip of the fabric)"),
    weight: str = typer.Option(None, help="stream: Weighted-Priority, max1 (default) or "
                               "literal (eq. 4 as written)"),
    json_out: str = typer.Option(None, "--json", metavar="PATH",
                                 help="write the summary as JSON to PATH"),
    per_coflow: str = typer.Option(None, metavar="PATH", help="write id, arrival, finish, "
                                   "CCT (s) as CSV to PATH"),
) -> None:
    """Simulate scheduler POLICY over TRACE and print a summary. Units: 1 Gbit/s =
    2^30 bit/s, MiB = 2^20 bytes (the trace's reading), CCT in seconds."""
    if policy not in REGISTRY:
        raise OptionError(f"--policy: expected one of {', '.join(NAMES)}, got {policy!r}"
                          f"{nearest(policy, NAMES)}")
    topo = parse_topology(topology)
    number(link_gbps, "--link-gbps", 1e-6, 1000.0, unit="Gbit/s")
    if not 2 <= queues <= 8:
        raise OptionError(f"--queues: expected 2..8 (004 §III-D), got {queues}")
    if not 1 <= waves <= 4:
        raise OptionError(f"--waves: expected 1..4 (004 Table 2), got {waves}")
    if waves > 1 and bursty:
        raise OptionError("--waves and --bursty: expected one of them, got both")
    opts: dict = {}
    takes = REGISTRY[policy].options()
    for name, flag, value, check in (
        ("starve_s", "--starvation-s", starvation_s,
         lambda v, f: number(v, f, 0.0, 3600.0, low_open=True, unit="s")),
        ("info_delay_s", "--info-delay-s", info_delay_s,
         lambda v, f: number(v, f, 0.0, 60.0, unit="s")),
        ("weight", "--weight", weight, _weight),
    ):
        if value is None:
            continue
        if name not in takes:
            raise OptionError(f"{flag}: {policy} takes no such parameter (it takes "
                              f"{', '.join(takes) or 'none'})")
        opts[name] = check(value, flag)
    json_path = _out(json_out, "--json")
    csv_path = _out(per_coflow, "--per-coflow")
    tr = read_trace(trace)
    wl = from_trace(tr, waves=waves, bursty=bursty)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                  TextColumn("{task.completed}/{task.total} flows"), TimeElapsedColumn(),
                  console=console, transient=True) as prog:
        task = prog.add_task(f"{policy} on {topo}", total=wl.n_flows)
        run = simulate(wl, policy, topo, link_gbps, queues,
                       progress=lambda t, n: prog.update(task, completed=n), **opts)
    s = run.summary()
    tab = Table(title=f"{policy} · {topo} · {link_gbps:g} Gbit/s · {wl.name}",
                caption=f"units: {UNITS}")
    tab.add_column("metric")
    tab.add_column("value", justify="right")
    for k in ("coflows", "flows", "avg_cct_s", "p95_cct_s", "mice_avg_cct_s", "events",
              "wall_s"):
        v = s[k]
        tab.add_row(k, f"{v:.4g}" if isinstance(v, float) else str(v))
    for c, v in s["avg_cct_by_category"].items():
        tab.add_row(f"avg CCT cat {c} (s)", "-" if v is None else f"{v:.4g}")
    console.print(tab)
    if json_path is not None:
        _write_atomic(json_path, json.dumps(s, indent=2) + "\n")
    if csv_path is not None:
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["id", "arrival_s", "finish_s", "cct_s"])
        r = run.result
        for i in range(wl.n_coflows):
            w.writerow([int(wl.coflow_id[i]), f"{wl.coflow_arrival[i]:.9g}",
                        f"{r.coflow_finish[i]:.9g}", f"{r.cct[i]:.9g}"])
        _write_atomic(csv_path, buf.getvalue())
