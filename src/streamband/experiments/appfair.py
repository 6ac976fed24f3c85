"""000 §VII, Fig. 13: App-Fair, fairness between applications rather than flows, and
App-aware inside App-Fair (``hierarchical``).

Five competing applications, App-i with i flows (i = 1..5), share the downlink of one
worker of a 16-worker star at 20 Mbit/s (every source on its own worker). Under TCP
each application's throughput grows with its number of flows (000: Jain's index 84 %);
App-Fair (eq. 5, Δt = 10 s) groups the applications by throughput into strict-priority
classes, lowest first (000: 98, 99, 99, 98 % at α = 0.25, 0.5, 0.75, 1).
``hierarchical`` adds App-aware's meters (000 Algorithm 1) inside each application's
share, which moves bandwidth between an application's own flows, never between
applications.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from statistics import median
from typing import Any

from rich.console import Console
from rich.table import Table

from streamband.backends import backend
from streamband.experiments.base import (
    Check,
    Comparison,
    Options,
    Outcome,
    distance,
    publish,
    with_options,
)
from streamband.experiments.runner import Done, execute
from streamband.model.spec import ExperimentSpec, load_spec, parse_spec
from streamband.report.apps import add_app_bars, add_app_series, add_app_table
from streamband.report.html import Report
from streamband.report.paper import add_vs_paper

NAME = "appfair"
TITLE = "000 §VII: App-Fair between applications, and App-aware inside it"
BACKENDS = ("sim", "testbed")
SPEC = "appfair"
ALPHAS = (0.25, 0.5, 0.75, 1.0)
#: the α of the hierarchical run (and of the App-Fair run it is compared with)
HIER_ALPHA = 0.5
#: 000 §VII: Jain's index under TCP and under App-Fair per α (Δt = 10 s)
PAPER: dict[str, Any] = {"tcp": 0.84, "appfair": {0.25: 0.98, 0.5: 0.99, 0.75: 0.99, 1.0: 0.98}}
MIN_JAIN = 0.95
#: hierarchical may cost an application at most this share of plain App-Fair's throughput
WITHIN = 0.02
#: ... and must lift at least one application by this share
MIN_GAIN = 0.10
#: testbed: each run holds the first schedule (made before anything moved: its interval
#: is the warm-up) and 20 more, four turns of the five applications, and half a Δt
TESTBED_SECONDS = 215.0

LEGEND = {
    "Jain spread": "min-max of Jain's index over the repetitions",
    "Jain": "Jain's index over the applications' Mbit/s on w16's downlink, each normalised "
            "by its max-min fair share (every application offers more than its share here, "
            "so this is Jain's index of the raw throughputs, as 000 §VII computes it)",
    "paper Jain": "000 §VII's index for the same policy and α",
    "vs paper": "measured - paper",
    "2x off": "the measured index is more than 2x (or under half) the paper's",
    "appN Mbit/s": "what application N (N flows) carried on average after the warm-up",
}


def testbed_why(seconds: float, dt: float, n_apps: int) -> str:
    """Why a testbed run is shorter than 000's 10 minutes, and what it still measures."""
    schedules = max(int((seconds - dt) // dt), 0)
    turns = schedules / n_apps if n_apps else 0.0
    whole = "whole " if turns == int(turns) else ""
    return (f"each of the six runs lasts {seconds:g} s instead of 000's 10 minutes: the "
            "testbed shares two cores with its own harness, switch and controller, and six "
            f"10-minute runs would hold it over an hour per repetition; {seconds:g} s measure "
            f"{schedules} schedules of Δt = {dt:g} s after the warm-up, {turns:g} {whole}"
            f"turn(s) of App-Fair's classes through the {n_apps} applications (with a part "
            "of a turn, the applications that got one slot more would count as unfairness "
            "that a longer run averages away)")

def _with(spec: ExperimentSpec, label: str, policy: str, alpha: float) -> ExperimentSpec:
    data = spec.model_dump(mode="json", exclude_unset=True)
    data.update(experiment=f"appfair {label}", policies=[policy],
                appfair={**data.get("appfair", {}), "alpha": alpha})
    return parse_spec(data, f"appfair ({label})")


def specs(opts: Options) -> list[ExperimentSpec]:
    """TCP, the policy under test (App-Fair) at each α, and hierarchical at α = 0.5."""
    base = with_options(load_spec(SPEC), Options(seconds=opts.seconds))
    under = opts.policy or "appfair"
    out = [_with(base, "tcp", "tcp", HIER_ALPHA)]
    out += [_with(base, f"{under} α={a:g}", under, a) for a in ALPHAS]
    out.append(_with(base, f"hierarchical α={HIER_ALPHA:g}", "hierarchical", HIER_ALPHA))
    return out


def _label(r: dict) -> str:
    return r["experiment"].removeprefix("appfair ")


def _runs(rows: Sequence[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(_label(r), []).append(r)
    return out


def _med(reps: list[dict], *path: str) -> float:
    vals = []
    for r in reps:
        v: Any = r
        for k in path:
            v = v[k]
        vals.append(float(v))
    return median(vals)


def per_app_tps(rows: Sequence[dict], policy: str = "appfair") -> dict[str, Any]:
    """Each application's tuples/s in every run: median, min, max and every repetition's
    value (``data``), and as a table (``header``, ``rows``: "median (min-max)" per
    application, then hierarchical's median against plain App-Fair's at the same α, the
    figure the per-application checks judge). One 115-s run of a join is noisy (which
    turns of the classes it got), so the checks take medians over ``--repeat``."""
    runs = _runs(rows)
    names = list(rows[0]["apps"]) if rows else []
    data: dict[str, dict[str, dict[str, Any]]] = {}
    table: list[list[Any]] = []
    for label, reps in runs.items():
        data[label] = {}
        cells = []
        for n in names:
            vals = [float(r["apps"][n]["throughput_tps"]) for r in reps]
            data[label][n] = {"median": median(vals), "min": min(vals), "max": max(vals),
                              "runs": vals}
            cells.append(f"{median(vals):.1f}" + (f" ({min(vals):.1f}-{max(vals):.1f})"
                                                   if len(vals) > 1 else ""))
        table.append([label, len(reps), *cells])
    hier = next((k for k in runs if k.startswith("hierarchical")), None)
    plain = f"{policy} α={HIER_ALPHA:g}"
    gain: dict[str, float] = {}
    if hier is not None and plain in runs:
        for n in names:
            gain[n] = 100.0 * (data[hier][n]["median"] / data[plain][n]["median"] - 1.0)
        table.append([f"{hier} vs {plain}", None, *[f"{gain[n]:+.1f} %" for n in names]])
    return {"header": ["run", "repeats", *[f"{n} tuples/s" for n in names]], "rows": table,
            "data": data, "gain_pct": gain}


def _show_per_app(per_app: dict[str, Any], console: Console) -> None:
    t = Table(title="each application's tuples/s, median (min-max) over the repetitions")
    for h in per_app["header"]:
        t.add_column(h, justify="right")
    for r in per_app["rows"]:
        t.add_row(*("-" if v is None else str(v) for v in r))
    console.print(t)


def _report_per_app(report: Report, per_app: dict[str, Any]) -> None:
    report.heading("Each application's tuples/s, median (min-max) over the repetitions")
    report.table(per_app["header"], per_app["rows"], legend={
        "appN tuples/s": "joins (app1: sink) completed per second after the warm-up: the "
                         "median over the repetitions and, with more than one, min-max",
        "repeats": "repetitions of the run"})


def compare(rows: Sequence[dict], policy: str = "appfair") -> Comparison:
    """000 §VII: Jain's index per run beside the paper's, each application's Mbit/s;
    the checks of App-Fair (and of the policy in its place) and of hierarchical."""
    runs = _runs(rows)
    names = list(rows[0]["apps"]) if rows else []
    table, checks, flagged = [], [], []
    tcp = _med(runs["tcp"], "jain") if "tcp" in runs else float("nan")
    for label, reps in runs.items():
        r0 = reps[0]
        alpha = r0.get("alpha")
        paper = (PAPER["tcp"] if r0["policy"] == "tcp" else
                 PAPER["appfair"].get(alpha, float("nan")) if label.startswith(policy)
                 else float("nan"))
        jain = _med(reps, "jain")
        delta, off = distance(jain, paper)
        if off:
            flagged.append(label)
        spread = (f"{min(r['jain'] for r in reps):.3f}-{max(r['jain'] for r in reps):.3f}"
                  if len(reps) > 1 else "")
        table.append([label, alpha if r0["policy"] != "tcp" else None, jain, spread, paper,
                      delta, "yes" if off else "",
                      *[_med(reps, "apps", n, "mbps") for n in names]])
        if label.startswith(policy):
            checks.append(Check(f"{label}: Jain's index >= {MIN_JAIN:g}", f"{jain:.3f}",
                                jain >= MIN_JAIN))
            checks.append(Check(f"{label}: Jain's index above tcp's", f"{jain:.3f} vs "
                                f"{tcp:.3f}", jain > tcp))
    if "tcp" in runs and names:
        mb = [_med(runs["tcp"], "apps", n, "mbps") for n in names]
        checks.append(Check(f"tcp: {names[-1]} (most flows) carries more than {names[0]} "
                            f"(fewest)", ", ".join(f"{m:.2f}" for m in mb), mb[-1] > mb[0]))
    hier = next((k for k in runs if k.startswith("hierarchical")), None)
    plain = f"{policy} α={HIER_ALPHA:g}"
    if hier is not None and plain in runs:
        jain = _med(runs[hier], "jain")
        checks.append(Check(f"{hier}: Jain's index >= {MIN_JAIN:g}", f"{jain:.3f}",
                            jain >= MIN_JAIN))
        ratio = {n: _med(runs[hier], "apps", n, "throughput_tps")
                 / _med(runs[plain], "apps", n, "throughput_tps") for n in names}
        shown = ", ".join(f"{n} {100 * (v - 1):+.1f} %" for n, v in ratio.items())
        checks.append(Check(f"{hier}: every application's tuples/s >= {plain}'s - "
                            f"{100 * WITHIN:g} %", shown,
                            all(v >= 1.0 - WITHIN for v in ratio.values())))
        checks.append(Check(f"{hier}: some application gains >= {100 * MIN_GAIN:g} % "
                            f"tuples/s over {plain}", shown,
                            any(v >= 1.0 + MIN_GAIN for v in ratio.values())))
    errors = [e for r in rows for e in (r.get("loop_errors") or [])]
    checks.append(Check("the manager loop ran without errors", f"{len(errors)} errors"
                        + (f": {errors[0]}" if errors else ""), not errors))
    header = ["run", "α", "Jain", "Jain spread", "paper Jain", "vs paper", "2x off",
              *[f"{n} Mbit/s" for n in names]]
    if not any(r[3] for r in table):  # one run each: no spread to show
        header.pop(3)
        table = [r[:3] + r[4:] for r in table]
    notes = ([f"More than 2x off the paper: {', '.join(flagged)}."] if flagged else [])
    return Comparison(header, table, checks, legend=LEGEND, notes=notes)


def _annotate(done: list[Done]) -> None:
    """Every row says its α (the runs differ by it alone)."""
    for d in done:
        for r in d.rows:
            r["alpha"] = d.spec.appfair.alpha


def _one(done: list[Done], opts: Options) -> list[Done]:
    """Every run under the shipped spec, each row's policy named by its run (``appfair
    α=0.25``), so that the tables and plots of the runs hold them all side by side."""
    spec = with_options(load_spec(SPEC), Options(seconds=opts.seconds, policy=opts.policy))
    recs = [replace(rec, row={**rec.row, "policy": _label(rec.row)})
            for d in done for rec in d.records]
    return [Done(spec, done[0].cases, recs)]


def run(out: Path, opts: Options, console: Console) -> Outcome:
    """Fig. 13 on ``opts.backend``: tcp, App-Fair at every α, hierarchical; on the
    testbed the simulator's runs of the same specs beside it."""
    policy = opts.policy or "appfair"
    intro = [__doc__.split("\n\n", 1)[1].replace("\n", " ").strip()]
    sim_specs = specs(opts if opts.backend == "sim" else Options(policy=opts.policy))
    sim = execute(sim_specs, backend("sim").Runner(), console)
    _annotate(sim)
    sim_rows = [r for d in sim for r in d.rows]
    if opts.backend == "sim":
        cmp = compare(sim_rows, policy)
        per_app = per_app_tps(sim_rows, policy)
        _show_per_app(per_app, console)
        return publish(out, f"{TITLE}, simulator", _one(sim, opts), cmp, console, intro,
                       extra={"per_app_tps": per_app},
                       figures=lambda rep: (_report_per_app(rep, per_app),
                                            _figures(rep, cmp, sim, None)))
    seconds = opts.seconds or TESTBED_SECONDS
    dt = sim_specs[0].sim.interval_s
    out.mkdir(parents=True, exist_ok=True)  # the testbed's logs go there
    runner = backend("testbed").Runner(out, seconds=seconds, dt=dt, **opts.engine())
    done = execute(specs(Options(policy=opts.policy)), runner, console, repeat=opts.repeat)
    _annotate(done)
    rows = [r for d in done for r in d.rows]
    cmp = compare(rows, policy)
    sim_cmp = compare(sim_rows, policy)
    _side_by_side(cmp, sim_cmp)
    per_app, sim_per_app = per_app_tps(rows, policy), per_app_tps(sim_rows, policy)
    _show_per_app(per_app, console)
    intro.append(f"Testbed: the harness of each application in Mininet hosts over real TCP "
                 f"through OVS, its flows in strict-priority HTB classes on the switch's "
                 f"egress ports set by the manager loop every Δt = {dt:g} s through the "
                 f"controller ({opts.repeat} repetition(s), median and spread). "
                 + testbed_why(seconds, dt, len(sim_specs[0].app_names))
                 + " The simulator's 10-minute runs of the same specs are beside it.")
    return publish(out, f"{TITLE}, testbed", _one(done, opts), cmp, console, intro,
                   extra={"sim_runs": sim_rows, "sim_comparison": sim_cmp.as_json(),
                          "per_app_tps": per_app, "sim_per_app_tps": sim_per_app},
                   figures=lambda rep: (_report_per_app(rep, per_app),
                                        _figures(rep, cmp, done, sim)))


def _side_by_side(cmp: Comparison, sim: Comparison) -> None:
    """Put the simulator's Jain beside the testbed's in every row."""
    h = cmp.header.index("Jain")
    by = {r[0]: r[sim.header.index("Jain")] for r in sim.rows}
    cmp.header.insert(h + 1, "sim Jain")
    for r in cmp.rows:
        r.insert(h + 1, by.get(r[0], float("nan")))
    cmp.title = "against the paper (testbed, with the simulator beside it)"
    cmp.legend["sim Jain"] = "the simulator's index for the same spec (10-minute run)"


def _figures(report: Report, cmp: Comparison, done: list[Done], sim: list[Done] | None
             ) -> None:
    h = cmp.header.index
    rows = [r for r in cmp.rows if not math.isnan(r[h("paper Jain")])]
    extra = {"simulator": [r[h("sim Jain")] for r in rows]} if sim is not None else None
    add_vs_paper(report, "appfair-jain-vs-paper", [r[0].replace(" α", "\nα") for r in rows],
                 [r[h("Jain")] for r in rows], [r[h("paper Jain")] for r in rows],
                 "Jain's index over the applications", [r[h("2x off")] == "yes" for r in rows],
                 extra=extra)
    for which, runs in (("testbed" if sim is not None else "simulator", done),
                        *((("simulator", sim),) if sim is not None else ())):
        first = {d.spec.experiment.removeprefix("appfair "): d.records[0] for d in runs
                 if d.records}
        pick = {k: v for k, v in first.items()
                if k == "tcp" or k.endswith(f"α={HIER_ALPHA:g}")}
        names = runs[0].spec.app_names
        dt = runs[0].spec.sim.interval_s
        add_app_series(report, f"appfair-series-{which}", f"{which}: each application's "
                       f"throughput per Δt = {dt:g} s (thin) and its running average (thick), "
                       "000 Fig. 13", pick, names, dt)
        add_app_bars(report, f"appfair-mbps-{which}", f"{which}: each application's Mbit/s "
                     "(000 Fig. 13)", {k: v.row for k, v in pick.items()}, "mbps",
                     "throughput (Mbit/s)")
        add_app_bars(report, f"appfair-tps-{which}", f"{which}: each application's "
                     "tuples/s: App-aware inside App-Fair moves bandwidth between an "
                     "application's own flows", {k: v.row for k, v in pick.items()
                                                 if k != "tcp"}, "throughput_tps",
                     "throughput (tuples/s)")
        if which == "simulator" and sim is not None:
            add_app_table(report, "the simulator's runs", [r for d in runs for r in d.rows],
                          _label)
