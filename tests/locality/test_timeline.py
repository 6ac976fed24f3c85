"""003 Fig. 13 on the simulator with the protocol running: online reconfiguration lifts
locality and throughput above hash's, its rounds take simulated time and its MIGRATE
messages bandwidth."""

from __future__ import annotations

import numpy as np

from streamband.locality.timeline import run_timeline
from streamband.locality.workloads import synthetic


def test_online_timeline_rises_after_the_first_reconfiguration() -> None:
    syn = synthetic(4, 0.8, 6000, 100, seed=2)
    args = (syn.a, syn.b, 4, 16384, 10e6, 40.0, 12.0)
    h = run_timeline("hash", *args, window=300)
    on = run_timeline("online", *args, window=300)
    assert h.reconfigurations_t == [] and len(on.reconfigurations_t) >= 2
    first = on.reconfigurations_t[0]
    assert 12.0 < first < 20.0
    after = [i for i, t in enumerate(on.t) if t > first + 3]
    assert np.mean([on.locality[i] for i in after]) > 0.7
    assert np.mean(h.locality) < 0.35
    assert np.mean([on.throughput[i] for i in after]) > 1.5 * np.mean(h.throughput)
    assert all(r > 0 for r in on.round_s) and all(b > 0 for b in on.migrated_bytes)
