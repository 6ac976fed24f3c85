"""The compiled loops (``rust/coflow_core``), behind the same scheduler objects.

- :func:`run_compiled`: any registered scheduler whose entry is ``compiled`` (every
  one), on any fabric; the scheduler's parameters go to the core as one typed
  object (``SchedParams``), built by the scheduler's :meth:`compiled_params`;
- :func:`run_bigswitch`: ``fs`` / ``fs-static`` on a big switch by port pairs, for
  workloads without release dependencies (the fastest path for those two).

Same model as :class:`~streamband.sim.coflow.engine.Simulation` with the Python
scheduler classes, which stay the readable reference; tests compare both engines to
1e-9 relative.

Both take ``progress(t_sim_s, flows_done)``, called every ``progress_s`` seconds of
wall time at most and once at the end; it only observes (the results are the same
bit for bit). The loops run without the GIL and take it back at those moments, also
to check Python's signals: an exception of ``progress`` or a KeyboardInterrupt
(ctrl-C) stops the run and is raised.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import streamband_coflow_core as _core  # built by `pip install ./rust/coflow_core`

from streamband.model.fabric import Fabric
from streamband.sim.coflow.engine import Result, Scheduler, path_table
from streamband.sim.coflow.workloads import Workload

#: the port-pair loop runs these (no levels, no release dependencies)
BIGSWITCH = ("fs", "fs-static")

#: ``progress(t_sim_s, flows_done)``
ProgressFn = Callable[[float, int], object]


def bigswitch_supports(wl: Workload, name: str) -> bool:
    """Whether the big-switch port-pair loop can run scheduler ``name`` on ``wl``."""
    return name in BIGSWITCH and not any(wl.group_deps)


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


def run_bigswitch(wl: Workload, port_bps: float, name: str,
                  progress: ProgressFn | None = None, progress_s: float = 0.25) -> Result:
    """Run ``wl`` on a ``wl.n_nodes``-port big switch of ``port_bps`` bit/s per port,
    reporting to ``progress`` every ``progress_s`` seconds at most."""
    if any(wl.group_deps):
        raise ValueError("the big-switch loop has no release dependencies (waves, DAGs)")
    t0 = time.perf_counter()
    release = wl.group_arrival[wl.group]
    raw, events = _core.bigswitch_run(int(wl.n_nodes), float(port_bps) / 8.0, _i64(wl.src),
                                      _i64(wl.dst), _f64(wl.size), _f64(release), name,
                                      progress, float(progress_s))
    return _result(wl, raw, events, t0)


def core_workload(wl: Workload, fabric: Fabric, sched: Scheduler) -> dict:
    """The workload as the core reads it: named int64 / float64 buffers."""
    pid, links = path_table(wl, fabric)
    L = fabric.n_links
    links = np.where(links >= L, -1, links)
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
    return {
        "cap": _f64(fabric.cap_bps[:L] / 8.0), "plinks": _i64(links),
        "width": int(links.shape[1]),
        "f_path": _i64(pid), "f_unit": _i64(wl.unit), "f_cof": _i64(wl.coflow),
        "f_group": _i64(wl.group), "f_src": _i64(wl.src), "f_size": _f64(wl.size),
        "u_cof": _i64(wl.unit_coflow), "u_group": _i64(wl.unit_group),
        "u_w": _f64(sched.unit_weights(wl)), "c_rank": _i64(rank),
        "g_arrival": _f64(wl.group_arrival), "g_deps": _i64(deps),
        "g_par_ptr": _i64(par_ptr), "g_par": _i64(par),
    }


def run_compiled(wl: Workload, fabric: Fabric, sched: Scheduler,
                 progress: ProgressFn | None = None, progress_s: float = 0.25) -> Result:
    """Run ``wl`` on ``fabric`` under ``sched`` in the compiled loop, reporting to
    ``progress`` every ``progress_s`` seconds at most."""
    t0 = time.perf_counter()
    data = core_workload(wl, fabric, sched)
    raw, events = _core.fabric_run(_core.SchedParams(**sched.compiled_params(fabric)), data,
                                   progress, float(progress_s))
    return _result(wl, raw, events, t0)
