"""``bench paper-004`` end to end on a 16-coflow cut of the trace: every factor is the
ratio of its runs, each single-wave fabric has its two checks, the report embeds its
plots; and the checks fail when stream loses."""

from __future__ import annotations

import json
import queue

import pytest
from rich.console import Console

from streamband.experiments import paper004
from streamband.experiments.paper004 import CATEGORIES, _factors, bench, compare, publish


def test_bench_factors_are_ratios_of_the_runs(trace_path, tmp_path):
    lines = trace_path.read_text().splitlines()
    short = tmp_path / "fb-first-16.txt"  # "the whole trace" rows run on these 16 coflows
    short.write_text("\n".join([f"{lines[0].split()[0]} 16", *lines[1:17]]) + "\n")
    fabrics = {"big switch 1G": ("big_switch", 1.0), "fat-tree k=4 1G": ("fat_tree:k=4", 1.0)}
    res = bench(short, n_prefix=8, n_dags=2, fabrics=fabrics, small="fat_tree:k=4")
    out = tmp_path / "out"
    outcome = publish(out, res, Console(width=150))
    sc = res["scenarios"]
    assert all(sc[f"single wave/{f}"]["runs"]["stream"]["coflows"] == 16 for f in fabrics)
    assert sc["multi-wave/2 waves, 8 coflows"]["runs"]["fs"]["coflows"] == 8
    for f in sc.values():
        s = f["runs"]["stream"]["avg_cct_s"]
        for p, r in f["runs"].items():
            assert r["coflows"] == f["runs"]["stream"]["coflows"]
            if p != "stream":
                assert f[p] == pytest.approx(r["avg_cct_s"] / s, rel=1e-12)
    # stream-oracle, not one of 004's schemes, runs the whole trace on the big switch only
    assert "stream-oracle" in sc["single wave/big switch 1G"]["runs"]
    assert "stream-oracle" not in sc["single wave/fat-tree k=4 1G"]["runs"]
    # WP's two forms and the information delay are runs of their own
    assert "stream (WP literal)" in sc["many-to-many/tpcds, 2 DAGs"]["runs"]
    assert len(sc["information delay/tpcds, 2 DAGs"]["runs"]) == 6
    checks = outcome.comparison.checks
    assert len(checks) == 2 * 2
    assert all(("beats fs" in c.what) != ("beats baraat" in c.what) for c in checks)
    rows = outcome.comparison.rows
    assert any(r[1] == "vs fs" and r[4] == 1.77 for r in rows)
    saved = json.loads((out / "results.json").read_text())
    assert saved["comparison"]["checks"] and "2^30" in saved["spec"]["units"]
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 3  # embedded: the report is one file
    assert all(f'alt="{n}"' in html for n in ("paper-004-vs-paper", "fig7_categories",
                                              "fig11_queues"))


def _summary(avg: float, mice: float) -> dict:
    return {"avg_cct_s": avg, "mice_avg_cct_s": mice,
            "avg_cct_by_category": {c: avg for c in CATEGORIES}}


def test_checks_fail_when_stream_loses():
    """A fabric where stream's average CCT is above fs's: that check fails and the
    notes carry the per-category numbers."""
    runs = {"stream": _summary(10.0, 1.0), "stream-oracle": _summary(9.0, 1.0),
            "fs": _summary(8.0, 2.0), "baraat": _summary(20.0, 3.0), "aalo": _summary(12.0, 1.0)}
    cmp = compare({"scenarios": {"single wave/x": {"paper": "1G", "check": True,
                                                   **_factors(runs)}}})
    ok = {c.what.split("beats ")[1]: c.ok for c in cmp.checks}
    assert ok == {"fs's": False, "baraat's": True}
    assert not cmp.ok and "per category" in cmp.notes[0] and "10.00 vs 8.00" in cmp.notes[0]


def test_a_run_reports_its_progress_to_the_bench(trace_path, monkeypatch):
    """In a worker, a run puts (its index, flows done, flows) on the bench's queue, the
    last with every flow done."""
    reports: queue.Queue = queue.Queue()
    monkeypatch.setattr(paper004, "_PROGRESS", reports)
    task = (str(trace_path), "trace", 8, 1, "fs", "big_switch", 1.0, ())
    _, summ = paper004._one(task, 7)
    got = [reports.get_nowait() for _ in range(reports.qsize())]
    assert got and {i for i, _, _ in got} == {7}
    assert got[-1][1:] == (summ["flows"], summ["flows"])
