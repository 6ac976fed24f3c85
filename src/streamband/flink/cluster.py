"""A Flink standalone session cluster on the testbed's hosts (a JobManager on the master,
TaskManagers on the workers), or on loopback addresses for development.

Each process gets a configuration directory of its own (``WORK/NAME/conf/config.yaml``):
its address, fixed ports (so that a meter can match a TaskManager's data port) and every
memory part set explicitly, since ``TaskManagerRunner`` started without Flink's scripts
derives nothing (MACHINE-NOTES "Kafka and Flink").

Placement (issue 34, item 2): a TaskManager offers, beside one slot's CPU and memory, an
*extended resource* per operator group it is to run (``external-resources``, the
mechanism Flink has for GPUs); a job whose slot-sharing groups request that resource
(fine-grained resource management) gets each group's slots only in the TaskManagers that
offer it. Flink pins a group to a set of TaskManagers this way; which subtask of a group
lands in which of those TaskManagers it does not let anyone choose.

Every process carries the project's clean-up mark, ``STREAMBAND_FLINK=<cluster dir>``
(so ``down`` stops this cluster and nothing else) and ``-Dstreamband.flink.home=HOME`` on
its command line (``streamband testbed clean`` finds it by :data:`CLEANUP` even without
the mark, after ``kill -9`` of whatever started it).
"""

from __future__ import annotations

import ipaddress
import json
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from streamband import maven, procs
from streamband.errors import PreconditionError
from streamband.flink.home import ensure_home, install_plugin, jobs_jar, kafka_jar
from streamband.procs import RUN_DIR, Cleanup, ClusterState, Host, java_error, marked_env

STATE = RUN_DIR / "flink.json"
TAG = "STREAMBAND_FLINK"
_STATE = ClusterState(STATE, TAG)
#: on the command line of every JVM run from a Flink home streamband built
HOME_ARG = "-Dstreamband.flink.home="
RPC_PORT, REST_PORT, BLOB_PORT, COLLECTOR_PORT = 6123, 8081, 6124, 7071
DATA_PORT, TM_RPC_PORT = 6121, 6122
#: Flink's scripts open these on Java 17 (``env.java.opts.all`` of flink-dist's config);
#: the client needs them too (Kryo and the closure cleaner reach into java.util/lang)
ADD_OPENS = [f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in (
    "java.util", "java.lang", "java.lang.reflect", "java.lang.invoke", "java.net", "java.io",
    "java.nio", "sun.nio.ch", "java.text", "java.time", "java.util.concurrent",
    "java.util.concurrent.atomic", "java.util.concurrent.locks")] + [
    "--add-exports=java.base/sun.net.util=ALL-UNNAMED",
    "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED"]
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")

_LOG4J = """rootLogger.level = INFO
rootLogger.appenderRef.file.ref = F
appender.file.name = F
appender.file.type = File
appender.file.fileName = ${sys:log.file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %c{1} [%t] %m%n
logger.pekko.name = org.apache.pekko
logger.pekko.level = WARN
logger.kafka.name = org.apache.kafka
logger.kafka.level = WARN
"""


@dataclass
class TaskManager:
    """One TaskManager: its name (Flink's resource id), host, fixed ports, and the
    extended resources it offers (operator group -> slots of that group it takes; empty:
    plain slots, ``slots`` of them, for jobs that name no groups).

    Parameters
    ----------
    name : str
        Letters, digits and ``_``; Flink's ``taskmanager.resource-id``.
    host : Host
        Where it runs.
    data_port : int
        ``taskmanager.data.port``: consumers connect to it; the meter matches it.
    rpc_port : int
        ``taskmanager.rpc.port``.
    slots : int
        ``taskmanager.numberOfTaskSlots`` (slots of the default profile).
    groups : dict
        Operator group -> how many of its subtasks this TaskManager takes.
    """

    name: str
    host: Host
    data_port: int = DATA_PORT
    rpc_port: int = TM_RPC_PORT
    slots: int = 1
    groups: dict[str, int] = field(default_factory=dict)


@dataclass
class Memory:
    """Every memory part of a TaskManager (MiB), set explicitly: small, for two cores
    and several clusters on one machine. The JVM's heap is framework + task heap, its
    direct memory framework + task off-heap + network."""

    framework_heap: int = 64
    task_heap: int = 128
    framework_off_heap: int = 32
    task_off_heap: int = 0
    managed: int = 0
    network: int = 32
    metaspace: int = 96
    overhead: int = 48
    jobmanager_heap: int = 192

    def conf(self) -> dict[str, Any]:
        m = {"framework.heap.size": self.framework_heap, "task.heap.size": self.task_heap,
             "framework.off-heap.size": self.framework_off_heap,
             "task.off-heap.size": self.task_off_heap, "managed.size": self.managed,
             "network.min": self.network, "network.max": self.network,
             "jvm-metaspace.size": self.metaspace, "jvm-overhead.min": self.overhead,
             "jvm-overhead.max": self.overhead}
        return {f"taskmanager.memory.{k}": f"{v}m" for k, v in m.items()}

    def jvm(self) -> list[str]:
        heap = self.framework_heap + self.task_heap
        direct = self.framework_off_heap + self.task_off_heap + self.network
        return [f"-Xmx{heap}m", f"-Xms{heap}m", f"-XX:MaxDirectMemorySize={direct}m",
                f"-XX:MaxMetaspaceSize={self.metaspace}m"]


@dataclass
class ClusterSpec:
    """Where the cluster's processes run and on which ports."""

    master: Host
    taskmanagers: list[TaskManager]
    work_dir: Path
    rpc_port: int = RPC_PORT
    rest_port: int = REST_PORT
    blob_port: int = BLOB_PORT
    collector_port: int = COLLECTOR_PORT
    memory: Memory = field(default_factory=Memory)
    extra_conf: dict[str, Any] = field(default_factory=dict)
    #: the Kafka broker the jobs' sources read (HOST:PORT): the reporters ask it for the
    #: topics' end offsets, a source's backlog that back-pressure does not freeze
    kafka: str = ""

    @property
    def collector(self) -> str:
        return f"{self.master.ip}:{self.collector_port}"

    @property
    def rest(self) -> str:
        return f"http://{self.master.ip}:{self.rest_port}"

    @property
    def fine_grained(self) -> bool:
        """Whether any TaskManager offers a group's resource (placement by groups)."""
        return any(tm.groups for tm in self.taskmanagers)


def resource_name(group: str) -> str:
    """The extended resource that stands for operator group ``group``.

    Examples
    --------
    >>> resource_name("B")
    'sbgroup_B'
    """
    if not _NAME.match(group):
        raise PreconditionError(f"placement: operator group {group!r}: expected letters, "
                                "digits and _ (it names a Flink resource)")
    return f"sbgroup_{group}"


def loopback_spec(work_dir: Path, workers: int = 2, base_port: int = 0,
                  placement: dict[str, list[str]] | None = None) -> ClusterSpec:
    """The JobManager on 127.0.0.1, TaskManagers on 127.0.0.2 ... (one per worker, or per
    worker and group with ``placement``: group -> the worker of each of its subtasks,
    ``w1``, ``w2`` ...), every process on ports of its own (they share one namespace)."""
    hosts = {f"w{i + 1}": Host(f"w{i + 1}", f"127.0.0.{i + 2}") for i in range(workers)}
    tms = taskmanagers(hosts, placement, base_port + DATA_PORT + 100)
    return ClusterSpec(Host("master", "127.0.0.1"), tms, Path(work_dir),
                       rpc_port=base_port + RPC_PORT, rest_port=base_port + REST_PORT,
                       blob_port=base_port + BLOB_PORT, collector_port=base_port + COLLECTOR_PORT)


def taskmanagers(hosts: dict[str, Host], placement: dict[str, list[str]] | None,
                 base_port: int = DATA_PORT + 100) -> list[TaskManager]:
    """One TaskManager per host (``placement`` None), else one per host and operator group
    placed there, offering that group as many slots as it has subtasks on that host, so
    that every TaskManager pair carries one job edge. Ports from ``base_port`` on, two per
    TaskManager (data, RPC), distinct across hosts so that loopback clusters work too.

    Raises
    ------
    PreconditionError
        If the placement names a host that is not there.
    """
    out: list[TaskManager] = []

    def add(name: str, host: Host, groups: dict[str, int], slots: int) -> None:
        port = base_port + 2 * len(out)
        out.append(TaskManager(name, host, port, port + 1, slots, groups))

    if not placement:
        for h in hosts.values():
            add(h.name, h, {}, 1)
        return out
    for group, where in placement.items():
        resource_name(group)
        for h in sorted(set(where)):
            if h not in hosts:
                raise PreconditionError(f"placement: group {group!r} on host {h!r}, which the "
                                        f"cluster does not have ({', '.join(hosts)})")
            n = where.count(h)
            add(f"{h}_{group}", hosts[h], {group: n}, n)
    return out


def testbed_spec(state: dict[str, Any], work_dir: Path, master: str = "master",
                 workers: list[str] | None = None,
                 placement: dict[str, list[str]] | None = None) -> ClusterSpec:
    """Processes in the namespaces of a running testbed (its state file); ``placement``:
    group -> the host of each subtask (testbed host names)."""
    m, ws = procs.namespace_hosts(state, master, workers, "the JobManager", Host)
    return ClusterSpec(m, taskmanagers({h.name: h for h in ws}, placement), Path(work_dir))


def _jm_bind(ip: str) -> str:
    """The JobManager's bind host: ``ip`` on loopback, every address of the host's own
    namespace on the testbed, because Flink 1.20's REST job submission uploads to the
    BlobServer at ``localhost`` whatever the bind host (FLINK-38109)."""
    return ip if ipaddress.ip_address(ip).is_loopback else "0.0.0.0"


class FlinkCluster:
    """A JobManager on the master, the TaskManagers on their hosts; ``start`` waits until
    the JobManager's REST API lists every TaskManager. The reporter in every process sends
    to ``spec.collector``, where :meth:`start_receiver` runs the receiver for whoever reads
    the profiles (the runner, ``streamband flink up``)."""

    def __init__(self, spec: ClusterSpec, home: Path | None = None,
                 progress: Any = None) -> None:
        self.spec = spec
        self.work = Path(spec.work_dir).resolve()
        self.progress = progress
        self.home = home or ensure_home(progress)
        install_plugin(self.home, progress)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.started_s: float | None = None

    # -- configuration ----------------------------------------------------------------
    def conf(self, tm: TaskManager | None = None) -> dict[str, Any]:
        """The ``config.yaml`` of the JobManager (``tm`` None) or of ``tm``."""
        s = self.spec
        m = s.master
        conf: dict[str, Any] = {
            "jobmanager.rpc.address": m.ip, "jobmanager.rpc.port": s.rpc_port,
            "jobmanager.bind-host": _jm_bind(m.ip),
            "rest.address": m.ip, "rest.bind-address": m.ip, "rest.port": s.rest_port,
            "blob.server.port": s.blob_port,
            # the testbed's addresses have no reverse DNS: each lookup would block the
            # JobMaster's main thread until the resolver times out
            "jobmanager.retrieve-taskmanager-hostname": False,
            "metrics.reporter.streamband.factory.class":
                "streamband.flink.reporter.FlowReporterFactory",
            "metrics.reporter.streamband.interval": "1 SECONDS",
            "metrics.reporter.streamband.manager": s.collector,
            **({"metrics.reporter.streamband.kafka": s.kafka} if s.kafka else {}),
            # per input gate and output partition queue lengths (issue 34, item 3)
            "taskmanager.network.detailed-metrics": True,
            "taskmanager.cpu.cores": 1.0,
            **s.memory.conf(),
            "io.tmp.dirs": str(self.work / (tm.name if tm else "master") / "tmp"),
            "web.tmpdir": str(self.work / "master" / "tmp"),
            # a lost TaskManager is noticed within ~10 s, not the default 50
            "heartbeat.timeout": 10000,
            "heartbeat.interval": 2000,
            "restart-strategy.type": "none",
        }
        if s.fine_grained:
            conf["cluster.fine-grained-resource-management.enabled"] = True
        if tm is not None:
            conf.update({
                "taskmanager.host": tm.host.ip, "taskmanager.bind-host": tm.host.ip,
                "taskmanager.data.port": tm.data_port, "taskmanager.rpc.port": tm.rpc_port,
                "taskmanager.numberOfTaskSlots": tm.slots,
                "taskmanager.resource-id": tm.name,
                # the reporter names this TaskManager by its data address
                "metrics.reporter.streamband.host": tm.host.ip,
                "metrics.reporter.streamband.port": tm.data_port,
                "metrics.reporter.streamband.tm": tm.name,
            })
            if tm.groups:
                names = [resource_name(g) for g in tm.groups]
                conf["external-resources"] = ";".join(names)
                for g, n in tm.groups.items():
                    conf[f"external-resource.{resource_name(g)}.amount"] = n
        conf.update(s.extra_conf)
        return conf

    def conf_dir(self, name: str) -> Path:
        return self.work / name / "conf"

    def java(self, host: Host, name: str, main: str, *args: str, jvm: list[str],
             cp_extra: list[str] | None = None, logfile: str | None = None) -> list[str]:
        """A JVM run from the Flink home inside ``host``, logging to ``WORK/NAME/log``."""
        cp = [str(self.home / "lib" / "*"), *(cp_extra or [])]
        log = self.work / name / "log"
        cmd = ["java", *jvm, "-XX:+UseSerialGC", *ADD_OPENS, f"{HOME_ARG}{self.home}",
               f"-Dlog.file={log / (logfile or name + '.log')}",
               f"-Dlog4j.configurationFile={self.conf_dir(name) / 'log4j.properties'}",
               "-cp", ":".join(cp), main, *args]
        return host.wrap(cmd)

    def env(self, name: str | None = None) -> dict[str, str]:
        extra = {TAG: str(self.work), "FLINK_PLUGINS_DIR": str(self.home / "plugins")}
        if name is not None:
            extra["FLINK_CONF_DIR"] = str(self.conf_dir(name))
        return marked_env(extra)

    # -- life cycle -------------------------------------------------------------------
    def start(self, timeout: float = 180.0) -> FlinkCluster:
        s = self.spec
        if _STATE.read() is not None:
            raise PreconditionError(f"a Flink cluster is already up ({STATE}); run "
                                    "`streamband flink down`")
        t0 = time.monotonic()
        try:
            for name, tm in [("master", None), *((t.name, t) for t in s.taskmanagers)]:
                shutil.rmtree(self.work / name, ignore_errors=True)
                for d in ("conf", "log", "tmp"):
                    (self.work / name / d).mkdir(parents=True, exist_ok=True)
                (self.conf_dir(name) / "config.yaml").write_text(
                    yaml.safe_dump(self.conf(tm), sort_keys=True))
                (self.conf_dir(name) / "log4j.properties").write_text(_LOG4J)
            m = s.master
            self._spawn("master", m, self.java(
                m, "master",
                "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint",
                "--configDir", str(self.conf_dir("master")),
                jvm=[f"-Xmx{s.memory.jobmanager_heap}m"]), name="master")
            for tm in s.taskmanagers:
                self._spawn(tm.name, tm.host, self.java(
                    tm.host, tm.name, "org.apache.flink.runtime.taskexecutor.TaskManagerRunner",
                    "--configDir", str(self.conf_dir(tm.name)), jvm=s.memory.jvm()),
                    name=tm.name)
            self._write_state()
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        self.started_s = time.monotonic() - t0
        return self

    def _spawn(self, key: str, host: Host, cmd: list[str], name: str | None = None) -> None:
        d = self.work / (name or "master") / "log"
        with open(d / f"{key}.out", "wb") as log:
            self.procs[key] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                               env=self.env(name), start_new_session=True,
                                               cwd=self.work / (name or "master"))

    def _check_alive(self) -> None:
        for name, p in self.procs.items():
            if p.poll() is not None:
                raise PreconditionError(
                    f"Flink {name} exited with {p.returncode}; see {self.work}/{name}/log")

    def rest(self, path: str, timeout: float = 10.0) -> Any:
        """GET ``path`` of the JobManager's REST API (JSON), asked inside the master host.

        Raises
        ------
        PreconditionError
            If the JobManager does not answer.
        """
        return rest_get(self.spec.master, self.spec.rest_port, path, timeout)

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        want = {tm.name for tm in self.spec.taskmanagers}
        seen: set[str] = set()
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                seen = {t["id"] for t in self.rest("/taskmanagers", 3.0)["taskmanagers"]}
            except PreconditionError:
                seen = set()
            if want <= seen:
                return
            time.sleep(1.0)
        raise PreconditionError(f"the JobManager lists TaskManagers {sorted(seen)}, expected "
                                f"{sorted(want)} after {timeout:.0f} s; logs in {self.work}")

    def stop(self) -> list[int]:
        """Stops every process of this cluster (JobManager, TaskManagers, collector,
        clients)."""
        killed = procs.stop_tagged(TAG, str(self.work), self.procs, 5.0)
        _STATE.clear(self.work)
        return killed

    def __enter__(self) -> FlinkCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _write_state(self) -> None:
        _STATE.write(self.work, self.home, self.spec, self.procs)

    def start_receiver(self, every: float | None = None) -> subprocess.Popen[bytes]:
        """The one profile receiver (:mod:`streamband.loop.reports`) on the cluster's
        collector address, inside the master host, writing ``WORK/profile.json`` (every
        ``every`` seconds, else the receiver's default); it carries the cluster's tag, so
        :meth:`stop` stops it with the cluster."""
        log = self.work / "master" / "log" / "collector.out"
        log.parent.mkdir(parents=True, exist_ok=True)
        often = ["--every", str(every)] if every is not None else []
        with open(log, "wb") as out:
            return subprocess.Popen(
                self.spec.master.wrap([sys.executable, "-m", "streamband.loop.reports",
                                       "--listen", self.spec.collector,
                                       "--out", str(self.work / "profile.json"), *often]),
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                env=marked_env({TAG: str(self.work)}))

    # -- jobs -----------------------------------------------------------------------------
    def submit(self, jar: Path, main: str | None = None, args: list[str] | None = None,
               conf: dict[str, Any] | None = None, parallelism: int | None = None,
               timeout: float = 180.0, classpath: list[Path] | None = None) -> str:
        """Runs Flink's client (``flink run -d``) on the master: submits ``jar`` (its
        ``main``, or the jar's own Main-Class) detached with ``args``; ``conf``: settings
        given to the client as ``-Dkey=value`` (what ``flink run -D`` passes into the job's
        configuration); ``classpath``: jars every process reads from its own disk (``flink
        run -C file://...``), beside the job's jar, which the TaskManagers fetch from the
        JobManager. Returns the job id.

        Raises
        ------
        PreconditionError
            If the client fails or prints no job id within ``timeout``.
        """
        m = self.spec.master
        cli = ["run", "-d", "-m", f"{m.ip}:{self.spec.rest_port}"]
        if main:
            cli += ["-c", main]
        if parallelism:
            cli += ["-p", str(parallelism)]
        for k, v in (conf or {}).items():
            cli.append(f"-D{k}={v}")
        for cp in classpath or []:
            cli += ["-C", Path(cp).resolve().as_uri()]
        key = f"client-{len(self.procs)}"
        cmd = self.java(m, "master", "org.apache.flink.client.cli.CliFrontend", *cli,
                        str(Path(jar).resolve()), *(args or []), jvm=["-Xmx192m"],
                        logfile=f"{key}.log")
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=self.env("master"))
        (self.work / "master" / "log" / f"{key}.out").write_text(r.stdout + r.stderr)
        got = re.search(r"JobID ([0-9a-f]{32})", r.stdout + r.stderr)
        if r.returncode or not got:
            why = java_error((r.stdout + r.stderr).strip().splitlines())
            raise PreconditionError(f"flink run {Path(jar).name} (exit {r.returncode}): "
                                    f"{why}; see {self.work / 'master' / 'log'}")
        return got.group(1)

    def job(self, job_id: str) -> dict[str, Any]:
        return self.rest(f"/jobs/{job_id}")

    def jobs(self) -> list[dict[str, Any]]:
        return self.rest("/jobs/overview")["jobs"]

    def wait_running(self, job_id: str, timeout: float = 180.0) -> dict[str, Any]:
        """Waits until every subtask of ``job_id`` runs; returns the job's details.

        Raises
        ------
        PreconditionError
            If the job fails, ends, or some subtask is not running after ``timeout``.
        """
        deadline = time.monotonic() + timeout
        info: dict[str, Any] = {}
        while time.monotonic() < deadline:
            info = self.job(job_id)
            if info.get("state") in ("FAILED", "CANCELED", "FINISHED"):
                raise PreconditionError(f"job {job_id} is {info['state']}: "
                                        f"{self._exception(job_id)}")
            counts = [v.get("tasks", {}) for v in info.get("vertices", [])]
            if counts and all(set(c) <= {"RUNNING"} or c.get("RUNNING") == sum(c.values())
                              for c in ({k: v for k, v in c.items() if v} for c in counts)):
                return info
            time.sleep(1.0)
        raise PreconditionError(f"job {job_id} not running after {timeout:.0f} s: "
                                f"{info.get('state')}")

    def _exception(self, job_id: str) -> str:
        try:
            root = self.rest(f"/jobs/{job_id}/exceptions").get("root-exception") or ""
        except PreconditionError:
            return "(no exception)"
        lines = [ln for ln in str(root).splitlines() if "Exception" in ln]
        return (lines[-1] if lines else str(root)[:300]).strip()[:300]

    def cancel(self, job_id: str, timeout: float = 60.0) -> None:
        """Cancels a job and waits until it has ended."""
        rest_call(self.spec.master, self.spec.rest_port, f"/jobs/{job_id}?mode=cancel",
                  "PATCH")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.job(job_id).get("state") in ("CANCELED", "FAILED", "FINISHED"):
                return
            time.sleep(0.5)
        raise PreconditionError(f"job {job_id} did not end in {timeout:.0f} s after cancel")

    def jobs_jar(self) -> Path:
        return jobs_jar(self.progress)

    def kafka_jar(self) -> Path:
        return kafka_jar(self.progress)


def rest_get(host: Host, port: int, path: str, timeout: float = 10.0) -> Any:
    """GET ``http://HOST:PORT/PATH`` (JSON) inside ``host``'s namespace."""
    return rest_call(host, port, path, "GET", timeout)


def rest_call(host: Host, port: int, path: str, method: str = "GET",
              timeout: float = 10.0) -> Any:
    url = f"http://{host.ip}:{port}{path}"
    if host.netns_pid is not None:
        code = ("import sys,urllib.request as u;r=u.Request(sys.argv[1],method=sys.argv[2]);"
                "sys.stdout.write(u.urlopen(r,timeout=float(sys.argv[3])).read().decode())")
        r = subprocess.run(host.wrap([sys.executable, "-c", code, url, method, str(timeout)]),
                           capture_output=True, text=True, timeout=timeout + 30)
        if r.returncode:
            raise PreconditionError(f"Flink REST {method} {path}: "
                                    f"{(r.stderr.strip().splitlines() or ['?'])[-1][:200]}")
        body = r.stdout
    else:
        try:
            req = urllib.request.Request(url, method=method)
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                body = resp.read().decode()
        except (urllib.error.URLError, OSError) as exc:
            raise PreconditionError(f"Flink REST {method} {path}: {exc}") from None
    return json.loads(body) if body.strip() else {}


def spec_from_state(st: dict[str, Any]) -> ClusterSpec:
    d = dict(st["spec"])
    tms = [TaskManager(**{**t, "host": Host(**t["host"])}) for t in d.pop("taskmanagers")]
    return ClusterSpec(master=Host(**d.pop("master")), taskmanagers=tms,
                       work_dir=Path(d.pop("work_dir")), memory=Memory(**d.pop("memory")), **d)


def attach() -> FlinkCluster:
    """The cluster that ``streamband flink up`` started.

    Raises
    ------
    PreconditionError
        If none is up.
    """
    st = _STATE.read()
    if st is None:
        STATE.unlink(missing_ok=True)
        raise PreconditionError("no Flink cluster is up: run `streamband flink up`")
    return FlinkCluster(spec_from_state(st), home=Path(st["home"]))


def tagged_processes(tag: str) -> list[int]:
    """Pids whose environment has ``STREAMBAND_FLINK=tag``."""
    return procs.tagged_processes(TAG, tag)


_ROLES = (("StandaloneSessionClusterEntrypoint", "jobmanager"),
          ("TaskManagerRunner", "taskmanager"), ("CliFrontend", "client"),
          ("collector", "collector"))


def usage(tag: str) -> list[dict[str, Any]]:
    """Memory (RSS, MB) and CPU time (s) of every process of the cluster ``tag``, named by
    its config directory where it has one."""
    out = procs.usage(tagged_processes(tag), _ROLES)
    for u in out:
        conf = re.search(r"--configDir \S*/([^/ ]+)/conf", u["cmd"])
        u["name"] = conf.group(1) if conf else u["role"]
    return out


def flink_processes() -> list[int]:
    """Pids of the JVMs run from a Flink home streamband built (its ``.complete`` file),
    with or without the project's mark (never this process's line)."""
    return maven.home_processes(HOME_ARG)


def leftovers() -> list[str]:
    """What of Flink's is still on disk: the state file of a cluster that is gone."""
    return [f"flink state {STATE}"] if _STATE.stale() else []


def clean() -> list[str]:
    """Removes the state file (after every process is gone); returns what it removed."""
    gone = leftovers()
    if gone:
        STATE.unlink(missing_ok=True)
    return gone


#: Flink's part of ``streamband testbed clean`` (entry point ``streamband.cleanup``)
CLEANUP = Cleanup(name="flink", processes=flink_processes, leftovers=leftovers, clean=clean,
                  order=10)
