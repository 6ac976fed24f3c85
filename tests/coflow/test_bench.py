"""``streamband bench paper-004`` end to end on a prefix of the trace: every table row
is the other scheme's average CCT over stream's, and the report carries the plots."""

from __future__ import annotations

import json

import pytest

from streamband.experiments.paper004 import OTHERS, SCHEMES
from streamband.experiments.paper004 import bench as run


def test_bench_factors_are_ratios_of_the_runs(trace_path, tmp_path):
    lines = trace_path.read_text().splitlines()
    short = tmp_path / "fb-first-16.txt"  # "the full trace" rows run on these 16 coflows
    short.write_text("\n".join([f"{lines[0].split()[0]} 16", *lines[1:17]]) + "\n")
    res = run(tmp_path, short, n_coflows=12, workers=2, full=True, n_fat=8,
              n_dags=2, full_fattree=True)
    rows = [f for sect in ("single_wave", "multi_wave", "bursty", "many_to_many")
            for f in res[sect].values()]
    assert len(rows) == 6 + 3 + 2 + 2
    full = res["single_wave"]["full trace fat_tree:k=8 1G"]["runs"]
    assert all(r["coflows"] == 16 for r in full.values())
    assert all(r["coflows"] == 12
               for r in res["single_wave"]["12 coflows big_switch 1G"]["runs"].values())
    for f in rows:
        s = f["runs"]["stream"]["avg_cct_s"]
        assert set(f["runs"]) == set(SCHEMES)
        for p in OTHERS:
            assert f[p] == pytest.approx(f["runs"][p]["avg_cct_s"] / s, rel=1e-12)
            assert f["runs"][p]["coflows"] == f["runs"]["stream"]["coflows"]
    assert sorted(res["queues"]) == [2, 3, 4, 5, 6, 7]
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["spec"]["n_fat"] == 8 and saved["spec"]["n_dags"] == 2
    html = (tmp_path / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 5  # embedded: the report is one file
    assert all(f'alt="{n}"' in html for n in ("fig6_single_wave", "fig7_categories",
                                              "fig11_queues"))
