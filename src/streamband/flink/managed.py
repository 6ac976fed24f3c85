"""A running Flink job under the manager loop of 000 Fig. 4 on the testbed: the Flink
profiler (:mod:`streamband.flink.profiler`) over the job's remote TaskManager pairs, the
controller's link statistics and meters (:mod:`streamband.loop.openflow`), one policy for
a measured window. The sinks' reports (throughput, event-time latency) are returned as
the receiver's snapshots at the window's start and end, for the runner to read."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from streamband.alloc import get_policy
from streamband.flink.cluster import FlinkCluster, tagged_processes
from streamband.flink.flows import TmPair, connection, flow_key, placement, tm_pairs, tm_pids
from streamband.flink.profiler import FlinkProfiler, tm_reports
from streamband.loop.guard import HarmGuard
from streamband.loop.live import LiveLoop
from streamband.loop.manager import Manager
from streamband.loop.openflow import ControllerLinkStats, CountingEnforcer, MeterEnforcer
from streamband.loop.reports import read_snapshot
from streamband.loop.sockets import TcpSocket, tcp_sockets
from streamband.model.routing import routing_matrix
from streamband.sdn.client import ControllerClient


class ManagedJob:
    """The network flows of one running job (its remote TaskManager pairs) and the
    adapters that observe them.

    Parameters
    ----------
    tb : Testbed
        The running testbed (its state, topology, paths, controller).
    cluster : FlinkCluster
        The cluster the job runs on.
    job : str
        The job's id.
    snapshot : Path
        Where the profile receiver writes its snapshot.
    edge_bytes : dict
        ``'SRC->DST'`` (components) -> bytes per tuple: the loop's weights (001 §III-D).
    """

    def __init__(self, tb: Any, cluster: FlinkCluster, job: str, snapshot: Path,
                 edge_bytes: dict[str, float]) -> None:
        self.tb, self.cluster, self.job, self.snapshot = tb, cluster, job, Path(snapshot)
        st = tb.state()
        self.by_ip = {h["ip"]: name for name, h in st["hosts"].items()}
        self.netns = {h["ip"]: h["pid"] for h in st["hosts"].values()}
        self.place = placement(cluster.rest, job)
        self.pairs: list[TmPair] = [p for p in tm_pairs(self.place) if p.remote]
        self.bytes = [float(edge_bytes.get(p.edges[0], 1024.0)) for p in self.pairs]
        self.keys = self.flow_keys()
        hosts = [(self.by_ip[p.src.host], self.by_ip[p.dst.host]) for p in self.pairs]
        self.routing = routing_matrix(tb.paths(hosts), len(tb.topo.links))

    def read(self, ip: str, processes: bool = True) -> list[TcpSocket]:
        return tcp_sockets(self.netns.get(ip), processes)

    def names(self) -> dict[int, str]:
        return tm_pids(tagged_processes(str(self.cluster.work)))

    def flow_keys(self, timeout: float = 60.0) -> list[dict[str, Any] | None]:
        """Meter matches; waits until every pair's connection is up (ss shows it)."""
        deadline = time.monotonic() + timeout
        while True:
            names = self.names()
            socks = {ip: self.read(ip) for ip in {x for p in self.pairs
                                                  for x in (p.src.host, p.dst.host)}}
            found = [connection(p, socks[p.src.host], socks[p.dst.host], names)
                     for p in self.pairs]
            if all(found) or time.monotonic() > deadline:
                return [flow_key(p, s, socks[p.src.host]) for p, s in zip(self.pairs, found,
                                                                          strict=True)]
            time.sleep(1.0)

    def wait_reports(self, timeout: float = 120.0) -> None:
        """Waits until every TaskManager that runs a subtask of the job reports it."""
        want = {s["tm"] for v in self.place["vertices"].values() for s in v["subtasks"]}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if want <= set(tm_reports(read_snapshot(self.snapshot), self.job)):
                return
            time.sleep(1.0)

    def run(self, policy: str, seconds: float, dt: float = 1.0, log: Path | None = None,
            on_step: Callable[[ControllerLinkStats], None] | None = None,
            guard: bool = False, warmup_s: float = 0.0) -> dict[str, Any]:
        """``policy`` (``tcp`` = no meters, else an allocation policy) for ``warmup_s``
        then a measured window of ``seconds``; returns what the window measured: the
        receiver's snapshots at its start and end (``before``, ``after``), the ports' byte
        counters, the meters installed, the loop's allocations and errors."""
        tb = self.tb
        client = ControllerClient(tb.spec.api)
        client.delete_meters()
        profiler = FlinkProfiler(self.snapshot, self.job, self.pairs, self.read, self.names)
        linkstats = ControllerLinkStats(client, tb.topo.capacities, tb.link_ports(),
                                        self.routing, self.keys)
        enforcer = (CountingEnforcer(client, self.keys, dt) if policy == "tcp"
                    else MeterEnforcer(client, self.keys, dt))
        manager = Manager(routing=self.routing, link_kind=tb.topo.kinds,
                          policy=get_policy("maxmin" if policy == "tcp" else policy),
                          profiler=profiler, linkstats=linkstats, enforcer=enforcer, dt=dt,
                          weights=np.array(self.bytes),
                          guard=HarmGuard() if guard and policy not in ("tcp", "observe")
                          else None)
        enforcer.enforce(np.full(len(self.pairs), np.inf))
        time.sleep(2.0)  # the counting rules' first polls
        linkstats.allocatable()
        loop = LiveLoop(manager, log=log)
        if on_step is not None:
            loop.on_step = lambda: on_step(linkstats)
        profiler.flow_state()
        loop.start()
        time.sleep(warmup_s)
        ports0 = {p["name"]: p for p in client.ports(fresh=True)}
        before, t0 = read_snapshot(self.snapshot), time.time()
        time.sleep(seconds)
        meters = client.meters()
        after, t1 = read_snapshot(self.snapshot), time.time()
        loop.stop()
        ports1 = {p["name"]: p for p in client.ports(fresh=True)}
        client.delete_meters()
        client.close()
        span = t1 - t0
        used = np.array([8.0 * (ports1[r.port][f"{r.direction}_bytes"]
                                - ports0[r.port][f"{r.direction}_bytes"]) / span
                         for r in tb.link_ports()])
        opt = [a.optimizer_s * 1e3 for a in manager.history]
        return {
            "policy": policy, "seconds": span, "before": before, "after": after,
            "link_used_bps": used,
            "optimizer_ms": float(np.mean(opt)) if opt else None,
            "allocations": len(manager.history), "loop_errors": loop.errors[:3],
            "profiles": float(after.get("received", 0)) - float(before.get("received", 0)),
            "flows": [p.label for p in self.pairs], "keys": self.keys, "meters": meters,
            "last_rates_bps": [None if not np.isfinite(r) else float(r)
                               for r in manager.history[-1].rates_bps] if manager.history
            else [],
            "last_state": profiler.last,
            "capped_share": (float(np.mean(manager.guard.decisions))
                             if manager.guard is not None and manager.guard.decisions else None),
        }
