"""Paper 001 on the real testbed: the fork-join (A -> B 8 KB, A -> C 4 KB, B -> D
6 KB, C -> D 3 KB, join at D) on two hosts S1, S2 of a star with 20 Mbit/s links,
placements TP1-TP3, under plain TCP (no meters), ``weighted`` (001 §III-D) and
``appaware`` (000 Alg. 1), with the live manager loop pushing meters every Δt.

Real: harness workers in the Mininet hosts' namespaces, TCP through OVS
(userspace datapath) with OpenFlow 1.3 meters set by the os-ken controller.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from streamband.alloc import get_policy
from streamband.control.api_client import ControllerClient
from streamband.control.enforcer import CountingEnforcer, MeterEnforcer
from streamband.control.linkstats import ControllerLinkStats
from streamband.control.live import LiveLoop
from streamband.control.manager import Manager
from streamband.control.profiler import HarnessProfiler
from streamband.model.routing import Router, routing_matrix
from streamband.testbed.harness.dag import FORK_JOIN_PLACEMENTS, fork_join
from streamband.testbed.harness.run import run_dag
from streamband.testbed.network import Testbed
from streamband.testbed.spec import load_spec

POLICIES = ("tcp", "weighted", "appaware")
BANDWIDTH_MBPS = 20.0


def run_one(tb: Testbed, placement: str, policy: str, out: Path, seconds: float,
            rate_tps: float, dt: float) -> dict[str, Any]:
    """One placement under one policy; returns the run's row."""
    hosts = ("w1", "w2")
    dag = fork_join(placement, hosts, rate_tps)
    dag.seconds, dag.warmup_s = seconds, min(5.0, seconds / 3)
    dag.ips = {h: tb.ip(h) for h in hosts}
    flows = dag.remote_edges()
    keys: list[dict[str, Any] | None] = [dag.flow_key(e) for e in flows]
    topo = tb.topo
    pairs = [(dag.op(e.src).host, dag.op(e.dst).host) for e in flows]
    routing = routing_matrix(Router(topo).paths(pairs, [e.id for e in flows]), len(topo.links))
    client = ControllerClient(tb.spec.api)
    client.delete_meters()
    run_dir = out / f"{placement}-{policy}"
    profiler = HarnessProfiler(run_dir, [e.id for e in flows])
    linkstats = ControllerLinkStats(client, topo.capacities, tb.link_ports(), routing, keys)
    enforcer = (CountingEnforcer(client, keys, dt) if policy == "tcp"
                else MeterEnforcer(client, keys, dt))
    name = "maxmin" if policy == "tcp" else policy
    manager = Manager(routing=routing, link_kind=topo.kinds, policy=get_policy(name),
                      profiler=profiler, linkstats=linkstats, enforcer=enforcer, dt=dt,
                      weights=np.array([float(e.tuple_bytes) for e in flows]))
    enforcer.enforce(np.full(len(flows), np.inf))  # counting rules before traffic
    loop = LiveLoop(manager, log=run_dir.with_suffix(".alloc.jsonl"))
    before = {p["name"]: p for p in client.ports(fresh=True)}
    t0 = time.monotonic()
    res = run_dag(tb, dag, run_dir, on_start=loop.start)
    span = time.monotonic() - t0
    loop.stop()
    after = {p["name"]: p for p in client.ports(fresh=True)}
    client.delete_meters()
    util = []
    for lid, ref in enumerate(tb.link_ports()):
        col = f"{ref.direction}_bytes"
        used = 8.0 * (after[ref.port][col] - before[ref.port][col]) / span
        if topo.links[lid].kind == "uplink" and routing[:, lid].nnz:
            util.append(used / topo.links[lid].capacity_bps)
    opt = [a.optimizer_s * 1e3 for a in manager.history]
    sink_in = sum(e.tuple_bytes for e in dag.edges if e.dst == "D")
    return {
        "experiment": "paper-001",
        "app": "fork-join",
        "placement": placement,
        "network": "star",
        "bandwidth_mbps": BANDWIDTH_MBPS,
        "policy": policy,
        "throughput_tps": res["throughput_tps"],
        "latency_ms": res["latency_ms"],
        # bytes/s the join took in (joined tuples x 9 KB), as the simulator reports it
        "goodput_mbps": res["throughput_tps"] * sink_in * 8.0 / 1e6,
        "link_utilization": max(util) if util else 0.0,
        "optimizer_ms": float(np.mean(opt)) if opt and policy != "tcp" else 0.0,
        "dropped_tuples": res["dropped_tuples"],
        "backend": "testbed",
        "seconds": seconds,
        "rate_tps": rate_tps,
        "allocations": len(manager.history),
        "loop_errors": loop.errors[:3],
    }


def run(out: Path, seconds: float = 20.0, rate_tps: float = 500.0, dt: float = 1.0,
        placements: tuple[str, ...] = tuple(FORK_JOIN_PLACEMENTS),
        policies: tuple[str, ...] = POLICIES) -> list[dict[str, Any]]:
    """TP1-TP3 x {tcp, weighted, appaware} on one testbed; writes ``runs.json``."""
    for p in policies:
        if p not in POLICIES:
            raise ValueError(f"policy: expected one of {', '.join(POLICIES)}, got {p!r}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    spec = load_spec({"kind": "star", "workers": 2, "master": False,
                      "bw_mbps": BANDWIDTH_MBPS})
    runs = []
    with Testbed(spec, log_dir=out) as tb:
        ControllerClient(spec.api).wait_ready(1)
        for placement in placements:
            for policy in policies:
                runs.append(run_one(tb, placement, policy, out, seconds, rate_tps, dt))
                (out / "runs.json").write_text(json.dumps(runs, indent=1))
    return runs


def gains(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Throughput gain of every policy over ``tcp`` per placement (0.17 = +17 %)."""
    base = {r["placement"]: r["throughput_tps"] for r in runs if r["policy"] == "tcp"}
    out: dict[str, dict[str, float]] = {}
    for r in runs:
        if r["policy"] != "tcp" and base.get(r["placement"]):
            out.setdefault(r["placement"], {})[r["policy"]] = (
                r["throughput_tps"] / base[r["placement"]] - 1.0)
    return out


if __name__ == "__main__":
    import sys

    rows = run(Path(sys.argv[1] if len(sys.argv) > 1 else "out/paper-001-testbed"),
               float(sys.argv[2]) if len(sys.argv) > 2 else 20.0)
    for r in rows:
        print(r["placement"], r["policy"], round(r["throughput_tps"], 1),
              round(r["link_utilization"], 3), r["latency_ms"], r["loop_errors"])
    print(json.dumps(gains(rows), indent=1))
