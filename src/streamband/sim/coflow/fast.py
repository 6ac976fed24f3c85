"""The compiled loops (``rust/coflow_core``).

- :func:`run_bigswitch`: the big-switch loop for ``fs`` and ``fs-static`` (per port
  pair service counters; the whole FB2010 trace in seconds, issue 3 performance goal).
- :func:`run_fabric`: the general loop on any fabric (a link table) with strict
  priority between levels and max-min inside a level (004 §III-B), the priority rules
  of ``stream`` (eq. 2-5, starvation mitigation §III-D), ``aalo`` (D-CLAS) and
  ``baraat`` (FIFO-LM) behind one enum, and ``fs`` / ``fs-static``. Scheduler
  parameters are read from the Python scheduler object, which stays the readable
  reference; tests compare both engines to 1e-9 relative.

Same model as :class:`~streamband.sim.coflow.engine.Simulation` with those schedulers.
``varys`` (clairvoyant, an upper reference) runs only in the Python engine.
"""

from __future__ import annotations

import time

import numpy as np
import streamband_coflow_core as _core  # built by `pip install ./rust/coflow_core`

from streamband.model.fabric import Fabric
from streamband.sim.coflow.engine import Result, Scheduler, path_table
from streamband.sim.coflow.workloads import Workload

POLICIES = ("fs", "fs-static")
FABRIC_POLICIES = ("fs", "fs-static", "stream", "aalo", "baraat")


def supports(wl: Workload, policy: str) -> bool:
    """The big-switch loop: fs / fs-static without release dependencies."""
    return policy in POLICIES and not any(wl.group_deps)


def _i64(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a, np.int64).tobytes()


def _f64(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a, np.float64).tobytes()


def _result(wl: Workload, raw: bytes, events: int, t0: float) -> Result:
    finish = np.frombuffer(raw, dtype=np.float64).copy()
    cof_fin = np.full(wl.n_coflows, -np.inf)
    np.maximum.at(cof_fin, wl.coflow, finish)
    return Result(finish, cof_fin, cof_fin - wl.coflow_arrival, int(events),
                  time.perf_counter() - t0)


def run_bigswitch(wl: Workload, port_bps: float, policy: str) -> Result:
    """Run ``wl`` on a ``wl.n_nodes``-port big switch of ``port_bps`` bit/s per port."""
    if any(wl.group_deps):
        raise ValueError("the big-switch loop has no release dependencies (waves, DAGs)")
    t0 = time.perf_counter()
    release = wl.group_arrival[wl.group]
    raw, events = _core.bigswitch_run(int(wl.n_nodes), float(port_bps) / 8.0, _i64(wl.src),
                                      _i64(wl.dst), _f64(wl.size), _f64(release), policy)
    return _result(wl, raw, events, t0)


def run_fabric(wl: Workload, fabric: Fabric, sched: Scheduler) -> Result:
    """Run ``wl`` on ``fabric`` under ``sched`` (one of :data:`FABRIC_POLICIES`) in the
    compiled general loop."""
    if sched.name not in FABRIC_POLICIES:
        raise ValueError(f"policy: the compiled loop runs {', '.join(FABRIC_POLICIES)}, "
                         f"got {sched.name!r}")
    t0 = time.perf_counter()
    pid, links = path_table(wl, fabric)
    L = fabric.n_links
    links = np.where(links >= L, -1, links)
    cap = fabric.cap_bps[:L] / 8.0
    G = len(wl.group_arrival)
    deps = np.array([len(d) for d in wl.group_deps], np.int64)
    parents: list[list[int]] = [[] for _ in range(G)]
    for g, ds in enumerate(wl.group_deps):
        for d in ds:
            parents[d].append(g)
    par_ptr = np.concatenate([[0], np.cumsum([len(p) for p in parents])]).astype(np.int64)
    par = np.array([p for ps in parents for p in ps], np.int64)
    rank = np.empty(wl.n_coflows, np.int64)
    rank[np.argsort(wl.coflow_arrival, kind="stable")] = np.arange(wl.n_coflows)
    tau = list(map(float, getattr(sched, "tau", [np.inf])))
    W = getattr(sched, "unit_weights", None)
    u_w = W(wl) if W is not None else np.ones(len(wl.unit_coflow))
    params = {
        "alpha": float(getattr(sched, "alpha", 0.0)),
        "beta": float(getattr(sched, "beta", 1.0)),
        "starve_s": float(getattr(sched, "starve_s", np.inf)),
        "relay": float(getattr(sched, "relay", True)),
        "heavy": float(getattr(sched, "heavy_bytes", np.inf)),
    }
    raw, events = _core.fabric_run(
        sched.name, _f64(cap), _i64(links), int(links.shape[1]),
        (_i64(pid), _i64(wl.unit), _i64(wl.coflow), _i64(wl.group), _f64(wl.size)),
        (_i64(wl.unit_coflow), _i64(wl.unit_group), _f64(u_w)),
        _i64(rank),
        (_f64(wl.group_arrival), _i64(deps), _i64(par_ptr), _i64(par)),
        tau, params,
    )
    return _result(wl, raw, events, t0)
