"""App-Fair through the command: bad input in a several-application spec ends with one
line and exit 2 before anything runs; ``bench appfair`` passes its checks on the
simulator and fails them when the policy under test caps nothing (``observe``)."""

from __future__ import annotations

import json
import math

import pytest
import yaml
from typer.testing import CliRunner

from streamband.cli import app
from streamband.model.spec import builtin_spec
from test_inputs import refused, spec_file

runner = CliRunner()


def fig13(**change: object) -> dict:
    spec = yaml.safe_load(builtin_spec("appfair").read_text())
    spec["sim"] = {"duration_s": 30, "interval_s": 10, "warmup_s": 5}
    spec.update(change)
    return spec


@pytest.mark.parametrize(("change", "words"), [
    ({"appfair": {"alpha": 0}}, ("appfair.alpha", "greater than 0")),
    ({"appfair": {"alpha": 1.2}}, ("appfair.alpha", "less than or equal to 1")),
    ({"appfair": {"groups": 0}}, ("appfair.groups", "greater than or equal to 1")),
    ({"appfair": {"groups": 9}}, ("appfair.groups", "less than or equal to 8")),
    ({"placements": {"P": {"strategy": "explicit", "map": {"app6/src": "w1"}}}},
     ("placements.P.map", "unknown app 'app6'", "app1")),
])
def test_bad_appfair_specs_are_refused(tmp_path, change, words):
    refused(["run", spec_file(tmp_path, fig13(**change)), "--out", str(tmp_path / "o")],
            *words, root=tmp_path)


def test_classes_need_several_applications(tmp_path):
    one = yaml.safe_load(builtin_spec("paper-001").read_text())
    one["policies"] = ["tcp", "appfair"]
    refused(["run", spec_file(tmp_path, one), "--out", str(tmp_path / "o")],
            "policies[1]", "expected a spec with apps", root=tmp_path)


def test_bench_appfair_passes_and_a_policy_that_caps_nothing_fails(tmp_path):
    res = runner.invoke(app, ["bench", "appfair", "--seconds", "120", "--out",
                              str(tmp_path / "fair")])
    assert res.exit_code == 0, res.output
    cmp = json.loads((tmp_path / "fair" / "results.json").read_text())["comparison"]
    assert len(cmp["checks"]) == 13 and all(c["ok"] for c in cmp["checks"])  # + loop errors
    h = cmp["header"].index
    for row in cmp["rows"]:  # distance to the paper, per row
        if not math.isnan(row[h("paper Jain")]):
            assert row[h("vs paper")] == pytest.approx(row[h("Jain")] - row[h("paper Jain")])
    res = runner.invoke(app, ["bench", "appfair", "--policy", "observe", "--seconds", "60",
                              "--out", str(tmp_path / "observe")])
    assert res.exit_code == 1, res.output
    checks = json.loads((tmp_path / "observe" / "results.json").read_text())["comparison"][
        "checks"]
    failed = {c["what"] for c in checks if not c["ok"]}
    for a in ("0.25", "0.5", "0.75", "1"):  # TCP's sharing: no fairer than tcp
        assert f"observe α={a}: Jain's index >= 0.95" in failed
        assert f"observe α={a}: Jain's index above tcp's" in failed


def test_per_app_tuples_are_medians_with_their_spread():
    """Two repetitions of App-Fair and of hierarchical: each application's median,
    min and max, and hierarchical's gain on the medians (the figure the checks judge)."""
    from streamband.experiments.appfair import per_app_tps

    def row(label: str, tps: list[float]) -> dict:
        return {"experiment": f"appfair {label}",
                "apps": {f"app{i + 1}": {"throughput_tps": v} for i, v in enumerate(tps)}}

    rows = [row("appfair α=0.5", [10.0, 20.0]), row("appfair α=0.5", [14.0, 20.0]),
            row("hierarchical α=0.5", [9.0, 30.0]), row("hierarchical α=0.5", [15.0, 26.0])]
    got = per_app_tps(rows)
    assert got["data"]["appfair α=0.5"]["app1"] == {"median": 12.0, "min": 10.0, "max": 14.0,
                                                   "runs": [10.0, 14.0]}
    assert got["gain_pct"] == pytest.approx({"app1": 0.0, "app2": 40.0})
    assert got["rows"][0] == ["appfair α=0.5", 2, "12.0 (10.0-14.0)", "20.0 (20.0-20.0)"]
    assert got["rows"][-1] == ["hierarchical α=0.5 vs appfair α=0.5", None, "+0.0 %", "+40.0 %"]


def test_storm_judges_hierarchical_by_its_paired_ratios():
    """On Storm a repetition's three windows run next to each other: hierarchical is judged
    by each application's median ratio to the App-Fair window of the same repetition. Here
    app2's medians are equal (20 tuples/s: a ratio of medians of +0 %) while two of three
    repetitions put hierarchical 10 % below its neighbouring App-Fair window: the paired
    check fails where the ratio of medians would pass."""
    from streamband.experiments.appfair import compare, paired

    def row(rep: int, label: str, jain: float, tps: list[float]) -> dict:
        return {"repeat": rep, "experiment": f"appfair {label}", "policy": label.split()[0],
                "jain": jain, "loop_errors": [],
                "apps": {f"app{i + 1}": {"throughput_tps": v, "mbps": v} for i, v in
                         enumerate(tps)}}

    rows = [row(0, "tcp", 0.78, [5.0, 10.0]), row(0, "appfair α=0.5", 0.99, [8.0, 20.0]),
            row(0, "hierarchical α=0.5", 0.99, [8.0, 18.0]),
            row(1, "hierarchical α=0.5", 0.98, [8.0, 27.0]),
            row(1, "appfair α=0.5", 0.98, [8.0, 30.0]), row(1, "tcp", 0.79, [5.0, 10.0]),
            row(2, "tcp", 0.77, [5.0, 9.0]), row(2, "appfair α=0.5", 0.97, [8.0, 10.0]),
            row(2, "hierarchical α=0.5", 0.99, [8.0, 20.0])]
    gains = paired(rows)["gain_pct"]
    assert gains["app1"] == [0.0, 0.0, 0.0]
    assert gains["app2"] == pytest.approx([-10.0, -10.0, 100.0])
    within = "every application's tuples/s >= appfair α=0.5's - 2 %"
    medians = {c.what: c for c in compare(rows).checks}
    pairs = {c.what: c for c in compare(rows, pair=True).checks}
    assert medians[f"hierarchical α=0.5: {within}"].ok  # medians 20 and 20
    assert not pairs[f"hierarchical α=0.5: {within}"].ok
    assert "app2 -10.0 % (median paired)" in pairs[f"hierarchical α=0.5: {within}"].measured
    rows[0]["loop_errors"] = ["RunError: the controller did not answer"]
    loop = {c.what: c for c in compare(rows, pair=True).checks}["the manager loop ran without "
                                                                "errors"]
    assert not loop.ok and loop.measured.startswith("1 errors: RunError")


def test_storm_bench_runs_three_policies_on_one_spec():
    """The Storm bench's one spec holds tcp, the policy under test and hierarchical (so a
    repetition's windows are neighbours), on three topologies with 1, 2 and 4 flows."""
    from streamband.experiments.appfair import BACKENDS, label_of, storm_spec, storm_specs
    from streamband.experiments.base import Options
    from streamband.experiments.runner import plan

    assert "storm" in BACKENDS
    spec = storm_spec(Options(backend="storm", policy="observe"))
    assert spec.policies == ["tcp", "observe", "hierarchical"] and spec.appfair.alpha == 0.5
    (case,) = plan(spec)
    flows = [f.src.split("/")[0] for f in case.flowmap.flows]
    assert {a: flows.count(a) for a in spec.app_names} == {"app1": 1, "app2": 2, "app4": 4}
    assert {f.dst_host for f in case.flowmap.flows} == {"w8"}
    assert [s.experiment for s in storm_specs(Options(policy="observe"))] == [
        f"appfair {label_of(p)}" for p in spec.policies]
