"""The streamband command: bad input exits 2 with one line and writes nothing."""

import json

import pytest
import yaml
from typer.testing import CliRunner

from streamband.cli import app
from streamband.model.spec import builtin_spec

runner = CliRunner()


def small_spec(**change) -> dict:
    spec = yaml.safe_load(builtin_spec("paper-001").read_text())
    spec["sim"] = {"duration_s": 30, "warmup_s": 5}
    spec["policies"] = ["tcp", "appaware"]
    spec["placements"] = {"TP1": spec["placements"]["TP1"]}
    for path, value in change.items():
        node = spec
        *head, last = path.split("/")
        for key in head:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = value
    return spec


def write(tmp_path, spec) -> str:
    p = tmp_path / "spec.yaml"
    p.write_text(yaml.safe_dump(spec))
    return str(p)


def test_run_writes_results_and_report(tmp_path):
    out = tmp_path / "out"
    res = runner.invoke(app, ["run", write(tmp_path, small_spec()), "--out", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads((out / "results.json").read_text())
    assert data["spec"]["experiment"] == "paper-001"
    keys = {"experiment", "app", "placement", "network", "bandwidth_mbps", "policy",
            "throughput_tps", "latency_s", "latency_p50_s", "latency_p99_s", "link_utilization",
            "optimizer_ms", "dropped_tuples"}
    assert len(data["runs"]) == 2 and all(keys <= r.keys() for r in data["runs"])
    html = (out / "report.html").read_text()
    assert "<table>" in html and "data:image/png;base64," in html  # images embedded
    assert not list(out.glob("*.png"))


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"app/operators/1/kind": "teleport"}, "kind"),
        ({"app/edges/0/grouping": "random"}, "grouping"),
        ({"app/edges/0/src": "B", "app/edges/0/dst": "A"}, "source cannot have inputs"),
        ({"app/edges/3/src": "D", "app/edges/3/dst": "B"}, "cycle"),
        ({"app/edges/3/dst": "B"}, "join needs two or more inputs"),
        ({"networks/0/bandwidth_mbps": [0]}, "bandwidth_mbps[0]"),
        ({"networks/0/bandwidth_mbps": [-5]}, "positive, finite capacity"),
        ({"placements/TP1/map/A": "S9"}, "unknown host 'S9'"),
        ({"policies": ["tcp", "fastest"]}, "unknown policy 'fastest'"),
    ],
)
def test_bad_specs_exit_2_with_one_line_and_write_nothing(tmp_path, change, words):
    out = tmp_path / "out"
    res = runner.invoke(app, ["run", write(tmp_path, small_spec(**change)), "--out", str(out)])
    assert res.exit_code == 2
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], res.output
    assert not out.exists()


def test_missing_spec_file(tmp_path):
    res = runner.invoke(app, ["run", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "no such file" in res.output


def test_the_journal_keeps_every_row_as_its_run_ends(tmp_path):
    # a long real run (bench paper-000 on Storm: ~110 min) stopped part-way keeps its rows
    from rich.console import Console

    from streamband.backends import backend
    from streamband.experiments.runner import execute
    from streamband.model.spec import parse_spec

    journal = tmp_path / "out" / "rows.jsonl"
    journal.parent.mkdir()
    journal.write_text('{"stale": true}\n')
    spec = parse_spec(small_spec())
    done = execute([spec], backend("sim").Runner(), Console(quiet=True), repeat=2,
                   journal=journal)
    rows = [json.loads(line) for line in journal.read_text().splitlines()]
    assert len(rows) == 4  # 2 policies x 2 repetitions, the stale line gone
    assert [(r["policy"], r["repeat"]) for r in rows] == [
        (r["policy"], r["repeat"]) for r in done[0].rows]
    assert rows[0]["throughput_tps"] == pytest.approx(done[0].rows[0]["throughput_tps"])


def test_execute_warm_runs_one_window_per_case_and_keeps_none_of_it(tmp_path):
    """``warm``: each case runs one window of its first policy before its repetitions,
    kept neither in the records nor in the journal."""
    from rich.console import Console

    from streamband.backends import backend
    from streamband.experiments.runner import execute
    from streamband.model.spec import parse_spec

    class CountingRunner(backend("sim").Runner):  # the simulator, its calls counted
        def __init__(self) -> None:
            super().__init__()
            self.calls: list[str] = []

        def run(self, spec, case, policy, *a, **k):
            self.calls.append(policy)
            return super().run(spec, case, policy, *a, **k)

    spec = parse_spec(small_spec())
    runner = CountingRunner()
    journal = tmp_path / "rows.jsonl"
    done = execute([spec], runner, Console(quiet=True), repeat=2, journal=journal,
                   warm=True)
    cases = len(done[0].cases)
    assert len(runner.calls) == cases * (1 + 2 * len(spec.policies))
    assert runner.calls[0] == spec.policies[0]
    assert len(done[0].records) == cases * 2 * len(spec.policies)
    assert len(journal.read_text().splitlines()) == cases * 2 * len(spec.policies)


@pytest.mark.parametrize("name", ["testbed", "storm", "flink"])
def test_dt_reaches_each_real_runner(tmp_path, name):
    """``--dt`` is the manager loop's Δt of the runner a real bench or run builds."""
    from streamband.backends import backend
    from streamband.cli import _options

    opts = _options(name, None, 1, dt=2.5)
    runner = backend(name).Runner(tmp_path, seconds=30.0, **opts.engine())
    assert runner.dt == 2.5
    assert backend(name).Runner(tmp_path, seconds=30.0).dt == 1.0
