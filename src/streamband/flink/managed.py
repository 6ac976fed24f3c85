"""A running Flink job under the manager loop of 000 Fig. 4 on the testbed: the Flink
profiler (:mod:`streamband.flink.profiler`) over the job's remote TaskManager pairs, the
controller's link statistics and meters (:mod:`streamband.loop.openflow`), one policy for
a measured window. The sinks' reports (throughput, event-time latency) are returned as
the receiver's snapshots at the window's start and end, for the runner to read, and, where
the runner asks, its view of the Kafka sources at both ends."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from streamband.flink.cluster import FlinkCluster, tagged_processes
from streamband.flink.flows import (
    TmPair,
    connection,
    flow_key,
    pair_sources,
    placement,
    tm_pairs,
    tm_pids,
)
from streamband.flink.profiler import FlinkProfiler, source_pending, tm_reports
from streamband.loop.guard import paced_links
from streamband.loop.openflow import ControllerLinkStats
from streamband.loop.reports import read_snapshot, store_totals
from streamband.loop.sockets import TcpSocket, tcp_sockets
from streamband.loop.window import (
    clear_enforcement,
    link_loads,
    loop_record,
    port_bytes,
    start_loop,
    window_manager,
)
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
        #: the links credit-based flow control already paces (left to TCP)
        self.paced = paced_links(self.routing, pair_sources(self.place, self.pairs))

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

    def pending(self) -> dict[str, float]:
        """Per source component, the records its Kafka source has not emitted yet, as the
        TaskManagers last reported them (:func:`~streamband.flink.profiler.source_pending`)."""
        return source_pending(tm_reports(read_snapshot(self.snapshot), self.job), self.place)

    def stores(self, snap: dict[str, Any]) -> dict[str, dict[str, float]]:
        """Per join input (summed over the job's tasks) what waits in its joins' own stores,
        as the TaskManagers reported them in the receiver's snapshot ``snap``
        (:func:`~streamband.loop.reports.store_totals`)."""
        return store_totals(store for rep in tm_reports(snap, self.job).values()
                            for task in (rep.get("tasks") or {}).values()
                            for store in ((task or {}).get("stores") or {}).values())

    def run(self, policy: str, seconds: float, dt: float = 1.0, log: Path | None = None,
            on_step: Callable[[ControllerLinkStats], None] | None = None,
            guard: bool = False, warmup_s: float = 0.0, enforce: str = "meter",
            sources: Callable[[], dict[str, dict[str, float]]] | None = None
            ) -> dict[str, Any]:
        """``policy`` (``tcp`` = no meters, else an allocation policy) for ``warmup_s``
        then a measured window of ``seconds``, its rates enforced as ``enforce`` says
        (:func:`~streamband.loop.window.window_manager`); returns what the window
        measured: the receiver's snapshots at its start and end (``before``, ``after``),
        the ports' byte counters, the meters installed, the loop's allocations and
        errors; with ``sources``, what it returns just before ``before`` and just after
        ``after`` (``sources_start``, ``sources_end``) and the seconds between those two
        reads (``sources_seconds``; empty and None without it); its joins' stores at its
        start and end (``stores_start``, ``stores``)."""
        tb = self.tb
        client = ControllerClient(tb.spec.api)
        clear_enforcement(client)
        profiler = FlinkProfiler(self.snapshot, self.job, self.pairs, self.read, self.names)
        manager = window_manager(client, tb.topo.capacities, tb.link_ports(), tb.topo.kinds,
                                 self.routing, self.keys, policy, profiler, dt,
                                 np.array(self.bytes), guard, enforce, paced=self.paced)
        loop = start_loop(manager, log, on_step)
        time.sleep(warmup_s)
        src0, s0 = (sources(), time.time()) if sources else ({}, None)
        ports0 = port_bytes(client)
        before, t0 = read_snapshot(self.snapshot), time.time()
        time.sleep(seconds)
        meters = client.meters()
        after, t1 = read_snapshot(self.snapshot), time.time()
        stores0, stores = self.stores(before), self.stores(after)
        # the port counters end with the sinks' window: the sources' read takes seconds
        ports1 = port_bytes(client)
        src1, s1 = (sources(), time.time()) if sources else ({}, None)
        loop.stop()
        clear_enforcement(client)
        client.close()
        span = t1 - t0
        return {
            "policy": policy, "seconds": span, "before": before, "after": after,
            "link_used_bps": link_loads(ports0, ports1, tb.link_ports(), span),
            **loop_record(manager, loop),
            "profiles": float(after.get("received", 0)) - float(before.get("received", 0)),
            "flows": [p.label for p in self.pairs], "keys": self.keys, "meters": meters,
            "last_state": profiler.last,
            "sources_start": src0, "sources_end": src1, "stores_start": stores0,
            "stores": stores,
            "sources_seconds": s1 - s0 if s0 is not None and s1 is not None else None,
        }
