"""App-Fair's classes on real TCP (000 §VII): two applications share a 20 Mbit/s
downlink, A with three flows and B with one, every flow offering more than the link.
Under TCP A carries about three times B. Under App-Fair the manager loop (Δt = 4 s)
puts each application in a strict-priority class on the switch's egress port through
the controller: in every schedule after the first the application in the higher class
carries more, so B overtakes A whenever it is on top, and the two come out fairer
than under TCP.

B's source has a host of its own (w4): the only link the two applications share is
w3's downlink, the switch egress port where the classes act (a host's uplink has no
classes, :class:`~streamband.loop.openflow.ClassEnforcer`).

History: this test failed about one run in five (CI, 2026-11-23: B on top carried 4.8
against A's 14.3 Mbit/s) while the hosts ran bbr, this machine's default, instead of the
spec's cubic (fixed in :func:`~streamband.testbed.network.allow_congestion_control`).
The failing intervals fit BBR's bandwidth probing: a flow held near 2.5 Mbit/s for a
schedule raises its pacing rate by 1.25 a gain cycle (8 round trips of ~45 ms here), so
about 3 s to reach 16 Mbit/s when promoted."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from rich.console import Console

from streamband.alloc.appfair import jain_index
from streamband.backends.testbed import TestbedRunner
from streamband.experiments.runner import execute
from streamband.model.apps import flow_apps
from streamband.model.spec import parse_spec

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the testbed needs root")
DT, SECONDS = 4.0, 18.0
RATE = 200  # tuples/s of 8 KB per source: 13 Mbit/s a flow


def _source(name: str) -> dict:
    return {"name": name, "kind": "source", "rate_tps": RATE}


SPEC = {
    "experiment": "appfair-testbed",
    "apps": [
        {"name": "A", "operators": [_source("a"), _source("b"), _source("c"),
                                    {"name": "join", "kind": "join"}],
         "edges": [{"src": s, "dst": "join", "tuple_bytes": 8192} for s in "abc"]},
        {"name": "B", "operators": [_source("s"), {"name": "sink", "kind": "sink"}],
         "edges": [{"src": "s", "dst": "sink", "tuple_bytes": 8192}]},
    ],
    "networks": [{"name": "edge", "topology": "star", "hosts": 4, "bandwidth_mbps": [20]}],
    "placements": {"P": {"strategy": "explicit", "map": {
        "A/a": "w1", "A/b": "w1", "A/c": "w2", "A/join": "w3", "B/s": "w4", "B/sink": "w3"}}},
    "policies": ["tcp", "appfair"],
    "sim": {"duration_s": 60, "interval_s": DT},
}


def _per_app(rec, names: list[str]) -> np.ndarray:
    """(intervals x apps) Mbit/s each application carried between the loop's steps."""
    apps = flow_apps([f.split("->")[0] for f in rec.flow_ids], names)
    return np.stack([rec.rates_mbps[:, apps == i].sum(axis=1) for i in range(len(names))],
                    axis=1)


def test_appfair_classes_reorder_two_applications(cleanup, tmp_path):
    # the runner's Δt for rates is 1 s; App-Fair steps on the spec's Δt (sim.interval_s)
    runner = TestbedRunner(tmp_path, seconds=SECONDS, api="127.0.0.1:8191",
                           openflow="127.0.0.1:6663")
    done = execute([parse_spec(SPEC)], runner, Console(width=150))  # one testbed, two runs
    names = ["A", "B"]
    rec_tcp, rec_fair = done[0].records
    tcp_mbps = [rec_tcp.row["apps"][n]["mbps"] for n in names]
    print(f"\ntcp: A {tcp_mbps[0]:.2f}, B {tcp_mbps[1]:.2f} Mbit/s, Jain {rec_tcp.row['jain']:.3f}")
    assert tcp_mbps[0] > 2.0 * tcp_mbps[1]  # per-flow sharing: A's three flows win
    per = _per_app(rec_fair, names)
    log_file = tmp_path / "appfair-testbed-edge-20-P-appfair.alloc.jsonl"
    log = [json.loads(x) for x in log_file.read_text().splitlines()]
    # the loop steps on a fixed grid of Δt, a late step's successors run at once
    # (LiveLoop): as many steps as Δt have passed, whatever the lateness of one step
    times = np.array([rec["time"] for rec in log])
    assert len(log) >= 3 and abs(times[-1] - times[0] - (len(log) - 1) * DT) < DT, \
        np.diff(times)
    flows = [f for f, e in zip(rec_fair.flow_ids, rec_fair.external, strict=True) if e]
    apps = flow_apps([f.split("->")[0] for f in flows], names)
    top_wins, b_on_top = [], []
    for k in range(1, min(len(per), len(log))):  # schedule k holds for interval k
        cls = np.array(log[k]["classes"])
        app_cls = [int(cls[apps == i][0]) for i in range(2)]
        print(f"interval {k}: classes A {app_cls[0]} B {app_cls[1]}, "
              f"Mbit/s A {per[k, 0]:.2f} B {per[k, 1]:.2f}")
        if app_cls[0] != app_cls[1]:
            top = int(np.argmin(app_cls))
            top_wins.append(per[k, top] > per[k, 1 - top] + 3.0)
            if top == 1:
                b_on_top.append(per[k, 1] > per[k, 0] + 3.0)
    assert top_wins and all(top_wins), "the higher class must carry more in every schedule"
    assert b_on_top and all(b_on_top), "B (one flow) must overtake A when on top"
    fair_mbps = [rec_fair.row["apps"][n]["mbps"] for n in names]
    print(f"appfair: A {fair_mbps[0]:.2f}, B {fair_mbps[1]:.2f} Mbit/s, "
          f"Jain {rec_fair.row['jain']:.3f}")
    assert jain_index(np.array(fair_mbps)) > jain_index(np.array(tcp_mbps)) + 0.05
