"""Apache Storm as a backend: :class:`StormRunner` runs an experiment's cases
(``streamband run SPEC --backend storm``, the benches' ``--backend storm``) with the
topologies of ``storm/`` (:data:`~streamband.storm.workloads.WORKLOADS`) on the testbed's
hosts. The adapters are Storm's profiler (:mod:`streamband.storm.profiler`) and the
network half shared by every real backend (:mod:`streamband.loop.openflow`)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from streamband.alloc.registry import policy_entry
from streamband.backends.base import Case, RunRecord, app_results
from streamband.backends.engines import (
    Samples,
    case_testbed,
    check_loop_policies,
    check_star,
    master_broker,
    measured_links,
    start_testbed,
    window_columns,
    window_log,
    window_tag,
)
from streamband.errors import PreconditionError, SpecError, nearest
from streamband.kafka.broker import Broker
from streamband.kafka.replay import (
    Replay,
    Stream,
    create_topics,
    start_replay,
    stop_replay,
    streams,
    window_figures,
)
from streamband.loop.openflow import ControllerLinkStats, MeterEnforcer
from streamband.model.apps import qualify
from streamband.storm.apps import AppTopologies
from streamband.storm.cluster import StormCluster, testbed_spec
from streamband.storm.managed import ManagedTopology
from streamband.storm.profiler import StormProfiler
from streamband.storm.workloads import WORKLOADS, Workload, scale_tuples, workload

if TYPE_CHECKING:
    from streamband.model.app import App
    from streamband.model.spec import ExperimentSpec

#: where the topologies' sources come from: their own paced spouts, or Kafka topics that a
#: paced producer fills (independent sources, open loop: the regime where TCP's equal
#: split costs a join throughput)
SOURCES = ("spout", "kafka")
#: Kafka-fed: at-most-once (acking off, as throughput-first users run) or at-least-once
GUARANTEES = ("at-most-once", "at-least-once")
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
        Do no harm (:class:`~streamband.loop.guard.HarmGuard`); off by default on
        Storm: a bounded spout already makes TCP split a bottleneck by what the join
        uses, so the guard would hold TCP's split, where Algorithm 1's meters also drain
        the slow flow's backlog (lower latency).
    max_pending : int
        Storm's ``topology.max.spout.pending``: tuples a spout task may have in flight
        (emitted, not yet acked); 0: unbounded, the spouts paced open loop, which with
        acking on lets queues grow past the tuple timeout (tuples fail and replay).
    tuple_scale : float or dict
        Run the spec's application at ``1/S`` of its tuples, each ``S`` times the bytes
        (:func:`scale_tuples`; a dict: ``S`` per application name, 1 for the others):
        the links carry the spec's bytes/s while Storm processes ``1/S`` of its tuples,
        for machines whose cores cannot process the spec's tuple rate. Throughput is
        reported in the tuples Storm processed.
    enforce : str
        The managed policies' rates as OpenFlow meters (``meter``) or as per-flow rate
        classes on the switch egress ports (``shaper``, :mod:`streamband.sdn.shaper`).
    """

    __test__ = False
    name = "storm"

    def __init__(self, out: Path, seconds: float = 60.0, warmup_s: float = 30.0,
                 dt: float = 1.0, guard: bool = False, max_pending: int = MAX_PENDING,
                 tuple_scale: float | dict[str, float] = 1.0, source: str = "spout",
                 guarantee: str = "at-most-once", enforce: str = "meter",
                 **control: Any) -> None:
        if os.geteuid() != 0:
            raise PreconditionError("--backend storm: needs root (the testbed's namespaces)")
        self.out, self.seconds, self.warmup_s, self.dt = Path(out), seconds, warmup_s, dt
        self.guard, self.enforce = guard, enforce
        self.max_pending = max_pending
        self.tuple_scale = tuple_scale
        if source not in SOURCES:
            raise SpecError(f"--source: expected one of {', '.join(SOURCES)}, got {source!r}"
                            f"{nearest(source, SOURCES)}")
        if guarantee not in GUARANTEES:
            raise SpecError(f"guarantee: expected one of {', '.join(GUARANTEES)}, got "
                            f"{guarantee!r}{nearest(guarantee, GUARANTEES)}")
        self.source, self.guarantee = source, guarantee
        self.control = control
        self.tb: Any = None
        self.cluster: Any = None
        self.broker: Broker | None = None
        self.replay: Replay | None = None
        self.key: tuple[str, float] | None = None
        self.topology: tuple[Any, Any] | None = None  # (case, ManagedTopology)
        self.count = 0

    def __enter__(self) -> StormRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def _stop(self) -> None:
        stop_replay(self.replay)
        self.replay = None
        if self.broker is not None:
            self.broker.stop()
            self.broker = None
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None
        if self.tb is not None:
            self.tb.stop()
            self.tb = None
        self.key, self.topology = None, None

    def check(self, spec: ExperimentSpec, case: Case) -> None:
        """Preconditions: a Storm topology runs the app; the policies run on a network."""
        if spec.apps:  # several applications: one topology each (StormApps)
            return self.several().check(spec, case)
        if spec.app.name not in WORKLOADS:
            raise SpecError(f"app {spec.app.name!r}: no Storm topology runs it; the storm "
                            f"backend runs {', '.join(WORKLOADS)}"
                            f"{nearest(spec.app.name, WORKLOADS)}")
        if self.source == "kafka":
            streams(spec.app)  # the line naming the apps Kafka feeds
            check_star(case, "--source kafka runs the broker")
        check_loop_policies(spec, "Storm")

    def _cluster(self, case: Case) -> None:
        key = (case.network.name, case.bandwidth_mbps)
        if self.key == key:
            return
        self._stop()
        star = case.network.topology == "star"
        # Kafka's broker on the master serves every spout: its link must not be one more
        # bottleneck beside the links under test
        self.tb = start_testbed(case_testbed(case, self.control, master=star,
                                             fast_master=star and self.source == "kafka"),
                                self.out)
        hosts = [h for h in self.tb.topo.hosts if h != "master"]
        master = "master" if star else hosts[0]  # ZooKeeper and Nimbus beside a worker
        self.cluster = StormCluster(testbed_spec(self.tb.state(), self.out / "cluster",
                                                 master, hosts)).start()
        if self.source == "kafka":
            self.broker = master_broker(self.tb, master)
        self.key = key

    def scale(self, app: App) -> float:
        """``S`` of :func:`scale_tuples` for ``app``."""
        s = self.tuple_scale
        return float(s.get(app.name, 1.0) if isinstance(s, dict) else s)

    def _topology(self, spec: ExperimentSpec, case: Case) -> Any:
        """The running topology of ``case``: one per case, its policies one after another
        on it; Kafka-fed, a new one per window (fresh topics, nothing queued), so that
        every window starts at the same age with nothing inherited from the last."""
        kafka = self.source == "kafka"
        if self.topology is not None and self.topology[0] is case and not kafka:
            return self.topology[1]
        if self.topology is not None:
            stop_replay(self.replay)
            self.replay = None
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
                 if self.max_pending and (not kafka or self.guarantee == "at-least-once")
                 else {})
        conf = {**work.settings(app), **limit, "streamband.placement": where}
        fresh: list[Stream] = []
        if kafka:
            assert self.broker is not None
            for comp, beside in work.placed_with.items():
                where[comp] = where[beside]
            for s in streams(app):
                comp = work.kafka_spouts[s.topic]
                fresh.append(replace(s, topic=f"{s.topic}-{self.count}"))
                conf[f"bench.topic.{comp}"] = fresh[-1].topic
            create_topics(self.broker, {f.topic: len(where[work.kafka_spouts[s.topic]])
                                        for f, s in zip(fresh, streams(app), strict=True)})
            conf.update({"bench.source": "kafka",
                         "streamband.kafka.bootstrap": self.broker.spec.bootstrap,
                         "streamband.kafka.guarantee": self.guarantee})
        self.cluster.submit(self.cluster.jar, work.main, name, conf)
        info = self.cluster.wait_running(name)
        info["name"] = name
        mt = ManagedTopology(self.tb, self.cluster, info, work, app)
        if kafka:
            assert self.broker is not None
            spouts = {work.kafka_spouts[s.topic] for s in streams(app)}
            mt.wait_sources(sum(len(where[c]) for c in spouts))
            self.replay = start_replay(self.broker, fresh, work.settings(app))
        else:
            time.sleep(self.warmup_s)
        self.topology = (case, mt)
        return mt

    def run(self, spec: ExperimentSpec, case: Case, policy: str,
            progress: Callable[[float], None] | None = None,
            reference_links: list[int] | None = None) -> RunRecord:
        if spec.apps:  # several applications: one topology each (StormApps)
            return self.several().run(spec, case, policy, progress, reference_links)
        self._cluster(case)
        mt = self._topology(spec, case)
        entry = policy_entry(policy)
        samples = Samples(self.seconds, progress)
        r = mt.run(policy if entry.kind == "loop" else "tcp", self.seconds, self.dt,
                   log=window_log(self.out, window_tag(case, policy), self.count),
                   on_step=samples.on_step, guard=self.guard, enforce=self.enforce,
                   warmup_s=self.warmup_s if self.source == "kafka" else 0.0)
        util, links = measured_links(self.tb.topo, mt.routing, r["link_used_bps"],
                                     reference_links)
        scale = WORKLOADS[spec.app.name].per_sink_count(spec.app)
        row = {
            **window_columns(spec, case, policy, "storm", entry, r, util, links),
            "throughput_tps": r["throughput_tps"] * scale,
            "goodput_mbps": r["bytes_in_bps"] / 1e6 if r.get("bytes_in_bps") else None,
            "latency_s": r["latency_ms"] / 1e3 if r["latency_ms"] is not None else None,
            "latency_p50_s": r["latency_p50_ms"] / 1e3 if r["latency_p50_ms"] else None,
            "latency_p99_s": r["latency_p99_ms"] / 1e3 if r["latency_p99_ms"] else None,
            "dropped_tuples": r["failed"], "acked": r["acked"], "emitted": r["emitted"],
            "profiles": r["profiles"], "report_age_max_s": r["report_age_max_s"],
            "seconds": r["seconds"], "flows": r["flows"], "last_rates_bps": r["last_rates_bps"],
            "capped_share": r["capped_share"], "tuple_scale": self.scale(spec.app),
            "source": self.source, "enforce": self.enforce if entry.kind == "loop" else None,
        }
        if self.source == "kafka":
            row.update(window_figures(r, self.seconds, self.guarantee))
        return RunRecord(row, samples.times(), [p.label or p.name for p in mt.pairs],
                         samples.mbps(len(mt.pairs)), np.ones(len(mt.pairs), bool),
                         [int(lk) for lk in links])

    def several(self) -> StormApps:
        """The windows of specs with several applications (kept with the runner: the
        topologies it runs)."""
        if "_several" not in self.__dict__:
            self._several = StormApps(self)
        return self._several


Runner = StormRunner
Profiler, LinkStats, Enforcer = StormProfiler, ControllerLinkStats, MeterEnforcer


# -- several applications sharing the network, one topology each (000 §VII) -------------

#: the fan-in topologies' topics are compressed in Kafka: every spout fetches from the broker
#: on the star's master through the master's one link, which would otherwise carry as many
#: bytes as the downlink under test, a second shared bottleneck that no class schedules
APPS_COMPRESSION = "lz4"
#: the producer's setting of it (``streamband.kafka.Replay.COMPRESSION`` in ``storm/``)
APPS_COMPRESSION_KEY = "bench.kafka.compression"


class StormApps:
    """The windows of a spec with several applications (``spec.apps``, 000 §VII) on Storm,
    for :class:`StormRunner`: every window a fresh Kafka-fed topology per application
    (:func:`~streamband.storm.workloads.workload`: a fan-in for ``bench appfair``'s
    applications), placed as the spec places its ``APP/OP`` instances, on fresh topics
    that one paced producer fills from the same instant; one manager loop over every
    topology's flows with each flow's application (:class:`~streamband.storm.apps.
    AppTopologies`), strict-priority classes on the switch egress ports for the policies
    that decide them; each application's tuples/s, latency and Mbit/s, and Jain's index
    across them, in the row (:func:`~streamband.backends.base.app_results`)."""

    def __init__(self, runner: StormRunner) -> None:
        self.runner = runner
        #: the running topologies' names, with the cluster they run on
        self.running: tuple[Any, list[str]] = (None, [])
        self.works: dict[str, Workload] = {}

    def check(self, spec: ExperimentSpec, case: Case) -> None:
        """Preconditions: a topology runs every application; Kafka feeds them, from a
        star's master host; the policies run on a network."""
        assert spec.apps is not None
        for app in spec.apps:
            workload(app)
        if self.runner.source != "kafka":
            raise SpecError("apps: several applications run as Kafka-fed topologies (their "
                            "sources independent, open loop); run with --source kafka")
        check_star(case, "the applications' Kafka broker runs")
        check_loop_policies(spec, "Storm")

    def stop_topologies(self) -> None:
        """Stops the producer and kills the running topologies (on a cluster still up)."""
        r = self.runner
        stop_replay(r.replay)
        r.replay = None
        cluster, names = self.running
        if cluster is not None and cluster is r.cluster:
            for name in names:
                cluster.kill(name)
        self.running = (None, [])

    def start(self, spec: ExperimentSpec, case: Case) -> AppTopologies:
        """Fresh topologies for ``case`` on fresh topics, submitted together; the
        producer starts once every spout task reports."""
        r = self.runner
        assert spec.apps is not None and r.broker is not None
        self.stop_topologies()
        r.count += 1
        placement = case.flowmap.placement
        fresh: list[Stream] = []
        todo: list[tuple[str, str, Workload, App, dict[str, Any], int]] = []
        partitions: dict[str, int] = {}
        for spec_app in spec.apps:
            app = scale_tuples(spec_app, r.scale(spec_app))
            work = workload(app)
            self.works[app.name] = work
            where = {work.components[o.name]: [
                r.tb.ip(placement[f"{qualify(app.name, o.name)}[{i}]"])
                for i in range(o.parallelism)] for o in app.operators}
            for comp, beside in work.placed_with.items():
                where[comp] = where[beside]
            conf: dict[str, Any] = {
                **work.settings(app), "streamband.placement": where, "bench.source": "kafka",
                "streamband.kafka.bootstrap": r.broker.spec.bootstrap,
                "streamband.kafka.guarantee": r.guarantee}
            if r.max_pending and r.guarantee == "at-least-once":
                conf["topology.max.spout.pending"] = r.max_pending
            spouts = 0
            for o in app.operators:
                if o.kind != "source":
                    continue
                comp = work.kafka_spouts[o.name]
                topic = f"{app.name}-{o.name}-{r.count}"
                conf[f"bench.topic.{comp}"] = topic
                partitions[topic] = len(where[comp])
                spouts += len(where[comp])
                fresh.append(Stream(topic, "id", float(o.rate_tps or 0.0),
                                    int(next(e.tuple_bytes for e in app.edges
                                             if e.src == o.name))))
            name = f"{app.name}-{case.placement}-{r.count}".replace("_", "-").lower()
            todo.append((app.name, name, work, app, conf, spouts))
        create_topics(r.broker, partitions)
        jar = r.cluster.jar  # the topology jar, built once with the cluster
        errors: list[BaseException] = []

        def submit(item: tuple[str, str, Workload, App, dict[str, Any], int]) -> None:
            try:
                r.cluster.submit(jar, item[2].main, item[1], item[4])
            except BaseException as err:  # noqa: BLE001 - raised below, in the caller
                errors.append(err)

        # submitted together: each submission's client JVM waits on Nimbus for seconds
        threads = [threading.Thread(target=submit, args=(t,)) for t in todo]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.running = (r.cluster, [t[1] for t in todo])
        if errors:
            raise errors[0]
        tops = []
        for _, name, work, app, _, _ in todo:
            info = r.cluster.wait_running(name)
            info["name"] = name
            tops.append(ManagedTopology(r.tb, r.cluster, info, work, app))
        for mt, item in zip(tops, todo, strict=True):
            mt.wait_sources(item[5])
        r.replay = start_replay(r.broker, fresh, {APPS_COMPRESSION_KEY: APPS_COMPRESSION})
        return AppTopologies([t[0] for t in todo], tops)

    def run(self, spec: ExperimentSpec, case: Case, policy: str,
            progress: Callable[[float], None] | None = None,
            reference_links: list[int] | None = None, loop: bool = True) -> RunRecord:
        """One window of ``policy`` (warm-up then ``seconds``) on fresh topologies.
        ``loop`` False: no manager loop (plain TCP, nothing read from a switch), for a
        cluster on loopback addresses; then ``policy`` only names the row."""
        r = self.runner
        r._cluster(case)
        tops = self.start(spec, case)
        entry = policy_entry(policy)
        # App-Fair's Δt is the spec's (sim.interval_s, 000 §VII); rates step every dt
        dt = spec.sim.interval_s if entry.classes else r.dt
        step, class_dt = entry.periods(dt, spec.appfair.split_s)
        samples = Samples(r.seconds + r.warmup_s, progress)
        res = (tops.run(policy, r.seconds, step, class_dt, spec.appfair.params(),
                        log=window_log(r.out, window_tag(case, policy), r.count),
                        on_step=samples.on_step, guard=r.guard, warmup_s=r.warmup_s,
                        enforce=r.enforce) if loop
               else tops.observe(r.seconds, r.warmup_s))
        return self.record(spec, case, policy, tops, res, samples, reference_links)

    def model_flows(self, tops: AppTopologies, fm: Any) -> np.ndarray:
        """(pairs,) the index in ``fm.flows`` of the spec flow each network flow carries
        (``APP/OP[i]->APP/OP[j]`` from the worker pair's components)."""
        index = {f.id: k for k, f in enumerate(fm.flows)}
        out = []
        for name, mt in zip(tops.names, tops.tops, strict=True):
            op = {c: o for o, c in self.works[name].components.items()}
            for p in mt.pairs:
                a, b = p.label.split("->")
                ca, ia = a.rstrip("]").split("[")
                cb, ib = b.rstrip("]").split("[")
                out.append(index[f"{qualify(name, op[ca])}[{ia}]->"
                                 f"{qualify(name, op[cb])}[{ib}]"])
        return np.array(out, np.int64)

    def record(self, spec: ExperimentSpec, case: Case, policy: str, tops: AppTopologies,
               res: dict[str, Any], samples: Samples,
               reference_links: list[int] | None) -> RunRecord:
        """The window's row and record: the run's columns, each application's figures
        (:func:`~streamband.backends.base.app_results`, with its latency percentiles and
        its topics' backlog) and Jain's index across them."""
        r, fm = self.runner, case.flowmap
        entry = policy_entry(policy)
        to_model = self.model_flows(tops, fm)
        measured = np.nan_to_num(res["flow_mbps"], nan=0.0)
        flow_mbps = np.bincount(to_model, weights=measured, minlength=len(fm.flows))
        by_op = {}
        for app in spec.apps or []:
            a = res["apps"][app.name]
            lat = a["latency_s"] if a["latency_s"] is not None else float("nan")
            for m in app.measured():  # one topology per application: its sinks' count
                by_op[qualify(app.name, m)] = (a["throughput_tps"] / len(app.measured()), lat)
        per_app = app_results(spec, fm, flow_mbps, by_op)
        for i, name in enumerate(tops.names):
            a = res["apps"][name]
            kafka = window_figures({"sources_start": a["sources_start"],
                               "sources_end": a["sources_end"],
                               "stores": res["stores"][i]}, a["seconds"], r.guarantee)
            per_app["apps"][name].update({
                "latency_p50_s": a["latency_p50_s"], "latency_p99_s": a["latency_p99_s"],
                "failed": a["failed"], "topology": tops.tops[i].info["name"],
                **{k: kafka[k] for k in ("source_lag_growth_rps", "arrival_rps",
                                         "store_tuples", "source_lag_end")}})
        tps = sum(a["throughput_tps"] for a in res["apps"].values())
        lat = [(a["throughput_tps"], a["latency_s"]) for a in res["apps"].values()
               if a["latency_s"] is not None and a["throughput_tps"] > 0]
        util, links = measured_links(r.tb.topo, tops.routing, res.get("link_used_bps"),
                                     reference_links)
        row = {
            **window_columns(spec, case, policy, "storm", entry, res, util, links),
            "throughput_tps": tps, "goodput_mbps": float(np.sum(measured)),
            "latency_s": sum(t * x for t, x in lat) / sum(t for t, _ in lat) if lat else None,
            "latency_p50_s": None, "latency_p99_s": None,
            "dropped_tuples": sum(a["failed"] for a in res["apps"].values()),
            "seconds": res["seconds"], "source": "kafka", "guarantee": r.guarantee,
            "flows": [p.name for p in tops.pairs], "flow_apps": tops.apps.tolist(),
            "flow_keys": tops.keys, "flow_mbps": [None if not np.isfinite(x) else float(x)
                                                  for x in res["flow_mbps"]],
            "classes": res.get("last_classes"),
            # the controller's strict-priority assignments at the window's end
            "class_assignments": [{"port": c["port"], "flow": c["flow"], "cls": c["cls"]}
                                  for c in res.get("classes", [])],
            **per_app,
        }
        rates = np.zeros((len(samples.rows), len(fm.flows)))
        for k, (_, x) in enumerate(samples.rows):
            np.add.at(rates[k], to_model, np.asarray(x, float) / 1e6)
        return RunRecord(row, samples.times(), [f.id for f in fm.flows], rates, fm.external,
                         [int(lk) for lk in links])
