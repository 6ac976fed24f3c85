"""``streamband locality bench`` and ``streamband bench paper-003``."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from streamband.cli.locality import app

runner = CliRunner()


def test_bench_synthetic_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    res = runner.invoke(app, ["bench", "--workload", "synthetic", "--parallelism", "4",
                              "--locality", "0.8", "--padding", "1024", "--json", str(out)])
    assert res.exit_code == 0, res.output
    d = json.loads(out.read_text())
    assert d["workload"] == "synthetic" and d["parallelism"] == 4
    assert set(d["locality"]) == {"hash", "locality_aware", "worst_case"}
    assert set(d["throughput_tps"]) == set(d["locality"])
    assert abs(d["locality"]["locality_aware"] - 0.8) < 0.02
    assert "imbalance_after_reconfig_max" in d


def test_bench_flights(tmp_path: Path) -> None:
    out = tmp_path / "f.json"
    res = runner.invoke(app, ["bench", "--workload", "flights", "--parallelism", "4",
                              "--period", "14d", "--json", str(out)])
    assert res.exit_code == 0, res.output
    d = json.loads(out.read_text())
    assert set(d["locality"]) == {"hash", "offline", "online"}
    assert d["period_h"] == 336.0
    # 003's method and the decay extension, both reported
    assert d["method"]["locality"] == d["locality"]
    assert d["extension"]["decay"] == 0.5
    assert d["extension"]["locality"]["hash"] == d["locality"]["hash"]
    assert d["extension"]["locality"]["online"] != d["locality"]["online"]


def test_bad_input_one_line_exit_2_nothing_written(tmp_path: Path) -> None:
    out = tmp_path / "x.json"
    for args, word in [(["--workload", "tweets"], "--workload"),
                       (["--locality", "1.5"], "--locality"),
                       (["--period", "weekly"], "--period"),
                       (["--parallelism", "0"], "--parallelism")]:
        res = runner.invoke(app, ["bench", *args, "--json", str(out)])
        assert res.exit_code == 2
        lines = [ln for ln in res.output.splitlines() if ln.strip()]
        assert len(lines) == 1 and word in lines[0] and "expected" in lines[0]
        assert not out.exists()


def test_paper_bench_rejects_a_file_as_out(tmp_path: Path) -> None:
    from streamband.cli import app as main_app

    f = tmp_path / "file"
    f.write_text("x")
    res = runner.invoke(main_app, ["bench", "paper-003", "--out", str(f)])
    assert res.exit_code == 2 and "--out" in res.output and "is a file" in res.output
    assert f.read_text() == "x"
