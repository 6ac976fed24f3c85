"""The evaluation of 003 §4: hash locality ~ 1/n, locality-aware reaches the workload's
locality, throughput grows with parallelism, flights online vs offline vs hash."""

from __future__ import annotations

import numpy as np
import pytest

from streamband.locality.evaluation import (
    IMBALANCE_WINDOWS,
    POLICIES_FLIGHTS,
    full_periods,
    run_flights,
    synthetic_point,
)
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
def flights_data():
    return flights()


@pytest.fixture(scope="module")
def flights_run(flights_data):
    return run_flights(flights_data, 6)


def test_flights_time_order_and_calendar_weeks(flights_data) -> None:
    f = flights_data
    assert (np.diff(f.hours) >= 0).all()  # replayed in order of scheduled departure
    wk = f.iso_week()
    # Tue 1 Jan 2013 is in ISO week 1, which starts Mon 31 Dec 2012; Mon 7 Jan starts week 2
    assert wk[0] == 1 and 24.0 <= f.hours[0] < 48.0
    assert wk.max() == 53  # Mon 30 - Tue 31 Dec: ISO week 1 of 2014
    first_monday = np.flatnonzero(wk == 2)[0]
    assert 168.0 <= f.hours[first_monday] < 192.0


def test_flights_online_offline_hash(flights_run) -> None:
    r = flights_run
    mean = {p: float(np.mean(v)) for p, v in r.locality.items()}
    assert abs(mean["hash"] - 1 / 6) <= 0.02
    assert mean["online"] > 2.5 * mean["hash"] and mean["offline"] > 1.8 * mean["hash"]
    from4 = [i for i, w in enumerate(r.weeks) if w >= 4]
    assert all(r.locality["online"][i] >= r.locality["offline"][i] for i in from4)
    assert max(r.planned_imbalance) <= 1.03 + 1e-9  # METIS respects alpha on its data
    assert r.throughput_tps["online"] > r.throughput_tps["hash"]
    # METIS (+ refinement) co-locates most of the pair weight of the week it partitions
    assert np.mean(r.extra["planned_locality"]) > 0.65
    # the next week: keys absent from last week's statistics go by hash (1/n local)
    share = np.array(r.extra["online_share_in_table"])
    in_table = np.array(r.extra["online_locality_in_table"])
    rest = (np.array(r.locality["online"]) - share * in_table) / (1 - share)
    assert abs(float(np.mean(rest)) - 1 / 6) <= 0.02


def test_flights_imbalance_windows(flights_run) -> None:
    r = flights_run
    full = full_periods(r)
    assert len(r.weeks) - len(full) == 1 and r.extra["period_days"][-1] == 2  # 30-31 Dec
    win = r.extra["imbalance_windows"]
    for p in POLICIES_FLIGHTS:
        assert set(win[p]) == set(IMBALANCE_WINDOWS)
        assert all(len(v) == len(r.weeks) for v in win[p].values())
    assert r.imbalance_after_reconfig == win["online"]["period"]
    # locality-aware tables balance the destinations far better than hashing them
    assert max(win["online"]["period"][i] for i in full) < min(win["hash"]["period"])


def test_fluid_simulator_agrees_with_the_max_min_steady_state():
    from streamband.locality.evaluation import synthetic_point
    from streamband.locality.throughput import maxmin_network

    sim = synthetic_point(4, 0.6, 12288, 1e9).throughput_tps
    ana = synthetic_point(4, 0.6, 12288, 1e9, network=maxmin_network).throughput_tps
    for key in ("hash", "locality_aware", "worst_case"):
        assert sim[key] == pytest.approx(ana[key], rel=0.01)
    assert sim["locality_aware"] > 3 * sim["hash"]
