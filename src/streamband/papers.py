"""What each paper reproduction is compared against: the papers' figures beside
ours, and the acceptance checks of the reproduction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass
class Check:
    what: str
    measured: str
    ok: bool


def _by(rows: Sequence[dict], **match: object) -> list[dict]:
    return [r for r in rows if all(r.get(k) == v for k, v in match.items())]


def _tp(rows: Sequence[dict], **match: object) -> float:
    found = _by(rows, **match)
    return found[0]["throughput_tps"] if found else float("nan")


def paper001(rows: Sequence[dict], paper: dict[str, float]) -> tuple[list[list], list[Check]]:
    """001 Fig. 6 / §III-E: per placement, TCP, the best policy and its gain, beside
    the paper's +17/+47/+33 %; appaware against the sweep's best."""
    table, checks = [], []
    need = {"TP1": 15.0, "TP2": 40.0, "TP3": 30.0}
    tcp = {}
    for pl in sorted({r["placement"] for r in rows}):
        sub = _by(rows, placement=pl)
        base = _by(sub, policy="tcp")[0]
        tcp[pl] = base
        best = max((r for r in sub if r["policy"] != "tcp"), key=lambda r: r["throughput_tps"])
        gain = 100.0 * (best["throughput_tps"] / base["throughput_tps"] - 1.0)
        aa = _tp(sub, policy="appaware")
        sw = _tp(sub, policy="sweep")
        table.append([
            pl, base["goodput_mbps"], paper.get(f"tcp_{pl}_mbps", float("nan")),
            best["policy"], best["goodput_mbps"], gain, paper.get(f"gain_{pl}_pct", float("nan")),
            100.0 * (aa / base["throughput_tps"] - 1.0), 100.0 * aa / sw,
        ])
        if pl in need:
            checks.append(Check(f"{pl}: best policy beats tcp by >= {need[pl]:.0f} %",
                                f"{best['policy']} {gain:+.1f} %", gain >= need[pl]))
            checks.append(Check(f"{pl}: appaware >= 95 % of sweep's best",
                                f"{100.0 * aa / sw:.1f} %", aa >= 0.95 * sw))
    if {"TP1", "TP2", "TP3"} <= tcp.keys():
        t1, t2, t3 = (tcp[p]["throughput_tps"] for p in ("TP1", "TP2", "TP3"))
        checks.append(Check("TP1 under tcp is the highest of the three",
                            f"{t1:.1f} vs {t2:.1f}, {t3:.1f} tuples/s", t1 > max(t2, t3)))
        rel = abs(t2 - t3) / max(t2, t3)
        checks.append(Check("TP2 and TP3 under tcp within 5 %", f"{100 * rel:.1f} %", rel <= 0.05))
    return table, checks


def compare_backends(testbed: Sequence[dict], sim: Sequence[dict], paper: dict[str, float]
                     ) -> tuple[list[str], list[list]]:
    """Per placement and policy: the gain over tcp on the testbed, on the simulator and
    in the paper (001 reports the best allocation's gain)."""
    header = ["placement", "policy", "testbed gain %", "sim gain %", "paper gain %",
              "testbed tuples/s", "sim tuples/s"]
    rows = []
    for pl in sorted({r["placement"] for r in testbed}):
        tb_tcp, sim_tcp = _tp(testbed, placement=pl, policy="tcp"), _tp(sim, placement=pl,
                                                                         policy="tcp")
        for pol in ("tcp", "weighted", "appaware"):
            tb, sm = _tp(testbed, placement=pl, policy=pol), _tp(sim, placement=pl, policy=pol)
            rows.append([pl, pol, 100.0 * (tb / tb_tcp - 1.0), 100.0 * (sm / sim_tcp - 1.0),
                         paper.get(f"gain_{pl}_pct", float("nan")) if pol != "tcp" else 0.0,
                         tb, sm])
    return header, rows


PAPER001_HEADER = [
    "placement", "tcp Mbit/s", "paper tcp", "best policy", "best Mbit/s", "best gain %",
    "paper gain %", "appaware gain %", "appaware / sweep %",
]

#: 000 §VI-B, Fig. 8 and 9: App-aware's throughput gain over TCP (%)
PAPER000_GAINS = {
    ("TT", "edge"): {10: 25.0, 15: 27.0, 20: 15.0},
    ("TI", "edge"): {10: 30.93, 15: 30.27, 20: 30.80},
    ("TT", "multihop"): {10: 19.21, 15: 19.52, 20: 15.69},
    ("TI", "multihop"): {10: 22.09, 15: 23.09, 20: 23.98},
}
#: 000 §VI-B, Fig. 10 and 11: App-aware's latency reduction against TCP (%)
PAPER000_LATENCY = {
    ("TT", "edge"): {10: 14.27, 15: 26.24, 20: 50.17},
    ("TI", "edge"): {10: 5.72, 15: 10.10, 20: 17.28},
    ("TT", "multihop"): {10: 11.20, 15: 15.90, 20: 60.89},
}

PAPER000_HEADER = [
    "app", "network", "Mbit/s", "tcp tuples/s", "appaware tuples/s", "gain %", "paper gain %",
    "latency change %", "paper latency change %", "appaware util",
]


def paper000(rows: Sequence[dict], short: dict[str, str]) -> tuple[list[list], list[Check]]:
    """000 Fig. 8-12: appaware vs tcp per app, network and bandwidth."""
    table, checks = [], []
    for app in dict.fromkeys(r["app"] for r in rows):
        tag = short.get(app, app)
        for net in dict.fromkeys(r["network"] for r in _by(rows, app=app)):
            for bw in sorted({r["bandwidth_mbps"] for r in _by(rows, app=app, network=net)}):
                tcp = _by(rows, app=app, network=net, bandwidth_mbps=bw, policy="tcp")[0]
                aa = _by(rows, app=app, network=net, bandwidth_mbps=bw, policy="appaware")[0]
                gain = 100.0 * (aa["throughput_tps"] / tcp["throughput_tps"] - 1.0)
                lat = 100.0 * (aa["latency_ms"] / tcp["latency_ms"] - 1.0)
                pg = PAPER000_GAINS.get((tag, net), {}).get(int(bw), float("nan"))
                pl = -PAPER000_LATENCY.get((tag, net), {}).get(int(bw), float("nan"))
                util = aa["link_utilization"]
                table.append([tag, net, bw, tcp["throughput_tps"], aa["throughput_tps"], gain, pg,
                              lat, pl, util if util is not None else float("nan")])
                where = f"{tag} {net} {bw:g} Mbit/s"
                checks.append(Check(f"{where}: appaware throughput >= tcp",
                                    f"{gain:+.1f} %", gain >= -0.5))
                checks.append(Check(f"{where}: appaware latency <= tcp", f"{lat:+.1f} %",
                                    aa["latency_ms"] <= tcp["latency_ms"] * 1.005))
                if util is not None:
                    checks.append(Check(f"{where}: appaware bottleneck utilisation >= 0.97",
                                        f"{util:.3f}", util >= 0.97))
    return table, checks


JOINT_HEADER = [
    "app", "network", "placement", "tcp tuples/s", "appaware tuples/s",
    "common rate % of arrivals",
    "vs round robin + tcp %",
]


def joint_table(rows: Sequence[dict], bounds: dict[tuple[str, str, str], float]
                ) -> tuple[list[list], list[Check]]:
    """Beyond 001: placement chosen jointly with the allocation, against round robin and
    001's rule; ``bounds`` is the common rate of each (app, network, placement) as a
    share of the arrival rate (capped at 1)."""
    table, checks = [], []
    for app in dict.fromkeys(r["app"] for r in rows):
        for net in dict.fromkeys(r["network"] for r in _by(rows, app=app)):
            sub = _by(rows, app=app, network=net)
            base = _tp(sub, placement="RR", policy="tcp")
            for pl in dict.fromkeys(r["placement"] for r in sub):
                tcp, aa = _tp(sub, placement=pl, policy="tcp"), _tp(sub, placement=pl,
                                                                   policy="appaware")
                table.append([app, net, pl, tcp, aa, bounds.get((app, net, pl), float("nan")),
                              100.0 * (aa / base - 1.0)])
            best = max((r for r in sub if r["policy"] == "appaware"),
                       key=lambda r: r["throughput_tps"])
            checks.append(Check(f"{app} {net}: joint + appaware is the best combination",
                                f"best: {best['placement']} + appaware",
                                _tp(sub, placement="JOINT", policy="appaware")
                                >= 0.99 * best["throughput_tps"]))
    return table, checks
