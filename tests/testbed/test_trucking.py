"""The Trucking IoT harness on the real testbed (000 §VI-B), derived from the same
application as the simulator's (one instance per operator): truck events and
congestion records from two hosts, each truck event combined on a third host with the
latest congestion record, results to the dashboard on the first, over real TCP; the
profiler reads the 5-metric tuple of every flow (000 §IV-A1) while it runs."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from streamband.backends.testbed import HarnessProfiler
from streamband.model.flows import FlowMap
from streamband.model.spec import load_spec as load_experiment
from streamband.model.testbed import load_spec
from streamband.testbed.harness.dag import Dag
from streamband.testbed.harness.run import run_dag
from streamband.testbed.network import Testbed

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the testbed needs root")
SPEC = "star:hosts=3,link_mbps=20,api=127.0.0.1:8191,openflow=127.0.0.1:6663"
RATE_TPS = 50.0  # per source: 20 KB truck events at 50/s = 8.2 Mbit/s on a 20 Mbit/s link


def test_trucking_iot_carries_both_streams(cleanup, tmp_path):
    spec = load_spec(SPEC)
    with Testbed(spec) as tb:
        app = load_experiment("paper-000-ti").app.model_copy(deep=True)
        for op in app.operators:
            op.parallelism = 1
            if op.kind == "source":
                op.rate_tps = RATE_TPS
        placement = {"truck[0]": "w1", "traffic[0]": "w2", "combiner[0]": "w3",
                     "dashboard[0]": "w1"}
        dag = Dag.from_flowmap(FlowMap(app, tb.topo, placement))
        dag.seconds, dag.warmup_s = 5, 1
        assert len(dag.remote_edges()) == 3  # truck, traffic -> combiner -> dashboard
        run = tmp_path / "run"
        prof = HarnessProfiler(run, [e.id for e in dag.remote_edges()])
        seen: dict[str, object] = {}

        def sample() -> None:  # the manager's view, Δt = 1 s, while the run goes on
            time.sleep(1.5)
            prof.flow_state()
            t0 = time.monotonic()
            time.sleep(1.0)
            seen["state"] = prof.flow_state()
            seen["dt"] = time.monotonic() - t0

        res = run_dag(tb, dag, run, on_start=sample)
        print(f"\ntrucking: {res['throughput_tps']:.0f} truck events combined/s, "
              f"latency p50 {res['latency_p50_s']:.3f} s, edges {res['edges']}")
        assert res["throughput_tps"] > 0.5 * RATE_TPS  # truck events combined
        assert res["dropped_tuples"] == 0
        for e in dag.remote_edges():
            st = res["edges"][str(e.id)]
            assert {"sent", "ls", "lr"} <= set(st)
            assert st["sent"] > 0.5 * RATE_TPS * e.tuple_bytes * dag.seconds
        state = seen["state"]
        for name in ("ls0", "ls1", "lr0", "lr1", "sent"):  # the 5-metric tuple
            v = getattr(state, name)
            assert v.shape == (3,) and np.all(np.isfinite(v)) and np.all(v >= 0)
        expect = np.array([RATE_TPS * e.tuple_bytes for e in dag.remote_edges()])
        ratio = state.sent / (expect * seen["dt"])
        print(f"profiler: sent {state.sent} bytes in {seen['dt']:.2f} s, ratio {ratio}")
        assert np.all(ratio > 0.4) and np.all(ratio < 2.0)
