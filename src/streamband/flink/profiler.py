"""The Flink profiler (000 §V-A2): the 5-metric flow state of 000 §IV-A1 for every
TaskManager-pair flow (:mod:`streamband.flink.flows`), from the TaskManagers' own reports
(``FlowReporter`` in ``flink/``, via the receiver's snapshot) combined with the kernel's
view of each connection (:mod:`streamband.loop.sockets`).

Flink counts no bytes per channel; its reporter reads them from the network stack, per
channel (producer subpartition, consumer input channel), and the profiler sums a pair's
channels:

- ``V_f`` (sent): the growth of the kernel's ``bytes_acked`` on the producer's side of the
  pair's connection; without a socket, the growth of the bytes the producer's
  subpartitions handed to Netty;
- ``L^s_f`` (sender backlog): the socket's send queue plus what the producer's
  subpartitions hold, written but not yet handed to Netty (under credit-based flow control
  a channel's buffers wait there until the consumer announces credit); plus, for a pair
  out of a source task, the bytes it will carry for the records the task has not emitted
  yet (:func:`unread_records`; :mod:`streamband.loop.source_backlog`);
- ``L^r_f`` (receiver backlog): the bytes the consumer's input channels of the pair have
  received and the task has not yet processed, plus what waits in a join's own state for
  this input (operator gauge ``streamband-store``, per input component, split among the
  pairs of that input by the bytes each sent in the interval);
- ``event_s``, for a pair into a join whose store reports each sending subtask's latest
  event time (Trending Topics' aggregator): the oldest of its channels' senders; and
  ``rho_event``, the bytes the pair carried per second that advanced
  (:mod:`streamband.loop.event_pace`). A store that knows only its input's latest event
  time gives none: an input's subtasks on two TaskManagers are two flows, and the one
  behind is what the join waits for.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from streamband.alloc.base import FlowState
from streamband.flink.flows import TmPair, connection
from streamband.loop.event_pace import EventPace, nulls
from streamband.loop.reports import read_snapshot
from streamband.loop.sockets import HostSockets, SocketReader, TcpSocket
from streamband.loop.source_backlog import SourceBacklog


def tm_reports(snap: dict[str, Any], job: str) -> dict[str, dict[str, Any]]:
    """TaskManager id -> the latest report of its reporter for ``job``."""
    return {str(r.get("tm")): r for r in snap.get("flow", {}).values()
            if r.get("topology") == job and r.get("engine") == "flink"}


def pair_channels(pair: TmPair, reports: dict[str, dict[str, Any]]) -> dict[str, float]:
    """A pair's channels summed, from the producer's and the consumer's reports:
    ``written`` and ``handed`` (bytes, cumulative), ``queued`` (buffers at the producer),
    ``rx_bytes`` (received, not processed), ``backlog`` (buffers the producer announced),
    ``found`` (channels seen on both sides)."""
    src = (reports.get(pair.src.id) or {}).get("tasks", {})
    dst = (reports.get(pair.dst.id) or {}).get("tasks", {})
    tot = {"written": 0.0, "handed": 0.0, "queued": 0.0, "rx_bytes": 0.0, "backlog": 0.0,
           "found": 0.0}
    for ch in pair.channels:
        prod = src.get(f"{ch.src_vertex}:{ch.src_subtask}") or {}
        cons = dst.get(f"{ch.dst_vertex}:{ch.dst_subtask}") or {}
        outs = {o.get("ds"): o for o in prod.get("out", [])}
        for gate in cons.get("in", []):
            part = outs.get(gate.get("ds"))
            if part is None:
                continue
            for c in gate.get("ch", []):
                if c.get("p") != ch.src_subtask or c.get("kind") != "remote":
                    continue
                lo, hi = c.get("s") or (None, None)  # the consumed subpartitions, or unknown
                for sub in part.get("sub", [])[lo: hi + 1] if None not in (lo, hi) else []:
                    tot["written"] += _count(sub[0])
                    tot["handed"] += _count(sub[1])
                    tot["queued"] += _count(sub[2])
                tot["rx_bytes"] += _count(c.get("queued_bytes"))
                tot["backlog"] += _count(c.get("backlog"))
                tot["found"] += 1
    return tot


def unread_records(task: dict[str, Any]) -> float | None:
    """The records a source task has yet to emit: per partition the log's end offset less
    the next offset it emits (report ``kafka``, the end asked of the broker every report),
    summed, or its ``pendingRecords`` (FLIP-33) where that is more; None for a task that is
    no source.

    ``pendingRecords`` is the consumer's lag at its last fetch, and a source that
    back-pressure holds does not fetch: a source that had caught up keeps reading 0 while
    its topic grows, and eq. (3), seeing no backlog, keeps its flows at ~0. The broker's
    end less what was emitted is never less than that lag for the same partitions; the
    larger of the two is also a lower bound where a partition has emitted nothing yet
    (no position to count from).

    Examples
    --------
    >>> unread_records({"pendingRecords": 0, "kafka": {"t/0": {"lag": 300}, "t/1": {"lag": 5}}})
    305.0
    >>> unread_records({"pendingRecords": 40, "kafka": {}})
    40.0
    >>> unread_records({"numRecordsOut": 7}) is None
    True
    """
    kafka = task.get("kafka")
    if "pendingRecords" not in task and not isinstance(kafka, dict):
        return None
    lag = sum(_count((v or {}).get("lag")) for v in (kafka or {}).values()) \
        if isinstance(kafka, dict) else 0.0
    return max(lag, _count(task.get("pendingRecords")))


def _count(v: Any) -> float:
    """A reported count, or 0 where the reporter knew none (null)."""
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and v > 0 else 0.0


def source_records(pair: TmPair, reports: dict[str, dict[str, Any]]
                   ) -> tuple[float, float, str | None]:
    """Of the pair's producing tasks that are sources (:func:`unread_records` not None),
    each once: the records they have not emitted yet, the records they emitted, and where
    that backlog comes from: ``"broker"`` (every one reports ``kafka``, the broker's end
    offsets, answered for this report), ``"stale"`` (every one reports ``kafka``, some end
    an older answer: the broker was slow or away), ``"fetch"`` (some report only
    ``pendingRecords``); 0, 0, None for a pair out of no source."""
    tasks = (reports.get(pair.src.id) or {}).get("tasks", {})
    unread = emitted = 0.0
    kafka: list[Any] = []
    for key in sorted({f"{ch.src_vertex}:{ch.src_subtask}" for ch in pair.channels}):
        task = tasks.get(key) or {}
        u = unread_records(task)
        if u is not None:
            unread += u
            emitted += _count(task.get("numRecordsOut"))
            kafka.append(task.get("kafka"))
    if not kafka:
        return unread, emitted, None
    if not all(isinstance(k, dict) and k for k in kafka):
        return unread, emitted, "fetch"
    stale = any((v or {}).get("stale") for k in kafka for v in k.values())
    return unread, emitted, "stale" if stale else "broker"


def source_pending(reports: dict[str, dict[str, Any]], place: dict[str, Any]
                   ) -> dict[str, float]:
    """Per component, the records its Kafka source has not emitted yet
    (:func:`unread_records`) of its source vertex's subtasks (a vertex named ``Source:
    ...``, :func:`~streamband.flink.flows.placement`), summed; NaN while any of them
    reports none.

    Examples
    --------
    >>> place = {"vertices": {"v1": {"name": "Source: trucks-kafka", "component": "trucks",
    ...                              "parallelism": 2},
    ...                       "v2": {"name": "combine", "component": "combine",
    ...                              "parallelism": 1}}}
    >>> reports = {"tm1": {"tasks": {"v1:0": {"vertex": "v1", "pendingRecords": 40}}},
    ...            "tm2": {"tasks": {"v1:1": {"vertex": "v1", "pendingRecords": 2},
    ...                              "v2:0": {"vertex": "v2"}}}}
    >>> source_pending(reports, place)
    {'trucks': 42.0}
    >>> source_pending({"tm1": reports["tm1"]}, place)
    {'trucks': nan}
    """
    seen: dict[str, dict[int, float]] = {}
    for rep in reports.values():
        for key, task in (rep.get("tasks") or {}).items():
            vertex, _, sub = key.rpartition(":")
            unread = unread_records(task)
            if unread is not None and sub.isdigit():
                seen.setdefault(str(task.get("vertex") or vertex), {})[int(sub)] = unread
    out: dict[str, float] = {}
    for vid, v in place["vertices"].items():
        if not str(v["name"]).startswith("Source: "):
            continue
        subs = seen.get(vid, {})
        # a subtask that has not fetched yet has no gauge: the sum of the others would show
        # the topic less behind than it is
        total = sum(subs.values()) if len(subs) >= int(v["parallelism"]) else float("nan")
        out[v["component"]] = out.get(v["component"], 0.0) + total
    return out


def store_event_times(pairs: list[TmPair], reports: dict[str, dict[str, Any]]) -> np.ndarray:
    """Per pair, the event time (s) its consumer tasks' stores have received of its
    channels' producing subtasks (a store's ``inputs.INPUT.tasks``: each sending subtask's
    latest event time, ms), the oldest of them; NaN where no store reports its senders.

    Examples
    --------
    >>> from streamband.flink.flows import Channel, TaskManagerRef
    >>> tm = [TaskManagerRef(f"tm{i}", f"10.0.0.{i}", 6121) for i in range(3)]
    >>> ch = [Channel("vc", i, "vt", 0) for i in range(2)]
    >>> pairs = [TmPair(tm[i], tm[2], ("count->topk",), (ch[i],)) for i in range(2)]
    >>> store = {"inputs": {"count": {"watermark_ms": 9000, "tasks": {"0": 7000}}}}
    >>> reports = {"tm2": {"tasks": {"vt:0": {"stores": {"s": store}}}}}
    >>> store_event_times(pairs, reports).tolist()
    [7.0, nan]
    """
    out = np.full(len(pairs), np.nan)
    for i, p in enumerate(pairs):
        for ch in p.channels:
            task = ((reports.get(p.dst.id) or {}).get("tasks") or {}).get(
                f"{ch.dst_vertex}:{ch.dst_subtask}") or {}
            for store in (task.get("stores") or {}).values():
                v = ((store or {}).get("inputs") or {}).get(p.src_component) or {}
                ms = (v.get("tasks") or {}).get(str(ch.src_subtask))
                if isinstance(ms, int | float):
                    out[i] = np.fmin(out[i], float(ms) / 1e3)
    return out


def _store_waiting(rep: dict[str, Any], vertex: str, subtask: int, comp: str) -> float:
    """Bytes waiting in the stores of a consumer task for input ``comp``."""
    task = (rep.get("tasks") or {}).get(f"{vertex}:{subtask}") or {}
    out = 0.0
    for store in (task.get("stores") or {}).values():
        v = ((store or {}).get("inputs") or {}).get(comp) or {}
        out += float(v.get("bytes") or 0.0)
    return out


class FlinkProfiler:
    """Flow ``i`` is ``pairs[i]``. ``sockets`` reads a host's sockets (None: no kernel
    view), ``names`` gives the TaskManager JVMs' pids (pid -> name), so a pair's
    connection is found by the consumer JVM that holds it."""

    def __init__(self, snapshot: Path, job: str, pairs: list[TmPair],
                 sockets: SocketReader | None = None,
                 names: Callable[[], dict[int, str]] | None = None) -> None:
        self.snapshot_path = Path(snapshot)
        self.job = job
        self.pairs = pairs
        self.sockets = sockets
        self.names = names or dict
        n = len(pairs)
        self._handed = np.zeros(n)
        self._acked = np.zeros(n)
        self._conn: list[tuple[Any, ...] | None] = [None] * n
        self._ls = np.zeros(n)
        self._lr = np.zeros(n)
        self._source = SourceBacklog(n)
        self._pace = EventPace(n)
        self.samples = 0
        self.last: dict[str, Any] | None = None
        self.interval_s: float | None = None
        self._t: float | None = None
        self.flow_state()

    def kernel(self) -> list[TcpSocket | None]:
        """Each pair's producer-side socket (None: not found, or no kernel view)."""
        if self.sockets is None:
            return [None] * len(self.pairs)
        names = self.names()
        hosts = HostSockets(self.sockets)
        hosts.prefetch([(p.src.host, False) for p in self.pairs]
                       + [(p.dst.host, True) for i, p in enumerate(self.pairs)
                          if self._conn[i] is None])
        out: list[TcpSocket | None] = []
        for i, p in enumerate(self.pairs):
            known = self._conn[i]
            s = None
            if known is not None:
                s = next((x for x in hosts(p.src.host, False) if x.four_tuple == known), None)
            out.append(s)
        lost = [i for i, s in enumerate(out) if s is None]
        hosts.prefetch((self.pairs[i].dst.host, True) for i in lost)
        for i in lost:
            p = self.pairs[i]
            out[i] = connection(p, hosts(p.src.host, False), hosts(p.dst.host, True), names)
        return out

    def flow_state(self) -> FlowState:
        t = time.monotonic()
        self.interval_s = t - self._t if self._t is not None else None
        self._t = t
        snap = read_snapshot(self.snapshot_path)
        reports = tm_reports(snap, self.job)
        kernel = self.kernel()
        n = len(self.pairs)
        chans = [pair_channels(p, reports) for p in self.pairs]
        handed = np.array([c["handed"] for c in chans])
        d_handed = np.where(handed >= self._handed, handed - self._handed, handed)
        acked = np.array([s.bytes_acked if s else 0.0 for s in kernel], float)
        same = [s is not None and s.four_tuple == self._conn[i] for i, s in enumerate(kernel)]
        sent = np.where(same, np.maximum(acked - self._acked, 0.0), d_handed)
        send_q = np.array([s.send_q if s else 0.0 for s in kernel], float)
        waiting = np.array([max(c["written"] - c["handed"], 0.0) for c in chans])
        srcs = [source_records(p, reports) for p in self.pairs]
        pending = np.array([x[0] for x in srcs], float)
        emitted = np.array([x[1] for x in srcs], float)
        ls = send_q + waiting + self._source.carried_for(pending, emitted, d_handed)
        lr = np.array([c["rx_bytes"] for c in chans])
        # a join's own store, per input component, split among the pairs of that input into
        # the same consumer task by the bytes each handed over in the interval
        into: dict[tuple[str, str, int, str], list[int]] = {}
        for i, p in enumerate(self.pairs):
            for ch in p.channels:
                into.setdefault((p.dst.id, ch.dst_vertex, ch.dst_subtask, p.src_component),
                                []).append(i)
        for (tm, vertex, sub, comp), idx in into.items():
            held = _store_waiting(reports.get(tm) or {}, vertex, sub, comp)
            if held <= 0:
                continue
            idx = sorted(set(idx))
            w = d_handed[idx]
            w = w / w.sum() if w.sum() > 0 else np.full(len(idx), 1.0 / len(idx))
            lr[idx] += held * w
        wm = store_event_times(self.pairs, reports)
        state = FlowState(ls0=self._ls, ls1=ls, lr0=self._lr, lr1=lr, sent=sent,
                          **self._pace.fields(sent, wm))
        self._handed, self._acked, self._ls, self._lr = handed, acked, ls, lr
        self._conn = [s.four_tuple if s else None for s in kernel]
        self.samples += 1
        ages = [snap.get("time", 0.0) - r.get("recv", 0.0) for r in reports.values()]
        self.last = {"sent": sent.tolist(), "ls": ls.tolist(), "lr": lr.tolist(),
                     "handed": d_handed.tolist(), "waiting": waiting.tolist(),
                     "send_q": send_q.tolist(), "channels_found": [c["found"] for c in chans],
                     "sender_backlog_buffers": [c["backlog"] for c in chans],
                     "source_pending": pending.tolist(),
                     "source_from_broker": [x[2] for x in srcs],
                     "socket": [s.four_tuple if s else None for s in kernel],
                     "report_age_s": max(ages) if ages else None,
                     "interval_s": self.interval_s, "tms": sorted(reports),
                     "event_s": nulls(wm), "rho_event": nulls(self._pace.rho),
                     "n": n}
        return state


def observed_pairs(snap: dict[str, Any], job: str) -> set[tuple[str, str]]:
    """The directed (producer address:data port, consumer TaskManager) pairs the consumers'
    remote input channels of ``job`` read from, as the reports show them."""
    out = set()
    for tm, rep in tm_reports(snap, job).items():
        for task in (rep.get("tasks") or {}).values():
            for gate in task.get("in", []):
                for c in gate.get("ch", []):
                    if c.get("kind") == "remote" and c.get("from"):
                        out.add((str(c["from"]), tm))
    return out
