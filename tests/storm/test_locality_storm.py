"""003's reconfiguration protocol inside Storm on the testbed: the keyed chain S -> A -> B
-> sink on two worker hosts, routed by the locality-aware grouping, while the manager (its
own process, over TCP) runs >= 20 online reconfigurations that move key state between
instances as tuples flow; the manager is killed with SIGKILL twice mid-round (once after
③, once while propagating) and restarted. Every key's counts at the sink are exactly
1..n (nothing lost, nothing counted twice, every migrated state intact), no tuple failed
(acking on) and the sink received tuples in every second (the stream never paused)."""

from __future__ import annotations

import time

import pytest

from streamband.locality.durable import read_json
from streamband.storm.chain import (
    ChainRun,
    ChainSpec,
    applied_rounds,
    check_counts,
    drifting,
    expected_counts,
    reconfiguration_stats,
    write_workload,
)

pytestmark = pytest.mark.usefixtures("storm_testbed")
TUPLES = 27_000
RATE = 300.0  # tuples/s: 90 s of stream (a round lasts about the pipeline's latency, 1-2 s)
ROUNDS = 24


def test_online_reconfigurations_move_keys_with_exact_counts(storm_testbed, tmp_path):
    tb, cluster = storm_testbed
    hosts = [tb.ip("w1"), tb.ip("w2")]
    k1, k2 = drifting(TUPLES, keys=240, locality=0.8, drift_every=TUPLES // 10, seed=1)
    workload = write_workload(tmp_path / "workload.tsv", k1, k2)
    spec = ChainSpec(parallelism=4, sources=2, padding=256, rate=RATE, max_pending=100,
                     period_s=0.5, first_s=2.0, rounds=ROUNDS, memory_bytes=1 << 16)
    run = ChainRun(cluster, "chain", spec, "online", workload, tmp_path / "run", hosts)
    kills: dict[str, int] = {}
    try:
        run.start()
        next_sample = 0.0
        deadline = time.monotonic() + 300
        while True:
            now = time.monotonic()
            if now >= next_sample:
                s = run.sample()
                next_sample = now + 0.5
                if s.sink >= TUPLES and run.manager is not None \
                        and run.manager.poll() is not None:
                    break
            assert now < deadline, f"not done: {s}, rounds {run.rounds()[-3:]}"
            ph, epoch = run.manager_phase()
            # kill -9 once after ③ went out (rolled back) and once propagating (resumed)
            if epoch >= 4 and ph in ("PREPARED", "PROPAGATING") and ph not in kills \
                    and epoch not in kills.values():
                run.kill_manager()
                kills[ph] = epoch
                run.start_manager(first_s=0.0)
            time.sleep(0.01)
        time.sleep(2.5)  # the sink's file and the instances' reports: once a second
        run.sample()
        sink = run.sink()
        epochs = run.instance_epochs()
        reports = run.instance_reports()
    finally:
        run.stop()
    assert run.manager.returncode == 0
    assert set(kills) == {"PREPARED", "PROPAGATING"}
    man = read_json(run.store / "manager.json")
    assert kills["PREPARED"] in man["rolled_back"]
    assert kills["PROPAGATING"] not in man["rolled_back"]
    rounds = run.rounds()
    assert sum(r.get("event") == "restarted" for r in rounds) == 2
    # >= 20 reconfigurations applied while tuples were flowing, moving key state
    last_second = max(sink["per_second"])
    applied = [r for r in applied_rounds(rounds) if r["t"] < last_second]
    assert len(applied) >= 20, len(applied)
    stats = reconfiguration_stats(rounds, epochs)
    assert sum(p["moved_keys"] for p in stats["per_epoch"]) > 100
    print({k: stats[k] for k in ("propagate_to_done_s", "state_wait_max_s", "buffered_peak",
                                 "moved_keys")})
    # exact counts: every key of n tuples saw A's and B's counts 1..n exactly once
    assert check_counts(sink, expected_counts(k1, k2)) == []
    assert sink["count"] == TUPLES
    last = run.samples[-1]
    assert last.failed == 0 and last.acked == TUPLES and last.errors == 0
    assert all(r["grouping_mismatches"] == 0 for r in reports.values())
    assert {r["applied"] for r in reports.values()} == {man["active"]}
    # the stream never paused while the rounds ran: tuples reached the sink in every
    # second from the first round's first phase to the last round applied (the seconds
    # before are the workers' start, no part of the protocol: on a busy machine one of
    # them came up empty)
    per = sink["per_second"]
    first = min(r["t"] for r in rounds if "event" not in r and r.get("t") is not None)
    secs = [int(first), int(applied[-1]["t"])]
    empty = [t for t in range(secs[0], secs[-1] + 1) if per.get(t, 0) <= 0]
    if empty:
        near = [(t, per.get(t, 0)) for t in range(empty[0] - 3, empty[-1] + 4)]
        kept = [(round(r["t"], 1), r.get("event"), r.get("phase")) for r in rounds
                if r.get("t") is not None and empty[0] - 5 <= r["t"] <= empty[-1] + 5]
        pytest.fail(f"no tuple at the sink in seconds {empty} of {secs[0]}..{secs[-1]}: "
                    f"per second around them {near}; rounds then {kept}")
    # locality is the bench's (a round every 0.5 s plans on a few hundred tuples: 003's
    # statistics, reset at every round, are too thin for locality; here they test migration)
    mid = next(x for x in run.samples if x.sink >= TUPLES / 2)
    local, remote = last.local_in_b - mid.local_in_b, last.remote_in_b - mid.remote_in_b
    print(f"locality A -> B, second half: {local / (local + remote):.3f}")
