"""Paper 002 (BwMan) on a real OpenStack Swift on the testbed: SLO violations with
and without bandwidth management on the same workload and failure schedule
(002 §V-F, Table I), the models learned from the running store (Fig. 1-2), the
throughput against the SLO over time (Fig. 7-8) and the data integrity (Fig. 6).

One store (:mod:`streamband.swift`), populated once; then the training sweep
(002 §III), then for each repeat a run without management (``none``: plain
sharing of each storage link) and a run with the managed policy (``bwman`` by
default), each followed by a tail without clients until every lost replica is back.

The SLO's steps are fractions of a reference the sweep measures on this store
(:func:`streamband.swift.training.reference`) unless the spec gives them in op/s,
and the comparison checks 002's premise on the sweep: throughput grows with
bandwidth (:func:`streamband.swift.training.growth`), else the store is CPU-bound
and the comparison void.
"""

from __future__ import annotations

import math
import statistics
import time
from pathlib import Path
from typing import Any

from streamband.errors import OptionError, nearest
from streamband.experiments.base import Check, Comparison, Options, Outcome, show
from streamband.model.spec import builtin_spec

NAME = "paper-002"
TITLE = "paper 002: BwMan on OpenStack Swift (testbed)"
BACKENDS = ("testbed",)
SPEC = builtin_spec("paper-002")

#: 002's figures: Table I (percentage of SLO violations, with / without BwMan) and
#: the coefficients of its models (§III; its units, not ours)
PAPER: dict[str, Any] = {
    "section": "002 §V-F, Table I; §III-A eq. (1), §III-B eq. (2)",
    "violations": {"5%": {"with": 19.5, "without": 43.2},
                   "10%": {"with": 13.6, "without": 40.6},
                   "15%": {"with": 8.5, "without": 37.1}},
    "models": {"user": {"eq": "(1)", "a1": 4.388, "a2": 14.38},
               "recovery": {"eq": "(2)", "a1": 441.6, "a2": -2609.0}},
    "schedule_ops": [80, 90, 100],
    "step_min": 70,
}
BASELINE = "none"


def check_policy(name: str) -> None:
    """``--policy``: a BwMan policy (:mod:`streamband.alloc.bwman`), not the baseline."""
    from streamband.alloc.bwman import POLICIES

    if name not in POLICIES:
        raise OptionError(f"--policy: unknown BwMan policy {name!r}, expected one of "
                          f"{', '.join(p for p in POLICIES if p != BASELINE)}"
                          f"{nearest(name, POLICIES)}")
    if name == BASELINE:
        raise OptionError(f"--policy: the managed run must differ from the baseline "
                          f"{BASELINE!r}")


def load_spec(opts: Options, spec: Any = None) -> Any:
    """The built-in spec (or ``spec``) with the options applied: ``seconds``
    stretches the schedule and the failures to that run length, ``policy`` is the
    managed policy."""
    from streamband.swift.spec import load

    if opts.backend not in BACKENDS:
        raise OptionError(f"--backend: paper-002 runs on {', '.join(BACKENDS)}, "
                          f"got {opts.backend!r}")
    base = spec if spec is not None else load(SPEC)
    data = base.model_dump()
    if opts.seconds is not None:
        k = opts.seconds / base.workload.duration_s
        data["workload"]["duration_s"] = opts.seconds
        data["workload"]["schedule"] = [(s * k, r) for s, r in base.workload.schedule]
        f = data["failures"]
        f["start_s"], f["every_s"] = f["start_s"] * k, f["every_s"] * k
        f["stop_s"] = f["stop_s"] * k if f["stop_s"] else None
    if opts.policy is not None:
        data["control"]["policy"] = opts.policy
    data["testbed"].pop("storage_hosts", None)
    return load(data)


def run(out: Path, opts: Options, console: Any, spec: Any = None) -> Outcome:
    """Train, run ``none`` and the managed policy ``opts.repeat`` times each, compare."""
    from streamband.swift.cluster import check_tools

    parsed = load_spec(opts, spec)
    managed = parsed.control.policy
    if managed == BASELINE:
        raise OptionError(f"--policy: the managed run must differ from the baseline "
                          f"{BASELINE!r}")
    check_tools()
    from rich.progress import Progress

    from streamband.alloc.bwman import Models, fit
    from streamband.swift import scenario, training
    from streamband.swift.session import Session
    from streamband.testbed.network import started

    rows: list[dict[str, Any]] = []
    runs: dict[str, list[Any]] = {BASELINE: [], managed: []}
    t_all = time.monotonic()
    with Session(parsed, out, started, console) as s:
        assert s.cluster is not None and s.tb is not None
        enforcer = _enforcer(s, parsed, out)
        try:
            idle = _idle_usage(s.cluster)
            console.print(f"store idle (replicators only): {idle['cores']:.2f} cores, "
                          f"{idle['rss_mb']:.0f} MB")
            quota = parsed.quota_mbps * 1e6
            t0 = time.monotonic()
            up = training.user_points(s, enforcer, quota, console.print)
            rp = training.recovery_points(s, enforcer, quota, console.print)
            s.timings["training_s"] = time.monotonic() - t0
            models = Models(fit("linear", up.bw, up.y), fit("log", rp.bw, rp.y))
            console.print(f"eq. (1): throughput = {models.user.a1:.3f} * bw + "
                          f"{models.user.a2:.3f}  (R2 {models.user.r2:.3f})")
            console.print(f"eq. (2): recovery = {models.recovery.a1:.4f} * ln(bw) + "
                          f"{models.recovery.a2:.4f}  (R2 {models.recovery.r2:.3f})")
            slo = _resolve_slo(s, up, console)
            parsed = s.spec
            order = [BASELINE, managed]
            for i in range(opts.repeat):
                for pol in order if i % 2 == 0 else order[::-1]:
                    name = f"{pol}-{i + 1}"
                    before = s.cluster.usage()
                    t1 = time.monotonic()
                    with Progress(console=console) as bar:
                        res = scenario.run(s, enforcer, pol, models,
                                           {"user": up, "recovery": rp}, name,
                                           _progress(bar, name, parsed.workload.duration_s))
                    wall = time.monotonic() - t1
                    after = s.cluster.usage()
                    runs[pol].append(res)
                    rows.append(_row(res, i + 1, wall, before, after))
                    console.print(_summary(rows[-1]))
        finally:
            enforcer.close()
        timings = dict(s.timings)
    timings["total_s"] = time.monotonic() - t_all
    slo["store_idle"] = idle
    comparison = compare(rows, models, managed, slo["growth"])
    results = _write_results(out, parsed, rows, runs, models, up, rp, comparison, timings,
                             slo)
    report = _write_report(out, parsed, rows, runs, models, up, rp, comparison, timings, slo)
    show(comparison, console)
    console.print(f"results: {results}\nreport:  {report}")
    return Outcome(rows, comparison, results, report)


def _resolve_slo(s: Any, up: Any, console: Any) -> dict[str, Any]:
    """The SLO's steps in op/s (a ``reference`` schedule times the throughput the
    sweep measured at the clients' share of the quota), set on the session's spec;
    and the premise check's figures."""
    from streamband.swift import training
    from streamband.swift.spec import load

    spec = s.spec
    wl = spec.workload
    info: dict[str, Any] = {"targets": wl.targets, "growth": training.growth(up)}
    if wl.targets == "reference":
        ref_bw = spec.reference_mbps
        ref = training.reference(up, ref_bw)
        data = spec.model_dump()
        data["workload"] = wl.resolved(ref).model_dump()
        data["testbed"].pop("storage_hosts", None)
        s.spec = load(data)
        info.update(reference_mbps=ref_bw, reference_ops=ref,
                    fractions=[r for _, r in wl.schedule])
        console.print(f"SLO reference: {ref:.2f} op/s measured with clients at "
                      f"{ref_bw:g} Mbit/s per node ({wl.reference_user_share:g} of the quota)")
    info["steps_ops"] = [r for _, r in s.spec.workload.schedule]
    g = info["growth"]
    console.print(f"SLO steps: {' -> '.join(f'{r:.2f}' for r in info['steps_ops'])} op/s; "
                  f"sweep: log-log slope {g['slope']:.2f}, top/best {g['top_over_best']:.2f} "
                  f"({'network-bound' if g['ok'] else 'NOT network-bound'})")
    return info


def _idle_usage(cluster: Any, seconds: float = 10.0) -> dict[str, float]:
    """The store's CPU (cores) and memory with no clients and nothing to recover:
    what its replicators and servers cost at rest."""
    before = cluster.usage()
    t = time.monotonic()
    time.sleep(seconds)
    after = cluster.usage()
    return {"cores": (after["cpu_s"] - before["cpu_s"]) / (time.monotonic() - t),
            "rss_mb": after["rss_mb"], "processes": after["processes"]}


def _enforcer(s: Any, spec: Any, out: Path) -> Any:
    from streamband.swift.adapters import MeterPlanEnforcer, TcPlanEnforcer

    lease = spec.control.dt_s * spec.control.lease_dt
    link = spec.testbed.link_mbps * 1e6
    if spec.control.enforcer == "tc":
        return TcPlanEnforcer(s.tb, s.cluster, out / "tc", lease, link)
    from streamband.sdn.client import ControllerClient

    return MeterPlanEnforcer(ControllerClient(spec.testbed.api), s.cluster, lease, link)


def _progress(bar: Any, name: str, duration_s: float) -> Any:
    """A progress bar for one run: the workload, then the recovery tail."""
    task = bar.add_task(f"{name}: workload", total=duration_s)

    def show(t: float, phase: str) -> None:
        if phase == "workload":
            bar.update(task, completed=min(t, duration_s))
        else:
            bar.update(task, completed=duration_s,
                       description=f"{name}: recovery, t = {t:.0f} s")

    return show


def _row(res: Any, repeat: int, wall: float, before: dict[str, float],
         after: dict[str, float]) -> dict[str, Any]:
    return {
        "policy": res.policy, "repeat": repeat,
        **{f"violations_{k}": 100 * v for k, v in res.violations.items()},
        **{f"two_sided_{k}": 100 * v for k, v in res.violations_two_sided.items()},
        "mean_throughput": res.requests["mean_throughput"],
        "late_share": res.requests["late_share"],
        "latency_p50_s": res.requests["latency_p50_s"],
        "latency_p95_s": res.requests["latency_p95_s"],
        "errors": res.requests["errors"],
        "failures": len(res.failures),
        "integrity_min": min((v for _, v in res.integrity), default=math.nan),
        "integrity_final": res.integrity_final,
        "recovered": res.recovered_at is not None and res.integrity_final >= 1.0,
        "recovery_s": res.recovery_s,
        "refits": sum(1 for r in res.refits if not r.get("rejected")),
        "wall_s": wall,
        "store_cpu_cores": (after["cpu_s"] - before["cpu_s"]) / wall,
        "store_rss_mb": after["rss_mb"],
        "store_processes": after["processes"],
    }


def _summary(r: dict[str, Any]) -> str:
    return (f"{r['policy']} #{r['repeat']}: violations 5/10/15 % = "
            f"{r['violations_5%']:.1f} / {r['violations_10%']:.1f} / "
            f"{r['violations_15%']:.1f} %, {r['mean_throughput']:.1f} op/s, "
            f"integrity min {r['integrity_min']:.2f}, recovered "
            f"{'yes' if r['recovered'] else 'NO'} "
            f"({_fmt(r['recovery_s'])} s after the last failure), "
            f"store {r['store_cpu_cores']:.2f} cores, {r['store_rss_mb']:.0f} MB")


def _fmt(x: float | None) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.0f}"


def _median(rows: list[dict[str, Any]], policy: str, key: str) -> float:
    vals = [r[key] for r in rows if r["policy"] == policy and r[key] is not None]
    return statistics.median(vals) if vals else math.nan


def _spread(rows: list[dict[str, Any]], policy: str, key: str) -> str:
    vals = [r[key] for r in rows if r["policy"] == policy and r[key] is not None]
    return f"{min(vals):.1f}-{max(vals):.1f}" if len(vals) > 1 else ""


def compare(rows: list[dict[str, Any]], models: Any = None,
            managed: str = "bwman", growth: dict[str, Any] | None = None) -> Comparison:
    """Table I as measured (median over repeats; spread when repeated) beside 002's,
    and the checks: violations with management <= half of those without at 5 %,
    the scenario contends without management, recovery completes in every managed
    run, both models grow with bandwidth, and (``growth``, from the training sweep)
    002's premise that the network limits the clients (§V)."""
    header = ["SLO tolerance", f"with {managed} %", f"without ({BASELINE}) %",
              "ratio", "paper with %", "paper without %", "paper ratio", "spread with",
              "spread without"]
    table = []
    for tol, paper in PAPER["violations"].items():
        w = _median(rows, managed, f"violations_{tol}")
        wo = _median(rows, BASELINE, f"violations_{tol}")
        table.append([tol, w, wo, w / wo if wo else math.nan, paper["with"],
                      paper["without"], paper["with"] / paper["without"],
                      _spread(rows, managed, f"violations_{tol}"),
                      _spread(rows, BASELINE, f"violations_{tol}")])
    w5 = _median(rows, managed, "violations_5%")
    wo5 = _median(rows, BASELINE, "violations_5%")
    mrows = [r for r in rows if r["policy"] == managed]
    checks = [
        Check(f"SLO violations at 5 % with {managed} <= half of those without "
              "(002 Table I: 19.5 vs 43.2 %)", f"{w5:.1f} vs {wo5:.1f} %",
              bool(wo5 > 0 and w5 <= 0.5 * wo5)),
        Check("the failures contend with the clients: violations at 5 % without "
              "management >= 10 %", f"{wo5:.1f} %", bool(wo5 >= 10.0)),
        Check(f"recovery completes in every {managed} run (integrity back to 100 %)",
              f"{sum(r['recovered'] for r in mrows)} of {len(mrows)} runs; "
              f"{', '.join(_fmt(r['recovery_s']) for r in mrows)} s after the last failure",
              bool(mrows) and all(r["recovered"] for r in mrows)),
    ]
    if models is not None:
        checks.append(Check("both models grow with bandwidth (a1 > 0, eq. 1 and 2)",
                            f"a1 = {models.user.a1:.3f}, {models.recovery.a1:.4f}",
                            models.user.a1 > 0 and models.recovery.a1 > 0))
    if growth is not None:
        from streamband.swift.training import MIN_GROWTH, MIN_TOP

        checks.append(Check(
            "002's premise: the network limits the clients over the training sweep "
            f"(throughput's log-log slope on bandwidth >= {MIN_GROWTH:g}, the top "
            f"point >= {MIN_TOP:.0%} of the best); else the store is CPU-bound and "
            "the comparison is void",
            f"slope {growth['slope']:.2f}, top/best {growth['top_over_best']:.2f}",
            bool(growth["ok"])))
    return Comparison(header, table, checks, title="002 Table I: share of SLO violations")


# -- outputs ------------------------------------------------------------------------


def _write_results(out: Path, spec: Any, rows: list[dict[str, Any]],
                   runs: dict[str, list[Any]], models: Any, up: Any, rp: Any,
                   comparison: Comparison, timings: dict[str, float],
                   slo: dict[str, Any]) -> Path:
    from streamband.report.html import write_json

    return write_json(out / "results.json", {
        "experiment": NAME, "spec": spec.model_dump(), "paper": PAPER, "slo": slo,
        "rows": rows, "comparison": comparison.as_json(), "timings": timings,
        "models": {"user": models.user.as_dict(), "recovery": models.recovery.as_dict()},
        "training": {"user": {"mbps": up.bw, "ops": up.y},
                     "recovery": {"mbps": rp.bw, "mbs": rp.y}},
        "runs": {pol: [r.as_dict() for r in rs] for pol, rs in runs.items()},
    })


def _model_figure(fit_: Any, pts: Any, runs: list[Any], kind: str, ylabel: str) -> Any:
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot(pts.bw, pts.y, "o", label="training sweep")
    online = [(p["bw"], p["y"]) for r in runs for p in _online_points(r, kind)]
    if online:
        ax.plot(*zip(*online, strict=True), ".", alpha=0.4, label="online (managed run)")
    xs = np.linspace(min(pts.bw) * 0.8, max(pts.bw) * 1.1, 100)
    ax.plot(xs, [fit_.predict(x) for x in xs], "-",
            label=f"fit: {fit_.a1:.3g} {'ln(bw)' if fit_.kind == 'log' else 'bw'} "
                  f"{fit_.a2:+.3g} (R² {fit_.r2:.2f})")
    ax.set_xlabel("bandwidth per storage node (Mbit/s)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def _online_points(run: Any, kind: str) -> list[dict[str, float]]:
    out = []
    for st in run.steps:
        plan = st.get("plan")
        if plan is None:
            continue
        had = st.get("had_mbps", {}).get(kind)
        if had is None:  # not a point the loop learned from
            continue
        if kind == "user" and st["saturated"]:
            out.append({"bw": had, "y": st["throughput_ops"]})
        if kind == "recovery" and st["recovering"]:
            out.append({"bw": had, "y": st["recovery_mbs"]})
    return out


def _throughput_figure(spec: Any, runs: dict[str, list[Any]], managed: str) -> Any:
    import matplotlib.pyplot as plt

    pols = [BASELINE, managed]
    fig, axes = plt.subplots(len(pols), 1, figsize=(8, 5.5), sharex=True)
    for ax, pol in zip(axes, pols, strict=True):
        res = runs[pol][0]
        t = [w["t"] + spec.workload.window_s / 2 for w in res.windows]
        ax.plot(t, [w["throughput"] for w in res.windows], "-o", ms=3, label="achieved")
        ax.step([w["t"] for w in res.windows], [w["target"] for w in res.windows],
                where="post", color="k", label="SLO (target)")
        ax.fill_between(t, [w["target"] * 0.95 for w in res.windows],
                        [w["target"] * 1.05 for w in res.windows], color="k", alpha=0.08,
                        label="±5 %")
        for ev in res.failures:
            ax.axvline(ev["t"], color="r", alpha=0.25, lw=1)
        ax.set_ylabel("throughput (op/s)")
        ax.set_title(f"{pol}: {res.violations['5%'] * 100:.1f} % of windows below the SLO "
                     "by > 5 % (red lines: failures)", fontsize=9)
        steps = [s for s in res.steps if s.get("plan")]
        if steps:
            ax2 = ax.twinx()
            ax2.plot([s["t"] for s in steps],
                     [s["plan"]["user_rate_bps"] / 1e6 for s in steps],
                     color="tab:green", alpha=0.6, label="user guarantee")
            ax2.plot([s["t"] for s in steps],
                     [s["plan"].get("recovery_rate_bps", s["plan"]["recovery_bps"]) / 1e6
                      for s in steps], color="tab:purple",
                     alpha=0.6, label="recovery guarantee")
            ax2.set_ylabel("Mbit/s per node")
            ax2.legend(loc="lower right", fontsize=7)
        ax.legend(loc="lower left", fontsize=7)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("time (s)")
    axes[-1].set_xlim(0, spec.workload.duration_s)
    return fig


def _integrity_figure(runs: dict[str, list[Any]], managed: str) -> Any:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.4))
    for pol in (BASELINE, managed):
        res = runs[pol][0]
        if res.integrity:
            ax.plot(*zip(*res.integrity, strict=True), label=f"{pol}: sampled integrity")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("objects with all replicas")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def _write_report(out: Path, spec: Any, rows: list[dict[str, Any]],
                  runs: dict[str, list[Any]], models: Any, up: Any, rp: Any,
                  comparison: Comparison, timings: dict[str, float],
                  slo: dict[str, Any]) -> Path:
    from streamband.report.html import Report

    managed = spec.control.policy
    wl, sw, fs = spec.workload, spec.swift, spec.failures
    r = Report(TITLE, out)
    r.para(
        f"OpenStack Swift on the testbed: 1 proxy (with memcached) and "
        f"{sw.storage_hosts} storage hosts, {sw.replicas} replicas, a client host; every "
        f"storage link shaped at {spec.testbed.link_mbps:g} Mbit/s (each node's bandwidth "
        f"quota, {spec.quota_mbps:g} Mbit/s), proxy and client at "
        f"{spec.testbed.edge_mbps:g} Mbit/s. {sw.objects} objects of {sw.object_kb:g} KB. "
        f"Client: {wl.threads} threads, {wl.read_share:.0%} reads, target rate "
        f"{' -> '.join(f'{r_:g}' for _, r_ in wl.schedule)} op/s (002 Fig. 7: 80 -> 90 -> "
        f"100 op/s for 70 min each; here scaled to the links and to "
        f"{wl.duration_s:g} s), requests queued when no thread is free. Failures: every "
        f"{fs.every_s:g} s from {fs.start_s:g} s, {fs.share:.0%} of a random node's "
        f"replicas deleted. Throughput is counted per {wl.window_s:g} s window; a window "
        f"violates the SLO at tolerance x when it is below (1 - x) x target. Enforcer: "
        f"{spec.control.enforcer}; trade-off: {spec.control.tradeoff}; loop every "
        f"{spec.control.dt_s:g} s.")
    g = slo["growth"]
    ref = (f"The SLO's steps are {', '.join(f'{f:.0%}' for f in slo['fractions'])} of the "
           f"throughput the training sweep measured with clients capped at "
           f"{slo['reference_mbps']:g} Mbit/s per node ({slo['reference_ops']:.2f} op/s): "
           "the top step needs bandwidth taken from recovery. "
           if slo.get("reference_ops") is not None else "The SLO's steps are given in op/s. ")
    r.para(ref + f"Over the sweep, throughput's log-log slope on bandwidth is "
           f"{g['slope']:.2f} (1: the network alone limits the clients, 0: it does not) "
           f"and the top point is {g['top_over_best']:.0%} of the best. The store at rest "
           f"(replicators only): {slo['store_idle']['cores']:.2f} cores, "
           f"{slo['store_idle']['rss_mb']:.0f} MB.")
    r.heading("002 Table I: share of SLO violations")
    r.table(comparison.header, comparison.rows)
    r.table(["check", "measured", "ok"], [[c.what, c.measured, c.ok] for c in comparison.checks])
    r.heading("Runs")
    keys = ["policy", "repeat", "violations_5%", "violations_10%", "violations_15%",
            "two_sided_5%", "mean_throughput", "late_share", "latency_p50_s", "latency_p95_s",
            "integrity_min", "recovered", "recovery_s", "refits", "store_cpu_cores",
            "store_rss_mb"]
    r.table(keys, [[row[k] if row[k] is not None else "-" for k in keys] for row in rows])
    r.heading("The models (002 §III), fitted on this store")
    r.table(["model", "a1", "a2", "R²", "points", "paper a1", "paper a2"], [
        ["eq. (1) throughput [op/s] = a1 bw + a2", models.user.a1, models.user.a2,
         models.user.r2, models.user.n, PAPER["models"]["user"]["a1"],
         PAPER["models"]["user"]["a2"]],
        ["eq. (2) recovery [MB/s] = a1 ln(bw) + a2", models.recovery.a1, models.recovery.a2,
         models.recovery.r2, models.recovery.n, PAPER["models"]["recovery"]["a1"],
         PAPER["models"]["recovery"]["a2"]]])
    r.para("bw in Mbit/s per storage node here; 002 gives neither the unit of its "
           "bandwidth axis nor its data, so only the forms compare.")
    mruns = runs.get(managed, [])
    r.figure(_model_figure(models.user, up, mruns, "user", "throughput (op/s)"), "fig1-user",
             "Fig. 1: throughput against the user bandwidth of every storage node")
    r.figure(_model_figure(models.recovery, rp, mruns, "recovery", "recovery speed (MB/s)"),
             "fig2-recovery",
             "Fig. 2: recovery speed against the recovery bandwidth of every storage node")
    if runs.get(BASELINE) and mruns:
        r.figure(_throughput_figure(spec, runs, managed), "fig7-8-throughput",
                 "Fig. 7-8: throughput against the SLO, without and with management")
        r.figure(_integrity_figure(runs, managed), "fig6-integrity",
                 "Fig. 6: sampled data integrity (share of objects with all replicas)")
    refits = [x for res in mruns for x in res.refits]
    if refits:
        r.heading("Online refits")
        keys = ["t", "model", "error", "points", "a1", "a2", "r2", "rejected"]
        r.table(keys, [[x.get(k, "") for k in keys] for x in refits])
    r.heading("Timings")
    r.table(["what", "s"], [[k, v] for k, v in timings.items()])
    return r.write()
