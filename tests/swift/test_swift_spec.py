"""Bad input stops with one line and exit code 2 before anything starts (no
testbed, no process, no file)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from streamband.cli import app
from streamband.errors import SpecError
from streamband.experiments import paper002
from streamband.experiments.base import Options
from streamband.procs import MARK, mark_value
from streamband.swift.layout import STATE
from streamband.swift.spec import load, slo_floor_mbps
from streamband.testbed.registry import read_state

ABSOLUTE = {"targets": "ops", "schedule": [[0, 16], [60, 18], [120, 20]]}


def test_the_builtin_spec_loads():
    spec = load(paper002.SPEC)
    assert spec.storage == ["s1", "s2", "s3"] and spec.swift.replicas == 3
    assert spec.quota_mbps == spec.testbed.link_mbps
    # 80/90/100 % of the throughput measured with clients at half the quota
    assert spec.workload.targets == "reference"
    assert [r for _, r in spec.workload.schedule] == [0.8, 0.9, 1.0]
    assert spec.reference_mbps == spec.quota_mbps / 2
    sweep = spec.training.user_mbps
    assert min(sweep) <= spec.reference_mbps <= max(sweep)
    with pytest.raises(ValueError, match="resolve them first"):
        spec.workload.target(0)
    wl = spec.workload.resolved(10.0)
    assert wl.targets == "ops" and wl.target(59.9) == 8 and wl.target(125) == 10


def test_absolute_targets():
    spec = load(paper002.SPEC, {"workload": ABSOLUTE})
    assert spec.workload.target(59.9) == 16 and spec.workload.target(125) == 20
    assert spec.workload.resolved(3.0) is spec.workload
    # 20 op/s of 100 KB: reads leave one of 3 nodes, writes reach all 3
    assert slo_floor_mbps(spec) == pytest.approx(20 * 0.8 * 0.8 / 3)


def test_seconds_stretch_the_schedule():
    spec = paper002.load_spec(Options(backend="testbed", seconds=90))
    assert spec.workload.duration_s == 90
    assert spec.workload.schedule == [(0, 0.8), (30, 0.9), (60, 1.0)]
    assert spec.failures.every_s == 10


@pytest.mark.parametrize(("overrides", "expected"), [
    ({"swift": {"storage_hosts": 6}},
     "swift.storage_hosts: 6 storage hosts + proxy + client need 8 hosts, the testbed "
     "has 5"),
    ({"control": {"quota_mbps": 2}, "workload": ABSOLUTE},
     "control.quota_mbps: the SLO's peak 20 op/s of 100 KB objects needs at least "
     "4.27 Mbit/s per storage node, the quota is 2"),
    ({"control": {"quota_mbps": 2}},
     "control.quota_mbps: the SLO's reference bandwidth 1 Mbit/s "
     "(workload.reference_user_share 0.5 of the quota 2) is outside the training sweep"),
    ({"control": {"policy": "bwmann"}}, "unknown policy 'bwmann'"),
    ({"control": {"tradeoff": "users"}}, "unknown trade-off 'users'"),
    ({"swift": {"storage_hosts": 9}}, "less than or equal to 8"),
    ({"workload": {"schedule": [[0, 10], [0, 12]], "targets": "ops"}}, "increasing time"),
    ({"workload": {"schedule": [[0, 0.8], [60, 16]]}}, "fraction of the reference"),
])
def test_bad_spec_is_one_line(overrides, expected):
    with pytest.raises(SpecError) as err:
        load(paper002.SPEC, overrides)
    msg = str(err.value)
    assert "\n" not in msg and expected in msg, msg


def _mine() -> list[int]:
    """Processes carrying this process's clean-up mark (what it would have started)."""
    needle = f"{MARK}={mark_value()}".encode()
    out = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and needle in (d / "environ").read_bytes().split(b"\0"):
                out.append(int(d.name))
        except OSError:
            pass
    return out


def _nothing_started(before):
    assert read_state() is None or read_state() == before[0]
    assert not STATE.exists() or before[1]
    assert _mine() == []


@pytest.mark.parametrize(("section", "fields", "word"), [
    ("swift", {"storage_hosts": 6}, "storage_hosts"),
    ("control", {"quota_mbps": 2}, "quota_mbps"),
    ("control", {"policy": "nope"}, "policy"),
])
def test_cli_bad_spec_exits_2_before_anything_starts(tmp_path, section, fields, word):
    data = yaml.safe_load(paper002.SPEC.read_text())
    data[section].update(fields)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    before = (read_state(), STATE.exists())
    for cmd in (["swift", "up", str(path)], ["bench", "paper-002", "--spec", str(path),
                                               "--out", str(tmp_path / "out")]):
        r = CliRunner().invoke(app, cmd)
        assert r.exit_code == 2, r.output
        assert r.output.count("\n") == 1 and word in r.output, r.output
    assert not (tmp_path / "out").exists()
    _nothing_started(before)


def test_bench_bad_policy_and_backend_exit_2(tmp_path):
    out = tmp_path / "o"
    r = CliRunner().invoke(app, ["bench", "paper-002", "--policy", "bwmn", "--out", str(out)])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "did you mean 'bwman'" in r.output
    r = CliRunner().invoke(app, ["bench", "paper-002", "--backend", "sim", "--out", str(out)])
    assert r.exit_code == 2 and "runs on testbed" in r.output, r.output
    r = CliRunner().invoke(app, ["bench", "paper-002", "--policy", "none", "--out", str(out)])
    assert r.exit_code == 2 and "baseline" in r.output, r.output
    assert not out.exists()
