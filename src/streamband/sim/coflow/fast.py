"""The compiled big-switch loop (``rust/coflow_core``) for ``fs`` and ``fs-static``.

Same model as :class:`~streamband.sim.coflow.engine.Simulation` with those two
schedulers (tests compare the two); used when the workload has no release
dependencies (single wave, bursty) and the fabric is the big switch, so the whole
FB2010 trace runs in seconds (issue 3 performance goal).
"""

from __future__ import annotations

import time

import numpy as np

from streamband.sim.coflow.engine import Result
from streamband.sim.coflow.workloads import Workload

try:  # built by `pip install ./rust/coflow_core`
    import streamband_coflow_core as _core
except ImportError:  # pragma: no cover - the Python engine still works
    _core = None

POLICIES = ("fs", "fs-static")


def available() -> bool:
    return _core is not None


def supports(wl: Workload, policy: str) -> bool:
    return available() and policy in POLICIES and not any(wl.group_deps)


def run_bigswitch(wl: Workload, port_bps: float, policy: str) -> Result:
    """Run ``wl`` on a ``wl.n_nodes``-port big switch of ``port_bps`` bit/s per port."""
    if _core is None:
        raise RuntimeError("streamband_coflow_core is not built: pip install ./rust/coflow_core")
    if any(wl.group_deps):
        raise ValueError("the compiled loop has no release dependencies (waves, DAGs)")
    t0 = time.perf_counter()
    release = np.ascontiguousarray(wl.group_arrival[wl.group], dtype=np.float64)
    raw, events = _core.bigswitch_run(
        int(wl.n_nodes), float(port_bps) / 8.0,
        np.ascontiguousarray(wl.src, np.int64).tobytes(),
        np.ascontiguousarray(wl.dst, np.int64).tobytes(),
        np.ascontiguousarray(wl.size, np.float64).tobytes(),
        release.tobytes(), policy,
    )
    finish = np.frombuffer(raw, dtype=np.float64).copy()
    cof_fin = np.full(wl.n_coflows, -np.inf)
    np.maximum.at(cof_fin, wl.coflow, finish)
    return Result(finish, cof_fin, cof_fin - wl.coflow_arrival, int(events),
                  time.perf_counter() - t0)
