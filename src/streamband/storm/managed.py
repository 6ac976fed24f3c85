"""A running Storm topology under the manager loop of 000 Fig. 4 on the testbed: the
Storm profiler (:mod:`streamband.storm.profiler`), the controller's link statistics and
meters (:mod:`streamband.loop.openflow`), one policy for a measured window; throughput
and event-time latency from the topology's sinks, loss from its spouts' acking."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from streamband.errors import PreconditionError
from streamband.loop.openflow import ControllerLinkStats
from streamband.loop.reports import (
    LATENCY_BUCKETS,
    app_totals,
    latency_percentiles,
    read_snapshot,
    store_totals,
    worker_reports,
)
from streamband.loop.window import (
    clear_enforcement,
    link_loads,
    loop_record,
    port_bytes,
    start_loop,
    window_manager,
)
from streamband.model.app import App
from streamband.model.routing import routing_matrix
from streamband.sdn.client import ControllerClient
from streamband.storm.cluster import StormCluster
from streamband.storm.flows import WorkerPair, component_pairs, flow_key
from streamband.storm.profiler import StormProfiler, host_reader
from streamband.storm.workloads import Workload


class ManagedTopology:
    """The network flows of one running topology and the adapters that observe them."""

    def __init__(self, tb: Any, cluster: StormCluster, info: dict[str, Any], work: Workload,
                 app: App) -> None:
        self.tb = tb
        self.cluster = cluster
        self.info = info
        st = tb.state()
        self.by_ip = {h["ip"]: name for name, h in st["hosts"].items()}
        self.read = host_reader({h["ip"]: h["pid"] for h in st["hosts"].values()})
        edges = work.edges(app)
        size = dict(zip(edges, work.tuple_bytes(app), strict=True))
        self.pairs: list[WorkerPair] = []
        self.bytes: list[float] = []
        for p in component_pairs(info, list(edges)):
            if p.remote:
                self.pairs.append(p)
                a, b = p.label.split("->")
                self.bytes.append(float(size[(a.split("[")[0], b.split("[")[0])]))
        self.keys = self.flow_keys()
        hosts = [(self.by_ip[p.src.host], self.by_ip[p.dst.host]) for p in self.pairs]
        self.routing = routing_matrix(tb.paths(hosts), len(tb.topo.links))

    def flow_keys(self, timeout: float = 30.0) -> list[dict[str, Any] | None]:
        """Meter matches; waits until every pair's connection is up (ss shows it)."""
        deadline = time.monotonic() + timeout
        while True:
            socks = {ip: self.read(ip) for ip in {p.src.host for p in self.pairs}}
            from streamband.storm.flows import connection

            if all(connection(p, socks[p.src.host]) for p in self.pairs) \
                    or time.monotonic() > deadline:
                return [flow_key(p, socks[p.src.host]) for p in self.pairs]
            time.sleep(1.0)

    def totals(self) -> dict[str, float]:
        snap = read_snapshot(self.cluster.work / "profile.json")
        t = app_totals(snap, self.info["id"])
        t["received"] = float(snap.get("received", 0))
        t["time"] = time.time()
        return t

    def sources(self) -> dict[str, dict[str, float]]:
        """Per ``topic/partition`` its Kafka spouts' latest view (the flow reports'
        ``sources``): ``end`` (the log's next offset), ``next`` (the next the spout
        emits), ``lag`` (records) and ``lag_bytes``; empty for a topology without Kafka
        spouts."""
        out: dict[str, dict[str, float]] = {}
        for rep in worker_reports(read_snapshot(self.cluster.work / "profile.json"),
                                  self.info["id"]).values():
            for parts in (rep.get("sources") or {}).values():
                for tp, v in (parts or {}).items():
                    out[tp] = {k: float(v.get(k) or 0.0)
                               for k in ("end", "next", "lag", "lag_bytes")}
        return out

    def wait_sources(self, tasks: int, timeout: float = 240.0) -> None:
        """Waits until ``tasks`` Kafka spout tasks report (their workers run and their
        spouts have opened: a new consumer group reads its topic from the first record, so
        a producer started now loses nothing; a spout's topics appear in its reports once
        it has emitted a record).

        Raises
        ------
        PreconditionError
            If they do not within ``timeout`` (workers take tens of seconds to start on
            2 cores).
        """
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline:
            reps = worker_reports(read_snapshot(self.cluster.work / "profile.json"),
                                  self.info["id"]).values()
            # a spout task reports its gauge from its open() on, with no partition before
            # its first record (fresh topics: none before the producer starts)
            seen = sum(len(r.get("sources") or {}) for r in reps)
            if seen >= tasks:
                return
            time.sleep(1.0)
        raise PreconditionError(f"topology {self.info.get('name')}: {seen} of {tasks} Kafka "
                                f"spout tasks reported after {timeout:.0f} s")

    def stores(self) -> dict[str, dict[str, float]]:
        """Per join input (summed over the join's tasks) what waits in the join's own
        store: ``tuples``, ``bytes``, the largest ``lag_ms``; and ``forced``: tuples let
        out early past the store's bound."""
        return store_totals(store for rep in worker_reports(
            read_snapshot(self.cluster.work / "profile.json"), self.info["id"]).values()
            for store in (rep.get("stores") or {}).values())

    def run(self, policy: str, seconds: float, dt: float = 1.0,
            log: Path | None = None, input_queue: bool = False,
            on_step: Callable[[ControllerLinkStats], None] | None = None,
            guard: bool = False, warmup_s: float = 0.0,
            enforce: str = "meter") -> dict[str, Any]:
        """``policy`` (``tcp`` = no meters, else an allocation policy) for ``warmup_s``
        then a measured window of ``seconds``; returns the window's row (``input_queue``:
        see :class:`StormProfiler`; ``on_step``: called with the link statistics after
        every allocation; ``guard``: do no harm, :class:`~streamband.loop.guard.HarmGuard`;
        ``enforce``: meters or rate classes, :func:`~streamband.loop.window.window_manager`).
        Where Kafka feeds the topology the row also gives its topics' backlog at the
        window's start and end (``sources``) and its joins' stores at the start and the
        end (``stores_start``, ``stores``)."""
        tb = self.tb
        client = ControllerClient(tb.spec.api)
        clear_enforcement(client)
        profiler = StormProfiler(self.cluster.work / "profile.json", self.info["id"],
                                 self.pairs, self.read, self.bytes, input_queue)
        manager = window_manager(client, tb.topo.capacities, tb.link_ports(), tb.topo.kinds,
                                 self.routing, self.keys, policy, profiler, dt,
                                 np.array(self.bytes), guard, enforce)
        loop = start_loop(manager, log, on_step)
        time.sleep(warmup_s)
        ports0 = port_bytes(client)
        before, src0, stores0 = self.totals(), self.sources(), self.stores()
        time.sleep(seconds)
        meters, rates = client.meters(), client.rates()
        after, src1, stores = self.totals(), self.sources(), self.stores()
        loop.stop()
        ports1 = port_bytes(client)
        clear_enforcement(client)
        client.close()
        span = after["time"] - before["time"]

        def d(k: str) -> float:
            return after.get(k, 0.0) - before.get(k, 0.0)

        buckets = {i: d(f"sink.lat_b{i:02d}") for i in range(LATENCY_BUCKETS)}
        p50, p99 = latency_percentiles(buckets)
        ages = [a for a in (h.get("report_age_s") for h in _states(log)) if a is not None] \
            if log else []
        return {
            "policy": policy,
            "seconds": span,
            "throughput_tps": d("sink.count") / span,
            "latency_ms": d("sink.latency_sum_ms") / d("sink.count") if d("sink.count") else None,
            "latency_p50_ms": p50 * 1e3 if p50 is not None else None,
            "latency_p99_ms": p99 * 1e3 if p99 is not None else None,
            "bytes_in_bps": 8.0 * d("sink.bytes_in") / span if d("sink.bytes_in") else None,
            "link_used_bps": link_loads(ports0, ports1, tb.link_ports(), span),
            **loop_record(manager, loop),
            "acked": d("spout.acked"),
            "failed": d("spout.failed"),
            "emitted": d("spout.emitted"),
            "profiles": d("received"),
            "flows": [p.name for p in self.pairs],
            "keys": self.keys,
            "meters": meters,
            "rates": rates,
            "report_age_max_s": max(ages) if ages else None,
            "report_age_p50_s": float(np.median(ages)) if ages else None,
            "sources_start": src0, "sources_end": src1,
            "stores_start": stores0, "stores": stores,
        }


def _states(log: Path) -> list[dict[str, Any]]:
    import json

    out = []
    for line in Path(log).read_text().splitlines():
        st = json.loads(line).get("state")
        if st:
            out.append(st)
    return out
