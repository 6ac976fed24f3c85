"""One Kafka broker in KRaft mode (broker and controller in one JVM, no ZooKeeper), for
the engines' sources: formatted, started, checked by a Kafka request, stopped.

Everything it keeps is under ``RUN_DIR/kafka`` (:data:`STATE_DIR`): ``broker.json``
(where it listens, its pid), ``server.properties``, ``data/`` (the topics' logs) and
``logs/`` (``server.log`` and the JVM's output). Its processes carry the project's mark
and ``-Dstreamband.kafka.home=HOME`` on their command line (the broker, and the
producers and tools of :mod:`streamband.kafka.replay`), so that ``streamband testbed
clean`` finds them by :data:`CLEANUP` even without the mark.

It runs in the root network namespace on a loopback address by default; on the
testbed, ``prefix`` runs every command inside a host (e.g. ``["nsenter",
"--net=/proc/PID/ns/net"]``).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from streamband import maven
from streamband.errors import PreconditionError
from streamband.kafka.home import classpath, ensure_home
from streamband.procs import RUN_DIR, Cleanup, marked_env, terminate

STATE_DIR = RUN_DIR / "kafka"
STATE = STATE_DIR / "broker.json"
#: on the command line of every JVM run from a Kafka home streamband built
HOME_ARG = "-Dstreamband.kafka.home="
BROKER_PORT, CONTROLLER_PORT = 9092, 9093

#: each JVM logs to ``STATE_DIR/logs/NAME.log`` (``-Dkafka.log.name``; the broker: server)
_LOG4J = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration shutdownHook="disable">
  <Appenders>
    <File name="F" fileName="${sys:kafka.logs.dir}/${sys:kafka.log.name:-server}.log">
      <PatternLayout pattern="%d{yyyy-MM-dd HH:mm:ss.SSS} %c{1.} [%p] %msg%n"/>
    </File>
  </Appenders>
  <Loggers>
    <Root level="info"><AppenderRef ref="F"/></Root>
    <Logger name="kafka.request.logger" level="warn"/>
    <Logger name="org.apache.kafka.clients" level="warn"/>
  </Loggers>
</Configuration>
"""

#: the broker's settings beyond its addresses: one node, replication factors 1, and
#: fewer threads and buffers than a production broker (two cores, a small heap)
SETTINGS = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
    "inter.broker.listener.name": "PLAINTEXT",
    "num.partitions": "1",
    "auto.create.topics.enable": "false",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "log.cleaner.dedupe.buffer.size": str(8 << 20),
}


@dataclass
class BrokerSpec:
    """Where and how the broker runs.

    Parameters
    ----------
    host : str
        The address it listens on and advertises (default loopback).
    port : int
        Its client port (the producers' and consumers' bootstrap).
    controller_port : int
        Its KRaft controller port (same address).
    heap_mb : int
        The JVM's ``-Xmx``, MiB.
    prefix : list of str
        A command prefix that runs a command inside the host the broker lives on
        (``nsenter --net=/proc/PID/ns/net``); empty: this network namespace.
    """

    host: str = "127.0.0.1"
    port: int = BROKER_PORT
    controller_port: int = CONTROLLER_PORT
    heap_mb: int = 384
    prefix: list[str] = field(default_factory=list)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"


def api_versions(host: str, port: int, timeout: float = 2.0) -> int:
    """How many APIs the broker at ``host:port`` serves, from a Kafka ``ApiVersions``
    request (v0): a broker that answers it is serving requests.

    Raises
    ------
    OSError
        If nothing answers, or the answer is not Kafka's.
    """
    client = b"streamband"
    body = struct.pack(">hhih", 18, 0, 1, len(client)) + client
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(struct.pack(">i", len(body)) + body)
        head = _read(s, 4)
        reply = _read(s, struct.unpack(">i", head)[0])
    corr, err, n = struct.unpack(">ihi", reply[:10])
    if corr != 1 or err != 0:
        raise OSError(f"Kafka at {host}:{port} answered ApiVersions with error {err}")
    return n


def _read(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise OSError("connection closed")
        buf += chunk
    return buf


def _cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (Kafka's
    ``Uuid``), never starting with ``-`` (the tools would read it as an option)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


class Broker:
    """A single-node KRaft broker under :data:`STATE_DIR`.

    Parameters
    ----------
    spec : BrokerSpec
        Its address, ports, heap and host.
    home : Path, optional
        The Kafka home (default: :func:`~streamband.kafka.home.ensure_home`).
    progress : callable, optional
        Called with a line of text at each step of the home's build and the start.
    """

    def __init__(self, spec: BrokerSpec | None = None, home: Path | None = None,
                 progress: Any = None) -> None:
        self.spec = spec or BrokerSpec()
        self.progress = progress
        self.home = home or ensure_home(progress)
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_s: float | None = None

    # -- commands ---------------------------------------------------------------------
    def java(self, main: str, *args: str, heap_mb: int = 128, jar: Path | None = None,
             log: str = "server") -> list[str]:
        """The command line of a JVM run from the Kafka home (inside the host), with
        ``jar`` on its classpath, logging to ``STATE_DIR/logs/LOG.log``."""
        cmd = ["java", f"-Xmx{heap_mb}m", "-XX:+UseSerialGC", f"{HOME_ARG}{self.home}",
               f"-Dkafka.logs.dir={STATE_DIR / 'logs'}", f"-Dkafka.log.name={log}",
               f"-Dlog4j2.configurationFile={STATE_DIR / 'log4j2.xml'}",
               "-cp", classpath(self.home, jar), main, *args]
        return [*self.spec.prefix, *cmd]

    def properties(self) -> dict[str, str]:
        s = self.spec
        return {**SETTINGS,
                "controller.quorum.voters": f"1@{s.host}:{s.controller_port}",
                "listeners": f"PLAINTEXT://{s.host}:{s.port},CONTROLLER://{s.host}:"
                             f"{s.controller_port}",
                "advertised.listeners": f"PLAINTEXT://{s.host}:{s.port}",
                "log.dirs": str(STATE_DIR / "data")}

    # -- life cycle -------------------------------------------------------------------
    def start(self, timeout: float = 90.0) -> Broker:
        """Formats a new log directory and starts the broker; returns once it answers
        a Kafka request.

        Raises
        ------
        PreconditionError
            If a broker is already up, or this one exits or does not answer in
            ``timeout`` seconds (its logs stay in ``STATE_DIR/logs``).
        """
        if running() is not None:
            raise PreconditionError(f"a Kafka broker is already up ({STATE}); run "
                                    "`streamband kafka down`")
        t0 = time.monotonic()
        shutil.rmtree(STATE_DIR, ignore_errors=True)  # a new broker: no topics of an old one
        (STATE_DIR / "logs").mkdir(parents=True)
        (STATE_DIR / "log4j2.xml").write_text(_LOG4J)
        conf = STATE_DIR / "server.properties"
        conf.write_text("".join(f"{k}={v}\n" for k, v in sorted(self.properties().items())))
        if self.progress:
            self.progress("Kafka: formatting the log directory")
        fmt = subprocess.run(self.java("kafka.tools.StorageTool", "format", "-t",
                                       _cluster_id(), "-c", str(conf), log="format"),
                             capture_output=True, text=True, env=marked_env(), timeout=120)
        if fmt.returncode:
            tail = (fmt.stderr or fmt.stdout).strip().splitlines()[-1:] or ["(no output)"]
            raise PreconditionError(f"Kafka StorageTool format failed: {tail[0][:300]}")
        if self.progress:
            self.progress(f"Kafka: starting the broker on {self.spec.bootstrap}")
        with open(STATE_DIR / "logs" / "broker.out", "wb") as log:
            self.proc = subprocess.Popen(
                self.java("kafka.Kafka", str(conf), heap_mb=self.spec.heap_mb),
                stdout=log, stderr=subprocess.STDOUT, env=marked_env(),
                start_new_session=True, cwd=STATE_DIR)
        STATE.write_text(json.dumps({"spec": asdict(self.spec), "home": str(self.home),
                                     "pid": self.proc.pid, "started": time.time()}, indent=1))
        try:
            self._wait(timeout)
        except BaseException:
            self.stop(keep_logs=True)
            raise
        self.started_s = time.monotonic() - t0
        return self

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise PreconditionError(f"the Kafka broker exited with {self.proc.returncode}; "
                                        f"see {STATE_DIR / 'logs'}")
            if answers(self.spec):
                return
            time.sleep(0.5)
        raise PreconditionError(f"the Kafka broker did not answer on {self.spec.bootstrap} in "
                                f"{timeout:.0f} s; see {STATE_DIR / 'logs'}")

    def stop(self, keep_logs: bool = False) -> list[int]:
        """Stops the broker and every client run from its home; removes
        :data:`STATE_DIR` (its logs stay with ``keep_logs``). Returns the pids stopped."""
        pids = kafka_processes()
        terminate(pids, grace_s=5.0)  # a broker given time writes a clean shutdown marker
        if self.proc is not None:
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
            self.proc = None
        if keep_logs:
            STATE.unlink(missing_ok=True)
            shutil.rmtree(STATE_DIR / "data", ignore_errors=True)
        else:
            shutil.rmtree(STATE_DIR, ignore_errors=True)
        return pids

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def answers(spec: BrokerSpec, timeout: float = 2.0) -> bool:
    """Whether the broker of ``spec`` answers a Kafka request (inside its host)."""
    if not spec.prefix:
        try:
            api_versions(spec.host, spec.port, timeout)
            return True
        except OSError:
            return False
    probe = [*spec.prefix, sys.executable, "-c",
             "from streamband.kafka.broker import api_versions; "
             f"api_versions({spec.host!r}, {spec.port}, {timeout})"]
    return subprocess.run(probe, capture_output=True, timeout=timeout + 30).returncode == 0


def running() -> dict[str, Any] | None:
    """The state of the broker that is up (``broker.json``), or None."""
    try:
        st = json.loads(STATE.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return st if Path(f"/proc/{st.get('pid', 0)}").exists() and st.get("pid") else None


def attach(progress: Any = None) -> Broker:
    """The broker that is up (``streamband kafka up``).

    Raises
    ------
    PreconditionError
        If none is.
    """
    st = running()
    if st is None:
        raise PreconditionError("no Kafka broker is up: run `streamband kafka up`")
    return Broker(BrokerSpec(**st["spec"]), home=Path(st["home"]), progress=progress)


def status() -> dict[str, Any]:
    """Whether a broker is up, where, whether it answers, and its memory and CPU."""
    st = running()
    if st is None:
        return {"up": False, "state": str(STATE)}
    spec = BrokerSpec(**st["spec"])
    return {"up": True, "bootstrap": spec.bootstrap, "pid": st["pid"],
            "answers": answers(spec), "uptime_s": round(time.time() - st["started"], 1),
            **usage(st["pid"]), "state": str(STATE)}


def usage(pid: int) -> dict[str, float]:
    """Resident memory (MB) and CPU time (s) of ``pid``; empty if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        rss = next(int(ln.split()[1]) for ln in Path(f"/proc/{pid}/status").read_text()
                   .splitlines() if ln.startswith("VmRSS:"))
    except (OSError, StopIteration, ValueError):
        return {}
    tick = os.sysconf("SC_CLK_TCK")
    return {"rss_mb": round(rss / 1024, 1),
            "cpu_s": round((int(stat[11]) + int(stat[12])) / tick, 2)}


def kafka_processes() -> list[int]:
    """Pids of the JVMs run from a Kafka home streamband built (its ``.complete``
    file): brokers, producers, tools; with or without the project's mark."""
    return maven.home_processes(HOME_ARG)


def leftovers() -> list[str]:
    """What of Kafka's is still on disk: its state directory."""
    return [f"kafka state {STATE_DIR}"] if STATE_DIR.exists() else []


def clean() -> list[str]:
    """Removes :data:`STATE_DIR` (after every process is gone); returns what it removed."""
    gone = leftovers()
    shutil.rmtree(STATE_DIR, ignore_errors=True)
    return gone


#: Kafka's part of ``streamband testbed clean`` (entry point ``streamband.cleanup``)
CLEANUP = Cleanup(name="kafka", processes=kafka_processes, leftovers=leftovers, clean=clean,
                  order=20)
