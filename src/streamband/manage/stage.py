"""The testbed presented to ``streamband manage`` as if it were a remote cluster: the
manager runs on the master host (as 000 §VI-A1 runs its optimizer beside Nimbus) and
knows the cluster only by addresses.

- a management link (a veth pair, ``sbm0`` here, ``sbm1`` in the master's namespace,
  ``10.255.255.0/30``) from this machine to the master host: the controller's API listens
  on this machine's end (off loopback, so with a bearer token), the manager's dashboard
  on the master's end (with its own token);
- Storm on the testbed's hosts (:mod:`streamband.storm.cluster`) whose workers send their
  flow reports to the manager's profiler endpoint on the master (UDP 7071);
- the ``cluster.yaml`` an operator would write for it (:meth:`Stage.config`);
- failures an operator meets, for drills: a manager, controller, worker or supervisor
  killed, a link down, the profiler endpoint unreachable (an OpenFlow drop rule).

Everything carries the project's clean-up mark; :func:`stage` stops it all on exit.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from streamband.loop.engine import flow_name
from streamband.model.testbed import load_spec
from streamband.procs import clean, leftovers, marked_env
from streamband.sdn.client import ControllerClient
from streamband.storm.cluster import StormCluster, tagged_processes, testbed_spec
from streamband.storm.workloads import fork_join, fork_join_placement
from streamband.testbed.network import Testbed

LOCAL, MASTER = "10.255.255.1", "10.255.255.2"
LINK_LOCAL, LINK_MASTER = "sbm0", "sbm1"
API_PORT, MANAGE_PORT, PROFILER_PORT = 8181, 8480, 7071
#: un-acked tuples per spout task of the stage's fork-join (Storm's
#: topology.max.spout.pending): TP1 at 20 Mbit/s then runs at the links' pace with a
#: bounded latency (3-5 s) and no tuple timing out; open loop (None), the workers' queues
#: grow until tuples time out and are replayed, and throughput collapses (23-227 tuples/s)
FORK_JOIN_PENDING = 1000
#: Storm settings for the failure drills: a supervisor checks its workers every second
#: (default 3 s), so a killed worker is relaunched at once. The timeouts stay at Storm's
#: (supervisor.worker.timeout 30 s, nimbus.supervisor.timeout 60 s, nimbus.task.timeout
#: 30 s): while its supervisor is down a worker's heartbeat timer falls back to Nimbus and
#: beats only every ~11 s here (worker.log: "Exception when send heartbeat to local
#: supervisor" at 15:26:09.0, then 15:26:20.3), and a supervisor restarted in a namespace
#: takes 20-27 s to serve; at 10/15 s the restarted supervisor took its running workers'
#: beats for stale and relaunched them (1001 tuples replayed, 68 s to recover)
FAST_FAILOVER = {"supervisor.monitor.frequency.secs": 1}


def wait_for(pred: Callable[[], Any], timeout: float, what: str, every: float = 0.5) -> Any:
    """``pred()``'s first truthy value within ``timeout`` seconds (an exception counts as
    not yet); AssertionError naming ``what`` after that."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = pred()
        except Exception as exc:  # noqa: BLE001 - retried until the deadline
            last = exc
        if last and not isinstance(last, Exception):
            return last
        time.sleep(every)
    raise AssertionError(f"{what}: not within {timeout:.0f} s (last: {last!r})")


def _run(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=check)


class ManagementLink:
    """``sbm0`` (this machine, ``LOCAL``) <-> ``sbm1`` (a host's namespace, ``MASTER``)."""

    def create(self) -> None:
        self.remove()
        _run(["ip", "link", "add", LINK_LOCAL, "type", "veth", "peer", "name", LINK_MASTER])
        _run(["ip", "addr", "add", f"{LOCAL}/30", "dev", LINK_LOCAL])
        _run(["ip", "link", "set", LINK_LOCAL, "up"])

    def attach(self, netns_pid: int) -> None:
        _run(["ip", "link", "set", LINK_MASTER, "netns", str(netns_pid)])
        ns = ["nsenter", f"--net=/proc/{netns_pid}/ns/net"]
        _run([*ns, "ip", "addr", "add", f"{MASTER}/30", "dev", LINK_MASTER])
        _run([*ns, "ip", "link", "set", LINK_MASTER, "up"])

    def remove(self) -> None:
        _run(["ip", "link", "del", LINK_LOCAL], check=False)


@dataclass
class Stage:
    """A testbed + Storm cluster + management link, and the manager's life on it."""

    tb: Testbed
    cluster: StormCluster
    work: Path
    tokens: dict[str, str]
    manager: subprocess.Popen[bytes] | None = None
    manager_log: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    # -- addresses ----------------------------------------------------------------------
    @property
    def master_ip(self) -> str:
        return self.tb.ip("master")

    @property
    def master_pid(self) -> int:
        return int(self.tb.state()["hosts"]["master"]["pid"])

    def controller(self) -> ControllerClient:
        return ControllerClient(f"{LOCAL}:{API_PORT}", self.tokens["STREAMBAND_API_TOKEN"],
                                timeout=5.0)

    def api(self, token: bool = True) -> httpx.Client:
        """A client of the manager's API (through the management link)."""
        headers = {"authorization": f"Bearer {self.tokens['STREAMBAND_MANAGE_TOKEN']}"} \
            if token else {}
        return httpx.Client(base_url=f"http://{MASTER}:{MANAGE_PORT}", headers=headers,
                            timeout=10.0)

    @property
    def url(self) -> str:
        return f"http://{MASTER}:{MANAGE_PORT}/"

    # -- the config an operator writes -----------------------------------------------------
    def config(self, topologies: list[dict[str, Any]], state_dir: Path, dt: float = 1.0,
               placement_every_s: float = 2.0, guard: bool = True,
               hold_intervals: int = 3, enforce: str = "meter") -> dict[str, Any]:
        tb = self.tb
        topo = tb.topo
        refs = tb.link_ports()
        switches = [{"name": s, "dpid": tb.dpid[s]} for s in topo.switches]
        hosts = [{"ip": tb.ip(h), "switch": topo.host_switch(h), "port": tb.switch_port(h),
                  "link_mbps": topo.links[topo.uplink(h)].capacity_bps / 1e6}
                 for h in topo.hosts]
        trunks = []
        for lk in topo.links:
            if lk.kind == "internal" and lk.src < lk.dst:
                back = topo.link_id(lk.dst, lk.src)
                trunks.append({"a": lk.src, "b": lk.dst, "a_port": refs[lk.id].port,
                               "b_port": refs[back].port, "mbps": lk.capacity_bps / 1e6})
        return {
            "storm": {"nimbus": f"{self.master_ip}:{self.cluster.spec.nimbus_port}",
                      "profiler": f"{self.master_ip}:{PROFILER_PORT}",
                      "placement_every_s": placement_every_s},
            "controller": {"api": f"{LOCAL}:{API_PORT}", "token_env": "STREAMBAND_API_TOKEN"},
            "network": {"switches": switches, "hosts": hosts, "trunks": trunks},
            "topologies": topologies,
            "manager": {"dt_s": dt, "state_dir": str(state_dir),
                        "listen": f"{MASTER}:{MANAGE_PORT}",
                        "token_env": "STREAMBAND_MANAGE_TOKEN", "guard": guard,
                        "hold_intervals": hold_intervals},
            "enforce": enforce,
        }

    def write_config(self, path: Path, *args: Any, **kw: Any) -> Path:
        path.write_text(yaml.safe_dump(self.config(*args, **kw), sort_keys=False))
        return path

    # -- the manager ---------------------------------------------------------------------
    def start_manager(self, config: Path, timeout: float = 60.0) -> subprocess.Popen[bytes]:
        """``streamband manage --config`` in the master's namespace; waits for its API."""
        self.stop_manager()
        self.manager_log = config.with_suffix(".log")
        log = open(self.manager_log, "ab")  # noqa: SIM115
        self.manager = subprocess.Popen(
            ["nsenter", f"--net=/proc/{self.master_pid}/ns/net", sys.executable, "-m",
             "streamband.cli", "manage", "--config", str(config)],
            stdout=log, stderr=subprocess.STDOUT, env=marked_env(self.tokens),
            start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        with self.api() as c:
            while time.monotonic() < deadline:
                if self.manager.poll() is not None:
                    raise RuntimeError(f"manager exited {self.manager.returncode}: "
                                       f"{self.manager_log.read_text()[-800:]}")
                try:
                    if c.get("/api/v1/status").status_code == 200:
                        return self.manager
                except httpx.HTTPError:
                    pass
                time.sleep(0.3)
        raise RuntimeError(f"manager API not up after {timeout:.0f} s")

    def stop_manager(self, kill: bool = True) -> None:
        if self.manager is None:
            return
        if self.manager.poll() is None:
            self.manager.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            self.manager.wait(15)
        except subprocess.TimeoutExpired:
            self.manager.kill()
            self.manager.wait(5)
        self.manager = None

    def status(self) -> dict[str, Any]:
        with self.api() as c:
            r = c.get("/api/v1/status")
            r.raise_for_status()
            return r.json()

    def topology(self, name: str) -> dict[str, Any]:
        return next(t for t in self.status()["topologies"] if t["name"] == name)

    def meters(self) -> dict[str, float | None]:
        """The controller's meters: flow name -> rate (None: counting, not capping)."""
        return {flow_name(m["flow"]): m["rate_bps"] for m in self.controller().meters()}

    def managed(self, topology: str, since: float = 0.0) -> bool:
        """Every flow of ``topology`` has its rule on the controller (capped, or counted
        where the policy caps nothing: appaware leaves a link that is not full to TCP),
        and the manager's newest decision for it, made after the wall-clock time
        ``since``, is the policy it runs now."""
        with self.api() as c:
            r = c.get("/api/v1/allocations", params={"topology": topology, "limit": 1})
            r.raise_for_status()
            last = r.json()
        top = self.topology(topology)
        return (bool(last) and last[0]["decision"] == "policy" and last[0]["time"] > since
                and last[0]["policy"] == top["policy"]
                and {f["name"] for f in top["flows"]} <= set(self.meters()))

    # -- workloads ------------------------------------------------------------------------
    def submit_fork_join(self, name: str, rate: float = 300, tp: str = "TP1",
                         timeout_s: int = 30, max_pending: int | None = FORK_JOIN_PENDING
                         ) -> dict[str, Any]:
        """001's fork-join, acking on, failed tuples replayed, placed as ``tp``; with
        ``max_pending``, at most that many un-acked tuples per spout task (Storm's
        ``topology.max.spout.pending``: a rate the links cannot carry then queues at the
        spout, not in the workers, and tuples do not time out)."""
        ips = (self.tb.ip("w1"), self.tb.ip("w2"))
        limit = {} if max_pending is None else {"topology.max.spout.pending": max_pending}
        self.cluster.submit(self.cluster.jar, fork_join()[0].main, name, {
            "bench.rate": rate, "bench.replay": 1, "topology.message.timeout.secs": timeout_s,
            "streamband.placement": fork_join_placement(tp, ips), **limit})
        return self.cluster.wait_running(name)

    # -- failures -------------------------------------------------------------------------
    def silence_profiler(self, on: bool) -> None:
        """Drop (or stop dropping) the workers' datagrams to the profiler endpoint, on
        every switch (an OpenFlow rule above the controller's)."""
        for s in self.tb.topo.switches:
            br = self.tb.switch_name[s]
            if on:
                _run(["ovs-ofctl", "-O", "OpenFlow13", "add-flow", br,
                      f"table=0,priority=300,udp,tp_dst={PROFILER_PORT},actions=drop"])
            else:
                _run(["ovs-ofctl", "-O", "OpenFlow13", "del-flows", br,
                      f"table=0,udp,tp_dst={PROFILER_PORT}"])

    def link(self, host: str, up: bool) -> None:
        """Take ``host``'s link (its switch-side interface) down or up."""
        _run(["ip", "link", "set", self.tb.switch_port(host), "up" if up else "down"])

    def storm_processes(self, role: str, host: str | None = None) -> list[int]:
        """Pids of the cluster's ``role`` processes (worker, supervisor, ...), those in
        ``host``'s network namespace when given."""
        from streamband.storm.cluster import usage

        pids = [u["pid"] for u in usage(str(self.cluster.work)) if u["role"] == role]
        if host is None:
            return pids
        ns = _netns(int(self.tb.state()["hosts"][host]["pid"]))
        return [p for p in pids if _netns(p) == ns]

    def restart_supervisor(self, host: str) -> None:
        w = next(w for w in self.cluster.spec.workers if w.name == host)
        self.cluster._spawn(f"supervisor-{w.name}", w, self.cluster.java(
            w, "org.apache.storm.daemon.supervisor.Supervisor", heap_mb=192))


def _netns(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return ""


@contextlib.contextmanager
def stage(work: Path, link_mbps: float = 20.0) -> Iterator[Stage]:
    """A star of master + w1 + w2 at ``link_mbps``, the controller's API on the
    management link, Storm up; everything stopped and checked gone on exit."""
    clean()
    tokens = {"STREAMBAND_API_TOKEN": secrets.token_urlsafe(16),
              "STREAMBAND_MANAGE_TOKEN": secrets.token_urlsafe(16)}
    saved = {k: os.environ.get(k) for k in tokens}
    os.environ.update(tokens)  # the controller and every client of it read the token here
    link = ManagementLink()
    tb: Testbed | None = None
    cluster: StormCluster | None = None
    st: Stage | None = None
    try:
        link.create()
        spec = load_spec({"topology": "star", "hosts": 2, "master": True,
                          "link_mbps": link_mbps, "api": f"{LOCAL}:{API_PORT}"})
        tb = Testbed(spec, log_dir=work / "testbed")
        tb.start()
        link.attach(int(tb.state()["hosts"]["master"]["pid"]))
        master = tb.ip("master")
        reporter = [{"class": "streamband.storm.FlowReporter", "report.period": 1,
                     "report.period.units": "SECONDS", "manager": f"{master}:{PROFILER_PORT}"}]
        cspec = testbed_spec(tb.state(), work / "cluster")
        cspec.extra_conf = {"topology.metrics.reporters": reporter,
                            "streamband.manager": f"{master}:{PROFILER_PORT}", **FAST_FAILOVER}
        cluster = StormCluster(cspec).start()
        st = Stage(tb, cluster, work, tokens)
        yield st
    finally:
        if st is not None:
            st.stop_manager()
            with contextlib.suppress(Exception):
                st.silence_profiler(False)
        tag = str(cluster.work) if cluster else None
        if cluster:
            cluster.stop()
        if tb:
            tb.stop()
        link.remove()
        clean()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        left = leftovers() + ([f"storm process {p}" for p in tagged_processes(tag)]
                              if tag else [])
        if left:
            raise RuntimeError(f"left behind: {json.dumps(left)}")
