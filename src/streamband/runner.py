"""Run experiment specs with progress bars, print tables, write results.json and
report.html (the main job behind ``streamband run`` and ``streamband bench``)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from streamband.experiment import Case, RunRecord, plan, run_case
from streamband.report.experiment import add_runs, add_sweeps, rich_table
from streamband.report.html import Report, write_json
from streamband.spec import ExperimentSpec

RATE_PLOT_POLICIES = ("tcp", "weighted", "sweep", "appaware")

Done = list[tuple[ExperimentSpec, list[RunRecord], list[Case]]]


def execute(specs: list[ExperimentSpec], console: Console) -> Done:
    """Plan every spec first (bad input stops here), then run them all."""
    planned = [(spec, plan(spec)) for spec in specs]
    total = sum(len(cases) * len(spec.policies) for spec, cases in planned)
    done: Done = []
    with Progress(
        TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(), console=console, transient=False,
    ) as bar:
        overall = bar.add_task("all runs", total=total)
        for spec, cases in planned:
            records = []
            for case in cases:
                reference: list[int] | None = None
                for policy in spec.policies:
                    label = (f"{spec.app.name} {case.placement} {case.network.name} "
                             f"{case.bandwidth_mbps:g} Mbit/s {policy}")
                    task = bar.add_task(label, total=1.0)
                    rec = run_case(spec, case, policy,
                                   progress=lambda f, t=task: bar.update(t, completed=f),
                                   reference_links=reference)
                    if policy == "tcp":
                        reference = rec.result.bottleneck_links
                    bar.update(task, completed=1.0, visible=False)
                    bar.advance(overall)
                    records.append(rec)
            done.append((spec, records, cases))
    return done


def rate_series(records: list[RunRecord], cases: list[Case]) -> dict:
    """Per-flow rates over time for the first bandwidth of every network x placement."""
    first_bw = {}
    for c in cases:
        first_bw.setdefault(c.network.name, c.bandwidth_mbps)
    out: dict = {}
    for rec in records:
        r = rec.row
        if r["bandwidth_mbps"] != first_bw[r["network"]] or r["policy"] not in RATE_PLOT_POLICIES:
            continue
        case = next(c for c in cases if c.network.name == r["network"]
                    and c.placement == r["placement"] and c.bandwidth_mbps == r["bandwidth_mbps"])
        res = rec.result
        key = (r["network"], r["placement"], r["bandwidth_mbps"])
        out.setdefault(key, {})[r["policy"]] = (
            res.sample_times, res.flow_ids, res.flow_rates_mbps, case.flowmap.external
        )
    return out


def write_outputs(out: Path, title: str, results: Done, console: Console,
                  extra: dict | None = None, intro: list[str] | None = None) -> Report:
    """Print each experiment's table; write results.json and report.html into ``out``."""
    report = Report(title, out)
    for line in intro or []:
        report.para(line)
    payload_runs = []
    specs = []
    for spec, records, cases in results:
        rows = [rec.row for rec in records]
        payload_runs.extend(rows)
        specs.append(spec.model_dump(mode="json"))
        name = f"{spec.experiment}: {spec.app.name}"
        console.print(rich_table(name, rows))
        if spec.app.notes:
            report.heading(f"{spec.app.name}: the application", 3)
            report.para(spec.app.notes)
        add_runs(report, name, rows, rate_series(records, cases),
                 f"{spec.experiment}-{spec.app.name}")
        swept = [rec for rec in records if rec.sweep is not None and rec.sweep.points]
        if swept:
            add_sweeps(report, swept, f"{spec.experiment}-{spec.app.name}")
    payload = {"spec": specs[0] if len(specs) == 1 else specs, "runs": payload_runs}
    if extra:
        payload.update(extra)
    write_json(out / "results.json", payload)
    return report
