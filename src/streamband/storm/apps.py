"""Several running topologies, one per application, sharing one network under one
manager loop (000 §VII): every topology's network flows in one flow set, each flow with
its application (``apps``, what App-Fair groups by, eq. 5), observed by one profiler,
capped by one meter enforcer and put in strict-priority classes by one class enforcer on
the switch egress ports of its path; each topology's throughput and event-time latency
from its own sinks, each flow's bytes from its sender's socket."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from streamband.alloc.base import FlowState
from streamband.alloc.registry import policy_entry
from streamband.loop.openflow import (
    ClassEnforcer,
    ControllerLinkStats,
)
from streamband.loop.reports import LATENCY_BUCKETS, latency_percentiles
from streamband.loop.window import (
    clear_enforcement,
    link_loads,
    loop_record,
    port_bytes,
    start_loop,
    window_manager,
)
from streamband.sdn.client import ControllerClient
from streamband.storm.flows import connection
from streamband.storm.managed import ManagedTopology
from streamband.storm.profiler import StormProfiler


class ProfilerSet:
    """One profiler over several topologies' flows: each topology's
    :class:`StormProfiler` in turn, their flow states one after another (the order of
    :attr:`AppTopologies.pairs`)."""

    def __init__(self, parts: list[StormProfiler]) -> None:
        self.parts = parts
        self.last: dict[str, Any] | None = None

    @property
    def interval_s(self) -> float | None:
        """Seconds the last flow state covers (the first part's: they are read together)."""
        return self.parts[0].interval_s if self.parts else None

    def flow_state(self) -> FlowState:
        states = [p.flow_state() for p in self.parts]
        joined = FlowState(*(np.concatenate([getattr(s, k) for s in states])
                             for k in ("ls0", "ls1", "lr0", "lr1", "sent")))
        for k in ("rho_event", "event_s"):  # the joins' event time, NaN where none
            if any(getattr(s, k) is not None for s in states):
                setattr(joined, k, np.concatenate([
                    v if (v := getattr(s, k)) is not None else np.full(len(s), np.nan)
                    for s in states]))
        last: dict[str, Any] = {}
        for p in self.parts:
            for k, v in (p.last or {}).items():
                if isinstance(v, list):
                    last.setdefault(k, []).extend(v)
                elif k == "report_age_s" and v is not None:
                    last[k] = max(last.get(k) or 0.0, float(v))
                elif k == "interval_s":
                    last.setdefault(k, v)
        self.last = last
        return joined


class AppTopologies:
    """Running topologies, one per application (``names[i]`` runs in ``tops[i]``), as
    one set of network flows: ``pairs`` (each topology's in turn), their meter matches
    ``keys``, bytes per tuple ``bytes``, application ``apps`` (index into ``names``)
    and routing matrix ``routing`` on the testbed's links."""

    def __init__(self, names: list[str], tops: list[ManagedTopology]) -> None:
        if len(names) != len(tops) or not tops:
            raise ValueError(f"expected one topology per application, got {len(tops)} for "
                             f"{names}")
        self.names, self.tops = list(names), list(tops)
        self.tb = tops[0].tb
        self.pairs = [p for t in tops for p in t.pairs]
        self.keys = [k for t in tops for k in t.keys]
        self.bytes = [b for t in tops for b in t.bytes]
        self.apps = np.array([i for i, t in enumerate(tops) for _ in t.pairs], np.int64)
        self.routing = sp.vstack([t.routing for t in tops]).tocsr()
        hosts = [(t.by_ip[p.src.host], t.by_ip[p.dst.host]) for t in tops for p in t.pairs]
        #: each flow's path on the testbed (model link ids)
        self.paths = self.tb.paths(hosts)

    def profiler(self, input_queue: bool = False) -> ProfilerSet:
        """A profiler over every topology's flows (:class:`StormProfiler` each)."""
        return ProfilerSet([
            StormProfiler(t.cluster.work / "profile.json", t.info["id"], t.pairs, t.read,
                          t.bytes, input_queue) for t in self.tops])

    def carried(self) -> tuple[np.ndarray, list[Any]]:
        """Each flow's bytes acknowledged so far on its sender's socket (the kernel's
        ``bytes_acked``; NaN where the connection is not found) and the sockets' 4-tuples,
        so that two readings on the same connections give the bytes between them."""
        by_host: dict[str, list[Any]] = {}
        out, four = np.full(len(self.pairs), np.nan), []
        for i, (p, read) in enumerate(self._readers()):
            if p.src.host not in by_host:
                by_host[p.src.host] = read(p.src.host, True)
            s = connection(p, by_host[p.src.host])
            four.append(s.four_tuple if s else None)
            if s is not None:
                out[i] = float(s.bytes_acked)
        return out, four

    def _readers(self) -> list[tuple[Any, Any]]:
        return [(p, t.read) for t in self.tops for p in t.pairs]

    def reading(self) -> dict[str, Any]:
        """What a window is measured between: each topology's cumulative spout and sink
        counters (``totals``, :meth:`ManagedTopology.totals`) and Kafka sources
        (``sources``), each flow's bytes so far and connection (``carried``, ``four``:
        :meth:`carried`, read at ``t``, monotonic seconds)."""
        now = time.monotonic()
        carried, four = self.carried()
        return {"totals": [t.totals() for t in self.tops], "carried": carried, "four": four,
                "t": now, "sources": [t.sources() for t in self.tops]}

    def measure(self, r0: dict[str, Any], r1: dict[str, Any]) -> dict[str, Any]:
        """A window's figures between two readings (:meth:`reading`): per application its sinks'
        tuples/s, mean and p50/p99 event-time latency (s), the spouts' failed tuples, its
        topics' backlog at both ends (``sources_start``, ``sources_end``); per flow the
        Mbit/s it carried (``flow_mbps``; NaN where its connection changed or was not
        found)."""
        apps: dict[str, dict[str, Any]] = {}
        spans = []
        for i, name in enumerate(self.names):
            t0, t1 = r0["totals"][i], r1["totals"][i]
            span = t1["time"] - t0["time"]
            spans.append(span)

            def d(k: str, t0: dict[str, float] = t0, t1: dict[str, float] = t1) -> float:
                return t1.get(k, 0.0) - t0.get(k, 0.0)

            n = d("sink.count")
            p50, p99 = latency_percentiles({b: d(f"sink.lat_b{b:02d}")
                                            for b in range(LATENCY_BUCKETS)})
            apps[name] = {"throughput_tps": n / span if span > 0 else 0.0,
                          "latency_s": d("sink.latency_sum_ms") / n / 1e3 if n > 0 else None,
                          "latency_p50_s": p50, "latency_p99_s": p99,
                          "failed": d("spout.failed"), "seconds": span,
                          "sources_start": r0["sources"][i], "sources_end": r1["sources"][i]}
        span = r1["t"] - r0["t"]
        same = np.array([a is not None and a == b for a, b in zip(r0["four"], r1["four"],
                                                                    strict=True)], bool)
        mbps = (np.where(same, 8.0 * (r1["carried"] - r0["carried"]) / span / 1e6, np.nan)
                if span > 0 else np.full(len(self.pairs), np.nan))
        return {"apps": apps, "flow_mbps": mbps, "seconds": float(np.mean(spans))}

    def run(self, policy: str, seconds: float, dt: float, class_dt: float | None = None,
            params: Mapping[str, float] | None = None, log: Path | None = None,
            on_step: Callable[[ControllerLinkStats], None] | None = None,
            guard: bool = False, warmup_s: float = 0.0,
            enforce: str = "meter") -> dict[str, Any]:
        """``policy`` over every topology's flows for ``warmup_s``, then a measured window
        of ``seconds`` (on the testbed: the controller's link statistics, meters and
        classes). ``tcp``: plain TCP, the loop observing (counting rules, no caps); a
        policy that decides classes (``appfair``, ``hierarchical``) puts each flow in its
        application's class on the switch egress ports of its path (000 §VII c); ``dt``:
        the loop's step, ``class_dt``: App-Fair's Δt when the loop steps faster
        (:meth:`~streamband.alloc.registry.PolicyEntry.periods`); ``params``: App-Fair's
        α and m; ``enforce``: the rates as meters or rate classes
        (:func:`~streamband.loop.window.window_manager`). Returns :meth:`measure`'s
        figures and the loop's: allocations, errors, each link's load (bit/s), the meters
        and classes installed at the window's end."""
        tb = self.tb
        entry = policy_entry(policy)
        client = ControllerClient(tb.spec.api)
        clear_enforcement(client)
        profiler = self.profiler()
        tcp = entry.kind == "per-step"
        classer = None
        if entry.classes:  # each flow's class on the switch egress ports of its path
            refs = tb.link_ports()
            classer = ClassEnforcer(client, self.keys, [
                [refs[lk].port for lk in path if refs[lk].direction == "tx"]
                for path in self.paths], dt)
        manager = window_manager(client, tb.topo.capacities, tb.link_ports(), tb.topo.kinds,
                                 self.routing, self.keys, policy, profiler, dt,
                                 np.array(self.bytes), guard, apps=self.apps,
                                 params=dict(params or {}), classer=classer,
                                 class_dt=class_dt, enforce=enforce)
        loop = start_loop(manager, log, on_step)
        time.sleep(warmup_s)
        ports0 = port_bytes(client)
        before = self.reading()
        t0 = time.monotonic()
        time.sleep(seconds)
        after = self.reading()
        span = time.monotonic() - t0
        loop.stop()
        # read once the loop has stopped (its leases still run): what its last step decided
        meters, classes = client.meters(), client.classes() if classer is not None else []
        ports1 = port_bytes(client)
        clear_enforcement(client)
        client.close()
        done = loop_record(manager, loop)
        return {**self.measure(before, after),
                "link_used_bps": link_loads(ports0, ports1, tb.link_ports(), span),
                "optimizer_ms": done["optimizer_ms"] if not tcp else None,
                "allocations": done["allocations"], "loop_errors": done["loop_errors"],
                "meters": meters, "classes": classes,
                "last_classes": (manager.history[-1].classes.tolist()
                                 if manager.history and manager.history[-1].classes is not None
                                 else None),
                "stores": [t.stores() for t in self.tops]}

    def observe(self, seconds: float, warmup_s: float = 0.0) -> dict[str, Any]:
        """A window without the manager loop (plain TCP, nothing read from a switch):
        :meth:`measure`'s figures over ``seconds`` after ``warmup_s``, and each
        topology's sources and stores at its end; where no controller runs (loopback)."""
        time.sleep(warmup_s)
        before = self.reading()
        time.sleep(seconds)
        after = self.reading()
        return {**self.measure(before, after), "loop_errors": [], "allocations": 0,
                "stores": [t.stores() for t in self.tops]}
