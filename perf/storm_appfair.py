"""bench appfair on Storm, end to end on the testbed (issue 33, item 4), as ``bench appfair
--backend storm`` runs it: three Kafka-fed topologies with 1, 2 and 4 flows (spec
``appfair-storm``: every source on a worker host of its own, every join on w8, Kafka on the
star's master) share w8's 20 Mbit/s downlink; 60 s under plain TCP, then under App-Fair,
then under hierarchical, each window on fresh topologies and fresh topics, one manager loop
over the three topologies' flows.

Checked: the loop ran without errors in every window; the flows are the spec's seven
(each topology's sources to its join's worker), each in its application's class on w8's
switch port under the policies that decide classes, metered inside its application under
hierarchical and never under tcp; tcp splits by flows (app4 carries more than app1, Jain's
index under 0.9, by design 0.78) and App-Fair is fairer than tcp by at least 0.1 (two turns
of its classes through the three applications in a window); every topology completes joins
in every window; nothing is left running. Expected 8-10 minutes: the cluster (8 supervisors)
and the broker take about 2, each window about 1.5 to place its three topologies, 10 s of
warm-up and 60 s measured. Kept out of ``make test`` (8 supervisors for 10 minutes); the
checks of ``bench appfair --backend storm`` over ``--repeat`` cover the same ground:

    flock /tmp/streamband-testbed.lock .venv/bin/python -m pytest -q perf/storm_appfair.py
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from streamband.backends.storm import StormRunner
from streamband.experiments.runner import plan
from streamband.model.spec import load_spec, parse_spec
from streamband.procs import clean, leftovers

SECONDS, WARMUP_S = 60.0, 10.0
POLICIES = ("tcp", "appfair", "hierarchical")


@pytest.fixture(scope="module")
def windows(tmp_path_factory: pytest.TempPathFactory):
    """The three windows' rows by policy, w8's address and the switch port of its
    downlink, and the runner's output."""
    clean()
    out: Path = tmp_path_factory.mktemp("appfair-storm")
    data = load_spec("appfair-storm").model_dump(mode="json", exclude_unset=True)
    data["policies"] = list(POLICIES)
    spec = parse_spec(data, "appfair-storm e2e")
    (case,) = plan(spec)
    runner = StormRunner(out, seconds=SECONDS, warmup_s=WARMUP_S, source="kafka")
    try:
        runner.check(spec, case)
        t0 = time.monotonic()
        rows = {p: runner.run(spec, case, p).row for p in POLICIES}
        print(f"three windows in {time.monotonic() - t0:.0f} s")
        down = runner.tb.link_ports()[case.flowmap.flows[0].links[-1]].port
        yield rows, (runner.tb.ip("w8"), down), out
    finally:
        runner._stop()
        clean()
        assert leftovers() == []


def test_the_loop_ran_over_the_seven_flows(windows):
    rows, (w8, _), out = windows
    for policy, row in rows.items():
        print(policy, f"Jain {row['jain']:.3f}", {n: (round(a["throughput_tps"], 1),
                                                      round(a["mbps"], 2))
                                                  for n, a in row["apps"].items()})
        assert row["loop_errors"] == [], policy
        assert row["allocations"] >= SECONDS / 10.0  # App-Fair steps every Δt = 10 s
        assert row["flow_apps"] == [0, 1, 1, 2, 2, 2, 2]
        assert {k["dst_ip"] for k in row["flow_keys"]} == {w8}
        assert len({k["dst_port"] for k in row["flow_keys"]}) == 3  # one join worker each
        assert all(a["throughput_tps"] > 0 for a in row["apps"].values()), policy
    assert len(list(out.glob("*.alloc.jsonl"))) == len(POLICIES)


def test_classes_and_meters_where_the_policy_decides_them(windows):
    rows, (_, down), _ = windows
    assert rows["tcp"]["classes"] is None and rows["tcp"]["class_assignments"] == []
    assert all(m["rate_bps"] is None for m in rows["tcp"]["meters"])
    for policy in ("appfair", "hierarchical"):
        row = rows[policy]
        cls, apps = row["classes"], row["flow_apps"]
        assert cls is not None and len(cls) == 7
        by_app = {a: {c for c, b in zip(cls, apps, strict=True) if b == a} for a in set(apps)}
        assert all(len(v) == 1 for v in by_app.values())  # an application's flows: one class
        # installed on the switch's egress port to w8 for every flow, as decided; nowhere else
        keys = [(k["src_ip"], k["dst_ip"], k["dst_port"]) for k in row["flow_keys"]]
        got = {(c["flow"]["src_ip"], c["flow"]["dst_ip"], c["flow"]["dst_port"]): c["cls"]
               for c in row["class_assignments"]}
        assert {c["port"] for c in row["class_assignments"]} == {down}
        assert got == dict(zip(keys, cls, strict=True)), policy
    assert any(m["rate_bps"] is not None for m in rows["hierarchical"]["meters"])
    assert all(m["rate_bps"] is None for m in rows["appfair"]["meters"])


def test_app_fair_is_fairer_than_tcp(windows):
    rows, _, _ = windows
    tcp = rows["tcp"]["apps"]
    assert tcp["app4"]["mbps"] > tcp["app1"]["mbps"]  # TCP shares by flows
    assert rows["tcp"]["jain"] < 0.9
    assert rows["appfair"]["jain"] >= rows["tcp"]["jain"] + 0.1
    assert rows["hierarchical"]["jain"] >= rows["tcp"]["jain"] + 0.1
