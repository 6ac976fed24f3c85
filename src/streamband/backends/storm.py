"""Apache Storm as a backend: real topologies on the testbed, profiled by the engine.

Adapters: :class:`StormProfiler` (below), and the network half shared by every real
backend (:mod:`streamband.backends.openflow`: link statistics and meters).
:class:`StormRunner` runs an experiment's cases (``streamband run SPEC --backend storm``,
the benches' ``--backend storm``) with the topologies of ``storm/`` (:data:`WORKLOADS`).

The profiler: the 5-metric flow state of 000 §IV-A1 for
every managed flow (a directed worker pair, :mod:`streamband.storm.flows`), from the
workers' own reports (:class:`streamband.storm` ``FlowReporter``, via the collector's
snapshot) combined with the kernel's view of each connection
(:mod:`streamband.storm.sockets`).

Storm counts task messages, not bytes. Conversions, per flow and interval:

- bytes per message ``b``: the bytes written to the flow's socket (the kernel's
  cumulative ``bytes_acked`` plus its send queue) over Storm's cumulative ``sent``
  messages of that connection (Netty counts a message once written to the socket; both
  count from the connection's start); before the first sample, the caller's hint;
- ``V_f`` (sent): the kernel's ``bytes_acked`` growth; without a socket, the growth of
  ``sent`` messages times ``b``;
- ``L^s_f`` (sender backlog): the socket's send queue (bytes, kernel) plus ``b`` times
  Netty's pending messages and the flow's share of the worker's transfer queue (shared
  by all the worker's destinations, split by the messages each has sent); with
  ``input_queue`` (off by default), also ``b`` times the flow's share of the sending
  worker's receive queues: once Netty's buffer passes its high watermark the executor
  blocks and the flow's backlog waits there as input tuples, one output tuple each. Off,
  because with a bounded spout (``topology.max.spout.pending``) those queues hold the
  in-flight window wherever the slow branch starts, tuples that came over no metered
  link: on 001's fork-join they made Algorithm 1 starve the other flow (TP1 6.5/13.2
  Mbit/s against 8/12; app-aware -0.8/-0.8/-4.5 % against TCP on TP1/2/3, and
  +3.1/+4.4/+4.4 % without them, one run each);
- ``L^r_f`` (receiver backlog): ``b`` times the receive-queue population of the
  receiving worker's executors, split among the flows into that worker by their
  messages in the interval (one receive queue per executor mixes all its inputs).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from streamband.alloc.base import FlowState
from streamband.backends.base import Case, RunRecord
from streamband.backends.openflow import ControllerLinkStats, MeterEnforcer
from streamband.storm.flows import WorkerPair, connection
from streamband.storm.sockets import TcpSocket, tcp_sockets

if TYPE_CHECKING:
    from streamband.experiments.spec import ExperimentSpec
    from streamband.model.app import App

#: a host's established sockets: (host ip, with the processes that hold them)
SocketReader = Callable[[str, bool], list[TcpSocket]]


def read_snapshot(path: Path) -> dict[str, Any]:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def worker_reports(snap: dict[str, Any], topology: str) -> dict[tuple[str, int], dict[str, Any]]:
    """(host, port) -> the latest flow report of each worker of ``topology``."""
    out = {}
    for rec in snap.get("flow", {}).values():
        if rec.get("topology") == topology and int(rec.get("port", -1)) > 0:
            out[(rec["host"], int(rec["port"]))] = rec
    return out


def app_totals(snap: dict[str, Any], topology: str) -> dict[str, float]:
    """The topology's cumulative spout and sink counters, summed over tasks."""
    tot: dict[str, float] = {}
    for kind in ("spout", "sink"):
        for rec in snap.get(kind, {}).values():
            if rec.get("topology") != topology:
                continue
            for k, v in rec.items():
                if isinstance(v, int | float) and k not in ("t", "recv", "task"):
                    name = f"{kind}.{k}"
                    tot[name] = max(tot.get(name, 0.0), v) if k.endswith("_max_ms") \
                        else tot.get(name, 0.0) + v
    return tot


#: the sinks' latency histogram (``Bench.Reporter.latency`` in ``storm/``)
LATENCY_BUCKETS, LATENCY_BASE = 64, 1.25


def latency_percentiles(counts: dict[int, float], qs: tuple[float, ...] = (50.0, 99.0)
                        ) -> tuple[float | None, ...]:
    """Percentiles (seconds) of a window's latencies from its per-bucket counts: the
    upper edge of the bucket where each percentile falls (bucket i: [1.25^(i-1), 1.25^i)
    ms), so within 25 %.

    Examples
    --------
    >>> latency_percentiles({0: 1.0, 10: 98.0, 30: 1.0})
    (0.009313225746154785, 0.009313225746154785)
    """
    total = sum(counts.values())
    if total <= 0:
        return tuple(None for _ in qs)
    out = []
    for q in qs:
        acc, need = 0.0, q / 100.0 * total
        for i in range(LATENCY_BUCKETS):
            acc += counts.get(i, 0.0)
            if acc >= need:
                out.append(LATENCY_BASE ** i / 1e3)
                break
        else:
            out.append(LATENCY_BASE ** (LATENCY_BUCKETS - 1) / 1e3)
    return tuple(out)


def host_reader(netns: dict[str, int | None]) -> SocketReader:
    """Reads a host's sockets with ``ss`` in its namespace (``netns``: ip -> pid)."""
    return lambda ip, processes=True: tcp_sockets(netns.get(ip), processes)


class StormProfiler:
    """Flow ``i`` is ``pairs[i]``; ``hint_bytes[i]`` is its bytes per message until the
    kernel has measured it. Same interface as the harness profiler."""

    def __init__(self, snapshot: Path, topology: str, pairs: list[WorkerPair],
                 sockets: SocketReader | None = None,
                 hint_bytes: list[float] | None = None, input_queue: bool = False) -> None:
        self.snapshot_path = Path(snapshot)
        self.topology = topology
        self.pairs = pairs
        self.sockets = sockets
        self.input_queue = input_queue
        n = len(pairs)
        self.bpm = np.asarray(hint_bytes if hint_bytes is not None else np.zeros(n), float)
        self._msgs = np.zeros(n)
        self._acked = np.zeros(n)
        self._conn: list[tuple[Any, ...] | None] = [None] * n
        self._ls = np.zeros(n)
        self._lr = np.zeros(n)
        self.samples = 0
        self.last: dict[str, Any] | None = None
        #: seconds the last flow state covers (None before the second call)
        self.interval_s: float | None = None
        self._t: float | None = None
        self.flow_state()  # the baseline: the first interval starts now

    def _kernel(self) -> list[TcpSocket | None]:
        """Each pair's sender-side socket: found by the 4-tuple it had at the last read,
        which needs no process list; a pair seen for the first time or reconnected is
        found among its host's sockets by the worker that holds it (``ss -p``)."""
        if self.sockets is None:
            return [None] * len(self.pairs)
        plain: dict[str, dict[tuple[Any, ...], TcpSocket]] = {}
        full: dict[str, list[TcpSocket]] = {}
        out: list[TcpSocket | None] = []
        for i, p in enumerate(self.pairs):
            if not p.remote:
                out.append(None)
                continue
            known, s = self._conn[i], None
            if known is not None:
                if p.src.host not in plain:
                    plain[p.src.host] = {x.four_tuple: x
                                         for x in self.sockets(p.src.host, False)}
                s = plain[p.src.host].get(known)
            if s is None:
                if p.src.host not in full:
                    full[p.src.host] = self.sockets(p.src.host, True)
                s = connection(p, full[p.src.host])
            out.append(s)
        return out

    def flow_state(self) -> FlowState:
        t = time.monotonic()
        self.interval_s = t - self._t if self._t is not None else None
        self._t = t
        snap = read_snapshot(self.snapshot_path)
        reports = worker_reports(snap, self.topology)
        kernel = self._kernel()
        n = len(self.pairs)
        msgs, pending = np.zeros(n), np.zeros(n)
        for i, p in enumerate(self.pairs):
            c = reports.get((p.src.host, p.src.port), {}).get("clients", {}).get(
                f"{p.dst.host}:{p.dst.port}", {})
            msgs[i], pending[i] = c.get("sent", 0), c.get("pending", 0)
        d_msgs = np.where(msgs >= self._msgs, msgs - self._msgs, msgs)  # a reconnect restarts
        acked = np.array([s.bytes_acked if s else 0.0 for s in kernel], float)
        for i, s in enumerate(kernel):
            if s is not None and msgs[i] > 0 and s.bytes_acked > 0:
                # Storm counts a message sent once Netty wrote it to the socket
                self.bpm[i] = (s.bytes_acked + s.send_q) / msgs[i]
        same = [s is not None and s.four_tuple == self._conn[i] for i, s in enumerate(kernel)]
        d_bytes = np.where(same, np.maximum(acked - self._acked, 0.0), d_msgs * self.bpm)
        # the sender worker's transfer queue, split among its destinations by messages
        xfer = np.zeros(n)
        for i, p in enumerate(self.pairs):
            rep = reports.get((p.src.host, p.src.port))
            if not rep:
                continue
            tot = sum(max(c.get("sent", 0), 0) for c in rep.get("clients", {}).values())
            share = msgs[i] / tot if tot else 1.0 / max(len(rep.get("clients", {})), 1)
            queued = rep.get("transfer_queue", 0)
            if self.input_queue:
                queued += sum(v for k, v in rep.get("receive", {}).items()
                              if not k.startswith("__"))
            xfer[i] = queued * share
        send_q = np.array([s.send_q if s else 0.0 for s in kernel], float)
        ls = send_q + self.bpm * (pending + xfer)
        # the receiving worker's receive queues, split among the flows into it
        lr = np.zeros(n)
        into: dict[tuple[str, int], list[int]] = {}
        for i, p in enumerate(self.pairs):
            into.setdefault((p.dst.host, p.dst.port), []).append(i)
        for w, idx in into.items():
            rep = reports.get(w)
            if not rep:
                continue
            pop = sum(v for k, v in rep.get("receive", {}).items() if not k.startswith("__"))
            weights = d_msgs[idx]
            weights = weights / weights.sum() if weights.sum() > 0 else np.full(len(idx),
                                                                                1 / len(idx))
            lr[idx] = pop * weights * self.bpm[idx]
        state = FlowState(ls0=self._ls, ls1=ls, lr0=self._lr, lr1=lr, sent=d_bytes)
        self._msgs, self._acked, self._ls, self._lr = msgs, acked, ls, lr
        self._conn = [s.four_tuple if s else None for s in kernel]
        self.samples += 1
        self.last = {"sent": d_bytes.tolist(), "msgs_total": msgs.tolist(), "ls": ls.tolist(),
                     "lr": lr.tolist(), "msgs": d_msgs.tolist(), "bytes_per_msg": self.bpm.tolist(),
                     "report_age_s": _age(snap, reports, self.pairs),
                     "interval_s": self.interval_s, **kernel_view(kernel)}
        return state


def kernel_view(kernel: list[TcpSocket | None]) -> dict[str, list[Any]]:
    """Per flow, what its sender's socket shows of where its backlog waits (None where
    the flow has no socket): smoothed and minimum RTT (ms), congestion window
    (segments), segments retransmitted since the connection began
    (:mod:`streamband.storm.sockets`)."""
    return {"rtt_ms": [s.rtt_ms if s else None for s in kernel],
            "min_rtt_ms": [s.min_rtt_ms if s else None for s in kernel],
            "cwnd": [s.cwnd if s else None for s in kernel],
            "retrans": [s.retrans if s else None for s in kernel]}


def _age(snap: dict[str, Any], reports: dict[tuple[str, int], dict[str, Any]],
         pairs: list[WorkerPair]) -> float | None:
    """Seconds since the oldest sender report the state used was received."""
    t = [reports[(p.src.host, p.src.port)].get("recv", 0.0) for p in pairs
         if (p.src.host, p.src.port) in reports]
    return float(snap.get("time", 0.0) - min(t)) if t else None


# -- running an experiment's cases on Storm -------------------------------------------------
@dataclass(frozen=True)
class StormWorkload:
    """How the Storm topology of ``storm/`` runs a spec's application: its main class,
    the Storm component of each spec operator, the ``bench.*`` settings taken from the
    spec (rates, parallelism, tuple sizes) and the factor from the sink's count to the
    spec's throughput unit."""

    main: str
    components: dict[str, str]
    settings: Callable[[App], dict[str, Any]]
    per_sink_count: Callable[[App], float] = lambda app: 1.0


def _parallelism(app: App, components: dict[str, str]) -> dict[str, Any]:
    return {f"bench.parallelism.{components[o.name]}": o.parallelism for o in app.operators}


def _edge_bytes(app: App, src: str, dst: str) -> int:
    return int(next(e.tuple_bytes for e in app.edges if e.src == src and e.dst == dst))


def _fork_join(app: App) -> dict[str, Any]:
    return {"bench.rate": app.op("A").rate_tps,
            **{f"bench.bytes.{a}{b}": _edge_bytes(app, a, b)
               for a, b in (("A", "B"), ("A", "C"), ("B", "D"), ("C", "D"))}}


def _trending_topics(app: App) -> dict[str, Any]:
    from streamband.storm.words import english_words

    wct = app.op("wct")
    return {"bench.rate": app.op("spout").rate_tps, "bench.k": wct.window_count or 5,
            "bench.window.s": app.op("aggregator").window_s or 30.0,
            "bench.words": english_words(5000),
            "bench.words.per.tweet": round(app.op("split").selectivity),
            **{f"bench.bytes.{kind}": _edge_bytes(app, a, b)
               for kind, (a, b) in {"tweet": ("spout", "split"), "word": ("split", "wct"),
                                    "partial": ("wct", "aggregator"),
                                    "ranking": ("aggregator", "report")}.items()},
            **_parallelism(app, WORKLOADS["trending-topics"].components)}


def _trucking_iot(app: App) -> dict[str, Any]:
    return {"bench.rate": app.op("truck").rate_tps,
            "bench.bytes.truck": _edge_bytes(app, "truck", "combiner"),
            "bench.bytes.traffic": _edge_bytes(app, "traffic", "combiner"),
            "bench.bytes.joined": _edge_bytes(app, "combiner", "dashboard"),
            "bench.grouping.traffic": next(e.grouping for e in app.edges
                                           if e.src == "traffic" and e.dst == "combiner"),
            **_parallelism(app, WORKLOADS["trucking-iot"].components)}


#: spec application name -> the Storm topology that runs it (storm/.../topo)
WORKLOADS: dict[str, StormWorkload] = {
    "fork-join": StormWorkload("streamband.storm.topo.ForkJoin",
                               {"A": "A", "B": "B", "C": "C", "D": "D"}, _fork_join),
    # the sink counts the words the rankings cover; a partial covers window_count words
    "trending-topics": StormWorkload(
        "streamband.storm.topo.TrendingTopics",
        {"spout": "tweets", "split": "split", "wct": "count", "aggregator": "topk",
         "report": "report"}, _trending_topics,
        lambda app: 1.0 / (app.op("wct").window_count or 5)),
    "trucking-iot": StormWorkload(
        "streamband.storm.topo.TruckingIoT",
        {"truck": "trucks", "traffic": "traffic", "combiner": "combine",
         "dashboard": "score"}, _trucking_iot),
}


def scale_tuples(app: App, scale: float) -> App:
    """``app`` with ``1/scale`` of its sources' tuples, each ``scale`` times the bytes:
    every stream carries the spec's bytes per second (the network sees the spec's load)
    with ``1/scale`` of the tuples, and so of the per-tuple CPU, to process.

    Examples
    --------
    >>> from streamband.experiments.spec import load_spec
    >>> app = load_spec("paper-001").app
    >>> scaled = scale_tuples(app, 10)
    >>> scaled.op("A").rate_tps, app.op("A").rate_tps
    (50.0, 500.0)
    >>> scaled.edges[0].tuple_bytes / app.edges[0].tuple_bytes
    10.0
    """
    if scale == 1:
        return app
    ops = [o.model_copy(update={"rate_tps": o.rate_tps / scale}) if o.rate_tps else o
           for o in app.operators]
    edges = [e.model_copy(update={"tuple_bytes": e.tuple_bytes * scale}) for e in app.edges]
    return app.model_copy(update={"operators": ops, "edges": edges})


#: the benches' and ``run``'s ``topology.max.spout.pending``: Storm's own flow control
#: with acking on (Storm's docs advise setting it; its default is unbounded)
MAX_PENDING = 1000


class StormRunner:
    """Runs an experiment's cases on Apache Storm on the testbed.

    One testbed (the case's network, plus a master host on a star) and one Storm
    cluster per network x bandwidth; one running topology per case (placement), warmed
    up once, then every policy of the spec one after another on it, each for
    ``seconds`` (000 §VI-A; the order alternates across repetitions, so that neither
    policy gains from the tuples the other left queued).

    Parameters
    ----------
    out : Path
        Where the testbed's and cluster's logs and each run's allocation log go.
    seconds : float
        Length of each policy's measured window, seconds.
    warmup_s : float
        Seconds after the topology is placed before the first window (excluded).
    dt : float
        Δt of the live manager loop, seconds (the meters' lease is 3 Δt).
    guard : bool
        Do no harm (:class:`~streamband.control.guard.HarmGuard`); off by default on
        Storm: a bounded spout already makes TCP split a bottleneck by what the join
        uses (001's fork-join: 7.3/10.9 Mbit/s on TP1 for 4.2/6.3 KB per message), so the
        guard would hold TCP's split, where Algorithm 1's meters also drain the slow
        flow's backlog (latency -27..-33 %, one run).
    max_pending : int
        Storm's ``topology.max.spout.pending``: tuples a spout task may have in flight
        (emitted, not yet acked); 0: unbounded, the spouts paced open loop, which on
        this machine lets queues grow past the tuple timeout (fork-join TP1: 23-227
        tuples/s, thousands failed per window).
    tuple_scale : float or dict
        Run the spec's application at ``1/S`` of its tuples, each ``S`` times the bytes
        (:func:`scale_tuples`; a dict: ``S`` per application name, 1 for the others):
        the links carry the spec's bytes/s while Storm processes ``1/S`` of its tuples,
        for machines whose cores cannot process the spec's tuple rate. Throughput is
        reported in the tuples Storm processed.
    """

    __test__ = False
    name = "storm"

    def __init__(self, out: Path, seconds: float = 60.0, warmup_s: float = 30.0,
                 dt: float = 1.0, guard: bool = False, max_pending: int = MAX_PENDING,
                 tuple_scale: float | dict[str, float] = 1.0, **control: Any) -> None:
        import os

        from streamband.errors import PreconditionError

        if os.geteuid() != 0:
            raise PreconditionError("--backend storm: needs root (the testbed's namespaces)")
        self.out, self.seconds, self.warmup_s, self.dt = Path(out), seconds, warmup_s, dt
        self.guard = guard
        self.max_pending = max_pending
        self.tuple_scale = tuple_scale
        self.control = control
        self.tb: Any = None
        self.cluster: Any = None
        self.key: tuple[str, float] | None = None
        self.topology: tuple[Any, Any] | None = None  # (case, ManagedTopology)
        self.count = 0

    def __enter__(self) -> StormRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def _stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None
        if self.tb is not None:
            self.tb.stop()
            self.tb = None
        self.key, self.topology = None, None

    def check(self, spec: ExperimentSpec, case: Case) -> None:
        """Preconditions: a Storm topology runs the app; the policies run on a network."""
        from streamband.alloc.registry import policy_entry
        from streamband.errors import SpecError, nearest

        if spec.app.name not in WORKLOADS:
            raise SpecError(f"app {spec.app.name!r}: no Storm topology runs it; the storm "
                            f"backend runs {', '.join(WORKLOADS)}"
                            f"{nearest(spec.app.name, WORKLOADS)}")
        for p in spec.policies:
            if policy_entry(p).kind not in ("per-step", "loop"):
                raise SpecError(f"policies: {p!r} is of kind {policy_entry(p).kind!r}; Storm "
                                f"runs tcp and the manager loop's policies")

    def _cluster(self, case: Case) -> None:
        from streamband.control.api_client import ControllerClient
        from streamband.storm.cluster import StormCluster, testbed_spec
        from streamband.testbed.network import Testbed
        from streamband.testbed.spec import TestbedSpec

        key = (case.network.name, case.bandwidth_mbps)
        if self.key == key:
            return
        self._stop()
        net = case.network
        swept = "link_mbps" if net.throttle == "host" else "internal_mbps"
        fields = net.model_dump(exclude={"name", "bandwidth_mbps", "throttle"},
                                exclude_unset=True)
        star = net.topology == "star"
        spec = TestbedSpec.model_validate({**fields, "topology": net.topology,
                                           swept: case.bandwidth_mbps, "master": star,
                                           **self.control})
        self.out.mkdir(parents=True, exist_ok=True)
        self.tb = Testbed(spec, log_dir=self.out / "testbed")
        self.tb.start()
        ControllerClient(spec.api).wait_ready(1)
        hosts = [h for h in self.tb.topo.hosts if h != "master"]
        master = "master" if star else hosts[0]  # ZooKeeper and Nimbus beside a worker
        self.cluster = StormCluster(testbed_spec(self.tb.state(), self.out / "cluster",
                                                 master, hosts)).start()
        self.key = key

    def scale(self, app: App) -> float:
        """``S`` of :func:`scale_tuples` for ``app``."""
        s = self.tuple_scale
        return float(s.get(app.name, 1.0) if isinstance(s, dict) else s)

    def _topology(self, spec: ExperimentSpec, case: Case) -> Any:
        from streamband.storm.manage import ManagedTopology, Workload

        if self.topology is not None and self.topology[0] is case:
            return self.topology[1]
        if self.topology is not None:
            self.cluster.kill(self.topology[1].info["name"])
            time.sleep(5)
        work = WORKLOADS[spec.app.name]
        app = scale_tuples(spec.app, self.scale(spec.app))
        where: dict[str, list[str]] = {}
        for o in app.operators:
            where[work.components[o.name]] = [
                self.tb.ip(case.flowmap.placement[f"{o.name}[{i}]"]) for i in range(o.parallelism)]
        self.count += 1
        name = f"{app.name}-{case.placement}-{self.count}".replace("_", "-")
        limit = ({"topology.max.spout.pending": self.max_pending}
                 if self.max_pending else {})
        self.cluster.submit(self.cluster.jar, work.main, name,
                            {**work.settings(app), **limit, "streamband.placement": where})
        info = self.cluster.wait_running(name)
        info["name"] = name
        edges = tuple((work.components[e.src], work.components[e.dst]) for e in app.edges)
        mt = ManagedTopology(self.tb, self.cluster, info,
                             Workload(work.main, edges, tuple(int(e.tuple_bytes)
                                                              for e in app.edges)))
        time.sleep(self.warmup_s)
        self.topology = (case, mt)
        return mt

    def _log(self, tag: str) -> Path:
        """The allocation log of this window: one per repetition (``-rN``)."""
        n = 1
        while (self.out / f"{tag}-{self.count}-r{n}.alloc.jsonl").exists():
            n += 1
        return self.out / f"{tag}-{self.count}-r{n}.alloc.jsonl"

    def run(self, spec: ExperimentSpec, case: Case, policy: str,
            progress: Callable[[float], None] | None = None,
            reference_links: list[int] | None = None) -> RunRecord:
        from streamband.alloc.registry import policy_entry

        self._cluster(case)
        mt = self._topology(spec, case)
        entry = policy_entry(policy)
        tag = f"{case.network.name}-{case.bandwidth_mbps:g}-{case.placement}-{policy}"
        samples: list[tuple[float, np.ndarray]] = []
        t0 = time.monotonic()

        def on_step(linkstats: Any) -> None:
            samples.append((time.monotonic() - t0, linkstats.flow_rates.copy()))
            if progress:
                progress(min(1.0, (time.monotonic() - t0) / self.seconds))

        r = mt.run(policy if entry.kind == "loop" else "tcp", self.seconds, self.dt,
                   log=self._log(tag), on_step=on_step,
                   guard=self.guard)
        topo = self.tb.topo
        util = r["link_used_bps"] / topo.capacities
        links = reference_links or [lk for lk in range(len(topo.links))
                                    if mt.routing[:, lk].nnz and util[lk] >= 0.9]
        scale = WORKLOADS[spec.app.name].per_sink_count(spec.app)
        times = np.array([t for t, _ in samples])
        rates = np.array([x / 1e6 for _, x in samples]).reshape(len(samples), len(mt.pairs))
        row = {
            "experiment": spec.experiment, "app": spec.app.name, "placement": case.placement,
            "network": case.network.name, "bandwidth_mbps": case.bandwidth_mbps,
            "policy": policy, "backend": "storm",
            "throughput_tps": r["throughput_tps"] * scale,
            "goodput_mbps": r["bytes_in_bps"] / 1e6 if r.get("bytes_in_bps") else None,
            "latency_s": r["latency_ms"] / 1e3 if r["latency_ms"] is not None else None,
            "latency_p50_s": r["latency_p50_ms"] / 1e3 if r["latency_p50_ms"] else None,
            "latency_p99_s": r["latency_p99_ms"] / 1e3 if r["latency_p99_ms"] else None,
            "link_utilization": float(np.mean(util[links])) if links else None,
            "optimizer_ms": r["optimizer_ms"] if entry.kind == "loop" else None,
            "dropped_tuples": r["failed"],
            "allocations": r["allocations"], "acked": r["acked"], "emitted": r["emitted"],
            "profiles": r["profiles"], "report_age_max_s": r["report_age_max_s"],
            "seconds": r["seconds"], "loop_errors": r["loop_errors"],
            "flows": r["flows"], "last_rates_bps": r["last_rates_bps"],
            "capped_share": r["capped_share"], "tuple_scale": self.scale(spec.app),
        }
        return RunRecord(row, times, [p.label or p.name for p in mt.pairs], rates,
                         np.ones(len(mt.pairs), bool), [int(lk) for lk in links])


Runner = StormRunner
Profiler, LinkStats, Enforcer = StormProfiler, ControllerLinkStats, MeterEnforcer
