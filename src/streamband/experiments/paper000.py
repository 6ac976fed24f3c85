"""Paper 000: app-aware bandwidth allocation for stream analytics (TT, TI).

Trending Topics (TT) and Trucking IoT (TI) of 000 §VI on 8 workers: ``edge`` is a
star whose host links are the bottleneck; ``multihop`` is the two-tier network of 000
Fig. 2 with 1 Gbit/s host links and the internal links throttled. App-aware (000
Algorithm 1) against TCP at 10/15/20 Mbit/s: throughput, latency, utilisation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from streamband.backends import backend
from streamband.experiments.base import (
    Check,
    Comparison,
    Options,
    Outcome,
    distance,
    publish,
    spread,
    with_options,
)
from streamband.experiments.runner import execute
from streamband.model.spec import ExperimentSpec, load_spec
from streamband.report.html import Report
from streamband.report.paper import add_vs_paper

NAME = "paper-000"
TITLE = "paper 000: app-aware bandwidth allocation (TT, TI)"
BACKENDS = ("sim", "storm", "flink")
SPECS = {"TT": "paper-000-tt", "TI": "paper-000-ti"}

#: 000 §VI-B, Fig. 8 and 9: App-aware's throughput gain over TCP (%)
PAPER_GAIN = {
    ("TT", "edge"): {10: 25.0, 15: 27.0, 20: 15.0},
    ("TI", "edge"): {10: 30.93, 15: 30.27, 20: 30.80},
    ("TT", "multihop"): {10: 19.21, 15: 19.52, 20: 15.69},
    ("TI", "multihop"): {10: 22.09, 15: 23.09, 20: 23.98},
}
#: 000 §VI-B, Fig. 10 and 11: App-aware's latency change against TCP (%)
PAPER_LATENCY = {
    ("TT", "edge"): {10: -14.27, 15: -26.24, 20: -50.17},
    ("TI", "edge"): {10: -5.72, 15: -10.10, 20: -17.28},
    ("TT", "multihop"): {10: -11.20, 15: -15.90, 20: -60.89},
}
#: Storm: tuples scaled down, bytes up (:func:`streamband.storm.workloads.scale_tuples`),
#: per app: the spec's TT is 13,000 tuple deliveries/s (1000 tweets of 10 words, a
#: partial per 5 words) across 10 single-executor workers, more than 2 cores process, so
#: unscaled no link would be loaded. TI is 1,000/s of 5-20 KB.
STORM_TUPLE_SCALE = {"trending-topics": 10.0, "trucking-iot": 2.0}
#: Storm fed by Kafka: a spout deserialises every record it reads and, open loop, reads
#: as fast as its core lets it, so TI's truck events go in fewer, larger records (at 2 the
#: truck spouts could not fill their share of a 20 Mbit/s link; at 4 TI's gains at 15 and
#: 20 Mbit/s stayed within its windows' spread)
STORM_KAFKA_TUPLE_SCALE = {**STORM_TUPLE_SCALE, "trucking-iot": 8.0}
#: Storm: ``topology.max.spout.pending`` of this bench (about 2 s of a spout task's
#: tuples at the scaled rates; the backend's 1000 held 20-40 s in flight)
STORM_MAX_PENDING = 100
#: Storm: seconds from placing a topology to its first window (JVMs of 10 workers start
#: and JIT on 2 cores, which takes longer than 30 s)
STORM_WARMUP_S = 60.0
#: the policy under test per backend. On Storm, TT's aggregator and TI's combiner keep
#: the tuples they wait with in their own event-time store, not in the receive queues the
#: profiler reads (L^r = 0), so plain problem (4) repeats the last step's split on their
#: downlinks; the stores report each input's event time and its bytes per event-second,
#: and ``appaware-store`` reads problem (4) in event time there. On the simulator both
#: give the same gains.
UNDER_TEST = {"sim": "appaware", "storm": "appaware-store"}
#: Kafka-fed engines: as :data:`UNDER_TEST` on Storm; Flink's reporter gives no event
#: time, and there eq. (3) splits the joins' downlinks by the senders' backlogs (the
#: sources' unread records, the word counters' queues)
UNDER_TEST_KAFKA = {"storm": "appaware-store", "sim": "appaware", "flink": "appaware-store"}
#: Kafka-fed engines: the rates as per-flow HTB classes at the bottleneck ports
#: (:mod:`streamband.sdn.shaper`), not meters: a meter drops what is above a flow's rate
#: and each drop halves TCP's window, so the metered word counters carried 70-90 % of
#: their caps and the aggregator's downlink fewer bytes than under TCP
KAFKA_ENFORCE = "shaper"
#: the smallest throughput gain over tcp that counts as app-aware doing its job
MIN_GAIN_PCT = 10.0
#: issue 33, Kafka-fed Storm at 10/15/20 Mbit/s (edge): app-aware's paired gain over TCP
#: (000 measured TI +31/+30/+31 %, TT +25/+27/+15 %)
KAFKA_MIN_GAIN = {"TI": 20.0, "TT": 10.0}
#: issue 34, Kafka-fed Flink at 10/15/20 Mbit/s (edge): app-aware at least TCP's
#: throughput in every configuration (%)
FLINK_MIN_GAIN = 0.0
#: issue 33, spout-fed (closed-loop) Storm: checked only where TCP's throttled links run at
#: least this full (elsewhere the network is not what limits the topology) ...
CLOSED_TCP_UTIL = 0.9
#: ... and there app-aware may be no more than 2 % below TCP (%), as paper-001 on Storm
CLOSED_MAX_LOSS = -2.0
#: records a Kafka spout polls at once (Kafka's consumer default ``max.poll.records``)
KAFKA_POLL_RECORDS = 500
#: seconds between two reports of a join's store (the engines' flow reporters sample
#: every second): a lag read at a window's start or end may be this old
STORE_REPORT_S = 1.0
#: Kafka-fed Storm: seconds of each window's warm-up under its policy, after the fresh
#: topology's spouts report and its producer starts (JIT, the first caps)
STORM_KAFKA_WARMUP_S = 20.0
#: why rows can be more than 2x off the paper
REASON = ("the fluid model has no CPU, no TCP inefficiency under meters and exact "
          "enforcement; TT's gain is set by the Zipf skew of words over 4 WCT instances "
          "(4 x max share = 1.41 when every flow into the aggregator is saturated), which "
          "does not shrink with bandwidth as 000's Storm measurement does")
LEGEND = {
    "gain %": "throughput gain of the policy under test over tcp (same app, network, Mbit/s)",
    "vs paper": "measured gain - 000's gain (percentage points)",
    "2x off": "the measured gain is more than 2x (or under half) the paper's",
    "latency change %": "mean event-time latency against tcp's",
    "util": "utilisation of the tcp run's bottleneck links under the policy under test",
}


def specs(opts: Options) -> list[ExperimentSpec]:
    """TT's and TI's specs with the bench options applied."""
    return [with_options(load_spec(name), opts) for name in SPECS.values()]


def _by(rows: Sequence[dict], **match: object) -> list[dict]:
    return [r for r in rows if all(r.get(k) == v for k, v in match.items())]


def compare(rows: Sequence[dict], short: dict[str, str], policy: str = "appaware"
            ) -> Comparison:
    """000 Fig. 8-12: ``policy`` (app-aware) against tcp per app, network, bandwidth."""
    table, checks, flagged = [], [], []
    for app in dict.fromkeys(r["app"] for r in rows):
        tag = short.get(app, app)
        for net in dict.fromkeys(r["network"] for r in _by(rows, app=app)):
            for bw in sorted({r["bandwidth_mbps"] for r in _by(rows, app=app, network=net)}):
                tcp = _by(rows, app=app, network=net, bandwidth_mbps=bw, policy="tcp")[0]
                aa = _by(rows, app=app, network=net, bandwidth_mbps=bw, policy=policy)[0]
                gain = 100.0 * (aa["throughput_tps"] / tcp["throughput_tps"] - 1.0)
                lat = 100.0 * (aa["latency_s"] / tcp["latency_s"] - 1.0)
                pg = PAPER_GAIN.get((tag, net), {}).get(int(bw), float("nan"))
                pl = PAPER_LATENCY.get((tag, net), {}).get(int(bw), float("nan"))
                delta, off = distance(gain, pg)
                util = aa["link_utilization"]
                table.append([tag, net, bw, tcp["throughput_tps"], aa["throughput_tps"], gain,
                              pg, delta, "yes" if off else "", lat, pl,
                              util if util is not None else float("nan")])
                if off:
                    flagged.append(f"{tag} {net} {bw:g}")
                where = f"{tag} {net} {bw:g} Mbit/s"
                checks.append(Check(f"{where}: {policy} throughput >= tcp + {MIN_GAIN_PCT:g} %",
                                    f"{gain:+.1f} %", gain >= MIN_GAIN_PCT))
                checks.append(Check(f"{where}: {policy} latency <= tcp", f"{lat:+.1f} %",
                                    aa["latency_s"] <= tcp["latency_s"] * 1.005))
                if util is not None:
                    checks.append(Check(f"{where}: {policy} bottleneck utilisation >= 0.97",
                                        f"{util:.3f}", util >= 0.97))
    header = ["app", "network", "Mbit/s", "tcp tuples/s", f"{policy} tuples/s", "gain %",
              "paper gain %", "vs paper", "2x off", "latency change %",
              "paper latency change %", "util"]
    notes = ([f"More than 2x off the paper: {', '.join(flagged)}. Why: {REASON}."]
             if flagged else [])
    return Comparison(header, table, checks, legend=LEGEND, notes=notes)


def compare_backends(real: Sequence[dict], sim: Sequence[dict], short: dict[str, str],
                     policy: str = "appaware", backend: str = "storm") -> Comparison:
    """Per app, network and bandwidth: ``policy``'s gain and latency change against tcp
    on a real backend (medians over repetitions, and the median of the paired gains),
    beside the simulator's and 000's; Kafka-fed runs also give each topic's backlog
    growth.

    Checks (every threshold from issue 33, none from the run it judges):

    - Kafka-fed (open loop, independent sources): the median paired gain at least
      :data:`KAFKA_MIN_GAIN` (TI 20 %, TT 10 %; on Flink :data:`FLINK_MIN_GAIN`, issue
      34), the median latency lower, and, on Storm, where a join has inputs from two
      topics, the lagging stream falling further behind the other under tcp and not
      under the policy: when the sources offer more than the links carry every topic's
      backlog grows, so what the join needs is that its inputs progress together in event
      time. Measured where the join sees it, its store's lag of each input behind the
      newest (:func:`join_lag_growth`, :func:`join_lag_bound`), where the rows carry it
      (a source that reads ahead keeps its backlog in the engine's queues and the join's
      store, not in Kafka); else as the topics' backlogs in time (:func:`skew_growth`,
      :func:`skew_bound`). On Flink that growth is reported in the table and its bound
      in a note, not checked;
    - spout-fed (closed loop, Storm's back-pressure splits the link as the join needs):
      only where tcp's throttled links run at least :data:`CLOSED_TCP_UTIL` full, the
      policy no more than :data:`CLOSED_MAX_LOSS` below tcp and its latency lower;
    - everywhere: the manager loop ran without an error (a policy whose steps raise
      falls back to plain TCP and would be judged as if it had run).
    """
    from statistics import median

    def med(rows: Sequence[dict], key: str, **m: object) -> float:
        vals = [r[key] for r in _by(rows, **m) if r.get(key) is not None]
        return median(vals) if vals else float("nan")

    kafka = any(r.get("source") == "kafka" for r in real)
    table, checks, skews = [], [], []
    for app in dict.fromkeys(r["app"] for r in real):
        tag = short.get(app, app)
        for net in dict.fromkeys(r["network"] for r in _by(real, app=app)):
            for bw in sorted({r["bandwidth_mbps"] for r in _by(real, app=app, network=net)}):
                at = {"app": app, "network": net, "bandwidth_mbps": bw}
                t_tcp, t_aa = (med(real, "throughput_tps", policy=p, **at)
                               for p in ("tcp", policy))
                l_tcp, l_aa = (med(real, "latency_s", policy=p, **at) for p in ("tcp", policy))
                s_tcp, s_aa = (med(sim, "throughput_tps", policy=p, **at)
                               for p in ("tcp", policy))
                sl_tcp, sl_aa = (med(sim, "latency_s", policy=p, **at) for p in ("tcp", policy))
                gain, lat = _change(t_aa, t_tcp), _change(l_aa, l_tcp)
                pg = PAPER_GAIN.get((tag, net), {}).get(int(bw), float("nan"))
                pl = PAPER_LATENCY.get((tag, net), {}).get(int(bw), float("nan"))
                paired = paired_gains(_by(real, **at), policy)
                pgain = median(paired) if paired else float("nan")
                tps = {p: [r["throughput_tps"] for r in _by(real, policy=p, **at)]
                       for p in ("tcp", policy)}
                util_tcp = med(real, "link_utilization", policy="tcp", **at)
                lagging, growth = skew_growth(real, policy, **at) if kafka else ("", {})
                # where two topics meet in a join that reports its inputs' event time
                behind, jgrowth = join_lag_growth(real, policy, **at) if lagging else ("", {})
                table.append([tag, net, bw, t_tcp, spread(tps["tcp"]), t_aa,
                              spread(tps[policy]), gain, pgain,
                              _change(s_aa, s_tcp), pg, lat, _change(sl_aa, sl_tcp), pl,
                              med(real, "link_utilization", policy=policy, **at), util_tcp]
                             + ([lagging, growth.get("tcp", float("nan")),
                                 growth.get(policy, float("nan")), behind,
                                 jgrowth.get("tcp", float("nan")),
                                 jgrowth.get(policy, float("nan"))] if kafka else []))
                where = f"{tag} {net} {bw:g} Mbit/s"
                if kafka:
                    need, issue = ((FLINK_MIN_GAIN, 34) if backend == "flink"
                                   else (KAFKA_MIN_GAIN.get(tag, 0.0), 33))
                    checks.append(Check(f"{where}: {policy} paired gain >= +{need:g} % on "
                                        f"{backend}, Kafka-fed (issue {issue})",
                                        f"{pgain:+.1f} %",
                                        math.isfinite(pgain) and pgain >= need))
                    checks.append(Check(f"{where}: {policy} latency below tcp's on {backend}",
                                        f"{lat:+.1f} %", math.isfinite(lat) and lat < 0.0))
                    # the lagging stream's lag where the join sees it (its store's event
                    # time), else as the two topics' backlogs in time
                    lag_of, grown, at_join = ((behind, jgrowth, " at the join") if behind
                                              else (lagging, growth, ""))
                    bound = ((join_lag_bound if behind else skew_bound)(real, **at)
                             if lag_of else math.nan)
                    if lag_of and backend == "flink":
                        skews.append(f"{where} {bound:.3f} s/s{at_join}")
                    elif lag_of:  # a join of two topics (TT reads one)
                        checks.append(Check(
                            f"{where}: {lag_of} falls further behind{at_join} under tcp (> "
                            f"{bound:.3f} s/s) and not under {policy}",
                            f"tcp {grown.get('tcp', float('nan')):+.3f}, {policy} "
                            f"{grown.get(policy, float('nan')):+.3f} s/s",
                            grown.get("tcp", -math.inf) > bound
                            >= grown.get(policy, math.inf)))
                elif math.isfinite(util_tcp) and util_tcp >= CLOSED_TCP_UTIL:
                    checks.append(Check(f"{where}: {policy} throughput no more than "
                                        f"{-CLOSED_MAX_LOSS:g} % below tcp on {backend} "
                                        "(issue 33, closed loop)", f"{gain:+.1f} %",
                                        math.isfinite(gain) and gain >= CLOSED_MAX_LOSS))
                    checks.append(Check(f"{where}: {policy} latency below tcp's on {backend}",
                                        f"{lat:+.1f} %", math.isfinite(lat) and lat < 0.0))
    errors = [e for r in real for e in (r.get("loop_errors") or [])]
    checks.append(Check(f"the manager loop ran without errors on {backend}",
                        f"{len(errors)} errors" + (f": {errors[0]}" if errors else ""),
                        not errors))
    header = ["app", "network", "Mbit/s", f"{backend} tcp tuples/s", "tcp spread",
              f"{backend} {policy} tuples/s", f"{policy} spread", f"{backend} gain %",
              "paired gain %", "sim gain %", "paper gain %",
              f"{backend} latency change %", "sim latency change %", "paper latency change %",
              f"{backend} util", "tcp util"] + (
        ["lagging stream", "tcp skew growth s/s", f"{policy} skew growth s/s",
         "behind at the join", "tcp join lag growth s/s", f"{policy} join lag growth s/s"]
        if kafka else [])
    legend = {f"{backend} gain %": "median throughput over the repetitions against tcp's",
              "tcp spread": "min-max tuples/s of tcp's windows",
              f"{policy} spread": f"min-max tuples/s of {policy}'s windows",
              "paired gain %": f"median over the repetitions of {policy}'s window against "
                               "the tcp window of the same repetition (next to each other in "
                               "time)",
              f"{backend} latency change %": "median mean event-time latency against tcp's",
              f"{backend} util": f"utilisation of the bottleneck links under {policy}",
              "tcp util": "utilisation of the bottleneck links under tcp"}
    if kafka:
        legend.update({
            "lagging stream": "of a join's two topics, the one that fell further behind the "
                              "other under tcp",
            "tcp skew growth s/s": "median growth over the window of how much further "
                                   "behind its producer (Kafka backlog over arrival rate, "
                                   "s) that topic is than the other, per second, under tcp",
            f"{policy} skew growth s/s": f"the same under {policy}",
            "behind at the join": "of the join's inputs, the one whose event time fell "
                                  "furthest behind the other's in the join's store under tcp",
            "tcp join lag growth s/s": "median growth over the window of how far that "
                                       "input's event time is behind the join's newest "
                                       "input, per second, under tcp (from the store's "
                                       "reports at the window's start and end)",
            f"{policy} join lag growth s/s": f"the same under {policy}"})
    # issue 34 asks Flink for throughput and latency only: a lag check would judge it by a
    # criterion of issue 33's, so its skew is reported beside the bound, not checked
    notes = ([f"On flink the lagging stream's lag growth is reported, not checked: issue 34 "
              "does not ask for it. The bound Storm's check holds it to (issue 33): "
              f"{', '.join(skews)}."] if skews else [])
    return Comparison(header, table, checks, title=f"{backend} against simulator and paper",
                      legend=legend, notes=notes)


def _change(new: float, base: float) -> float:
    """``new`` against ``base``, % (NaN when either is missing or ``base`` is 0)."""
    if not (math.isfinite(new) and math.isfinite(base)) or base == 0:
        return float("nan")
    return 100.0 * (new / base - 1.0)


def _time_lag(row: dict, topic: str, when: str) -> float:
    """How far ``topic`` is behind its producer at the window's ``when`` (start, end), s:
    its backlog over its arrival rate."""
    rate = (row.get("arrival_rps") or {}).get(topic) or 0.0
    lag = (row.get(f"source_lag_{when}") or {}).get(topic)
    return lag / rate if rate > 0 and lag is not None else float("nan")


def _furthest_behind(rows: Sequence[dict], policy: str, names: Sequence[Any],
                     growth_in: Callable[[dict, Any], float]) -> tuple[Any, dict[str, float]]:
    """Of ``names``, the one whose ``growth_in(row, name)`` has the largest median under
    tcp (the first on a tie), and per policy (tcp, ``policy``) its median over the rows
    (finite values only; NaN with none)."""
    from statistics import median

    def growth(p: str, name: Any) -> float:
        vals = [v for r in _by(rows, policy=p) if math.isfinite(v := growth_in(r, name))]
        return median(vals) if vals else float("nan")

    behind = max(names, key=lambda n: growth("tcp", n))
    return behind, {p: growth(p, behind) for p in ("tcp", policy)}


def skew_growth(rows: Sequence[dict], policy: str, **at: object
                ) -> tuple[str, dict[str, float]]:
    """Where two topics feed one join: the topic that falls furthest behind the other
    under tcp, and per policy the growth of its lead over the other (seconds behind,
    per second of the window; median over repetitions). ("", {}) for one topic."""
    rs = _by(rows, **at)
    topics = sorted({t for r in rs for t in (r.get("arrival_rps") or {})})
    if len(topics) != 2:
        return "", {}

    def skew(r: dict, pair: tuple[str, str]) -> float:
        a, b = pair
        d0 = _time_lag(r, a, "start") - _time_lag(r, b, "start")
        d1 = _time_lag(r, a, "end") - _time_lag(r, b, "end")
        return (d1 - d0) / r["seconds"]

    a, b = topics
    (behind, _), growth = _furthest_behind(rs, policy, [(a, b), (b, a)], skew)
    return behind, growth


def join_lag_growth(rows: Sequence[dict], policy: str, **at: object
                    ) -> tuple[str, dict[str, float]]:
    """Where a join's store reports its inputs' event time (``store_lag_s_start``,
    ``store_lag_s_end``: per input, how far it is behind the join's newest input): the
    input that falls furthest behind under tcp, and per policy the growth of its lag,
    seconds per second of the window (median over repetitions). ("", {}) where the rows
    carry no two inputs' lags at both ends.

    Examples
    --------
    >>> rows = [{"policy": p, "seconds": 10.0, "store_lag_s_start": {"a": 0.0, "b": 2.0},
    ...          "store_lag_s_end": {"a": 0.0, "b": e}} for p, e in (("tcp", 7.0), ("x", 2.5))]
    >>> join_lag_growth(rows, "x")
    ('b', {'tcp': 0.5, 'x': 0.05})
    """
    rs = _by(rows, **at)
    inputs = sorted({k for r in rs for k in (r.get("store_lag_s_end") or {})})
    if len(inputs) < 2 or not all(set(inputs) <= set(r.get("store_lag_s_start") or {})
                                  and set(inputs) <= set(r.get("store_lag_s_end") or {})
                                  for r in rs):
        return "", {}
    return _furthest_behind(rs, policy, inputs, lambda r, k: (
        r["store_lag_s_end"][k] - r["store_lag_s_start"][k]) / r["seconds"])


def join_lag_bound(rows: Sequence[dict], **at: object) -> float:
    """Seconds per second a join input's lag may move over a window and still count as
    bounded: each end's lag may be one store report old (:data:`STORE_REPORT_S`), so a
    steady lag reads up to twice that apart over ``seconds``."""
    from statistics import median

    rs = _by(rows, **at)
    return 2.0 * STORE_REPORT_S / median(r["seconds"] for r in rs) if rs else float("nan")


def skew_bound(rows: Sequence[dict], **at: object) -> float:
    """Seconds per second two topics' lags may drift apart over a window and still count
    as progressing together: a backlog is read between a spout's polls, so each moves by
    up to one poll (:data:`KAFKA_POLL_RECORDS`) over its arrival rate, plus the second
    between reports; over a window of ``seconds`` that is their sum over ``seconds``."""
    from statistics import median

    rs = _by(rows, **at)
    rates = {t: median(r["arrival_rps"][t] for r in rs if t in (r.get("arrival_rps") or {}))
             for t in {t for r in rs for t in (r.get("arrival_rps") or {})}}
    if not rates or not all(v > 0 for v in rates.values()):
        return float("nan")
    seconds = median(r["seconds"] for r in rs)
    return (sum(KAFKA_POLL_RECORDS / v for v in rates.values()) + 1.0) / seconds


def paired_gains(rows: Sequence[dict], policy: str) -> list[float]:
    """Per repetition (``repeat``), ``policy``'s throughput gain over tcp's in that
    repetition, %: the two windows ran on one topology next to each other, so the drift of
    a real engine's throughput over a topology's life cancels out.

    Examples
    --------
    >>> rows = [{"repeat": 0, "policy": "tcp", "throughput_tps": 50.0},
    ...         {"repeat": 0, "policy": "aa", "throughput_tps": 55.0},
    ...         {"repeat": 1, "policy": "aa", "throughput_tps": 66.0},
    ...         {"repeat": 1, "policy": "tcp", "throughput_tps": 60.0}]
    >>> [round(g, 1) for g in paired_gains(rows, "aa")]
    [10.0, 10.0]
    """
    by: dict[object, dict[str, float]] = {}
    for r in rows:
        by.setdefault(r.get("repeat", 0), {})[r["policy"]] = r["throughput_tps"]
    return [100.0 * (w[policy] / w["tcp"] - 1.0) for w in by.values()
            if policy in w and w.get("tcp")]


def run(out: Path, opts: Options, console: Console) -> Outcome:
    """Run TT and TI on ``opts.backend``; print and write the comparison with 000."""
    kafka = opts.source == "kafka"
    policy = opts.under_test(UNDER_TEST_KAFKA if kafka else UNDER_TEST)
    intro = [__doc__.split("\n\n", 1)[1].replace("\n", " ").strip()]
    if opts.backend == "sim":
        done = execute(specs(opts), backend("sim").Runner(), console)
        rows = [r for d in done for r in d.rows]
        short = {d.spec.app.name: tag for d, tag in zip(done, SPECS, strict=True)}
        cmp = compare(rows, short, policy)
        return publish(out, f"{TITLE}, simulator", done, cmp, console, intro,
                       figures=lambda r: _figure(r, cmp))
    seconds = opts.seconds or 60.0
    sim = execute(specs(Options(policy=policy)), backend("sim").Runner(), console)
    # Kafka-fed, the broker sits on the star's master host, off the links under test: the
    # edge bottleneck only (issue 33)
    real_specs = [s.model_copy(update={"policies": ["tcp", policy], "networks": [
        n for n in s.networks if not kafka or n.topology == "star"]})
        for s in specs(Options(policy=policy))]
    engine = opts.engine()
    if opts.backend == "storm":
        engine = {"tuple_scale": STORM_KAFKA_TUPLE_SCALE if kafka else STORM_TUPLE_SCALE,
                  "max_pending": STORM_MAX_PENDING,
                  "warmup_s": STORM_KAFKA_WARMUP_S if kafka else STORM_WARMUP_S,
                  **({"enforce": KAFKA_ENFORCE} if kafka else {}), **engine}
    elif opts.backend == "flink":
        engine = {"warmup_s": STORM_KAFKA_WARMUP_S, "enforce": KAFKA_ENFORCE, **engine}
    runner = backend(opts.backend).Runner(out, seconds=seconds, **engine)
    # Kafka-fed, each bandwidth's fresh cluster runs its first job on cold JVMs, so that
    # window is run and not kept
    done = execute(real_specs, runner, console, repeat=opts.repeat,
                   journal=out / "rows.jsonl", warm=kafka)
    short = {d.spec.app.name: tag for d, tag in zip(done, SPECS, strict=True)}
    cmp = compare_backends([r for d in done for r in d.rows],
                           [r for d in sim for r in d.rows], short, policy, opts.backend)
    feed = (f"Kafka-fed: each source a topic on the master host, filled at the spec's "
            f"rates by a paced producer and read by its own Kafka "
            f"{'source' if opts.backend == 'flink' else 'spout'} ({runner.guarantee}"
            f"); every window a fresh topology on fresh topics, {runner.warmup_s:g} s of "
            "warm-up under its policy before it is measured, so that no window inherits "
            "another's queues; at each bandwidth, on its fresh cluster, one window run "
            "first and not kept; the managed rates, stepped every "
            f"Δt = {runner.dt:g} s, enforced as "
            + ("per-flow HTB classes on the switch egress ports" if runner.enforce == "shaper"
               else "OpenFlow meters") + opts.alignment_note()
            if runner.source == "kafka" else
            f"acking on, topology.max.spout.pending {runner.max_pending or 'unbounded'}, "
            f"the managed rates stepped every Δt = {runner.dt:g} s")
    intro.append(f"Each {opts.backend} run lasts {seconds:g} s ({opts.repeat} repetition(s), "
                 "medians; the policies' order alternates across repetitions), on the "
                 + ("jobs of flink/, each operator a slot-sharing group in the TaskManagers "
                    "of its hosts, " if opts.backend == "flink" else "topologies of storm/ ")
                 + "pinned to the testbed's hosts as placed by the spec; "
                 f"{feed}; tuple scale (1/S of the spec's tuples, S times the bytes) "
                 + ", ".join(f"{short[d.spec.app.name]} {runner.scale(d.spec.app):g}"
                             for d in done) + ".")
    return publish(out, f"{TITLE}, {opts.backend}", done, cmp, console, intro,
                   extra={"sim_runs": [r for d in sim for r in d.rows]},
                   figures=lambda r: _figure_real(r, cmp, opts.backend))


def _figure_real(report: Report, cmp: Comparison, backend: str) -> None:
    h = cmp.header.index
    labels = [f"{r[0]} {r[1]} {r[2]:g}" for r in cmp.rows]
    add_vs_paper(report, "paper-000-gain-vs-paper", labels,
                 [r[h(f"{backend} gain %")] for r in cmp.rows],
                 [r[h("paper gain %")] for r in cmp.rows], "throughput gain over tcp (%)",
                 extra={"simulator": [r[h("sim gain %")] for r in cmp.rows]})


def _figure(report: Report, cmp: Comparison) -> None:
    h = cmp.header.index
    labels = [f"{r[0]} {r[1]} {r[2]:g}" for r in cmp.rows]
    add_vs_paper(report, "paper-000-gain-vs-paper", labels, [r[h("gain %")] for r in cmp.rows],
                 [r[h("paper gain %")] for r in cmp.rows], "throughput gain over tcp (%)",
                 [r[h("2x off")] == "yes" for r in cmp.rows])
    add_vs_paper(report, "paper-000-latency-vs-paper", labels,
                 [r[h("latency change %")] for r in cmp.rows],
                 [r[h("paper latency change %")] for r in cmp.rows],
                 "latency change against tcp (%)",
                 caption="measured vs paper: latency change against tcp (%); 000 gives no "
                 "TI multi-hop latency (the bar is missing)")
