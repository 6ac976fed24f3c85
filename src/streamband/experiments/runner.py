"""Run experiment specs on a backend: plan every case first (bad input stops before
anything runs), run every case x policy with progress bars, print the tables and
write ``results.json`` and ``report.html`` (the job behind ``streamband run`` and the
simulator benches)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from streamband.backends.base import Case, Runner, RunRecord
from streamband.errors import SpecError
from streamband.model.flows import FlowMap
from streamband.model.placement import (
    explicit,
    joint,
    random_placement,
    round_robin,
    tuple_size_rule,
)
from streamband.model.spec import ExperimentSpec, PlacementSpec
from streamband.model.topology import Topology
from streamband.report.apps import add_app_table, rich_app_table
from streamband.report.experiment import add_runs, add_sweeps, rich_table
from streamband.report.html import Report, write_json


def make_placement(spec: ExperimentSpec, topo: Topology, name: str, p: PlacementSpec
                   ) -> dict[str, str]:
    """The placement ``name`` of ``spec`` on ``topo`` (instance -> host).

    Raises
    ------
    SpecError
        ``placements.NAME: ...`` when the strategy cannot place the app there.
    """
    where = f"{spec.source}: " if spec.source else ""
    try:
        if p.strategy == "round_robin":
            return round_robin(spec.app, topo.hosts)
        if p.strategy == "random":
            return random_placement(spec.app, topo.hosts, p.seed)
        if p.strategy == "explicit":
            return explicit(spec.app, topo.hosts, p.map or {})
        if p.strategy == "joint":
            return joint(spec.app, topo)
        return tuple_size_rule(spec.app, topo)
    except SpecError as err:
        raise SpecError(f"{where}placements.{name}: {err}") from None


def plan(spec: ExperimentSpec) -> list[Case]:
    """Every case of ``spec`` (network x bandwidth x placement), built before anything
    runs, so a bad spec fails before it starts."""
    cases = []
    for net in spec.networks:
        for bw in net.bandwidth_mbps:
            try:
                topo = net.at(bw)
            except SpecError as err:
                raise SpecError(f"{spec.source}: {err}" if spec.source else str(err)) from None
            for name, p in spec.placements.items():
                pl = make_placement(spec, topo, name, p)
                cases.append(Case(net, bw, name, FlowMap(spec.app, topo, pl)))
    return cases


@dataclass
class Done:
    """One spec's runs: the spec, its cases and a record per case x policy."""

    spec: ExperimentSpec
    cases: list[Case]
    records: list[RunRecord] = field(default_factory=list)

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [r.row for r in self.records]


def execute(specs: list[ExperimentSpec], runner: Runner, console: Console,
            repeat: int = 1, journal: Path | None = None, warm: bool = False) -> list[Done]:
    """Plan every spec, check every case on the runner, then run them all
    (``repeat`` times each on a noisy backend; every repetition is a row). With
    ``journal``, each row is also appended there (JSON lines) as its run ends, so a long
    real run stopped part-way keeps what it measured. With ``warm``, each case first runs
    one window of its first policy that is not kept (a real engine's first job on a fresh
    cluster runs on cold JVMs)."""
    planned = [Done(spec, plan(spec)) for spec in specs]
    for d in planned:
        for case in d.cases:
            runner.check(d.spec, case)  # type: ignore[attr-defined]
    if journal is not None:
        journal.parent.mkdir(parents=True, exist_ok=True)
        journal.write_text("")  # this run's rows only
    total = sum(len(d.cases) * (repeat * len(d.spec.policies) + warm) for d in planned)
    with Progress(
        TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(), console=console, transient=False,
    ) as bar, runner:
        overall = bar.add_task(f"all runs ({runner.name})", total=total)

        def window(spec: ExperimentSpec, case: Case, policy: str, tag: str,
                   reference: list[int] | None) -> RunRecord:
            """One run of ``policy`` on ``case``, with its own progress bar."""
            task = bar.add_task(f"{spec.app.name} {case.placement} {case.network.name} "
                                f"{case.bandwidth_mbps:g} Mbit/s {tag}", total=1.0)
            rec = runner.run(spec, case, policy,
                             lambda f, t=task: bar.update(t, completed=f), reference)
            bar.update(task, completed=1.0, visible=False)
            bar.advance(overall)
            return rec

        for d in planned:
            for case in d.cases:
                reference: list[int] | None = None
                if warm:
                    window(d.spec, case, d.spec.policies[0], "warm-up (not kept)", None)
                for rep in range(repeat):
                    # alternate the order across repetitions: on a real engine a policy
                    # that runs second inherits the tuples the first left queued
                    order = d.spec.policies if rep % 2 == 0 else d.spec.policies[::-1]
                    for policy in order:
                        rec = window(d.spec, case, policy,
                                     policy + (f" #{rep + 1}" if repeat > 1 else ""),
                                     reference)
                        rec.row["repeat"] = rep
                        if policy == "tcp" and reference is None:
                            reference = rec.bottleneck_links
                        d.records.append(rec)
                        if journal is not None:
                            with journal.open("a") as f:
                                f.write(json.dumps(rec.row, default=float) + "\n")
    return planned


#: the policies whose per-flow rates are plotted
RATE_PLOT_POLICIES = ("tcp", "weighted", "sweep", "appaware")


def rate_series(done: Done) -> dict[tuple[str, str, float], dict[str, RunRecord]]:
    """The records to plot per-flow rates of: the first bandwidth of every network x
    placement, first repetition."""
    first_bw: dict[str, float] = {}
    for c in done.cases:
        first_bw.setdefault(c.network.name, c.bandwidth_mbps)
    out: dict[tuple[str, str, float], dict[str, RunRecord]] = {}
    for rec in done.records:
        r = rec.row
        if (r["bandwidth_mbps"] != first_bw[r["network"]] or r.get("repeat", 0)
                or r["policy"] not in RATE_PLOT_POLICIES):
            continue
        key = (r["network"], r["placement"], r["bandwidth_mbps"])
        out.setdefault(key, {})[r["policy"]] = rec
    return out


def write_outputs(out: Path, title: str, results: list[Done], console: Console,
                  extra: dict[str, Any] | None = None, intro: list[str] | None = None
                  ) -> Report:
    """Print each experiment's table; write ``results.json`` into ``out``; return the
    report (sections added, not yet written)."""
    report = Report(title, out)
    for line in intro or []:
        report.para(line)
    payload_runs: list[dict[str, Any]] = []
    specs = []
    for d in results:
        spec = d.spec
        payload_runs.extend(d.rows)
        specs.append(spec.model_dump(mode="json"))
        name = f"{spec.experiment}: {spec.app.name}"
        console.print(rich_table(name, d.rows))
        if spec.app.notes:
            report.heading(f"{spec.app.name}: the application", 3)
            report.para(spec.app.notes)
        add_runs(report, name, d.rows, rate_series(d), f"{spec.experiment}-{spec.app.name}")
        if spec.apps:  # several applications: each one's figures and Jain's index
            console.print(rich_app_table(name, d.rows))
            add_app_table(report, name, d.rows)
        swept = [rec for rec in d.records if rec.sweep is not None and rec.sweep.points]
        if swept:
            add_sweeps(report, swept, f"{spec.experiment}-{spec.app.name}")
    payload: dict[str, Any] = {"spec": specs[0] if len(specs) == 1 else specs,
                               "runs": payload_runs}
    if extra:
        payload.update(extra)
    write_json(out / "results.json", payload)
    return report
