"""The Storm profiler (000 §V-A2): the 5-metric flow state of 000 §IV-A1 for every
managed flow (a directed worker pair, :mod:`streamband.storm.flows`), from the workers'
own reports (``FlowReporter`` in ``storm/``, via the collector's snapshot,
:mod:`streamband.loop.reports`) combined with the kernel's view of each connection
(:mod:`streamband.loop.sockets`).

Storm counts task messages, not bytes. Conversions, per flow and interval:

- bytes per message ``b``: the bytes written to the flow's socket (the kernel's
  cumulative ``bytes_acked`` plus its send queue) over Storm's cumulative ``sent``
  messages of that connection (Netty counts a message once written to the socket; both
  count from the connection's start); before the first sample, the caller's hint;
- ``V_f`` (sent): the kernel's ``bytes_acked`` growth; without a socket, the growth of
  ``sent`` messages times ``b``;
- ``L^s_f`` (sender backlog): the socket's send queue (bytes, kernel) plus ``b`` times
  Netty's pending messages and the flow's share of the worker's transfer queue (shared
  by all the worker's destinations, split by the messages each has sent); with
  ``input_queue`` (off by default), also ``b`` times the flow's share of the sending
  worker's receive queues: once Netty's buffer passes its high watermark the executor
  blocks and the flow's backlog waits there as input tuples, one output tuple each. Off,
  because with a bounded spout (``topology.max.spout.pending``) those queues hold the
  in-flight window wherever the slow branch starts, tuples that came over no metered
  link, and Algorithm 1 then starves the other flow of 001's fork-join; plus, for a
  flow out of a Kafka spout's worker, ``b`` times the messages it will carry for the
  records its topic holds unread (:mod:`streamband.loop.source_backlog`);
- ``L^r_f`` (receiver backlog): ``b`` times the receive-queue population of the
  receiving worker's executors, split among the flows into that worker by their
  messages in the interval (one receive queue per executor mixes all its inputs);
- ``event_s``, for a flow into a join's own store: the event time the store has received
  of the flow's sending tasks; ``rho_event``: the bytes the flow carried per second that
  advanced (:mod:`streamband.loop.event_pace`).

:class:`ClusterProfiler` is the same profiler for a cluster known only by addresses
(``streamband manage``): no kernel to ask, the bytes counted by each flow's rule on its
switch.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from streamband.alloc.base import FlowState
from streamband.loop.engine import Counters, SwitchMeasured
from streamband.loop.event_pace import EventPace, nulls
from streamband.loop.reports import read_snapshot, worker_reports
from streamband.loop.sockets import HostSockets, SocketReader, TcpSocket, tcp_sockets
from streamband.loop.source_backlog import SourceBacklog
from streamband.storm.flows import FlowMapping, WorkerPair, connection


def host_reader(netns: dict[str, int | None]) -> SocketReader:
    """Reads a host's sockets with ``ss`` in its namespace (``netns``: ip -> pid)."""
    return lambda ip, processes=True: tcp_sockets(netns.get(ip), processes)


def bytes_per_message(last: np.ndarray, written: np.ndarray, msgs: np.ndarray,
                      moved: np.ndarray) -> np.ndarray:
    """Each flow's bytes per message: the bytes written to its socket (acknowledged plus
    queued) over the messages its worker counts sent (``msgs``, cumulative), taken where
    that count ``moved`` in this report or none is known yet; elsewhere the ``last``.
    Storm's Netty client writes in bursts, and a socket read just after a burst whose count
    the worker has not reported yet spreads the burst's bytes over the messages before
    it: every queued message looked that much larger, and the sender backlog of eq. (3),
    and the caps with it, jumped at each burst.

    Examples
    --------
    A burst of 10 messages of 30 bytes written, its count reported a step later.

    >>> last, msgs = np.array([30.0]), np.array([100.0])
    >>> bytes_per_message(last, np.array([3300.0]), msgs, np.array([0.0])).tolist()
    [30.0]
    >>> bytes_per_message(last, np.array([3300.0]), msgs + 10, np.array([10.0])).tolist()
    [30.0]
    >>> bytes_per_message(np.array([0.0]), np.array([3300.0]), msgs, np.array([0.0])).tolist()
    [33.0]
    """
    known = (written > 0) & (msgs > 0) & ((moved > 0) | (last <= 0))
    return np.where(known, np.divide(written, msgs, out=np.zeros_like(written),
                                     where=msgs > 0), last)


class StormProfiler:
    """Flow ``i`` is ``pairs[i]``; ``hint_bytes[i]`` is its bytes per message until the
    kernel has measured it. Same interface as the harness profiler."""

    def __init__(self, snapshot: Path, topology: str, pairs: list[WorkerPair],
                 sockets: SocketReader | None = None,
                 hint_bytes: list[float] | None = None, input_queue: bool = False) -> None:
        self.snapshot_path = Path(snapshot)
        self.topology = topology
        self.pairs = pairs
        self.sockets = sockets
        self.input_queue = input_queue
        n = len(pairs)
        self.bpm = np.asarray(hint_bytes if hint_bytes is not None else np.zeros(n), float)
        self._msgs = np.zeros(n)
        self._acked = np.zeros(n)
        self._conn: list[tuple[Any, ...] | None] = [None] * n
        self._ls = np.zeros(n)
        self._lr = np.zeros(n)
        self._source = SourceBacklog(n)
        self._pace = EventPace(n)
        self.samples = 0
        self.last: dict[str, Any] | None = None
        #: seconds the last flow state covers (None before the second call)
        self.interval_s: float | None = None
        self._t: float | None = None
        self.flow_state()  # the baseline: the first interval starts now

    def _kernel(self) -> list[TcpSocket | None]:
        """Each pair's sender-side socket: found by the 4-tuple it had at the last read,
        which needs no process list; a pair seen for the first time or reconnected is
        found among its host's sockets by the worker that holds it (``ss -p``)."""
        if self.sockets is None:
            return [None] * len(self.pairs)
        hosts = HostSockets(self.sockets)
        remote = [i for i, p in enumerate(self.pairs) if p.remote]
        hosts.prefetch((self.pairs[i].src.host, self._conn[i] is None) for i in remote)
        by_tuple: dict[str, dict[tuple[Any, ...], TcpSocket]] = {}
        out: list[TcpSocket | None] = [None] * len(self.pairs)
        for i in remote:
            host, known = self.pairs[i].src.host, self._conn[i]
            if known is not None:
                if host not in by_tuple:
                    by_tuple[host] = {x.four_tuple: x for x in hosts(host, False)}
                out[i] = by_tuple[host].get(known)
        lost = [i for i in remote if out[i] is None]
        hosts.prefetch((self.pairs[i].src.host, True) for i in lost)
        for i in lost:
            out[i] = connection(self.pairs[i], hosts(self.pairs[i].src.host, True))
        return out

    def flow_state(self) -> FlowState:
        t = time.monotonic()
        self.interval_s = t - self._t if self._t is not None else None
        self._t = t
        snap = read_snapshot(self.snapshot_path)
        reports = worker_reports(snap, self.topology)
        kernel = self._kernel()
        n = len(self.pairs)
        msgs, pending = np.zeros(n), np.zeros(n)
        for i, p in enumerate(self.pairs):
            c = reports.get((p.src.host, p.src.port), {}).get("clients", {}).get(
                f"{p.dst.host}:{p.dst.port}", {})
            msgs[i], pending[i] = c.get("sent", 0), c.get("pending", 0)
        d_msgs = np.where(msgs >= self._msgs, msgs - self._msgs, msgs)  # a reconnect restarts
        acked = np.array([s.bytes_acked if s else 0.0 for s in kernel], float)
        # Storm counts a message sent once Netty wrote it to the socket
        written = np.array([s.bytes_acked + s.send_q if s else 0.0 for s in kernel], float)
        self.bpm = bytes_per_message(self.bpm, written, msgs, d_msgs)
        same = [s is not None and s.four_tuple == self._conn[i] for i, s in enumerate(kernel)]
        d_bytes = np.where(same, np.maximum(acked - self._acked, 0.0), d_msgs * self.bpm)
        # the sender worker's transfer queue, split among its destinations by messages
        xfer = np.zeros(n)
        for i, p in enumerate(self.pairs):
            rep = reports.get((p.src.host, p.src.port))
            if not rep:
                continue
            tot = sum(max(c.get("sent", 0), 0) for c in rep.get("clients", {}).values())
            share = msgs[i] / tot if tot else 1.0 / max(len(rep.get("clients", {})), 1)
            queued = rep.get("transfer_queue", 0)
            if self.input_queue:
                queued += sum(v for k, v in rep.get("receive", {}).items()
                              if not k.startswith("__"))
            xfer[i] = queued * share
        send_q = np.array([s.send_q if s else 0.0 for s in kernel], float)
        ls = send_q + self.bpm * (pending + xfer)
        # the receiving worker's receive queues, split among the flows into it
        lr = np.zeros(n)
        into: dict[tuple[str, int], list[int]] = {}
        for i, p in enumerate(self.pairs):
            into.setdefault((p.dst.host, p.dst.port), []).append(i)
        for w, idx in into.items():
            rep = reports.get(w)
            if not rep:
                continue
            pop = sum(v for k, v in rep.get("receive", {}).items() if not k.startswith("__"))
            weights = d_msgs[idx]
            weights = weights / weights.sum() if weights.sum() > 0 else np.full(len(idx),
                                                                                1 / len(idx))
            lr[idx] = pop * weights * self.bpm[idx]
            # what waits in a join's own store, per input: problem (4)'s receiver backlog
            # of the flows of that input (000 §IV-A1), split among them by messages
            for part, share in _store_shares(rep, [self.pairs[i] for i in idx],
                                             weights).items():
                lr[idx[part]] += share * self.bpm[idx[part]]
        lag, lag_bytes, emitted = _source_lag(reports, self.pairs)
        ls = ls + self._source.carried_for(np.asarray(lag), np.asarray(emitted), d_msgs) * self.bpm
        ev = _store_event_times(reports, self.pairs)
        state = FlowState(ls0=self._ls, ls1=ls, lr0=self._lr, lr1=lr, sent=d_bytes,
                          **self._pace.fields(d_bytes, ev))
        self._msgs, self._acked, self._ls, self._lr = msgs, acked, ls, lr
        self._conn = [s.four_tuple if s else None for s in kernel]
        self.samples += 1
        self.last = {"sent": d_bytes.tolist(), "msgs_total": msgs.tolist(), "ls": ls.tolist(),
                     "lr": lr.tolist(), "msgs": d_msgs.tolist(), "bytes_per_msg": self.bpm.tolist(),
                     "report_age_s": _age(snap, reports, self.pairs),
                     "interval_s": self.interval_s, "source_lag": lag,
                     "source_lag_bytes": lag_bytes, "event_s": nulls(ev),
                     "rho_event": nulls(self._pace.rho), **kernel_view(kernel)}
        return state


def _store_shares(rep: dict[str, Any], pairs: list[WorkerPair], weights: np.ndarray
                  ) -> dict[int, float]:
    """Tuples waiting in the receiving worker's join stores (report ``stores``: per join
    task, per input, ``tuples``) for each of ``pairs`` (the flows into that worker, by
    position): an input is a sending component (``trucks``) or task (``count:7``); the
    tuples of an input are split among its flows by ``weights`` (their messages)."""
    out: dict[int, float] = {}
    for store in (rep.get("stores") or {}).values():
        inputs = (store or {}).get("inputs") or {}
        for key, waiting in inputs.items():
            tuples = float((waiting or {}).get("tuples") or 0.0)
            if tuples <= 0:
                continue
            mine = [k for k, p in enumerate(pairs) if _feeds(p, key)]
            if not mine:
                continue
            w = weights[mine]
            w = w / w.sum() if w.sum() > 0 else np.full(len(mine), 1.0 / len(mine))
            for k, s in zip(mine, w, strict=True):
                out[k] = out.get(k, 0.0) + tuples * float(s)
    return out


def _feeds(pair: WorkerPair, key: str) -> bool:
    """Whether ``pair`` carries the store input ``key``: a sending component
    (``trucks``) or one of its tasks (``count:7``)."""
    comp, _, task = str(key).partition(":")
    return pair.src_component == comp and (
        not task or (task.isdigit() and int(task) in pair.src_tasks))


def _store_event_times(reports: dict[tuple[str, int], dict[str, Any]],
                       pairs: list[WorkerPair]) -> np.ndarray:
    """Per flow, the event time (s) the receiving worker's join stores have received of
    the flow's sending tasks (report ``stores``: per join task, per input, ``tasks``: each
    sending task's latest event time, ms), the oldest of them; where a store reports no
    tasks, its input's ``watermark_ms``; NaN where the flow feeds no store, or none has
    reported."""
    out = np.full(len(pairs), np.nan)
    for i, p in enumerate(pairs):
        rep = reports.get((p.dst.host, p.dst.port)) or {}
        for store in (rep.get("stores") or {}).values():
            for key, v in ((store or {}).get("inputs") or {}).items():
                if not _feeds(p, key):
                    continue
                tasks = (v or {}).get("tasks") or {}
                mine = [tasks[str(t)] for t in p.src_tasks if tasks.get(str(t)) is not None]
                wm = min(mine) if mine else (v or {}).get("watermark_ms")
                if wm is not None:
                    out[i] = np.fmin(out[i], float(wm) / 1e3)
    return out


def _source_lag(reports: dict[tuple[str, int], dict[str, Any]], pairs: list[WorkerPair]
                ) -> tuple[list[float], list[float], list[float]]:
    """Per flow, the backlog of the Kafka spouts of its sending worker in their topics
    (report ``sources``: per spout task, per topic/partition, ``lag`` records and
    ``lag_bytes``): what the flow's source has yet to read; and the offsets the spouts
    have emitted up to (``next``, summed), whose growth counts the records they emitted."""
    records, size, emitted = [], [], []
    for p in pairs:
        rep = reports.get((p.src.host, p.src.port)) or {}
        r = b_ = e = 0.0
        for parts in (rep.get("sources") or {}).values():
            for tp in (parts or {}).values():
                r += float((tp or {}).get("lag") or 0.0)
                b_ += float((tp or {}).get("lag_bytes") or 0.0)
                e += float((tp or {}).get("next") or 0.0)
        records.append(r)
        size.append(b_)
        emitted.append(e)
    return records, size, emitted


def kernel_view(kernel: list[TcpSocket | None]) -> dict[str, list[Any]]:
    """Per flow, what its sender's socket shows of where its backlog waits (None where
    the flow has no socket): smoothed and minimum RTT (ms), congestion window
    (segments), segments retransmitted since the connection began
    (:mod:`streamband.loop.sockets`)."""
    return {"rtt_ms": [s.rtt_ms if s else None for s in kernel],
            "min_rtt_ms": [s.min_rtt_ms if s else None for s in kernel],
            "cwnd": [s.cwnd if s else None for s in kernel],
            "retrans": [s.retrans if s else None for s in kernel]}


def _age(snap: dict[str, Any], reports: dict[tuple[str, int], dict[str, Any]],
         pairs: list[WorkerPair]) -> float | None:
    """Seconds since the oldest sender report the state used was received."""
    t = [reports[(p.src.host, p.src.port)].get("recv", 0.0) for p in pairs
         if (p.src.host, p.src.port) in reports]
    return float(snap.get("time", 0.0) - min(t)) if t else None


class ClusterProfiler(SwitchMeasured):
    """The 5-metric tuple of every network flow of one topology (000 §IV-A1): the
    worker pairs' states from :class:`StormProfiler` (no socket view: bytes from messages
    times bytes per message) summed per flow; the bytes sent, and from them the bytes per
    message, measured by each flow's counting rule on its switch (``counters()``: the
    controller's cumulative bytes per flow key)."""

    def __init__(self, snapshot: Path, topology_id: str, mapping: FlowMapping,
                 counters: Counters) -> None:
        self.storm = StormProfiler(snapshot, topology_id, mapping.pairs,
                                   hint_bytes=mapping.bytes_hint)
        super().__init__(self.storm, mapping, counters)

    def measured(self, idx: list[int], sent: float) -> None:
        msgs = np.asarray(self.storm.last["msgs"], float) if self.storm.last else np.zeros(
            len(self.mapping.pairs))
        d_msgs = float(msgs[idx].sum())
        if d_msgs > 0 and sent > 0:
            self.storm.bpm[idx] = 0.5 * self.storm.bpm[idx] + 0.5 * sent / d_msgs

    def extra(self) -> dict[str, Any]:
        return {"bytes_per_msg": self.storm.bpm.tolist()}
