"""The fluid simulator: TCP sharing, caps, latency, conservation, backpressure, the loop."""

import pytest

from streamband.backends.sim import simulate
from streamband.model import App, Edge, FlowMap, Operator, star
from streamband.model.placement import explicit
from streamband.sim.fluid import FluidSim, SimConfig
from test_model import fork_join

TP = {
    "TP1": {"A": "S1", "B": "S1", "C": "S2", "D": "S2"},
    "TP2": {"A": "S1", "C": "S1", "B": "S2", "D": "S2"},
    "TP3": {"A": "S1", "D": "S1", "B": "S2", "C": "S2"},
}


def fj_map(name: str) -> FlowMap:
    app = fork_join()
    topo = star(["S1", "S2"], 20e6)
    return FlowMap(app, topo, explicit(app, topo.hosts, TP[name]))


def chain(rate: float, size: float) -> FlowMap:
    app = App(name="chain",
              operators=[Operator(name="src", kind="source", rate_tps=rate),
                         Operator(name="snk", kind="sink")],
              edges=[Edge(src="src", dst="snk", tuple_bytes=size)])
    topo = star(2, 10e6)
    return FlowMap(app, topo, {"src[0]": "h1", "snk[0]": "h2"})


def test_tcp_fork_join_tp1_is_limited_by_f3_fair_share():
    res = simulate(fj_map("TP1"), "tcp", SimConfig(duration_s=60))
    assert res.throughput_tps == pytest.approx(10e6 / 8 / 6144, rel=0.01)
    assert res.link_utilization == pytest.approx(1.0, abs=0.01)


def test_static_caps_in_tuple_size_ratio_lift_tp1():
    fm = fj_map("TP1")
    f2, f3 = (f.index for f in fm.flows if f.id in ("A[0]->C[0]", "B[0]->D[0]"))
    res = simulate(fm, "static", SimConfig(duration_s=60), caps={f2: 8e6, f3: 12e6})
    assert res.throughput_tps == pytest.approx(12e6 / 8 / 6144, rel=0.01)


def test_latency_of_an_overloaded_fifo_is_exact():
    # 20 Mbit/s offered to a 10 Mbit/s link: a unit served at τ left the source at τ/2,
    # so the mean delay over a run of T seconds is T/4
    res = simulate(chain(100.0, 25000.0), "tcp", SimConfig(duration_s=100, warmup_s=0))
    assert res.latency_ms / 1000 == pytest.approx(25.0, rel=0.02)
    light = simulate(chain(10.0, 25000.0), "tcp", SimConfig(duration_s=50, warmup_s=0))
    assert light.latency_ms < 200


def test_bounded_buffers_conserve_tuples():
    sim = FluidSim(chain(100.0, 25000.0), "tcp",
                   SimConfig(duration_s=50, warmup_s=0, buffer_tuples=200))
    res = sim.run()
    queued = sum(q.count for q in sim.sq) + sum(q.count for q in sim.rq)
    assert res.dropped_tuples > 0
    done = res.throughput_tps * 50
    assert done + queued + res.dropped_tuples == pytest.approx(100 * 50, rel=1e-6)


def test_backpressure_bounds_queues_without_drops():
    sim = FluidSim(chain(100.0, 25000.0), "tcp",
                   SimConfig(duration_s=60, warmup_s=0, backpressure=(100, 50)))
    res = sim.run()
    assert max(q.count for q in sim.sq) <= 100 + 10 + 1e-9
    assert res.dropped_tuples == 0
    assert res.throughput_tps == pytest.approx(10e6 / 8 / 25000, rel=0.02)


@pytest.mark.parametrize(("tp", "gain"), [("TP1", 1.15), ("TP2", 1.40), ("TP3", 1.30)])
def test_manager_loop_appaware_beats_tcp(tp, gain):
    fm = fj_map(tp)
    cfg = SimConfig(duration_s=120)
    tcp = simulate(fm, "tcp", cfg)
    aa = simulate(fm, "appaware", cfg)
    assert aa.allocations == 120 // 5  # one allocation every Δt = 5 s
    assert aa.throughput_tps > gain * tcp.throughput_tps
    assert aa.latency_ms < tcp.latency_ms
    assert aa.latency_p50_s <= aa.latency_p99_s
