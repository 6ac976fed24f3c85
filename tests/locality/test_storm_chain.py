"""The keyed chain's checks on Storm can fail: a lost tuple, a tuple counted twice and a
migrated state that arrived wrong each show at the sink's per-key counts; the manager's
start records are not taken for reconfigurations."""

from __future__ import annotations

import numpy as np

from streamband.storm.chain import (
    applied_rounds,
    check_counts,
    expected_counts,
    reconfiguration_stats,
)


def sink_of(k1: list[int], k2: list[int]) -> dict:
    """What an exact sink reports: per key (seen, largest count, sum of counts)."""
    keys: dict[str, dict] = {"A": {}, "B": {}}
    for op, ks in (("A", k1), ("B", k2)):
        for k in set(ks):
            n = ks.count(k)
            keys[op][k] = [n, n, n * (n + 1) // 2]
    return {"count": len(k1), "keys": keys, "per_second": {}}


def test_check_counts_sees_loss_duplicates_and_bad_state() -> None:
    k1, k2 = [1, 1, 2, 3, 3, 3], [5, 6, 5, 5, 6, 6]
    exp = expected_counts(np.array(k1), np.array(k2))
    assert check_counts(sink_of(k1, k2), exp) == []
    lost = sink_of(k1, k2)
    lost["keys"]["A"][3] = [2, 2, 3]  # a tuple of key 3 never arrived
    dup = sink_of(k1, k2)
    dup["keys"]["B"][6] = [4, 3, 9]  # counted twice: seen 4 times, largest count 3
    reset = sink_of(k1, k2)
    reset["keys"]["A"][3] = [3, 2, 4]  # state lost in migration: counts 1, 2, 1
    for bad in (lost, dup, reset):
        assert len(check_counts(bad, exp)) == 1
    extra = sink_of(k1, k2)
    extra["keys"]["A"][9] = [1, 1, 1]
    assert "not in the workload" in check_counts(extra, exp)[0]


def test_rounds_and_their_statistics() -> None:
    rounds = [
        {"t": 0.0, "event": "started", "epoch": 0, "phase": "IDLE", "active": 0},
        {"t": 1.0, "epoch": 1, "phase": "COLLECTING"},
        {"t": 1.2, "epoch": 1, "phase": "PREPARED", "moved_keys": 7},
        {"t": 1.3, "epoch": 1, "phase": "PROPAGATING"},
        {"t": 1.8, "epoch": 1, "phase": "IDLE", "active": 1},
        {"t": 2.0, "epoch": 2, "phase": "COLLECTING"},
        {"t": 9.0, "event": "restarted", "epoch": 2, "phase": "IDLE", "active": 1,
         "rolled_back": [2]},
    ]
    assert [r["epoch"] for r in applied_rounds(rounds)] == [1]
    epochs = {"A[0]": {1: {"switched": 1400, "last_migrate_in": 1650, "keys_in": 3,
                           "buffered_peak": 12}},
              "A[1]": {1: {"switched": 1350, "last_migrate_in": 0, "keys_in": 0,
                           "buffered_peak": 0}}}
    st = reconfiguration_stats(rounds, epochs)
    (e,) = st["per_epoch"]
    assert e["moved_keys"] == 7 and e["buffered_peak"] == 12
    assert abs(e["propagate_to_done_s"] - 0.5) < 1e-9 and abs(e["state_wait_max_s"] - 0.25) < 1e-9
