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

On Storm (``--backend storm``, spec ``appfair-storm``) three of the applications (1, 2
and 4 flows) run as Kafka-fed topologies, a fresh set every window, one manager loop over
all their flows; each repetition runs tcp, App-Fair and hierarchical next to each other
(order alternating), and the per-application figures are also paired within it.
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
BACKENDS = ("sim", "testbed", "storm")
SPEC = "appfair"
#: the Storm bench's spec: three topologies with 1, 2 and 4 flows (its notes say why)
STORM_SPEC = "appfair-storm"
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
#: Storm: each window measures 12 schedules of Δt = 10 s, four turns of the classes through
#: the three applications, after a warm-up of 3 Δt under the window's policy (the window
#: starts at a regrouping, and the producer's first records are through the topologies)
STORM_SECONDS, STORM_WARMUP_S = 120.0, 30.0

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


def storm_why(seconds: float, dt: float, n_apps: int) -> str:
    """What a Storm window measures, and why it is shorter than 000's 10 minutes."""
    schedules = max(int(seconds // dt), 0)
    return (f"each window lasts {seconds:g} s instead of 000's 10 minutes: every window is a "
            f"fresh set of {n_apps} topologies on fresh topics (nothing inherited from the "
            "window before), which takes a minute or two to place on 2 cores; "
            f"{seconds:g} s measure {schedules} schedules of Δt = {dt:g} s, "
            f"{schedules / n_apps:g} turn(s) of App-Fair's classes through the {n_apps} "
            "applications")


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


def storm_specs(opts: Options) -> list[ExperimentSpec]:
    """The Storm bench's runs as ``specs`` names them (tcp, the policy under test and
    hierarchical, at α = 0.5), on :data:`STORM_SPEC`: the simulator's runs beside Storm's."""
    base = load_spec(STORM_SPEC)
    under = opts.policy or "appfair"
    return [_with(base, "tcp", "tcp", HIER_ALPHA),
            _with(base, f"{under} α={HIER_ALPHA:g}", under, HIER_ALPHA),
            _with(base, f"hierarchical α={HIER_ALPHA:g}", "hierarchical", HIER_ALPHA)]


def storm_spec(opts: Options) -> ExperimentSpec:
    """The Storm bench's one spec: tcp, the policy under test and hierarchical at α = 0.5
    on one case, so that each repetition runs the three next to each other (the order
    alternating, :func:`~streamband.experiments.runner.execute`)."""
    data = load_spec(STORM_SPEC).model_dump(mode="json", exclude_unset=True)
    data.update(policies=["tcp", opts.policy or "appfair", "hierarchical"],
                appfair={**data.get("appfair", {}), "alpha": HIER_ALPHA})
    return parse_spec(data, f"{STORM_SPEC} (bench appfair)")


def label_of(policy: str) -> str:
    """A run's label as :func:`specs` names it: ``tcp``, or the policy at α = 0.5."""
    return "tcp" if policy == "tcp" else f"{policy} α={HIER_ALPHA:g}"


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


def paired(rows: Sequence[dict], policy: str = "appfair") -> dict[str, Any]:
    """Per repetition (``repeat``; its runs ran next to each other), hierarchical's
    tuples/s against plain App-Fair's per application (%), and Jain's index of App-Fair
    and of hierarchical less tcp's: every repetition's value, the median and the spread,
    as data (``gain_pct``, ``jain_delta``) and as a table.

    Examples
    --------
    >>> def row(rep, label, jain, tps):
    ...     return {"repeat": rep, "experiment": f"appfair {label}", "jain": jain,
    ...             "apps": {"a": {"throughput_tps": tps}}}
    >>> rows = [row(0, "tcp", 0.8, 10.0), row(0, "appfair α=0.5", 0.99, 10.0),
    ...         row(0, "hierarchical α=0.5", 0.98, 12.0), row(1, "hierarchical α=0.5", 0.97,
    ...         9.9), row(1, "appfair α=0.5", 0.96, 11.0), row(1, "tcp", 0.7, 9.0)]
    >>> p = paired(rows)
    >>> [round(g, 1) for g in p["gain_pct"]["a"]], round(p["jain_delta"]["appfair α=0.5"][1], 2)
    ([20.0, -10.0], 0.26)
    """
    plain, hier = label_of(policy), label_of("hierarchical")
    by: dict[Any, dict[str, dict]] = {}
    for r in rows:
        by.setdefault(r.get("repeat", 0), {})[_label(r)] = r
    names = list(rows[0]["apps"]) if rows else []
    gain: dict[str, list[float]] = {n: [] for n in names}
    delta: dict[str, list[float]] = {plain: [], hier: []}
    for runs in by.values():
        if plain in runs and hier in runs:
            for n in names:
                base = float(runs[plain]["apps"][n]["throughput_tps"])
                if base > 0:
                    gain[n].append(100.0 * (float(runs[hier]["apps"][n]["throughput_tps"])
                                            / base - 1.0))
        for lab in (plain, hier):
            if lab in runs and "tcp" in runs:
                delta[lab].append(float(runs[lab]["jain"]) - float(runs["tcp"]["jain"]))

    def cell(vals: list[float], fmt: str) -> str:
        if not vals:
            return "-"
        return (format(median(vals), fmt) + (f" ({format(min(vals), fmt)} to "
                                             f"{format(max(vals), fmt)})" if len(vals) > 1
                                             else ""))

    table = [*[[f"{n}: {hier} tuples/s vs {plain}'s, %", cell(gain[n], "+.1f")]
               for n in names],
             *[[f"{lab}: Jain's index - tcp's", cell(delta[lab], "+.3f")]
               for lab in (plain, hier)]]
    return {"header": ["paired within a repetition", "median (min to max)"], "rows": table,
            "gain_pct": gain, "jain_delta": delta}


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


def compare(rows: Sequence[dict], policy: str = "appfair", pair: bool = False) -> Comparison:
    """000 §VII: Jain's index per run beside the paper's, each application's Mbit/s;
    the checks of App-Fair (and of the policy in its place) and of hierarchical, which
    with ``pair`` (runs of one repetition next to each other, Storm) judges each
    application's median paired ratio (:func:`paired`) rather than the ratio of its
    medians; and that the manager loop ran without an error (a loop whose steps raise
    leaves plain TCP behind, which would be judged as if the policy had run)."""
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
        if pair:  # the median of each repetition's ratio (NaN: no repetition had both)
            gains = paired(rows, policy)["gain_pct"]
            ratio = {n: 1.0 + median(g) / 100.0 if g else math.nan for n, g in gains.items()}
        shown = ", ".join(f"{n} {100 * (v - 1):+.1f} %" for n, v in ratio.items()) + (
            " (median paired)" if pair else "")
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


def _one(done: list[Done], opts: Options, name: str = SPEC) -> list[Done]:
    """Every run under the shipped spec ``name``, each row's policy named by its run
    (``appfair α=0.25``), so that the tables and plots of the runs hold them all side by
    side."""
    spec = with_options(load_spec(name), Options(seconds=opts.seconds, policy=opts.policy))
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
    if opts.backend == "storm":
        return run_storm(out, opts, console, intro)
    seconds = opts.seconds or TESTBED_SECONDS
    dt = sim_specs[0].sim.interval_s
    out.mkdir(parents=True, exist_ok=True)  # the testbed's logs go there
    runner = backend("testbed").Runner(out, seconds=seconds, dt=dt, **opts.engine())
    done = execute(specs(Options(policy=opts.policy)), runner, console, repeat=opts.repeat,
                   journal=out / "rows.jsonl")
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


def by_label(done: list[Done], opts: Options) -> list[Done]:
    """The Storm bench's runs of its one spec (:func:`storm_spec`) as :func:`storm_specs`
    names them: a row's ``experiment`` says its run (``appfair tcp``, ``appfair hierarchical
    α=0.5``) and its ``alpha``; one :class:`Done` per run with every repetition's record."""
    out: dict[str, Done] = {}
    specs = {s.experiment: s for s in storm_specs(opts)}
    for d in done:
        for rec in d.records:
            label = label_of(rec.row["policy"])
            rec.row.update(experiment=f"appfair {label}", alpha=HIER_ALPHA)
            out.setdefault(label, Done(specs[f"appfair {label}"], d.cases)).records.append(rec)
    return list(out.values())


def run_storm(out: Path, opts: Options, console: Console, intro: list[str]) -> Outcome:
    """000 §VII on Storm (:data:`STORM_SPEC`): tcp, App-Fair and hierarchical at α = 0.5,
    every window on fresh Kafka-fed topologies, each repetition's three windows next to
    each other; the simulator's runs of the same spec beside them."""
    policy = opts.policy or "appfair"
    sim = execute(storm_specs(Options(policy=opts.policy)), backend("sim").Runner(), console)
    _annotate(sim)
    sim_rows = [r for d in sim for r in d.rows]
    seconds = opts.seconds or STORM_SECONDS
    spec = storm_spec(opts)
    dt = spec.sim.interval_s
    out.mkdir(parents=True, exist_ok=True)  # the testbed's and the cluster's logs go there
    runner = backend("storm").Runner(out, seconds=seconds, warmup_s=STORM_WARMUP_S,
                                     **{"source": "kafka", **opts.engine()})
    done = by_label(execute([spec], runner, console, repeat=opts.repeat,
                            journal=out / "rows.jsonl"), opts)
    rows = [r for d in done for r in d.rows]
    cmp, sim_cmp = compare(rows, policy, pair=True), compare(sim_rows, policy)
    _side_by_side(cmp, sim_cmp)
    cmp.title = "against the paper (Storm, with the simulator beside it)"
    cmp.legend["sim Jain"] = "the simulator's index for the same spec (10-minute run)"
    per_app, sim_per_app = per_app_tps(rows, policy), per_app_tps(sim_rows, policy)
    pairs = paired(rows, policy)
    _show_per_app(per_app, console)
    _show_paired(pairs, console)
    intro.append(f"Storm: {len(spec.app_names)} Kafka-fed topologies ({', '.join(spec.app_names)}"
                 f"; {STORM_SPEC}'s notes say why these sizes) on the testbed's hosts, one "
                 "manager loop over all their flows, their classes set on the switch's egress "
                 f"ports every Δt = {dt:g} s ({opts.repeat} repetition(s): median, spread, and "
                 "paired within a repetition). " + storm_why(seconds, dt, len(spec.app_names))
                 + ". The simulator's 10-minute runs of the same spec are beside it.")
    return publish(out, f"{TITLE}, Storm", _one(done, opts, STORM_SPEC), cmp, console, intro,
                   extra={"sim_runs": sim_rows, "sim_comparison": sim_cmp.as_json(),
                          "per_app_tps": per_app, "sim_per_app_tps": sim_per_app,
                          "paired": pairs},
                   figures=lambda rep: (_report_per_app(rep, per_app),
                                        _report_paired(rep, pairs),
                                        _figures(rep, cmp, done, sim, "storm")))


def _show_paired(pairs: dict[str, Any], console: Console) -> None:
    t = Table(title="paired within each repetition: median (min to max)")
    for h in pairs["header"]:
        t.add_column(h, justify="right")
    for r in pairs["rows"]:
        t.add_row(*(str(v) for v in r))
    console.print(t)


def _report_paired(report: Report, pairs: dict[str, Any]) -> None:
    report.heading("Paired within each repetition")
    report.table(pairs["header"], pairs["rows"], legend={
        "paired within a repetition": "each repetition's window against the window of the "
                                      "same repetition named (they ran next to each other, "
                                      "each on fresh topologies)",
        "median (min to max)": "over the repetitions"})


def _side_by_side(cmp: Comparison, sim: Comparison) -> None:
    """Put the simulator's Jain beside the testbed's in every row."""
    h = cmp.header.index("Jain")
    by = {r[0]: r[sim.header.index("Jain")] for r in sim.rows}
    cmp.header.insert(h + 1, "sim Jain")
    for r in cmp.rows:
        r.insert(h + 1, by.get(r[0], float("nan")))
    cmp.title = "against the paper (testbed, with the simulator beside it)"
    cmp.legend["sim Jain"] = "the simulator's index for the same spec (10-minute run)"


def _figures(report: Report, cmp: Comparison, done: list[Done], sim: list[Done] | None,
             real: str = "testbed") -> None:
    h = cmp.header.index
    rows = [r for r in cmp.rows if not math.isnan(r[h("paper Jain")])]
    extra = {"simulator": [r[h("sim Jain")] for r in rows]} if sim is not None else None
    add_vs_paper(report, "appfair-jain-vs-paper", [r[0].replace(" α", "\nα") for r in rows],
                 [r[h("Jain")] for r in rows], [r[h("paper Jain")] for r in rows],
                 "Jain's index over the applications", [r[h("2x off")] == "yes" for r in rows],
                 extra=extra)
    for which, runs in ((real if sim is not None else "simulator", done),
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
