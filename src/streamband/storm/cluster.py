"""A Storm cluster on the testbed's hosts (000 §VI-A1: ZooKeeper and Nimbus on the
master, one Supervisor per worker host), or on loopback addresses for development.

Every process carries the project's clean-up mark (``streamband testbed clean`` stops
it, also after ``kill -9``) and ``STREAMBAND_STORM=<cluster dir>``, so that ``down``
stops this cluster's daemons, workers and log writers and nothing else. Commands run
in a host's network namespace through ``nsenter`` when the host has one.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import yaml

from streamband import maven, procs
from streamband.errors import PreconditionError
from streamband.procs import RUN_DIR, Cleanup, ClusterState, java_error, marked_env
from streamband.storm.home import (
    JAR_NAME,
    ensure_home,
    install_jar,
    kafka_client_jar,
    streamband_jar,
)

STATE = RUN_DIR / "storm.json"
TAG = "STREAMBAND_STORM"
_STATE = ClusterState(STATE, TAG)
# ZooKeeper's client looks its server's name up for SASL; a testbed host has no DNS, so
# every connection would wait ~12 s for the lookup to time out
NO_DNS = "-Dzookeeper.sasl.client=false"
NIMBUS_PORT, ZK_PORT, SUPERVISOR_PORT, COLLECTOR_PORT = 6627, 2181, 6628, 7070


@dataclass
class Host(procs.Host):
    """A Storm host (:class:`streamband.procs.Host`) and its Supervisor's slot ports."""

    slots: list[int] = field(default_factory=lambda: [6700, 6701, 6702, 6703])
    supervisor_port: int = SUPERVISOR_PORT


@dataclass
class ClusterSpec:
    master: Host
    workers: list[Host]
    work_dir: Path
    zk_port: int = ZK_PORT
    nimbus_port: int = NIMBUS_PORT
    collector_port: int = COLLECTOR_PORT
    worker_heap_mb: int = 384
    extra_conf: dict[str, Any] = field(default_factory=dict)

    @property
    def collector(self) -> str:
        return f"{self.master.ip}:{self.collector_port}"


def loopback_spec(work_dir: Path, workers: int = 2, base_port: int = 0) -> ClusterSpec:
    """All daemons in the root namespace on 127.0.0.x, each supervisor with its own
    slot and thrift ports (they share one network namespace)."""
    ws = [Host(f"w{i + 1}", f"127.0.0.{i + 2}", None,
               [base_port + 6700 + 10 * i + k for k in range(4)], base_port + 6628 + 10 * i + 5)
          for i in range(workers)]
    return ClusterSpec(Host("master", "127.0.0.1"), ws, Path(work_dir),
                       zk_port=base_port + ZK_PORT, nimbus_port=base_port + NIMBUS_PORT,
                       collector_port=base_port + COLLECTOR_PORT)


def testbed_spec(state: dict[str, Any], work_dir: Path, master: str = "master",
                 workers: list[str] | None = None) -> ClusterSpec:
    """Daemons in the namespaces of a running testbed (its state file)."""
    m, ws = procs.namespace_hosts(state, master, workers, "Nimbus and ZooKeeper", Host)
    return ClusterSpec(m, ws, Path(work_dir))


class StormCluster:
    """ZooKeeper + Nimbus (+ the profile collector) on the master, a Supervisor per
    worker host. ``start`` waits until Nimbus sees every supervisor."""

    def __init__(self, spec: ClusterSpec, home: Path | None = None,
                 progress: Any = None) -> None:
        self.spec = spec
        self.work = Path(spec.work_dir).resolve()
        self.progress = progress
        self.home = home or ensure_home(progress)
        install_jar(self.home, streamband_jar(progress))
        #: the jar topologies of storm/ are submitted with (the one on every worker's
        #: classpath, extlib), and the Kafka client they read from the hosts' disk
        self.jar = streamband_jar(progress)
        self.classpath = [kafka_client_jar(progress)]
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    # -- configuration ----------------------------------------------------------------
    def conf(self, host: Host) -> dict[str, Any]:
        s = self.spec
        d = self.work / host.name
        conf = {
            "storm.zookeeper.servers": [s.master.ip],
            "storm.zookeeper.port": s.zk_port,
            "nimbus.seeds": [s.master.ip],
            "nimbus.thrift.port": s.nimbus_port,
            "storm.local.dir": str(d / "local"),
            "storm.local.hostname": host.ip,
            "storm.log.dir": str(d / "logs"),
            "supervisor.slots.ports": host.slots,
            "supervisor.thrift.port": host.supervisor_port,
            "storm.scheduler": "streamband.storm.PinScheduler",
            "worker.heap.memory.mb": s.worker_heap_mb,
            "topology.worker.max.heap.size.mb": float(s.worker_heap_mb),
            # one heap for every worker: %HEAP-MEM% (128 MB per executor) cannot hold a
            # full receive queue of 8 KB tuples, and the worker dies of it before back-pressure
            "worker.childopts": f"-Xmx{s.worker_heap_mb}m -XX:+UseSerialGC {NO_DNS}",
            "topology.metrics.reporters": [{
                "class": "streamband.storm.FlowReporter", "report.period": 1,
                "report.period.units": "SECONDS", "manager": s.collector}],
            "streamband.manager": s.collector,
            **s.extra_conf,
        }
        return conf

    def conf_file(self, host: Host) -> Path:
        return self.work / host.name / "storm.yaml"

    def java(self, host: Host, main: str, *args: str, heap_mb: int = 256,
             cp_extra: list[str] | None = None, logfile: str | None = None) -> list[str]:
        cp = [str(self.home / "lib" / "*"), str(self.home / "extlib" / "*"),
              *(cp_extra or []), str(self.home / "conf")]
        cmd = ["java", f"-Xmx{heap_mb}m", "-XX:+UseSerialGC", NO_DNS, "-cp", ":".join(cp),
               f"-Dstorm.home={self.home}", f"-Dstorm.conf.file={self.conf_file(host)}",
               f"-Dstorm.log.dir={self.work / host.name / 'logs'}",
               f"-Dlogfile.name={logfile or main.rsplit('.', 1)[-1].lower() + '.log'}",
               f"-Dlog4j.configurationFile={self.home / 'log4j2' / 'cluster.xml'}",
               main, *args]
        return host.wrap(cmd)

    def env(self) -> dict[str, str]:
        return marked_env({TAG: str(self.work)})

    # -- life cycle -------------------------------------------------------------------
    def start(self, timeout: float = 120.0) -> StormCluster:
        s = self.spec
        if _STATE.read() is not None:
            raise PreconditionError(f"a Storm cluster is already up ({STATE}); run "
                                    "`streamband storm down`")
        try:
            for h in [s.master, *s.workers]:
                # a new cluster: no ZooKeeper data, blobs or assignments of an old one
                shutil.rmtree(self.work / h.name, ignore_errors=True)
                (self.work / h.name / "logs").mkdir(parents=True, exist_ok=True)
                self.conf_file(h).write_text(yaml.safe_dump(self.conf(h), sort_keys=True))
            m = s.master
            self._spawn("zookeeper", m, self.java(
                m, "org.apache.storm.shade.org.apache.zookeeper.server.ZooKeeperServerMain",
                str(s.zk_port), str(self.work / m.name / "zookeeper"), heap_mb=128))
            self._spawn("collector", m, m.wrap([
                _python(), "-m", "streamband.loop.reports", "--listen", s.collector,
                "--out", str(self.work / "profile.json")]))
            self._wait_port(m, s.zk_port, 30)
            self._spawn("nimbus", m, self.java(m, "org.apache.storm.daemon.nimbus.Nimbus",
                                               heap_mb=256))
            for w in s.workers:
                self._spawn(f"supervisor-{w.name}", w, self.java(
                    w, "org.apache.storm.daemon.supervisor.Supervisor", heap_mb=192))
            self._write_state()
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, name: str, host: Host, cmd: list[str]) -> None:
        log = open(self.work / host.name / "logs" / f"{name}.out", "wb")  # noqa: SIM115
        self.procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                            env=self.env(), start_new_session=True,
                                            cwd=self.work / host.name)
        log.close()

    def _wait_port(self, host: Host, port: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            r = subprocess.run(host.wrap(["bash", "-c", f"exec 3<>/dev/tcp/{host.ip}/{port}"]),
                               capture_output=True)
            if r.returncode == 0:
                return
            time.sleep(0.5)
        raise PreconditionError(f"port {port} on {host.name} ({host.ip}) did not open in "
                                f"{timeout:.0f} s; logs in {self.work / host.name / 'logs'}")

    def _check_alive(self) -> None:
        for name, p in self.procs.items():
            if p.poll() is not None:
                raise PreconditionError(
                    f"Storm {name} exited with {p.returncode}; see {self.work}/*/logs/{name}.out")

    def _wait_ready(self, timeout: float) -> None:
        self._wait_port(self.spec.master, self.spec.nimbus_port, timeout)
        deadline = time.monotonic() + timeout
        want = {w.ip for w in self.spec.workers}
        seen: set[str] = set()
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                seen = {sv["host"] for sv in self.admin("list")["supervisors"]}
            except PreconditionError:
                seen = set()
            if want <= seen:
                return
            time.sleep(1.0)
        raise PreconditionError(f"Nimbus sees supervisors {sorted(seen)}, expected "
                                f"{sorted(want)} after {timeout:.0f} s")

    def stop(self) -> list[int]:
        """Stops every process of this cluster (daemons, workers, log writers)."""
        killed = procs.stop_tagged(TAG, str(self.work), self.procs)
        _STATE.clear(self.work)
        return killed

    def __enter__(self) -> StormCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _write_state(self) -> None:
        _STATE.write(self.work, self.home, self.spec, self.procs, jar=str(self.jar))

    # -- topologies ---------------------------------------------------------------------
    def run_java(self, main: str, *args: str, timeout: float = 120.0,
                 jar: Path | None = None) -> str:
        """Runs a client on the master (Nimbus is reachable there); returns stdout."""
        m = self.spec.master
        extra = [str(jar)] if jar else []
        cmd = self.java(m, main, *args, heap_mb=192, cp_extra=extra, logfile="client.log")
        if jar:
            cmd.insert(cmd.index("-cp"), f"-Dstorm.jar={jar}")
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=self.env())
        if r.returncode:
            err = (r.stderr.strip().splitlines() or ["(no output)"])
            raise PreconditionError(f"{main.rsplit('.', 1)[-1]} {' '.join(args)}: "
                                    f"{java_error(err)}")
        return r.stdout

    def admin(self, *args: str) -> dict[str, Any]:
        out = self.run_java("streamband.storm.Admin", *args)
        return json.loads(out.strip().splitlines()[-1])

    def submit(self, jar: Path, main: str, name: str | None = None,
               conf: dict[str, Any] | None = None, args: list[str] | None = None,
               timeout: float = 120.0, classpath: list[Path] | None = None
               ) -> dict[str, Any]:
        """Runs ``main`` from ``jar`` on the master, as ``storm jar`` does, and returns the
        summary of the topology it submitted. ``classpath``: jars the client and each worker
        read from their own disk (Storm's ``topology.classpath``), beside ``jar``, which
        every supervisor fetches from Nimbus; by default the Kafka client where ``jar`` is
        :attr:`jar`, the one storm/'s topologies are submitted with.

        ``args`` are ``main``'s arguments, as given, and ``conf`` reaches the topology
        through Storm's ``storm.options`` (what ``storm jar ... -c key=value`` passes;
        :func:`storm_options`), which ``StormSubmitter`` merges into any topology's conf,
        so a ``main`` that takes no conf argument is sized by it too. Without ``args``,
        the convention of the topologies of ``storm/``: ``NAME CONF.yaml``. A ``main``
        that stays in the foreground after submitting (a client that polls its metrics)
        runs on beside the cluster until the cluster stops.

        Raises
        ------
        PreconditionError
            ``main`` exited with an error, or no new topology appeared in ``timeout``.
        """
        before = {t["name"] for t in self.admin("list")["topologies"]}
        if classpath is None:
            classpath = self.classpath if Path(jar).resolve() == self.jar.resolve() else []
        extra = [str(Path(p).resolve()) for p in classpath]
        if extra:
            conf = {**(conf or {}), "topology.classpath": ":".join(extra)}
        # storm/'s topologies read CONF.yaml (TT's word list would pass the size the
        # kernel allows one argument); any other main gets the conf as storm jar gives it
        options = storm_options(conf) if conf and args is not None else None
        if args is None:
            if name is None:
                raise PreconditionError("submit: a topology of storm/ needs a name")
            args = [name]
            if conf is not None:
                f = self.work / f"topology-{name}.yaml"
                f.write_text(yaml.safe_dump(conf, sort_keys=True))
                args.append(str(f))
        jar = Path(jar).resolve()
        m = self.spec.master
        cmd = self.java(m, main, *args, heap_mb=192, cp_extra=[str(jar), *extra],
                        logfile="client.log")
        at = cmd.index("-cp")
        cmd[at:at] = [f"-Dstorm.jar={jar}"] + ([f"-Dstorm.options={options}"] if options else [])
        key = f"client-{name or main.rsplit('.', 1)[-1]}-{len(self.procs)}"
        log = self.work / m.name / "logs" / f"{key}.out"
        with open(log, "wb") as out:
            client = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=self.env(),
                                      start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done = client.poll()
            if done not in (None, 0):
                lines = log.read_text(errors="replace").strip().splitlines() or ["(no output)"]
                raise PreconditionError(f"{main.rsplit('.', 1)[-1]} {' '.join(args)}: "
                                        f"{java_error(lines)}")
            new = [t for t in self.admin("list")["topologies"]
                   if (t["name"] == name if name is not None else t["name"] not in before)]
            if new:
                if done is None:
                    self.procs[key] = client  # a client that stays: stopped with the cluster
                return new[0]
            if done == 0 and name is None:
                break
            time.sleep(1.0)
        client.kill()
        raise PreconditionError(f"{main.rsplit('.', 1)[-1]} {' '.join(args)}: no "
                                f"{'topology ' + repr(name) if name else 'new topology'} "
                                f"on Nimbus after {timeout:.0f} s (see {log})")

    def info(self, name: str) -> dict[str, Any]:
        return self.admin("info", name)

    def wait_running(self, name: str, timeout: float = 120.0) -> dict[str, Any]:
        """Waits until every executor of ``name`` has a worker; returns the placement."""
        deadline = time.monotonic() + timeout
        info: dict[str, Any] = {}
        while time.monotonic() < deadline:
            info = self.info(name)
            ex = info.get("executors", [])
            if ex and all(e["host"] and e["port"] for e in ex):
                return info
            time.sleep(1.0)
        raise PreconditionError(f"topology {name!r} not placed after {timeout:.0f} s "
                                f"({info.get('sched_status', '')})")

    def kill(self, name: str, wait_s: int = 0) -> None:
        self.admin("kill", name, str(wait_s))

    def rebalance(self, name: str, wait_s: int = 0) -> None:
        self.admin("rebalance", name, str(wait_s))


def storm_options(conf: dict[str, Any]) -> str:
    """``conf`` as Storm's ``storm.options`` system property: ``key=value`` items, each
    URL-encoded and its value JSON, joined by commas, as ``storm jar -c`` writes them
    (``Utils.readCommandLineOpts`` decodes each and parses the value as JSON).

    Examples
    --------
    >>> storm_options({"topology.workers": 4, "a.b": "x y"})
    'topology.workers%3D4,a.b%3D%22x+y%22'
    """
    return ",".join(quote_plus(f"{k}={json.dumps(v)}") for k, v in conf.items())


def spec_from_state(st: dict[str, Any]) -> ClusterSpec:
    d = dict(st["spec"])
    return ClusterSpec(master=Host(**d.pop("master")),
                       workers=[Host(**w) for w in d.pop("workers")],
                       work_dir=Path(d.pop("work_dir")), **d)


def attach() -> StormCluster:
    """The cluster that ``streamband storm up`` started."""
    st = _STATE.read()
    if st is None:
        STATE.unlink(missing_ok=True)
        raise PreconditionError("no Storm cluster is up: run `streamband storm up`")
    return StormCluster(spec_from_state(st), home=Path(st["home"]))


def tagged_processes(tag: str) -> list[int]:
    """Pids whose environment has ``STREAMBAND_STORM=tag``."""
    return procs.tagged_processes(TAG, tag)


# the log writer's command line holds its worker's: it is matched first
_ROLES = (("LogWriter", "log writer"), ("ZooKeeperServerMain", "zookeeper"),
          ("daemon.nimbus.Nimbus", "nimbus"), ("daemon.supervisor.Supervisor", "supervisor"),
          ("daemon.worker.Worker", "worker"), ("streamband.loop.reports", "collector"))


def usage(tag: str) -> list[dict[str, Any]]:
    """Memory (RSS, MB) and CPU time (s) of every process of the cluster ``tag``."""
    return procs.usage(tagged_processes(tag), _ROLES)


def _python() -> str:
    import sys

    return sys.executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


__all__ = ["ClusterSpec", "Host", "StormCluster", "attach", "loopback_spec", "testbed_spec",
           "JAR_NAME"]


def storm_processes() -> list[int]:
    """Pids of the Storm JVMs (daemons, workers, log writers) run from a home the project
    built, whether or not they carry the mark: a Supervisor launches its workers with an
    environment of its own (never this process's line)."""
    return maven.home_processes("-Dstorm.home=")


#: Storm's part of ``streamband testbed clean`` (entry point ``streamband.cleanup``)
CLEANUP = Cleanup("storm", processes=storm_processes, order=10)
