"""``streamband run SPEC --backend testbed``: the same spec as the simulator's, run by the
testbed backend (the harness DAG derived from the spec's app and placement, the live
manager loop pushing meters): rows, per-flow rates and a report, app-aware ahead of TCP
on 001's TP2 over real TCP.

The policy is ``appaware-store``: the harness's relay and join take what arrives at once
(L^r = 0), and there problem (4) read literally keeps whatever split TCP's first second
had (C->D capped near 2.5 of 20 Mbit/s for good in 2 of 6 runs, and in CI stop 23);
eq. (3) on such downlinks splits by the senders' need from the first step."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from streamband.cli import app
from streamband.model.spec import builtin_spec


def test_run_spec_on_the_testbed(cleanup, tmp_path):
    spec = yaml.safe_load(builtin_spec("paper-001").read_text())
    spec["placements"] = {"TP2": spec["placements"]["TP2"]}
    spec["policies"] = ["tcp", "appaware-store"]
    path = tmp_path / "tp2.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["run", str(path), "--backend", "testbed", "--seconds", "15",
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    runs = {r["policy"]: r for r in json.loads((out / "results.json").read_text())["runs"]}
    tcp, aa = runs["tcp"], runs["appaware-store"]
    print(f"\nTP2 on the testbed, 15 s: tcp {tcp['throughput_tps']:.1f}, appaware-store "
          f"{aa['throughput_tps']:.1f} tuples/s, {aa['allocations']} allocations")
    assert tcp["backend"] == aa["backend"] == "testbed"
    assert aa["allocations"] >= 10 and not aa["loop_errors"]
    assert aa["throughput_tps"] > 1.15 * tcp["throughput_tps"]  # 001 TP2: +47 %
    assert tcp["dropped_tuples"] == aa["dropped_tuples"] == 0
    assert "data:image/png;base64," in (out / "report.html").read_text()
