"""Swift's adapters of the BwMan loop (002, :mod:`streamband.loop.bwman`): its Monitor (client logs,
sampled integrity, recovery tracker) and its two enforcers of a plan on every
storage node:

- :class:`TcPlanEnforcer`: HTB classes per service port on both ends of every
  storage host's link (002's actuator, :mod:`streamband.swift.tc`), leased by the
  shaper process;
- :class:`MeterPlanEnforcer`: OpenFlow meters set by the controller on the flows
  between the store's hosts, leased by the controller. A meter caps one flow
  rule, so a node's recovery allocation is split evenly over the rules of its
  peers (each peer's pushes to it, its pushes to each peer); meters only cap
  (a class's guaranteed rate has no meaning there).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streamband.alloc.bwman import Plan
from streamband.loop.bwman import Observation
from streamband.procs import marked_env, stop
from streamband.sdn.client import ControllerClient
from streamband.swift.cluster import SwiftCluster
from streamband.swift.failures import FailureEvent
from streamband.swift.integrity import RecoveryTracker
from streamband.swift.layout import OBJECT_PORT, RECOVERY_PORTS, Hosts
from streamband.swift.spec import PROXY, WorkloadSpec
from streamband.swift.tc import RECOVERY_CLS, USER_CLS, Port, ShaperConfig, class_bytes, write_json


class JsonTail:
    """New JSON lines of a file another process appends to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.buf = ""

    def read(self) -> list[dict[str, Any]]:
        try:
            with open(self.path) as f:
                f.seek(self.offset)
                data = f.read()
                self.offset = f.tell()
        except FileNotFoundError:
            return []
        self.buf += data
        *lines, self.buf = self.buf.split("\n")
        return [json.loads(x) for x in lines if x.strip()]


class SwiftMonitor:
    """M1 and M2 of 002 Fig. 4 for one run: the workload's log (throughput, queue),
    the dispersion monitor's log (integrity) and the recovery tracker."""

    def __init__(self, workload: WorkloadSpec, workload_log: Path, integrity_log: Path,
                 tracker: RecoveryTracker, events: list[FailureEvent],
                 data_mb: float,
                 usage: Callable[[], dict[str, float]] | None = None) -> None:
        self.workload = workload
        self.ops = JsonTail(workload_log)
        self.integ = JsonTail(integrity_log)
        self.tracker = tracker
        self.events = events
        self.data_mb = data_mb
        self.usage = usage
        self.done: list[float] = []  # completion times of served requests
        self.ticks: list[tuple[float, int, int]] = []  # (t, queue length, threads busy)
        self.integrity: list[tuple[float, float]] = []
        self._prev_missing = 0
        self._seen_events = 0

    def _ingest(self) -> None:
        for rec in self.ops.read():
            if rec["k"] == "op":
                if rec["st"] // 100 == 2:
                    self.done.append(rec["e"])
            else:
                self.ticks.append((rec["t"], rec.get("queue", 0), rec.get("busy", 0)))
        for rec in self.integ.read():
            self.integrity.append((rec["t"], rec["integrity"]))
        while self._seen_events < len(self.events):
            ev = self.events[self._seen_events]
            self.tracker.add(ev.t, ev.losses)
            self._seen_events += 1

    def observe(self, t: float, dt: float) -> Observation:
        self._ingest()
        served = sum(1 for e in self.done[-4000:] if t - dt < e <= t)
        window = [(q, b) for s, q, b in self.ticks[-200:] if t - dt < s <= t]
        backlog = float(window[-1][0]) if window else 0.0
        # the store limits the clients: every thread was inside a request at each tick
        saturated = bool(window) and all(b >= self.workload.threads for _, b in window)
        integ = next((v for s, v in reversed(self.integrity) if s <= t), 1.0)
        before = self._prev_missing
        missing = self.tracker.poll(t)
        added = sum(len(ev.losses) for ev in self.events if t - dt < ev.t <= t)
        self._prev_missing = missing
        restored = max(0, before + added - missing) * self.tracker.object_bytes
        util = self.usage() if self.usage is not None else {}
        return Observation(
            t=t, throughput_ops=served / dt,
            slo_ops=self.workload.target(t) if t <= self.workload.duration_s else 0.0,
            backlog_ops=backlog, saturated=saturated,
            integrity=integ, missing_mb=(1.0 - integ) * self.data_mb,
            recovery_mbs=restored / dt / 1e6, recovering=before > 0 and missing > 0,
            user_util=util.get("user"), recovery_util=util.get("recovery"))


def _hosts(plan: Plan | None, hosts: list[str]) -> dict[str, dict[str, list[float]]] | None:
    if plan is None:
        return None
    user_prio = 0 if plan.first == "user" else 1
    cls = {"user": [plan.user.rate_bps, plan.user.ceil_bps, user_prio],
           "recovery": [plan.recovery.rate_bps, plan.recovery.ceil_bps, 1 - user_prio]}
    return {h: cls for h in hosts}


class TcPlanEnforcer:
    """The plan as HTB classes on both ends of every storage link (002 §V-C4),
    through the shaper process, which holds the lease (``lease_s``)."""

    def __init__(self, tb: Hosts, cluster: SwiftCluster, run_dir: Path, lease_s: float,
                 link_bps: float) -> None:
        self.cluster = cluster
        self.lease_s = lease_s
        run_dir.mkdir(parents=True, exist_ok=True)
        ports = []
        for h in cluster.storage:
            node = tb.node(h)
            ports.append(Port(h, node.intfList()[0].name, link_bps, node.pid))
            ports.append(Port(h, tb.switch_port(h), link_bps, None))
        self.ports = ports
        self.plan_file, self.status_file = run_dir / "plan.json", run_dir / "shaper.json"
        self.plan_file.unlink(missing_ok=True)
        self.status_file.unlink(missing_ok=True)
        cfg = ShaperConfig([p.__dict__ for p in ports], str(self.plan_file),
                           str(self.status_file)).write(run_dir / "shaper-conf.json")
        self.log = open(run_dir / "shaper.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen([sys.executable, "-m", "streamband.swift.tc", str(cfg)],
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     env=marked_env(), start_new_session=True)
        self.seq = 0
        self.plan: Plan | None = None
        self._counts: tuple[float, dict[str, dict[str, int]]] | None = None
        self._status(0)

    def _status(self, seq: int, timeout: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = Path(self.log.name).read_text(errors="replace").strip()[-300:]
                raise RuntimeError(f"tc shaper exited ({self.proc.returncode}): {tail}")
            try:
                st = json.loads(self.status_file.read_text())
                if st["seq"] >= seq:
                    return st
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.01)
        raise RuntimeError(f"tc shaper: plan {seq} not applied after {timeout:.0f} s")

    def enforce(self, plan: Plan | None) -> None:
        self.seq += 1
        write_json(self.plan_file, {"seq": self.seq, "expires": time.time() + self.lease_s,
                                    "hosts": _hosts(plan, self.cluster.storage)})
        self._status(self.seq)
        self.plan = plan

    def utilization(self) -> dict[str, float]:
        """Per class, the busiest interface's bytes since the last call over the
        class's cap (empty without classes)."""
        if self.plan is None:  # no classes to count
            self._counts = None
            return {}
        now = time.monotonic()
        counts = {p.dev: class_bytes(p) for p in self.ports}
        last, self._counts = self._counts, (now, counts)
        if last is None:
            return {}
        span = max(1e-3, now - last[0])
        out = {}
        for name, cls, share in (("user", USER_CLS, self.plan.user),
                                 ("recovery", RECOVERY_CLS, self.plan.recovery)):
            rates = [max(0, c.get(cls, 0) - last[1].get(d, {}).get(cls, 0)) * 8 / span
                     for d, c in counts.items()]
            out[name] = max(rates) / max(share.ceil_bps, 1.0)
        return out

    def close(self) -> None:
        stop(self.proc)
        self.log.close()


class MeterPlanEnforcer:
    """The plan as OpenFlow meters on the store's flows (streamband's controller),
    leased by the controller (``lease_s``)."""

    def __init__(self, client: ControllerClient, cluster: SwiftCluster, lease_s: float,
                 link_bps: float) -> None:
        self.client = client
        self.cluster = cluster
        self.lease_s = lease_s
        self.link_bps = link_bps
        self.plan: Plan | None = None
        client.delete_meters()

    def meters(self, plan: Plan) -> list[dict[str, Any]]:
        """The meter list of ``plan`` (rate None: counted, not capped)."""
        ip = self.cluster.ip
        hosts = self.cluster.storage
        # meters cannot lend: the class first in line keeps its ceiling, the other
        # is held to its guarantee (the same as the ceiling when classes do not borrow)
        first_user = plan.first == "user"
        user_cap = plan.user.ceil_bps if first_user else plan.user.rate_bps
        rec_cap = plan.recovery.rate_bps if first_user else plan.recovery.ceil_bps
        user = None if user_cap >= self.link_bps else user_cap
        peer = (rec_cap / max(1, len(hosts) - 1) if rec_cap < self.link_bps
                else math.inf)
        out: list[dict[str, Any]] = []
        for h in hosts:
            out.append({"flow": {"src_ip": ip(PROXY), "dst_ip": ip(h), "dst_port": OBJECT_PORT},
                        "rate_bps": user})
            out.append({"flow": {"src_ip": ip(h), "dst_ip": ip(PROXY), "src_port": OBJECT_PORT},
                        "rate_bps": user})
            for g in hosts:
                if g == h:
                    continue
                for port in RECOVERY_PORTS:
                    out.append({"flow": {"src_ip": ip(h), "dst_ip": ip(g), "dst_port": port},
                                "rate_bps": peer if math.isfinite(peer) else None})
        return out

    def enforce(self, plan: Plan | None) -> None:
        self.client.put_meters([] if plan is None else self.meters(plan), self.lease_s,
                               replace=True)
        self.plan = plan

    def utilization(self) -> dict[str, float]:
        """Per class, the busiest node direction's metered rate over the cap."""
        if self.plan is None:
            return {}
        ip = {self.cluster.ip(h): h for h in self.cluster.storage}
        load: dict[tuple[str, str, str], float] = {}
        for m in self.client.meters():
            f = m["flow"]
            cls = "user" if OBJECT_PORT in (f["src_port"], f["dst_port"]) else "recovery"
            for end, way in (("src_ip", "out"), ("dst_ip", "in")):
                if f[end] in ip:
                    key = (cls, ip[f[end]], way)
                    load[key] = load.get(key, 0.0) + m["bps"]
        caps = {"user": self.plan.user.ceil_bps, "recovery": self.plan.recovery.ceil_bps}
        return {c: max((v for k, v in load.items() if k[0] == c), default=0.0)
                / max(caps[c], 1.0) for c in caps}

    def close(self) -> None:
        self.client.delete_meters()
