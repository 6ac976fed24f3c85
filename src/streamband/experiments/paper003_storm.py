"""Paper 003 on Apache Storm (003 §4.4, Fig. 13): throughput and locality over time,
hash vs offline vs online, with the reconfiguration protocol live.

003's keyed chain (:mod:`streamband.storm.chain`) on a star of worker hosts
(one worker per host holding instance i of S, A and B: 003 §4.1) runs the stable
synthetic workload of 003 §4.2 (a ``locality`` share of key pairs correlated) unpaced,
so that throughput is what the network lets through: A pads what it sends to B, the
hosts' links are thin. Each routing policy runs on its own topology for ``seconds``:
``hash`` (no manager), ``offline`` (one reconfiguration after ``period_s``), ``online``
(one every ``period_s``). The sink's per-second throughput and A -> B locality (per
half second, from the instances' counters of local and remote input) give Fig. 13's
timeline; the manager's log and the instances' reports give every reconfiguration's
time and buffered-tuple peak.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from rich.console import Console
from rich.progress import Progress

from streamband.errors import OptionError, PreconditionError
from streamband.experiments.base import Check, Comparison, Options, Outcome
from streamband.experiments.base import show as show_comparison
from streamband.locality.timeline import run_timeline
from streamband.locality.workloads import synthetic
from streamband.report.html import Report, write_json
from streamband.storm.chain import (
    POLICIES,
    ChainRun,
    ChainSpec,
    reconfiguration_stats,
    timeline,
    write_workload,
)

#: the run's settings (003 §4.4 used 6 servers, parallelism 6, 10-minute periods over
#: 30 minutes; here seconds, on Mininet hosts sharing two cores)
STORM: dict[str, Any] = {
    "hosts": 6, "link_mbps": 10.0, "parallelism": 6, "padding": 16384, "locality": 0.8,
    "keys_per_group": 200, "tuples": 400_000, "seconds": 90.0, "period_s": 30.0,
    "max_pending": 100, "memory_bytes": 1 << 20, "warmup_s": 20.0,
}
#: throughput and locality are compared from this many seconds after a reconfiguration
SETTLE_S = 5.0


def run(out: Path, opts: Options, console: Console) -> Outcome:
    import os

    from streamband.model.testbed import load_spec
    from streamband.sdn.client import ControllerClient
    from streamband.storm.cluster import StormCluster, testbed_spec
    from streamband.testbed.network import Testbed

    if os.geteuid() != 0:
        raise PreconditionError("--backend storm: needs root (the testbed's namespaces)")
    if opts.repeat < 1:
        raise OptionError(f"--repeat: expected >= 1, got {opts.repeat}")
    p = dict(STORM)
    if opts.seconds is not None:
        if opts.seconds < 30:
            raise OptionError(f"--seconds: expected >= 30 (a reconfiguration needs a period "
                              f"of statistics first), got {opts.seconds:g}")
        p["seconds"] = float(opts.seconds)
        p["period_s"] = float(opts.seconds) / 3
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    syn = synthetic(p["hosts"], p["locality"], p["tuples"], p["keys_per_group"], seed=0)
    workload = write_workload(out / "workload.tsv", syn.a, syn.b)
    spec = ChainSpec(parallelism=p["parallelism"], sources=p["parallelism"],
                     padding=p["padding"], max_pending=p["max_pending"],
                     memory_bytes=p["memory_bytes"], period_s=p["period_s"],
                     first_s=p["period_s"], warmup_s=p["warmup_s"])
    tb = Testbed(load_spec({"topology": "star", "hosts": p["hosts"], "master": True,
                            "link_mbps": p["link_mbps"]}), log_dir=out / "testbed")
    cluster = None
    runs: list[dict[str, Any]] = []
    sim: dict[str, Any] = {}
    try:
        with Progress(console=console) as prog:
            st = prog.add_task("simulator timeline (protocol running)", total=len(POLICIES))
            for pol in POLICIES:
                sim[pol] = run_timeline(pol, syn.a, syn.b, p["hosts"], p["padding"],
                                        p["link_mbps"] * 1e6, p["seconds"],
                                        p["period_s"]).as_json()
                prog.advance(st)
            task = prog.add_task("testbed and Storm cluster", total=None)
            tb.start()
            ControllerClient(tb.spec.api).wait_ready(1)
            hosts_ = [h for h in tb.topo.hosts if h != "master"]
            cluster = StormCluster(testbed_spec(tb.state(), out / "cluster", "master",
                                                hosts_)).start()
            ips = [tb.ip(h) for h in hosts_]
            prog.update(task, total=opts.repeat * len(POLICIES), completed=0,
                        description="keyed chain runs")
            for rep in range(opts.repeat):
                order = POLICIES if rep % 2 == 0 else POLICIES[::-1]
                for policy in order:
                    prog.update(task, description=f"{policy}, repetition {rep + 1}")
                    runs.append(_one(cluster, spec, policy, rep, workload, out, ips,
                                     p["seconds"]))
                    prog.advance(task)
    finally:
        if cluster is not None:
            cluster.stop()
        tb.stop()
    sim_runs = [{"policy": pol, "repetition": 0, "timeline": tl,
                 "reconfigurations": {"per_epoch": [{"round_s": r} for r in tl["round_s"]]},
                 "failed": 0, "errors": 0, "grouping_mismatches": 0, "sink_count": 0}
                for pol, tl in sim.items()]
    res = {"paper": "003", "backend": "storm", "params": p, "runs": runs,
           "summary": summary(runs, p), "sim": sim, "sim_summary": summary(sim_runs, p)}
    cmp = compare(res)
    res["comparison"] = cmp.as_json()
    write_json(out / "results.json", res)
    path = report(res, out, cmp)
    show_comparison(cmp, console)
    console.print(f"results: {out / 'results.json'}\nreport:  {path}")
    return Outcome(runs, cmp, out / "results.json", path)


def _one(cluster: Any, spec: ChainSpec, policy: str, rep: int, workload: Path, out: Path,
         ips: list[str], seconds: float) -> dict[str, Any]:
    name = f"chain-{policy}-{rep}"
    run = ChainRun(cluster, name, spec, policy, workload, out / name, ips)
    try:
        run.start()
        end = run.t_flowing + seconds
        while time.time() < end:
            run.sample()
            time.sleep(0.5)
        time.sleep(1.5)  # the last reports
        run.sample()
        sink, rounds, epochs = run.sink(), run.rounds(), run.instance_epochs()
        reports = run.instance_reports()
    finally:
        run.stop()
        time.sleep(5)  # the killed topology's workers leave the hosts' CPUs
    t0 = run.t_flowing
    tl = timeline(run.samples, {s: c for s, c in sink["per_second"].items()
                                if s - t0 < seconds}, rounds, t0)
    last = run.samples[-1]
    return {"policy": policy, "repetition": rep, "timeline": tl,
            "reconfigurations": reconfiguration_stats(rounds, epochs),
            "failed": last.failed, "errors": last.errors,
            "grouping_mismatches": max((r.get("grouping_mismatches", 0)
                                        for r in reports.values()), default=0),
            "sink_count": sink["count"]}


def _window(t: list[float], v: list[float], lo: float, hi: float) -> float:
    xs = [x for s, x in zip(t, v, strict=True) if lo <= s < hi]
    return float(np.mean(xs)) if xs else float("nan")


def summary(runs: list[dict[str, Any]], p: dict[str, Any]) -> dict[str, Any]:
    """Per policy (median over repetitions): throughput and locality before the first
    reconfiguration (from 5 s on) and after it (from ``SETTLE_S`` later), and per
    reconfiguration p50/p99 of its time and buffered-tuple peaks."""
    end = p["seconds"]
    firsts = [r["timeline"]["reconfigurations_t"][0] for r in runs
              if r["timeline"]["reconfigurations_t"]]
    # hash has no reconfiguration: its windows split where the others' first one fell
    typical = float(np.median(firsts)) if firsts else p["period_s"]
    out: dict[str, Any] = {}
    for pol in POLICIES:
        rs = [r for r in runs if r["policy"] == pol]
        if not rs:
            continue
        row: dict[str, Any] = {}
        for key, tk in (("throughput", "throughput_t"), ("locality", "locality_t")):
            before, after = [], []
            for r in rs:
                tl = r["timeline"]
                first = tl["reconfigurations_t"][0] if tl["reconfigurations_t"] else typical
                before.append(_window(tl[tk], tl[key], 5.0, first))
                after.append(_window(tl[tk], tl[key], first + SETTLE_S, end))
            row[f"{key}_before"] = float(np.median(before))
            row[f"{key}_after"] = float(np.median(after))
            row[f"{key}_after_spread"] = [float(min(after)), float(max(after))]
        per = [e for r in rs for e in r["reconfigurations"]["per_epoch"]]
        row["reconfigurations"] = len(per)
        if per:
            for k in ("propagate_to_done_s", "state_wait_max_s", "buffered_peak",
                      "moved_keys", "round_s"):
                xs = [e[k] for e in per if k in e]
                if xs:
                    row[k] = {"p50": float(np.percentile(xs, 50)),
                              "p99": float(np.percentile(xs, 99)), "max": float(max(xs))}
        row["failed"] = int(sum(r["failed"] for r in rs))
        row["errors"] = int(sum(r["errors"] for r in rs))
        row["grouping_mismatches"] = int(max(r["grouping_mismatches"] for r in rs))
        out[pol] = row
    return out


def rose_above_hash(what: str, on: dict[str, Any], h: dict[str, Any]) -> Check:
    """003 Fig. 13: throughput and locality after the first reconfiguration above hash's."""
    return Check(f"{what}: throughput and locality after the first reconfiguration > hash's",
                 f"{on['throughput_after']:.0f} vs {h['throughput_after']:.0f} tuples/s, "
                 f"{on['locality_after']:.3f} vs {h['locality_after']:.3f}",
                 on["throughput_after"] > h["throughput_after"]
                 and on["locality_after"] > h["locality_after"])


def compare(res: dict[str, Any]) -> Comparison:
    """003 Fig. 13: after the first reconfiguration, throughput and locality above
    hash's; the protocol ran clean (no failed tuple, no protocol error, the grouping
    always agreed with the instances' tables)."""
    s = res["summary"]
    h = s["hash"]
    rows, checks = [], []
    for pol in POLICIES:
        r = s[pol]
        rows.append([pol, r["throughput_before"], r["throughput_after"],
                     r["locality_before"], r["locality_after"], r["reconfigurations"]])
    for pol in ("offline", "online"):
        r = s[pol]
        checks.append(Check(f"{pol}: throughput after the first reconfiguration > hash's",
                            f"{r['throughput_after']:.0f} vs {h['throughput_after']:.0f} "
                            f"tuples/s", r["throughput_after"] > h["throughput_after"]))
        checks.append(Check(f"{pol}: A -> B locality after the first reconfiguration > "
                            f"hash's", f"{r['locality_after']:.3f} vs {h['locality_after']:.3f}",
                            r["locality_after"] > h["locality_after"]))
        checks.append(Check(f"{pol}: reconfigured at least once", str(r["reconfigurations"]),
                            r["reconfigurations"] >= 1))
    for pol in POLICIES:
        r = s[pol]
        checks.append(Check(f"{pol}: no failed tuple, no protocol error, grouping = tables",
                            f"{r['failed']}, {r['errors']}, {r['grouping_mismatches']}",
                            r["failed"] == 0 and r["errors"] == 0
                            and r["grouping_mismatches"] == 0))
    ss = res["sim_summary"]
    for pol in POLICIES:
        r = ss[pol]
        rows.append([f"{pol} (simulator)", r["throughput_before"], r["throughput_after"],
                     r["locality_before"], r["locality_after"], r["reconfigurations"]])
    checks.append(rose_above_hash("simulator, online", ss["online"], ss["hash"]))
    gain = s["online"]["throughput_after"] / h["throughput_after"]
    sim_gain = ss["online"]["throughput_after"] / ss["hash"]["throughput_after"]
    notes = [f"Online / hash throughput after the first reconfiguration: x{gain:.2f} on Storm, "
             f"x{sim_gain:.2f} on the simulator (003 Fig. 13 shows up to about x2 on Storm at "
             f"1 and 10 Gbit/s; here the hosts' links are {res['params']['link_mbps']:g} "
             f"Mbit/s and the tuples {res['params']['padding'] // 1024} KB). The simulator "
             f"runs the same protocol in-process (streamband.locality.timeline); its "
             f"throughput is the max-min network model's, without Storm's CPU costs."]
    return Comparison(["routing", "tuples/s before", "tuples/s after", "locality before",
                       "locality after", "reconfigurations"], rows, checks,
                      title="003 Fig. 13 on Storm: before and after the first reconfiguration",
                      notes=notes)


def report(res: dict[str, Any], out: Path, cmp: Comparison) -> Path:
    p = res["params"]
    rep = Report("paper 003 on Apache Storm (Fig. 13)", out)
    rep.para(f"003's keyed chain S -> A -> B -> sink on {p['hosts']} Mininet hosts "
             f"({p['link_mbps']:g} Mbit/s links), parallelism {p['parallelism']}, A pads "
             f"{p['padding']} bytes per tuple to B, the synthetic workload of 003 §4.2 with "
             f"locality {p['locality']:.0%}, unpaced (at most {p['max_pending']} un-acked "
             f"tuples per source). A reconfiguration every {p['period_s']:g} s (online) or "
             f"once (offline); runs of {p['seconds']:g} s.")
    rep.heading(cmp.title)
    rep.table(cmp.header, [[round(v, 3) if isinstance(v, float) else v for v in r]
                           for r in cmp.rows])
    for n in cmp.notes:
        rep.para(n)
    colors = {"hash": "tab:gray", "offline": "tab:blue", "online": "tab:red"}
    fig, axes = plt.subplots(2, 2, figsize=(14, 7), sharex=True)
    sim_runs = [{"policy": pol, "repetition": 0, "timeline": tl}
                for pol, tl in res["sim"].items()]
    for col, (rs, smooth, where) in enumerate(
            ((res["runs"], 3, "Storm on the testbed"), (sim_runs, 1, "simulator"))):
        a1, a2 = axes[0][col], axes[1][col]
        for r in rs:
            tl, pol = r["timeline"], r["policy"]
            lab = pol if r["repetition"] == 0 else None
            thr = np.convolve(tl["throughput"], np.ones(smooth) / smooth, mode="same")
            a1.plot(tl["throughput_t"], thr, color=colors[pol], label=lab, alpha=0.8)
            a2.plot(tl["locality_t"], tl["locality"], color=colors[pol], label=lab, alpha=0.8)
            for t in tl["reconfigurations_t"]:
                for ax in (a1, a2):
                    ax.axvline(t, color=colors[pol], ls=":", lw=0.8)
        a1.set_title(where, fontsize=10)
        a1.set_ylabel("throughput (tuples/s" + (", 3 s mean)" if smooth > 1 else ")"))
        a2.set_ylabel("A -> B locality")
        a2.set_xlabel("seconds since the stream started")
        a1.legend()
    rep.heading("Throughput and locality over time (dotted: reconfigurations applied)")
    rep.figure(fig, "fig13_storm_timeline")
    rep.heading("Reconfigurations (p50 / p99 / max over all applied)")
    rows = []
    for pol in ("offline", "online"):
        r = res["summary"][pol]
        for k in ("propagate_to_done_s", "state_wait_max_s", "buffered_peak", "moved_keys"):
            if k in r:
                rows.append([pol, k, round(r[k]["p50"], 3), round(r[k]["p99"], 3),
                             round(r[k]["max"], 3)])
    for pol in ("offline", "online"):
        tl = res["sim"][pol]
        if tl["round_s"]:
            rows.append([f"{pol} (simulator)", "round_s (① to last DONE)",
                         round(float(np.percentile(tl["round_s"], 50)), 3),
                         round(float(np.percentile(tl["round_s"], 99)), 3),
                         round(max(tl["round_s"]), 3)])
            rows.append([f"{pol} (simulator)", "buffered_peak (whole run)", "", "",
                         tl["buffered_peak"]])
    rep.table(["routing", "figure", "p50", "p99", "max"], rows)
    rep.heading("Checks")
    rep.table(["check", "measured", "ok"], [[c.what, c.measured, c.ok] for c in cmp.checks])
    return rep.write()
