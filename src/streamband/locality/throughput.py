"""Steady-state throughput of a keyed chain S -> A -> B under a routing (003 §4.2).

The application of 003 §4.1: a source S and two counting operators A and B, each
with n instances, instance i of every operator on server i of a star (one up- and
one downlink per server, 1 or 10 Gbit/s). The routing tables decide the share
matrix of every keyed edge (sender instance x receiver instance); those matrices go
into the model layer's ``FlowMap``, which gives the flows and the links they cross.

Throughput is the source rate the slowest resource allows:

- CPU (an assumption of this model, not a number of the paper): an instance spends
  ``cpu_s_per_tuple`` per tuple and, for a tuple that crosses the network,
  ``ser_s_per_tuple + bytes / ser_bytes_per_s`` more to serialise it (sender) or to
  deserialise it (receiver); the offered rate T0 is the rate that saturates the
  busiest instance;
- network: the flows' demands at T0 (bit/s) share the links max-min (the TCP model,
  ``streamband.alloc.maxmin``); the stream advances at the pace of its slowest flow
  (back-pressure), so T = T0 * min over flows of rate / demand.

``network`` is the swappable part: any function (FlowMap, demand bit/s) -> rate
bit/s; the default runs the fluid simulator (``fluid_network``), ``maxmin_network``
is its analytic steady state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from streamband.alloc.maxmin import maxmin_rates
from streamband.model.app import App, Edge, Operator
from streamband.model.flows import FlowMap
from streamband.model.topology import star

NetworkModel = Callable[[FlowMap, np.ndarray], np.ndarray]

HEADER_BYTES = 64  # two integer fields and the engine's framing, padding comes on top


def maxmin_network(fm: FlowMap, demand_bps: np.ndarray) -> np.ndarray:
    """Analytic steady state: max-min fair shares of the link capacities."""
    return maxmin_rates(fm.routing, fm.topo.capacities, demand_bps)


def fluid_network(fm: FlowMap, demand_bps: np.ndarray, duration_s: float = 20.0
                  ) -> np.ndarray:
    """The fluid simulator (:class:`~streamband.sim.fluid.FluidSim`) under TCP sharing: the sources
    emit at the rate behind ``demand_bps`` and every flow's mean rate after a warm-up
    is measured (bit/s). For this chain (no joins) it agrees with the max-min steady
    state of :func:`maxmin_network`; it is the simulator's measurement."""
    from streamband.sim.fluid import FluidSim, SimConfig

    nominal = fm.nominal_rates() * np.array([f.tuple_bytes for f in fm.flows]) * 8.0
    factor = float(demand_bps.sum() / nominal.sum()) if nominal.sum() > 0 else 0.0
    app = fm.app.model_copy(deep=True)
    for op in app.operators:
        if op.kind == "source":
            op.rate_tps = (op.rate_tps or 0.0) * factor
    shares: dict[int, np.ndarray] = {}
    for f in fm.flows:
        m = shares.setdefault(f.edge, np.zeros((app.op(app.edges[f.edge].src).parallelism,
                                                 app.op(app.edges[f.edge].dst).parallelism)))
        m[_idx(f.src), _idx(f.dst)] = f.share
    sim_fm = FlowMap(app, fm.topo, fm.placement, shares=shares)
    res = FluidSim(sim_fm, "tcp", SimConfig(duration_s=duration_s, warmup_s=duration_s / 2)).run()
    keep = res.sample_times > duration_s / 2
    return res.flow_rates_mbps[keep].mean(axis=0) * 1e6


@dataclass(frozen=True)
class CpuModel:
    cpu_s_per_tuple: float = 10e-6  # 100k tuples/s per instance when everything is local
    ser_s_per_tuple: float = 2e-6
    ser_bytes_per_s: float = 1e9


def chain_app(n: int, tuple_bytes: float, sa_bytes: float | None = None) -> App:
    return App(
        name="locality-chain",
        operators=[
            Operator(name="S", kind="source", parallelism=n, rate_tps=1.0),
            Operator(name="A", kind="map", parallelism=n),
            Operator(name="B", kind="sink", parallelism=n),
        ],
        edges=[
            Edge(src="S", dst="A", grouping="fields",
                 tuple_bytes=tuple_bytes if sa_bytes is None else sa_bytes),
            Edge(src="A", dst="B", grouping="fields", tuple_bytes=tuple_bytes),
        ],
    )


@dataclass(frozen=True)
class ThroughputResult:
    throughput_tps: float
    cpu_bound_tps: float
    network_limited: bool
    locality: float  # share of A -> B tuples that stay on their server


def chain_throughput(
    share_sa: np.ndarray,
    share_ab: np.ndarray,
    padding_bytes: float,
    bw_bps: float,
    cpu: CpuModel | None = None,
    network: NetworkModel = fluid_network,
    sa_padding_bytes: float | None = None,
) -> ThroughputResult:
    """Throughput of S -> A -> B given the traffic matrices of both keyed edges.

    ``share_sa[i, j]``: fraction of all tuples that go from S_i to A_j; ``share_ab``
    likewise from A_i to B_j (both sum to 1). ``sa_padding_bytes``: S -> A's padding
    when it differs from A -> B's (the Storm chain pads A -> B only).
    """
    cpu = cpu or CpuModel()
    n = share_ab.shape[0]
    size = HEADER_BYTES + float(padding_bytes)
    sa_size = size if sa_padding_bytes is None else HEADER_BYTES + float(sa_padding_bytes)
    app = chain_app(n, size, sa_size)
    topo = star(n, bw_bps)
    placement = {f"{op}[{i}]": topo.hosts[i] for op in "SAB" for i in range(n)}

    def rows(m: np.ndarray) -> np.ndarray:
        tot = m.sum(axis=1, keepdims=True)
        return np.divide(m, tot, out=np.full_like(m, 1.0 / n), where=tot > 0)

    fm = FlowMap(app, topo, placement, shares={0: rows(share_sa), 1: rows(share_ab)})
    # CPU: time per source tuple at every instance
    off = ~np.eye(n, dtype=bool)
    t_ser = cpu.ser_s_per_tuple + size / cpu.ser_bytes_per_s
    t_ser_sa = cpu.ser_s_per_tuple + sa_size / cpu.ser_bytes_per_s
    load_a = share_sa.sum(axis=0) * cpu.cpu_s_per_tuple \
        + (share_sa * off).sum(axis=0) * t_ser_sa + (share_ab * off).sum(axis=1) * t_ser
    load_b = share_ab.sum(axis=0) * cpu.cpu_s_per_tuple + (share_ab * off).sum(axis=0) * t_ser
    load_s = share_sa.sum(axis=1) * 0.0 + (share_sa * off).sum(axis=1) * t_ser_sa
    busiest = float(np.max(np.concatenate([load_a, load_b, load_s])))
    t0 = 1.0 / busiest
    # network: demands at T0, max-min shares, the slowest flow sets the pace
    per_flow_tps = np.array([
        t0 * (share_sa if f.edge == 0 else share_ab)[_idx(f.src), _idx(f.dst)] for f in fm.flows
    ])
    demand = per_flow_tps * np.array([sa_size if f.edge == 0 else size for f in fm.flows]) * 8.0
    ext = fm.external & (demand > 0)
    scale = 1.0
    if ext.any():
        rates = network(fm, demand)
        scale = float(min(1.0, np.min(rates[ext] / demand[ext])))
    locality = float(np.trace(share_ab) / share_ab.sum()) if share_ab.sum() else 1.0
    return ThroughputResult(t0 * scale, t0, scale < 1.0, locality)


def _idx(iid: str) -> int:
    return int(iid.rsplit("[", 1)[1].rstrip("]"))
