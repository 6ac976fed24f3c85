"""The compiled engine against the per-coflow CCTs of the engine it replaced (frozen in
``perf/data/coflow_frozen_*.json`` by ``perf/coflow_reference.py``): every scheduler,
every coflow within 1e-9 relative, on prefixes of FB2010 on the big switch and a
fat-tree (the whole trace is checked by ``perf/coflow_speed.py``)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

PERF = Path(__file__).resolve().parents[2] / "perf"
FILES = ["coflow_frozen_big_switch_prefix100.json", "coflow_frozen_fat_tree_k8_prefix50.json"]


def _reference_runs() -> dict[str, tuple[str, dict]]:
    """The run labels the references were frozen under (``coflow_reference.RUNS``)."""
    spec = importlib.util.spec_from_file_location("streamband_coflow_reference",
                                                  PERF / "coflow_reference.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.RUNS


@pytest.mark.parametrize("name", FILES)
def test_every_scheduler_matches_the_frozen_engine(trace_path, name):
    """Same CCT for every coflow (1e-9 relative) as the per-group engine of ba76f65, for
    every scheduler and stream-oracle with the 1 s starvation timer (004 §IV-B)."""
    from streamband.sim.coflow.run import simulate
    from streamband.sim.coflow.trace import read_trace
    from streamband.sim.coflow.workloads import from_trace

    runs = _reference_runs()
    ref = json.loads((PERF / "data" / name).read_text())
    assert set(ref["cct"]) == set(runs)
    wl = from_trace(read_trace(trace_path).head(ref["coflows"]))
    for label, (policy, opts) in runs.items():
        got = simulate(wl, policy, ref["topology"], ref["link_gbps"], **opts).result.cct
        np.testing.assert_allclose(got, np.array(ref["cct"][label]), rtol=1e-9,
                                   err_msg=f"{label} on {ref['topology']}")
