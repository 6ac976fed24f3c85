"""The ``streamband`` command (Typer + rich)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from streamband.papers import PAPER000_HEADER, PAPER001_HEADER, Check, paper000, paper001
from streamband.runner import execute, write_outputs
from streamband.spec import SpecError, builtin_spec, load_spec

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Application-aware bandwidth management for stream analytics.")
console = Console()
if not console.is_terminal:  # logs and CI: wide enough for the tables
    console = Console(width=150)


class Backend(StrEnum):
    sim = "sim"
    testbed = "testbed"


class Bench(StrEnum):
    paper_000 = "paper-000"
    paper_001 = "paper-001"


def fail(message: str) -> typer.Exit:
    """One line on stderr and exit code 2 (bad input)."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def _checks_table(checks: list[Check]) -> Table:
    t = Table(title="checks")
    for col in ("check", "measured", "ok"):
        t.add_column(col)
    for c in checks:
        t.add_row(c.what, c.measured, "yes" if c.ok else "NO")
    return t


def _float_rows(rows: list[list]) -> list[list]:
    return [[round(v, 2) if isinstance(v, float) else v for v in r] for r in rows]


@app.command()
def run(
    spec: Path = typer.Argument(..., help="experiment spec (YAML)"),
    backend: Backend = typer.Option(Backend.sim, help="where the experiment runs"),
    out: Path = typer.Option(Path("out/run"), help="directory for results.json and report.html"),
) -> None:
    """Run an experiment spec: a table, results.json and report.html."""
    if backend is not Backend.sim:
        raise fail("--backend: 'streamband run' runs specs on the simulator; expected 'sim' "
                   "(the testbed runs through 'streamband bench paper-001 --backend testbed')")
    try:
        parsed = load_spec(spec)
        results = execute([parsed], console)
    except SpecError as err:
        raise fail(str(err)) from None
    report = write_outputs(out, f"streamband run: {parsed.experiment}", results, console)
    path = report.write()
    console.print(f"results: {out / 'results.json'}\nreport:  {path}")


@app.command()
def bench(
    name: Bench = typer.Argument(..., help="which paper's evaluation to reproduce"),
    out: Path = typer.Option(None, help="output directory (default out/NAME)"),
    backend: Backend = typer.Option(Backend.sim, help="sim, or testbed for paper-001"),
) -> None:
    """Reproduce a paper's evaluation; prints tables, writes results.json + report.html."""
    out = out or Path("out") / name.value
    if backend is Backend.testbed:
        raise fail("--backend testbed: not available yet; expected 'sim'")
    try:
        if name is Bench.paper_001:
            _bench_001(out)
        else:
            _bench_000(out)
    except SpecError as err:
        raise fail(str(err)) from None


def _bench_001(out: Path) -> None:
    spec = load_spec(builtin_spec("paper-001"))
    results = execute([spec], console)
    rows = [rec.row for rec in results[0][1]]
    table, checks = paper001(rows, spec.paper)
    report = write_outputs(
        out, "paper 001: placement and bandwidth allocation (fork-join), simulator", results,
        console, extra={"paper_comparison": {"header": PAPER001_HEADER, "rows": table},
                        "checks": [c.__dict__ for c in checks]},
        intro=["Fork-join of 001 on two workers with 20 Mbit/s links, fluid simulator. "
               "Goodput is D's joins per second x (6 KB + 3 KB), 001's unit."],
    )
    report.heading("Against the paper")
    report.table(PAPER001_HEADER, _float_rows(table))
    report.table(["check", "measured", "ok"], [[c.what, c.measured, c.ok] for c in checks])
    _show(PAPER001_HEADER, table, checks)
    path = report.write()
    console.print(f"results: {out / 'results.json'}\nreport:  {path}")


def _bench_000(out: Path) -> None:
    specs = [load_spec(builtin_spec("paper-000-tt")), load_spec(builtin_spec("paper-000-ti"))]
    results = execute(specs, console)
    rows = [rec.row for _, recs, _ in results for rec in recs]
    short = {specs[0].app.name: "TT", specs[1].app.name: "TI"}
    table, checks = paper000(rows, short)
    report = write_outputs(
        out, "paper 000: app-aware bandwidth allocation (TT, TI), simulator", results, console,
        extra={"paper_comparison": {"header": PAPER000_HEADER, "rows": table},
               "checks": [c.__dict__ for c in checks]},
        intro=["Trending Topics (TT) and Trucking IoT (TI) of 000 §VI on 8 workers: 'edge' is "
               "a star whose host links are the bottleneck; 'multihop' is the two-tier network "
               "of 000 Fig. 2 with 1 Gbit/s host links and the internal links throttled."],
    )
    report.heading("Against the paper")
    report.table(PAPER000_HEADER, _float_rows(table))
    report.table(["check", "measured", "ok"], [[c.what, c.measured, c.ok] for c in checks])
    _show(PAPER000_HEADER, table, checks)
    path = report.write()
    console.print(f"results: {out / 'results.json'}\nreport:  {path}")


def _show(header: list[str], rows: list[list], checks: list[Check]) -> None:
    t = Table(title="against the paper")
    for h in header:
        t.add_column(h, justify="right")
    for r in _float_rows(rows):
        t.add_row(*(f"{v:g}" if isinstance(v, float) else str(v) for v in r))
    console.print(t)
    console.print(_checks_table(checks))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
