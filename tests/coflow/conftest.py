from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from streamband.shared import FB2010_TRACE, shared_dir
from streamband.sim.coflow.workloads import Workload

TRACE = shared_dir().joinpath(*FB2010_TRACE)  # $STREAMBAND_SHARED, else ../shared


@pytest.fixture
def trace_path() -> Path:
    if not TRACE.is_file():  # CI clones the project beside ../shared: a missing trace is a bug
        pytest.fail(f"the FB2010 trace is missing: expected {TRACE.resolve()} "
                    "(the project must sit beside ../shared, or set STREAMBAND_SHARED)")
    return TRACE


def make_workload(flows: list[tuple[int, int, int, float]], arrivals: list[float],
                  ports: int) -> Workload:
    """flows: (coflow, src, dst, bytes); one unit and one release group per coflow."""
    a = np.array(flows, dtype=float)
    cof = a[:, 0].astype(np.int64)
    C = len(arrivals)
    return Workload(
        name="hand", n_nodes=ports, coflow=cof, unit=cof.copy(), group=cof.copy(),
        src=a[:, 1].astype(np.int64), dst=a[:, 2].astype(np.int64), size=a[:, 3],
        coflow_arrival=np.asarray(arrivals, float), coflow_id=np.arange(C),
        unit_coflow=np.arange(C), unit_subid=np.ones(C, np.int64), unit_group=np.arange(C),
        group_arrival=np.asarray(arrivals, float), group_deps=[() for _ in range(C)],
    )


def units_workload(flows: list[tuple[int, int, int, int, float]], units: list[tuple[int, int]],
                   group_arrival: list[float], group_deps: list[tuple[int, ...]], ports: int,
                   coflow_arrival: list[float], subid: list[int] | None = None) -> Workload:
    """flows: (unit, group, src, dst, bytes); units: (coflow, group) per unit — a
    receiver's sub-coflow may differ from its release group only for DAG nodes."""
    a = np.array(flows, dtype=float)
    unit = a[:, 0].astype(np.int64)
    u = np.array(units, np.int64)
    U = len(units)
    return Workload(
        name="hand", n_nodes=ports, coflow=u[unit, 0], unit=unit, group=a[:, 1].astype(np.int64),
        src=a[:, 2].astype(np.int64), dst=a[:, 3].astype(np.int64), size=a[:, 4],
        coflow_arrival=np.asarray(coflow_arrival, float),
        coflow_id=np.arange(len(coflow_arrival)), unit_coflow=u[:, 0],
        unit_subid=np.asarray(subid if subid is not None else [1] * U, np.int64),
        unit_group=u[:, 1], group_arrival=np.asarray(group_arrival, float),
        group_deps=list(group_deps),
    )
