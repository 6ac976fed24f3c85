"""The ``streamband`` command (Typer + rich)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from streamband.locality.cli import app as locality_app
from streamband.model.placement import sustainable_rate
from streamband.papers import (
    JOINT_HEADER,
    PAPER000_HEADER,
    PAPER001_HEADER,
    Check,
    compare_backends,
    joint_table,
    paper000,
    paper001,
)
from streamband.runner import Done, execute, write_outputs
from streamband.sdn.cli import controller
from streamband.sim.coflow.cli import app as coflow_app
from streamband.spec import ExperimentSpec, PlacementSpec, SpecError, builtin_spec, load_spec
from streamband.swift.cli import app as swift_app
from streamband.testbed.cli import app as testbed_app

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Application-aware bandwidth management for stream analytics.")
app.add_typer(coflow_app, name="coflow")
app.add_typer(locality_app, name="locality")
app.add_typer(testbed_app, name="testbed")
app.add_typer(swift_app, name="swift")
app.command("controller")(controller)
console = Console()
if not console.is_terminal:  # logs and CI: wide enough for the tables
    console = Console(width=150)


class Backend(StrEnum):
    sim = "sim"
    testbed = "testbed"


class Bench(StrEnum):
    paper_000 = "paper-000"
    paper_001 = "paper-001"
    paper_002 = "paper-002"
    paper_003 = "paper-003"
    paper_004 = "paper-004"
    joint = "joint"


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
    backend: Backend = typer.Option(None, help="sim (default), or testbed for paper-001; "
                                    "paper-002 runs on the testbed only"),
    seconds: float = typer.Option(None, help="testbed: length of each run, seconds "
                                  "(default 60; paper-002: its spec's 180)"),
    full_trace: bool = typer.Option(False, help="paper-004: add the whole trace on the 1G "
                                    "fat-tree k=8 for every scheme (31 min in all)"),
    repeat: int = typer.Option(1, min=1, help="paper-002: runs per policy"),
    policy: str = typer.Option(None, help="paper-002: the managed policy: bwman (default) "
                               "or static (a fixed split, to see the checks fail)"),
) -> None:
    """Reproduce a paper's evaluation; prints tables, writes results.json + report.html."""
    if name is Bench.paper_002:
        _bench_002(out, backend or Backend.testbed, seconds, repeat, policy)
        return
    backend = backend or Backend.sim
    seconds = 60.0 if seconds is None else seconds
    out = out or Path("out") / (name.value + ("-testbed" if backend is Backend.testbed else ""))
    if out.exists() and not out.is_dir():
        raise fail(f"--out: {out} is a file, expected a directory")
    if backend is Backend.testbed and name is not Bench.paper_001:
        raise fail(f"--backend testbed: runs paper-001 only, got {name.value}")
    if full_trace and name is not Bench.paper_004:
        raise fail(f"--full-trace: applies to paper-004 only, got {name.value}")
    if seconds <= 0:
        raise fail(f"--seconds: expected a positive number of seconds, got {seconds:g}")
    try:
        if backend is Backend.testbed:
            _bench_001_testbed(out, seconds)
        elif name in SIM_BENCHES:
            _bench_sim(SIM_BENCHES[name], out)
        elif name is Bench.paper_004:
            from streamband.sim.coflow.bench import run as coflow_bench

            coflow_bench(out, full_fattree=full_trace)
        else:
            from streamband.locality.bench import run as locality_bench

            locality_bench(out)
    except SpecError as err:
        raise fail(str(err)) from None


def _bench_002(out: Path | None, backend: Backend, seconds: float | None, repeat: int,
               policy: str | None) -> None:
    """002 on a real Swift store on the testbed (with and without BwMan)."""
    from streamband.errors import StreambandError
    from streamband.experiments import paper002
    from streamband.experiments.base import Options

    out = out or Path("out") / f"{paper002.NAME}-{backend.value}"
    if out.exists() and not out.is_dir():
        raise fail(f"--out: {out} is a file, expected a directory")
    if seconds is not None and seconds <= 0:
        raise fail(f"--seconds: expected a positive number of seconds, got {seconds:g}")
    try:
        outcome = paper002.run(out, Options(backend=backend.value, seconds=seconds,
                                            repeat=repeat, policy=policy), console)
    except StreambandError as err:
        raise fail(str(err)) from None
    if not outcome.ok:
        raise typer.Exit(1)


def _bench_001_testbed(out: Path, seconds: float) -> None:
    """001 on the real testbed (Mininet + OVS meters + os-ken), beside the simulator."""
    import os

    from streamband.testbed.paper001 import run as testbed_run

    if os.geteuid() != 0:
        raise fail("--backend testbed: needs root (network namespaces, Open vSwitch)")
    spec = load_spec(builtin_spec("paper-001"))
    sim = execute([spec], console)
    sim_rows = [rec.row for rec in sim[0][1]]
    rows = testbed_run(out, seconds=seconds)
    for r in rows:
        r.setdefault("experiment", "paper-001")
        r.setdefault("network", "testbed-star")
    _, tb_checks = paper001(rows, spec.paper)
    header, table = compare_backends(rows, sim_rows, spec.paper)
    # the placement checks hold on the testbed too; the gain thresholds are the
    # simulator's, the testbed's criterion is that appaware beats plain TCP
    checks = [c for c in tb_checks if "under tcp" in c.what]
    checks += [
        Check(f"{pl}: appaware beats tcp on the testbed", f"{g:+.1f} %", g > 0)
        for pl, g in ((row[0], row[2]) for row in table if row[1] == "appaware")
        if pl in ("TP2", "TP3")
    ]
    report = write_outputs(
        out, "paper 001 on the testbed: Mininet + Open vSwitch meters + os-ken, real TCP",
        sim, console,
        extra={"testbed_runs": rows, "backend_comparison": {"header": header, "rows": table},
               "checks": [c.__dict__ for c in checks]},
        intro=[f"Each testbed run lasts {seconds:g} s: the fork-join harness in two Mininet "
               "hosts over real TCP through OVS (userspace datapath), meters pushed by the "
               "manager loop every Δt = 1 s. The simulator's runs of the same spec follow."],
    )
    report.heading("Testbed against simulator and paper")
    report.table(header, _float_rows(table))
    report.table(["check", "measured", "ok"], [[c.what, c.measured, c.ok] for c in checks])
    _show(header, table, checks)
    path = report.write()
    console.print(f"results: {out / 'results.json'}\nreport:  {path}")


def _builtin(*names: str) -> Callable[[], list[ExperimentSpec]]:
    return lambda: [load_spec(builtin_spec(n)) for n in names]


def _joint_specs() -> list[ExperimentSpec]:
    """The paper apps at 20 Mbit/s with round robin, 001's rule and joint placement."""
    placements = {"RR": PlacementSpec(strategy="round_robin"),
                  "RULE": PlacementSpec(strategy="tuple_size_rule"),
                  "JOINT": PlacementSpec(strategy="joint")}
    out = []
    for name in ("paper-001", "paper-000-tt", "paper-000-ti"):
        spec = load_spec(builtin_spec(name))
        nets = [n.model_copy(update={"bandwidth_mbps": [20.0]}) for n in spec.networks]
        out.append(spec.model_copy(update={
            "experiment": "joint", "networks": nets, "placements": placements,
            "policies": ["tcp", "appaware"],
            "sim": spec.sim.model_copy(update={"duration_s": 300.0}),
        }))
    return out


def _joint_compare(rows: list[dict], results: Done) -> tuple[list[list], list[Check]]:
    bounds = {
        (spec.app.name, c.network.name, c.placement): 100.0 * min(
            1.0, sustainable_rate(spec.app, c.flowmap.topo, c.flowmap.placement)
            / sum(o.rate_tps or 0.0 for o in spec.app.operators))
        for spec, _, cases in results for c in cases
    }
    return joint_table(rows, bounds)


@dataclass(frozen=True)
class SimBench:
    """An evaluation on the simulator: its specs and how it is compared."""

    specs: Callable[[], list[ExperimentSpec]]
    title: str
    intro: str
    header: list[str]
    compare: Callable[[list[dict], Done], tuple[list[list], list[Check]]]
    paper: bool = True  # compared against a paper's figures


SIM_BENCHES = {
    Bench.paper_001: SimBench(
        _builtin("paper-001"),
        "paper 001: placement and bandwidth allocation (fork-join), simulator",
        "Fork-join of 001 on two workers with 20 Mbit/s links, fluid simulator. "
        "Goodput is D's joins per second x (6 KB + 3 KB), 001's unit.",
        PAPER001_HEADER,
        lambda rows, res: paper001(rows, res[0][0].paper),
    ),
    Bench.paper_000: SimBench(
        _builtin("paper-000-tt", "paper-000-ti"),
        "paper 000: app-aware bandwidth allocation (TT, TI), simulator",
        "Trending Topics (TT) and Trucking IoT (TI) of 000 §VI on 8 workers: 'edge' is a "
        "star whose host links are the bottleneck; 'multihop' is the two-tier network of "
        "000 Fig. 2 with 1 Gbit/s host links and the internal links throttled.",
        PAPER000_HEADER,
        lambda rows, res: paper000(rows, {res[0][0].app.name: "TT", res[1][0].app.name: "TI"}),
    ),
    Bench.joint: SimBench(
        _joint_specs,
        "beyond 001: placement and bandwidth allocation chosen jointly, simulator",
        "001 left the joint strategy as future work. Under app-aware allocation the flows "
        "of an aligned DAG progress together; the common rate r* = min over links of "
        "C_l / (bytes per source tuple on l) is the source rate (all sources) at which "
        "every flow can keep up together (parts that do not wait for each other may go "
        "faster). JOINT searches the load-balanced placements for the largest r*; RULE is 001's "
        "ascending aggregate-then-ratio rule; RR is round robin (000 §II-A4). 20 Mbit/s.",
        JOINT_HEADER,
        _joint_compare,
        paper=False,
    ),
}


def _bench_sim(bench: SimBench, out: Path) -> None:
    results = execute(bench.specs(), console)
    rows = [rec.row for _, recs, _ in results for rec in recs]
    table, checks = bench.compare(rows, results)
    report = write_outputs(
        out, bench.title, results, console,
        extra={"paper_comparison": {"header": bench.header, "rows": table},
               "checks": [c.__dict__ for c in checks]},
        intro=[bench.intro],
    )
    report.heading("Against the paper" if bench.paper else "Comparison")
    report.table(bench.header, _float_rows(table))
    report.table(["check", "measured", "ok"], [[c.what, c.measured, c.ok] for c in checks])
    _show(bench.header, table, checks, "against the paper" if bench.paper else "comparison")
    path = report.write()
    console.print(f"results: {out / 'results.json'}\nreport:  {path}")


def _show(header: list[str], rows: list[list], checks: list[Check],
          title: str = "against the paper") -> None:
    t = Table(title=title)
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
