"""A 1-minute soak of the running manager (perf/soak.py's :func:`soak`; the
measurement runs it for 30 minutes): it keeps up with Δt, makes no error, and its
memory does not run away."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SOAK = Path(__file__).resolve().parents[2] / "perf" / "soak.py"


def test_soak_one_minute(stage):
    spec = importlib.util.spec_from_file_location("streamband_soak", SOAK)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if stage.manager is None or stage.manager.poll() is not None:
        stage.start_manager(stage.extra["config"])
    res = mod.soak(stage, 60.0, every=2.0)
    print(res)
    assert res["errors"] == 0 and res["rejected"] == 0
    # one allocation per Δt per running topology, the loop keeping up
    assert res["allocations"] >= 0.9 * res["expected_allocations"], res
    assert res["step_ms_p99"] < 1000.0  # within Δt = 1 s
    assert res["decisions"].get("policy", 0) >= 0.9 * res["allocations"], res["decisions"]
    assert res["rss_growth_mb"] < 30.0, res
