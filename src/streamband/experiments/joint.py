"""Beyond 001: placement and bandwidth allocation chosen jointly (001's future work).

Under app-aware allocation the flows of an aligned DAG progress together; the common
rate r* = min over links of C_l / (bytes per source tuple on l) is the source rate (all
sources) at which every flow can keep up together (parts that do not wait for each
other may go faster). JOINT searches the load-balanced placements for the largest r*;
RULE is 001's ascending aggregate-then-ratio rule (§III-C); RR is round robin (000
§II-A4). The paper apps at 20 Mbit/s, each under tcp and appaware, on the simulator.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from streamband.backends import backend
from streamband.experiments.base import Check, Comparison, Options, Outcome, publish
from streamband.experiments.runner import Done, execute
from streamband.model.placement import sustainable_rate
from streamband.model.spec import ExperimentSpec, load_spec, parse_spec

NAME = "joint"
TITLE = "beyond 001: placement and bandwidth allocation chosen jointly"
BACKENDS = ("sim",)
SPECS = ("paper-001", "paper-000-tt", "paper-000-ti")
PAPER: dict[str, float] = {}  # beyond the papers: no reference figures
#: two throughputs within this share of each other tie
TIE = 0.01
LEGEND = {
    "common rate % of arrivals": "r* of the placement as a share of the sources' arrival "
                                 "rate (capped at 100 %)",
    "vs round robin + tcp %": "appaware's throughput against round robin under tcp",
}


def specs(opts: Options) -> list[ExperimentSpec]:
    """The paper apps at 20 Mbit/s with round robin, 001's rule and joint placement."""
    out = []
    for name in SPECS:
        data = load_spec(name).model_dump(mode="json", exclude_unset=True)
        for n in data["networks"]:
            n["bandwidth_mbps"] = [20.0]
        data.update(experiment="joint", policies=["tcp", opts.policy or "appaware"],
                    placements={"RR": {"strategy": "round_robin"},
                                "RULE": {"strategy": "tuple_size_rule"},
                                "JOINT": {"strategy": "joint"}})
        sim = data.setdefault("sim", {})
        sim["duration_s"] = opts.seconds or 300.0
        sim["warmup_s"] = min(sim.get("warmup_s", 10.0), sim["duration_s"] / 3)
        out.append(parse_spec(data, f"joint: {name}"))
    return out


def _by(rows: Sequence[dict], **match: object) -> list[dict]:
    return [r for r in rows if all(r.get(k) == v for k, v in match.items())]


def _tp(rows: Sequence[dict], **match: object) -> float:
    found = _by(rows, **match)
    return found[0]["throughput_tps"] if found else float("nan")


def bounds(done: list[Done]) -> dict[tuple[str, str, str], float]:
    """The common rate of each (app, network, placement) as a share of arrivals (%)."""
    return {
        (d.spec.app.name, c.network.name, c.placement): 100.0 * min(
            1.0, sustainable_rate(d.spec.app, c.flowmap.topo, c.flowmap.placement)
            / sum(o.rate_tps or 0.0 for o in d.spec.app.operators))
        for d in done for c in d.cases
    }


def compare(rows: Sequence[dict], rates: dict[tuple[str, str, str], float],
            policy: str = "appaware") -> Comparison:
    """Per app and network: each placement under tcp and ``policy``; the check that
    JOINT + ``policy`` is the best combination, ties (within 1 %) named explicitly."""
    table, checks = [], []
    for app in dict.fromkeys(r["app"] for r in rows):
        for net in dict.fromkeys(r["network"] for r in _by(rows, app=app)):
            sub = _by(rows, app=app, network=net)
            base = _tp(sub, placement="RR", policy="tcp")
            for pl in dict.fromkeys(r["placement"] for r in sub):
                tcp, aa = _tp(sub, placement=pl, policy="tcp"), _tp(sub, placement=pl,
                                                                   policy=policy)
                table.append([app, net, pl, tcp, aa, rates.get((app, net, pl), float("nan")),
                              100.0 * (aa / base - 1.0)])
            managed = [r for r in sub if r["policy"] == policy]
            best = max(r["throughput_tps"] for r in managed)
            tied = [r["placement"] for r in managed if r["throughput_tps"] >= (1 - TIE) * best]
            measured = (f"best: {tied[0]} + {policy}" if len(tied) == 1 else
                        f"tie within {100 * TIE:g} %: {', '.join(tied)} + {policy}")
            checks.append(Check(f"{app} {net}: JOINT + {policy} is the best combination "
                                f"(or tied for it)", measured, "JOINT" in tied))
            # against plain TCP on its best placement: the allocation must add to what the
            # placement alone gives, unless JOINT's common rate carries every arrival (then
            # TCP reaches it too and there is nothing left to gain)
            tcp_best = max((r for r in sub if r["policy"] == "tcp"),
                           key=lambda r: r["throughput_tps"])
            joint = _tp(sub, placement="JOINT", policy=policy)
            if rates.get((app, net, "JOINT"), 0.0) < 100.0:
                checks.append(Check(
                    f"{app} {net}: JOINT + {policy} beats the best placement under tcp by more "
                    f"than {100 * TIE:g} %", f"{joint:.1f} vs {tcp_best['placement']} + tcp "
                    f"{tcp_best['throughput_tps']:.1f} tuples/s",
                    joint > (1 + TIE) * tcp_best["throughput_tps"]))
            else:
                checks.append(Check(
                    f"{app} {net}: JOINT + {policy} carries every arrival, as tcp does there",
                    f"{joint:.1f} vs {_tp(sub, placement='JOINT', policy='tcp'):.1f} "
                    "tuples/s", joint >= (1 - TIE) * _tp(sub, placement="JOINT", policy="tcp")))
    header = ["app", "network", "placement", "tcp tuples/s", f"{policy} tuples/s",
              "common rate % of arrivals", "vs round robin + tcp %"]
    return Comparison(header, table, checks, title="comparison", legend=LEGEND)


def run(out: Path, opts: Options, console: Console) -> Outcome:
    """Run every app x placement x {tcp, appaware}; print and write the comparison."""
    done = execute(specs(opts), backend(opts.backend).Runner(), console)
    cmp = compare([r for d in done for r in d.rows], bounds(done), opts.policy or "appaware")
    intro = [__doc__.split("\n\n", 1)[1].replace("\n", " ").strip()]
    return publish(out, f"{TITLE}, simulator", done, cmp, console, intro)
