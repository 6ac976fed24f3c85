"""The evaluation of 003 §4: hash locality ~ 1/n, locality-aware reaches the workload's
locality, throughput grows with parallelism, flights online vs offline vs hash."""

from __future__ import annotations

import numpy as np
import pytest

from streamband.locality.evaluation import run_flights, synthetic_point
from streamband.locality.workloads import flights


@pytest.mark.parametrize("n", [2, 3, 4, 6])
def test_synthetic_hash_is_one_over_n_and_locality_aware_reaches_parameter(n: int) -> None:
    p = synthetic_point(n, 0.6, 12288, 1e9, tuples=60_000)
    assert abs(p.locality["hash"] - 1 / n) <= 0.02
    assert abs(p.locality["locality_aware"] - 0.6) <= 0.02
    assert p.locality["worst_case"] < p.locality["hash"] + 0.02


def test_synthetic_throughput_grows_with_parallelism_where_hash_flattens() -> None:
    pts = [synthetic_point(n, 0.6, 12288, 1e9, tuples=30_000) for n in range(1, 7)]
    la = [p.throughput_tps["locality_aware"] for p in pts]
    h = [p.throughput_tps["hash"] for p in pts]
    assert all(y > x for x, y in zip(la[1:], la[2:], strict=False))
    gain_la = la[-1] - la[1]
    gain_h = h[-1] - h[1]
    assert gain_la > 3 * gain_h  # hash gains little from more servers (003 Fig. 7)
    assert la[-1] > 3 * h[-1]
    # locality helps: more locality, more throughput (003 Fig. 8)
    lo = synthetic_point(4, 0.2, 12288, 1e9, tuples=30_000).throughput_tps["locality_aware"]
    hi = synthetic_point(4, 0.9, 12288, 1e9, tuples=30_000).throughput_tps["locality_aware"]
    assert hi > lo


@pytest.fixture(scope="module")
def flights_run():
    return run_flights(flights(), 6)


def test_flights_online_offline_hash(flights_run) -> None:
    r = flights_run
    mean = {p: float(np.mean(v)) for p, v in r.locality.items()}
    assert abs(mean["hash"] - 1 / 6) <= 0.02
    assert mean["online"] > 2 * mean["hash"] and mean["offline"] > 1.5 * mean["hash"]
    from4 = [i for i, w in enumerate(r.weeks) if w >= 4]
    assert all(r.locality["online"][i] >= r.locality["offline"][i] for i in from4)
    assert max(r.planned_imbalance) <= 1.03 + 1e-9  # METIS respects alpha on its data
    assert r.throughput_tps["online"] > r.throughput_tps["hash"]
