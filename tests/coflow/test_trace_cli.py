"""Trace reader, workloads, schedulers end to end, and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from streamband.cli.coflow import app
from streamband.sim.coflow.run import simulate
from streamband.sim.coflow.trace import TraceError, read_trace
from streamband.sim.coflow.workloads import from_trace, many_to_many, subcoflow_ids


def test_trace_reads_the_conventional_counts(trace_path):
    tr = read_trace(trace_path)
    assert tr.ports == 150 and len(tr.coflows) == 526
    assert tr.n_flows == 706_397
    wl = from_trace(tr)
    assert wl.n_flows == 706_397
    assert wl.size.sum() == pytest.approx(sum(c.size_bytes for c in tr.coflows))


def test_malformed_line_names_its_number(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("4 2\n1 0 1 0 1 2:1.0\n2 10 2 0 x 1 3:2.0\n")
    with pytest.raises(TraceError, match=r"t.txt:3: mapper port"):
        read_trace(p)


def test_waves_split_mappers_and_chain(trace_path):
    wl = from_trace(read_trace(trace_path).head(10), waves=2)
    assert any(wl.group_deps)
    assert len(wl.group_arrival) > 10


def test_algorithm1_ids():
    ids = subcoflow_ids({1: (2, 3), 2: (4,), 3: (4,), 4: ()})
    assert ids[1] == 1 and ids[2] == 2 and ids[3] == 3
    assert ids[4] == 4  # proposals 3 and 4 differ -> the largest


def test_end_to_end_first_30(trace_path):
    wl = from_trace(read_trace(trace_path).head(30))
    out = {p: simulate(wl, p).summary() for p in ("fs", "stream", "aalo", "baraat", "varys")}
    for s in out.values():
        assert s["coflows"] == 30 and s["avg_cct_s"] > 0
    assert out["stream"]["avg_cct_s"] < out["fs"]["avg_cct_s"]
    m2m = many_to_many(read_trace(trace_path).head(5), "tao")
    s = simulate(m2m, "stream").summary()
    assert s["coflows"] == 5 and np.isfinite(s["avg_cct_s"])


def test_cli_writes_json_and_csv(trace_path, tmp_path):
    small = tmp_path / "small.txt"
    lines = trace_path.read_text().splitlines()
    small.write_text("150 20\n" + "\n".join(lines[1:21]) + "\n")
    r = CliRunner().invoke(app, ["sim", "--trace", str(small), "--policy", "stream",
                                 "--json", str(tmp_path / "o.json"),
                                 "--per-coflow", str(tmp_path / "c.csv")])
    assert r.exit_code == 0, r.output
    s = json.loads((tmp_path / "o.json").read_text())
    assert set(s) >= {"policy", "topology", "coflows", "flows", "avg_cct_s", "p95_cct_s",
                      "mice_avg_cct_s", "avg_cct_by_category", "events", "wall_s"}
    assert len((tmp_path / "c.csv").read_text().splitlines()) == 21


@pytest.mark.parametrize("args,needle", [
    (["--policy", "nope"], "--policy"),
    (["--policy", "fs", "--topology", "fattree:3"], "topology"),
])
def test_cli_bad_input_exits_2(trace_path, tmp_path, args, needle):
    r = CliRunner().invoke(app, ["sim", "--trace", str(trace_path), *args,
                                 "--json", str(tmp_path / "o.json")])
    assert r.exit_code == 2 and needle in r.output
    assert not (tmp_path / "o.json").exists()
