"""A bench's checks can fail: paper-000 with the manager loop capping nothing
(``observe``) exits 1 on exactly the throughput-gain checks, while app-aware passes them
on the same short runs; every row states its distance to the paper."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from streamband.cli import app

runner = CliRunner()


def test_a_policy_that_caps_nothing_fails_paper_000(tmp_path):
    res = runner.invoke(app, ["bench", "paper-000", "--policy", "observe", "--seconds", "40",
                              "--out", str(tmp_path / "observe")])
    assert res.exit_code == 1, res.output
    checks = json.loads((tmp_path / "observe" / "results.json").read_text())["comparison"][
        "checks"]
    failed = [c["what"] for c in checks if not c["ok"]]
    assert len(failed) == 12 and all("throughput >= tcp + 10 %" in w for w in failed), failed


def test_appaware_passes_the_same_checks_and_rows_carry_the_paper(tmp_path):
    res = runner.invoke(app, ["bench", "paper-000", "--seconds", "40",
                              "--out", str(tmp_path / "aa")])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "aa" / "results.json").read_text())
    cmp = data["comparison"]
    assert all(c["ok"] for c in cmp["checks"]) and len(cmp["checks"]) == 36
    h = cmp["header"].index
    for row in cmp["rows"]:  # distance to the paper, per row, and the 2x flag
        assert abs(row[h("vs paper")] - (row[h("gain %")] - row[h("paper gain %")])) < 1e-9
        ratio = row[h("gain %")] / row[h("paper gain %")]
        assert (row[h("2x off")] == "yes") == (not 0.5 <= ratio <= 2.0)
    html = (tmp_path / "aa" / "report.html").read_text()
    assert 'alt="paper-000-gain-vs-paper"' in html and "data:image/png;base64," in html
