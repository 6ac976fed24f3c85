"""Apache Flink as a backend: :class:`FlinkRunner` runs an experiment's cases
(``streamband run SPEC --backend flink``) with the Kafka-fed jobs of ``flink/`` on the
testbed's hosts, mirroring :mod:`streamband.backends.storm` with ``--source kafka``. The
adapters are Flink's profiler (:mod:`streamband.flink.profiler`) and the network half
shared by every real backend (:mod:`streamband.loop.openflow`).

The jobs take the Storm topologies' settings (:data:`streamband.storm.workloads.WORKLOADS`:
the same components, ``bench.*`` keys and Kafka topics), so a spec runs on both engines
alike; each component is a slot-sharing group pinned to the TaskManagers of its hosts.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from streamband.alloc.registry import policy_entry
from streamband.backends.base import Case, RunRecord
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
from streamband.flink.cluster import FlinkCluster, testbed_spec
from streamband.flink.managed import ManagedJob
from streamband.flink.profiler import FlinkProfiler
from streamband.kafka.broker import Broker
from streamband.kafka.replay import (
    Replay,
    Stream,
    create_topics,
    offsets,
    start_replay,
    stop_replay,
    streams,
    window_figures,
)
from streamband.loop.openflow import ControllerLinkStats, MeterEnforcer
from streamband.loop.reports import LATENCY_BUCKETS, app_totals, latency_percentiles
from streamband.storm.workloads import WORKLOADS

if TYPE_CHECKING:
    from streamband.model.app import App
    from streamband.model.spec import ExperimentSpec

#: spec application -> the Flink job of ``flink/`` that runs it
JOBS = {"fork-join": "streamband.flink.jobs.ForkJoin",
        "trending-topics": "streamband.flink.jobs.TrendingTopics",
        "trucking-iot": "streamband.flink.jobs.TruckingIoT"}


def source_component(spout: str) -> str:
    """The Flink component that reads a topic the Storm topology reads with ``spout``
    (the fork-join's Kafka spout ``kafka-A`` is A's source, chained into A)."""
    return spout.removeprefix("kafka-")


def source_view(ends: dict[str, dict[str, float]], pending: dict[str, float],
                topics: dict[str, str]) -> dict[str, dict[str, float]]:
    """The Kafka sources of a job in the shape :func:`~streamband.kafka.replay.
    window_figures` reads (``topic/partition`` -> ``end``, ``lag``), one entry per topic
    (``TOPIC/*``: all its partitions): ``end`` the sum of its partitions' end offsets
    (``ends``, :func:`~streamband.kafka.replay.offsets`), ``lag`` the records its source
    component has not emitted (``pending``, per component; NaN where unknown);
    ``topics``: source component -> topic.

    Examples
    --------
    >>> ends = {"trucks-3/0": {"start": 0, "end": 900}, "trucks-3/1": {"start": 0, "end": 800},
    ...         "traffic-3/0": {"start": 0, "end": 1200}, "other/0": {"end": 5}}
    >>> source_view(ends, {"trucks": 300.0}, {"trucks": "trucks-3", "traffic": "traffic-3"})
    {'trucks-3/*': {'end': 1700.0, 'lag': 300.0}, 'traffic-3/*': {'end': 1200.0, 'lag': nan}}
    """
    out = {}
    for comp, topic in topics.items():
        end = sum(float(v.get("end") or 0.0) for tp, v in ends.items()
                  if tp.rpartition("/")[0] == topic)
        out[f"{topic}/*"] = {"end": end, "lag": float(pending.get(comp, float("nan")))}
    return out


class FlinkRunner:
    """Runs an experiment's cases on Apache Flink on the testbed, fed by Kafka.

    One testbed and one broker (on a star's master host) per network x bandwidth; one
    Flink cluster per case (its TaskManagers follow the placement: one per host and
    component); a fresh job on fresh topics per window (nothing queued from the last),
    its producer started once every TaskManager reports.

    Parameters
    ----------
    out : Path
        Where the testbed's and cluster's logs and each window's allocation log go.
    seconds : float
        Length of each policy's measured window, seconds.
    warmup_s : float
        Seconds under the window's policy before it is measured.
    dt : float
        Δt of the live manager loop, seconds.
    guard : bool
        Do no harm (:class:`~streamband.loop.guard.HarmGuard`).
    enforce : str
        The managed policies' rates as OpenFlow meters (``meter``) or as per-flow rate
        classes on the switch egress ports (``shaper``, :mod:`streamband.sdn.shaper`).
    alignment_ms : float
        Flink's own answer (FLIP-217 watermark alignment): a source whose watermark runs
        this far ahead pauses; 0: off.
    """

    __test__ = False
    name = "flink"

    def __init__(self, out: Path, seconds: float = 60.0, warmup_s: float = 20.0,
                 dt: float = 1.0, guard: bool = False, alignment_ms: float = 0.0,
                 source: str = "kafka", enforce: str = "meter", **control: Any) -> None:
        if os.geteuid() != 0:
            raise PreconditionError("--backend flink: needs root (the testbed's namespaces)")
        if source != "kafka":
            raise SpecError(f"--source: the Flink jobs read Kafka topics, got {source!r}")
        self.out, self.seconds, self.warmup_s, self.dt = Path(out), seconds, warmup_s, dt
        self.guard, self.alignment_ms, self.control = guard, alignment_ms, control
        self.enforce = enforce
        # no checkpoints: what a failed TaskManager held is lost, as Storm with acking off
        self.source, self.guarantee = source, "at-most-once"
        self.tb: Any = None
        self.broker: Broker | None = None
        self.cluster: FlinkCluster | None = None
        self.receiver: subprocess.Popen[bytes] | None = None
        self.replay: Replay | None = None
        self.key: tuple[str, float] | None = None
        self.case: Case | None = None
        self.job: tuple[str, ManagedJob] | None = None
        #: the running job's topics: source component -> topic
        self.topics: dict[str, str] = {}
        self.count = 0

    def __enter__(self) -> FlinkRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def _stop_cluster(self) -> None:
        stop_replay(self.replay)
        self.replay, self.job = None, None
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None
        if self.receiver is not None:
            self.receiver.wait(5)
            self.receiver = None
        self.case = None

    def _stop(self) -> None:
        self._stop_cluster()
        if self.broker is not None:
            self.broker.stop()
            self.broker = None
        if self.tb is not None:
            self.tb.stop()
            self.tb = None
        self.key = None

    def check(self, spec: ExperimentSpec, case: Case) -> None:
        """Preconditions: a Flink job runs the app; a star network (the broker on its
        master host); the policies run on a network."""
        if spec.app.name not in JOBS:
            raise SpecError(f"app {spec.app.name!r}: no Flink job runs it; the flink backend "
                            f"runs {', '.join(JOBS)}{nearest(spec.app.name, JOBS)}")
        streams(spec.app)
        check_star(case, "the flink backend runs the broker")
        check_loop_policies(spec, "Flink")

    def _testbed(self, case: Case) -> None:
        key = (case.network.name, case.bandwidth_mbps)
        if self.key == key:
            return
        self._stop()
        self.tb = start_testbed(case_testbed(case, self.control, master=True,
                                             fast_master=case.network.topology == "star"),
                                self.out)
        self.broker = master_broker(self.tb)
        self.key = key

    def scale(self, app: App) -> float:
        """The jobs run the spec's tuples as they are (Storm's runner may scale them)."""
        return 1.0

    def groups(self, spec: ExperimentSpec, case: Case) -> dict[str, list[str]]:
        """Component -> the testbed host of each of its subtasks (the case's placement)."""
        work = WORKLOADS[spec.app.name]
        return {work.components[o.name]: [case.flowmap.placement[f"{o.name}[{i}]"]
                                          for i in range(o.parallelism)]
                for o in spec.app.operators}

    def _cluster(self, spec: ExperimentSpec, case: Case) -> None:
        self._testbed(case)
        if self.case is case:
            return
        self._stop_cluster()
        hosts = [h for h in self.tb.topo.hosts if h != "master"]
        fspec = testbed_spec(self.tb.state(), self.out / "flink", "master", hosts,
                             placement=self.groups(spec, case))
        assert self.broker is not None
        fspec.kafka = self.broker.spec.bootstrap
        self.cluster = FlinkCluster(fspec)
        self.cluster.start()
        self.receiver = self.cluster.start_receiver()
        self.case = case

    def _job(self, spec: ExperimentSpec, case: Case) -> ManagedJob:
        """A fresh job of ``case`` on fresh topics, its producer started."""
        self._cluster(spec, case)
        assert self.cluster is not None and self.broker is not None
        if self.job is not None:
            stop_replay(self.replay)
            self.replay = None
            self.cluster.cancel(self.job[0])
        work = WORKLOADS[spec.app.name]
        app = spec.app
        self.count += 1
        name = f"{app.name}-{case.placement}-{self.count}".replace("_", "-")
        conf: dict[str, Any] = {**work.settings(app), "bench.name": name,
                                "streamband.groups": True,
                                "streamband.kafka.bootstrap": self.broker.spec.bootstrap,
                                "streamband.manager": self.cluster.spec.collector,
                                "bench.alignment.ms": self.alignment_ms}
        groups = self.groups(spec, case)
        fresh: list[Stream] = []
        parts: dict[str, int] = {}
        for s in streams(app):
            comp = source_component(work.kafka_spouts[s.topic])
            fresh.append(replace(s, topic=f"{s.topic}-{self.count}"))
            conf[f"bench.topic.{comp}"] = fresh[-1].topic
            conf[f"bench.parallelism.{comp}"] = len(groups.get(comp, [None]))
            parts[fresh[-1].topic] = len(groups.get(comp, [None]))
        self.topics = {source_component(work.kafka_spouts[s.topic]): f.topic
                       for s, f in zip(streams(app), fresh, strict=True)}
        create_topics(self.broker, parts)
        f = self.cluster.work / f"job-{name}.json"
        f.write_text(json.dumps(conf))
        job = self.cluster.submit(self.cluster.jobs_jar(), JOBS[app.name], [str(f)],
                                  classpath=[self.cluster.kafka_jar()])
        self.cluster.wait_running(job)
        mj = ManagedJob(self.tb, self.cluster, job, self.cluster.work / "profile.json",
                        {k: float(v) for k, v in work.edge_bytes(app).items()})
        mj.wait_reports()
        self.replay = start_replay(self.broker, fresh, work.settings(app))
        self.job = (job, mj)
        return mj

    def sources(self, mj: ManagedJob) -> dict[str, dict[str, float]]:
        """The running job's Kafka sources now (:func:`source_view`): each topic's end
        offsets from the broker, its backlog from the source tasks' reports
        (:func:`~streamband.flink.profiler.unread_records`); empty if the broker does not
        answer."""
        assert self.broker is not None
        # the jobs run without checkpoints and the KafkaSource commits offsets only on a
        # checkpoint (enable.auto.commit off), so the broker has no consumer-group lag of
        # them: what the sources report emitting is the only position there is
        try:
            ends = offsets(self.broker, list(self.topics.values()))
        except (PreconditionError, subprocess.TimeoutExpired):
            return {}  # a window's throughput and latency outweigh its backlog figures
        return source_view(ends, mj.pending(), self.topics)

    def run(self, spec: ExperimentSpec, case: Case, policy: str,
            progress: Callable[[float], None] | None = None,
            reference_links: list[int] | None = None) -> RunRecord:
        mj = self._job(spec, case)
        entry = policy_entry(policy)
        samples = Samples(self.seconds, progress)
        r = mj.run(policy if entry.kind == "loop" else "tcp", self.seconds, self.dt,
                   log=window_log(self.out, window_tag(case, policy), self.count),
                   on_step=samples.on_step, guard=self.guard, warmup_s=self.warmup_s,
                   enforce=self.enforce, sources=lambda: self.sources(mj))
        row = window_row(r, mj.job)
        util, links = measured_links(self.tb.topo, mj.routing, r["link_used_bps"],
                                     reference_links)
        scale = WORKLOADS[spec.app.name].per_sink_count(spec.app)
        row.update({
            **window_columns(spec, case, policy, "flink", entry, r, util, links),
            "throughput_tps": row["throughput_tps"] * scale,
            "profiles": r["profiles"], "flows": r["flows"],
            "last_rates_bps": r["last_rates_bps"], "capped_share": r["capped_share"],
            "alignment_ms": self.alignment_ms, "source": "kafka",
        })
        src0, src1 = r["sources_start"], r["sources_end"]
        if not (src0 and src1):  # one end alone would count a topic's whole log as the window's
            src0 = src1 = {}
        row.update(window_figures({"sources_start": src0, "sources_end": src1,
                                   "stores_start": r["stores_start"], "stores": r["stores"]},
                                  r["sources_seconds"] or self.seconds, self.guarantee))
        return RunRecord(row, samples.times(), list(r["flows"]), samples.mbps(len(mj.pairs)),
                         np.ones(len(mj.pairs), bool), [int(lk) for lk in links])


def window_row(r: dict[str, Any], job: str) -> dict[str, Any]:
    """Throughput (tuples/s at the sinks), goodput and event-time latency (mean, p50, p99)
    of a window, from the receiver's snapshots at its start and end."""
    before, after = app_totals(r["before"], job), app_totals(r["after"], job)
    span = r["seconds"]

    def d(k: str) -> float:
        return after.get(k, 0.0) - before.get(k, 0.0)

    p50, p99 = latency_percentiles({i: d(f"sink.lat_b{i:02d}") for i in range(LATENCY_BUCKETS)})
    n = d("sink.count")
    return {"throughput_tps": n / span,
            "goodput_mbps": 8.0 * d("sink.bytes_in") / span / 1e6 if d("sink.bytes_in") else None,
            "latency_s": d("sink.latency_sum_ms") / n / 1e3 if n else None,
            "latency_p50_s": p50, "latency_p99_s": p99, "seconds": span,
            "dropped_tuples": 0.0}


Runner = FlinkRunner
Profiler, LinkStats, Enforcer = FlinkProfiler, ControllerLinkStats, MeterEnforcer
