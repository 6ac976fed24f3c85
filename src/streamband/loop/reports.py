"""The manager's end of the application profiler (000 §V-A2), engine-neutral: receives
the engines' datagrams (Storm's ``FlowReporter`` and benchmark tasks in ``storm/``,
Flink's reporter plug-in in ``flink/``), checks each, and keeps the latest of each
reporting thing, written as one JSON snapshot (atomically) that the engines' profilers
read (:mod:`streamband.storm.profiler`, :mod:`streamband.flink.profiler`); and the
readers of that snapshot (a topology's or job's flow reports, its sources' and sinks'
totals, its sinks' latency percentiles). One receiver (:class:`ProfileReceiver`) for
the testbed's runs and the ``streamband manage`` service.

``python -m streamband.loop.reports --listen HOST:PORT --out FILE [--every S]``
"""

from __future__ import annotations

import argparse
import json
import math
import os
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from streamband.alloc.base import ABSURD
from streamband.errors import PreconditionError
from streamband.loop.report_format import shape_error


def report_key(rec: dict[str, Any]) -> str:
    """One slot per reporting thing: a worker (flow reports) or a task (spout, sink)."""
    if rec.get("type") == "flow":
        return f"{rec.get('topology')}|{rec.get('host')}:{rec.get('port')}"
    return f"{rec.get('topology')}|{rec.get('component')}:{rec.get('task')}"


#: a report nests a few levels (a worker's clients and their counters); deeper is garbage
MAX_DEPTH = 8
#: a report's clock ``t`` (seconds since the epoch) may run ahead of this receiver's by at
#: most a day: a report from further ahead would make every later one of its sender stale
AHEAD_S = 86_400.0


#: the snapshot's own keys beside one map per report type: a report of such a type would
#: overwrite them (a dict for the snapshot's clock stops every profiler reading it)
SNAPSHOT_KEYS = frozenset({"time", "received"})


def parse_report(data: bytes) -> Any:
    """A datagram's JSON, or None when it is not JSON this receiver can read (not UTF-8,
    not JSON, an integer past Python's conversion limit, nested past the parser's depth)."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError included
        return None


def check_report(rec: Any, now: float | None = None) -> str | None:
    """Why a report is garbage, or None when every number in it is a finite count within
    reason: ``malformed`` (not a mapping with a string ``type`` and ``topology``, a
    ``type`` named like one of the snapshot's own keys (:data:`SNAPSHOT_KEYS`), nested
    more than :data:`MAX_DEPTH` levels, a clock ``t`` that is not a number, a shape its
    readers cannot walk: :func:`~streamband.loop.report_format.shape_error`),
    ``not_finite``, ``negative``, ``absurd`` (a value past :data:`ABSURD`, or a clock ``t``
    more than :data:`AHEAD_S` ahead of ``now``)."""
    if not isinstance(rec, dict) or not isinstance(rec.get("type"), str) \
            or not isinstance(rec.get("topology"), str) or rec["type"] in SNAPSHOT_KEYS:
        return "malformed"
    t = rec.get("t", 0.0)
    if isinstance(t, bool) or not isinstance(t, int | float):
        return "malformed"
    bad: list[str] = []

    def walk(v: Any, key: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            bad.append("malformed")
        elif isinstance(v, bool):
            return
        elif isinstance(v, int | float):
            if isinstance(v, float) and not math.isfinite(v):
                bad.append("not_finite")
            elif abs(v) > ABSURD:  # before a float conversion, which a long int overflows
                bad.append("absurd")
            elif v < 0 and key != "port":  # a worker without a slot reports port -1
                bad.append("negative")
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(x, str(k), depth + 1)
        elif isinstance(v, list):
            for x in v:
                walk(x, key, depth + 1)

    walk(rec, "", 0)
    if not bad and now is not None and t > now + AHEAD_S:
        bad.append("absurd")
    if not bad and shape_error(rec) is not None:
        bad.append("malformed")
    return bad[0] if bad else None


#: the fields of a task's report that are not counters from the task's start: gauges and
#: bookkeeping, taken as reported
NOT_COUNTERS = frozenset({"t", "recv", "task", "port", "pending"})


def _counters(rec: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in rec.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and k not in NOT_COUNTERS}


class CounterCarry:
    """A task's counters across its restarts (a worker killed and launched again reports
    from zero): a counter that goes down marks a restart, and everything the task had
    counted before it is carried into every later report, so the topology's totals only
    grow. Maxima (``*_max_ms``) carry their maximum. A report older (by the task's own
    clock ``t``) than the last one taken is stale (a datagram overtaken): None."""

    def __init__(self) -> None:
        self.last: dict[str, dict[str, float]] = {}  # key -> the task's last raw counters
        self.base: dict[str, dict[str, float]] = {}  # key -> carried from earlier lives
        self.t: dict[str, float] = {}
        self.restarts = 0

    def apply(self, key: str, rec: dict[str, Any]) -> dict[str, Any] | None:
        t = float(rec.get("t", 0.0))
        if t < self.t.get(key, 0.0):
            return None
        self.t[key] = t
        now = _counters(rec)
        prev = self.last.get(key)
        base = self.base.setdefault(key, {})
        if prev is not None and any(now.get(k, 0.0) < v for k, v in prev.items()
                                    if not k.endswith("_max_ms")):
            self.restarts += 1
            for k, v in prev.items():
                base[k] = max(base.get(k, 0.0), v) if k.endswith("_max_ms") \
                    else base.get(k, 0.0) + v
        self.last[key] = now
        if not base:
            return rec
        out = dict(rec)
        for k, v in base.items():
            out[k] = max(v, now.get(k, 0.0)) if k.endswith("_max_ms") else v + now.get(k, 0.0)
        return out

    def forget(self, keys: list[str]) -> None:
        for k in keys:
            self.last.pop(k, None)
            self.base.pop(k, None)
            self.t.pop(k, None)


class ProfileReceiver:
    """Receives the workers' and tasks' datagrams on ``listen`` (UDP) and keeps the latest
    of each reporting thing; :meth:`write` puts them where
    :class:`~streamband.storm.profiler.StormProfiler` reads them. A malformed, non-finite,
    negative or absurd datagram is counted in :attr:`rejected` by reason
    (:func:`check_report`), never kept. A task's counters survive its worker's restart
    (:class:`CounterCarry`). ``what`` names the endpoint in errors (the config's field)."""

    def __init__(self, listen: str, snapshot: Path, what: str = "profiler") -> None:
        host, _, port = listen.rpartition(":")
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self.sock.bind((host, int(port)))
        except OSError as exc:
            self.sock.close()
            raise PreconditionError(f"{what}: cannot listen on {listen} (UDP): "
                                    f"{exc.strerror}") from None
        self.sock.settimeout(0.2)
        self.snapshot = snapshot
        self.latest: dict[str, dict[str, dict[str, Any]]] = {"flow": {}, "spout": {}, "sink": {}}
        self.received = 0
        self.rejected: Counter[str] = Counter()
        self.last_flow: dict[str, float] = {}  # topology id -> time of its newest flow report
        self.carry = CounterCarry()
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="profiler", daemon=True)

    def start(self) -> ProfileReceiver:
        self.thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data, _ = self.sock.recvfrom(65536)
            except (TimeoutError, OSError):
                continue
            try:
                self.take(data)
            except Exception:  # a datagram must never stop the receiver: counted, dropped
                with self.lock:
                    self.rejected["malformed"] += 1

    def take(self, data: bytes) -> str | None:
        """Keep one datagram; returns why it was rejected, or None."""
        rec = parse_report(data)
        why = check_report(rec, time.time())
        with self.lock:
            if why:
                self.rejected[why] += 1
                return why
            now = time.time()
            rec["recv"] = now
            key = report_key(rec)
            if rec["type"] in ("spout", "sink"):
                carried = self.carry.apply(key, rec)
                if carried is None:
                    return None
                rec = carried
            self.latest.setdefault(str(rec["type"]), {})[key] = rec
            self.received += 1
            if rec["type"] == "flow":
                self.last_flow[rec["topology"]] = now
        return None

    def view(self) -> dict[str, Any]:
        with self.lock:
            return {"time": time.time(), "received": self.received,
                    **{k: dict(v) for k, v in self.latest.items()}}

    def write(self) -> dict[str, Any]:
        """Write the snapshot (atomically) and return it."""
        snap = self.view()
        tmp = self.snapshot.with_suffix(".tmp")
        tmp.write_text(json.dumps(snap))
        os.replace(tmp, self.snapshot)
        return snap

    def reporters(self, topology_id: str) -> list[dict[str, Any]]:
        """Who reports the flows of ``topology_id`` (a Storm worker, a Flink TaskManager:
        ``from``, its ``HOST:PORT``, and ``tm``, a TaskManager's name), the clock ``t``
        of its latest report and when it arrived (``recv``, this receiver's clock)."""
        with self.lock:
            recs = [r for r in self.latest.get("flow", {}).values()
                    if r.get("topology") == topology_id]
        return sorted(({"from": f"{r.get('host')}:{r.get('port')}", "tm": r.get("tm"),
                        "t": r.get("t"), "recv": r.get("recv")} for r in recs),
                      key=lambda r: r["from"])

    def forget(self, topology_id: str) -> None:
        """Drop a killed topology's reports."""
        with self.lock:
            for kind in self.latest.values():
                gone = [k for k, r in kind.items() if r.get("topology") == topology_id]
                for k in gone:
                    del kind[k]
                self.carry.forget(gone)
            self.last_flow.pop(topology_id, None)

    def stop(self) -> None:
        self._stop.set()
        if self.thread.is_alive():
            self.thread.join(2)
        self.sock.close()



# -- reading the snapshot ---------------------------------------------------------------
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


def store_totals(stores: Iterable[dict[str, Any] | None]) -> dict[str, dict[str, float]]:
    """What waits in a job's joins' own stores (problem (4)'s receiver backlog, 000 §IV-A),
    from the stores its reports carry (Storm's ``JoinStore``, Flink's ``streamband-store``
    gauge, one format): per join input summed over the stores ``tuples`` and ``bytes``,
    the largest ``lag_ms``; and ``forced``, tuples let out early past a store's bound.
    Empty when no store reported.

    Examples
    --------
    >>> a = {"inputs": {"trucks": {"tuples": 3, "bytes": 300, "lag_ms": 5}}, "forced": 1}
    >>> b = {"inputs": {"trucks": {"tuples": 2, "bytes": 200, "lag_ms": 9}}}
    >>> store_totals([a, b, None])["trucks"]
    {'tuples': 5.0, 'bytes': 500.0, 'lag_ms': 9.0}
    >>> store_totals([a, b])["forced"], store_totals([])
    ({'tuples': 1.0}, {})
    """
    out: dict[str, dict[str, float]] = {}
    forced = 0.0
    for store in stores:
        forced += float((store or {}).get("forced") or 0.0)
        for name, v in ((store or {}).get("inputs") or {}).items():
            o = out.setdefault(name, {"tuples": 0.0, "bytes": 0.0, "lag_ms": 0.0})
            o["tuples"] += float((v or {}).get("tuples") or 0.0)
            o["bytes"] += float((v or {}).get("bytes") or 0.0)
            o["lag_ms"] = max(o["lag_ms"], float((v or {}).get("lag_ms") or 0.0))
    return {**out, "forced": {"tuples": forced}} if out else {}


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


def throughput(before: dict[str, float], after: dict[str, float], seconds: float
               ) -> tuple[float | None, float | None]:
    """Tuples per second at the sinks and their mean event-time latency (s) between two
    :func:`app_totals` readings (None: no sink reports)."""
    if "sink.count" not in after or seconds <= 0:
        return None, None
    n = after["sink.count"] - before.get("sink.count", 0.0)
    lat = after.get("sink.latency_sum_ms", 0.0) - before.get("sink.latency_sum_ms", 0.0)
    return max(n, 0.0) / seconds, (lat / n / 1e3 if n > 0 else None)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--listen", required=True)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--every", type=float, default=0.25)
    a = ap.parse_args(argv)
    rx = ProfileReceiver(a.listen, a.out).start()
    try:
        while True:
            rx.write()
            time.sleep(a.every)
    finally:
        rx.stop()


if __name__ == "__main__":
    main()
