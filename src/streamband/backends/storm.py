"""The Storm backend's profiler adapter: the 5-metric flow state of 000 §IV-A1 for
every managed flow (a directed worker pair, :mod:`streamband.storm.flows`), from the
workers' own reports (:class:`streamband.storm` ``FlowReporter``, via the collector's
snapshot) combined with the kernel's view of each connection
(:mod:`streamband.storm.sockets`).

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
  ``input_queue``, also ``b`` times the flow's share of the sending executor's receive
  queue: once Netty's buffer passes its high watermark the executor blocks and the
  flow's backlog waits there as input tuples, one output tuple each;
- ``L^r_f`` (receiver backlog): ``b`` times the receive-queue population of the
  receiving worker's executors, split among the flows into that worker by their
  messages in the interval (one receive queue per executor mixes all its inputs).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from streamband.alloc.base import FlowState
from streamband.storm.flows import WorkerPair, connection
from streamband.storm.sockets import TcpSocket, tcp_sockets

SocketReader = Callable[[str], list[TcpSocket]]


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


def host_reader(netns: dict[str, int | None]) -> SocketReader:
    """Reads a host's sockets with ``ss`` in its namespace (``netns``: ip -> pid)."""
    return lambda ip: tcp_sockets(netns.get(ip))


class StormProfiler:
    """Flow ``i`` is ``pairs[i]``; ``hint_bytes[i]`` is its bytes per message until the
    kernel has measured it. Same interface as the harness profiler."""

    def __init__(self, snapshot: Path, topology: str, pairs: list[WorkerPair],
                 sockets: SocketReader | None = None,
                 hint_bytes: list[float] | None = None, input_queue: bool = True) -> None:
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
        self.samples = 0
        self.last: dict[str, Any] | None = None
        self.flow_state()  # the baseline: the first interval starts now

    def _kernel(self) -> list[TcpSocket | None]:
        if self.sockets is None:
            return [None] * len(self.pairs)
        by_host: dict[str, list[TcpSocket]] = {}
        out: list[TcpSocket | None] = []
        for p in self.pairs:
            if not p.remote:
                out.append(None)
                continue
            if p.src.host not in by_host:
                by_host[p.src.host] = self.sockets(p.src.host)
            out.append(connection(p, by_host[p.src.host]))
        return out

    def flow_state(self) -> FlowState:
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
        for i, s in enumerate(kernel):
            if s is not None and msgs[i] > 0 and s.bytes_acked > 0:
                # Storm counts a message sent once Netty wrote it to the socket
                self.bpm[i] = (s.bytes_acked + s.send_q) / msgs[i]
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
        state = FlowState(ls0=self._ls, ls1=ls, lr0=self._lr, lr1=lr, sent=d_bytes)
        self._msgs, self._acked, self._ls, self._lr = msgs, acked, ls, lr
        self._conn = [s.four_tuple if s else None for s in kernel]
        self.samples += 1
        self.last = {"sent": d_bytes.tolist(), "msgs_total": msgs.tolist(), "ls": ls.tolist(),
                     "lr": lr.tolist(), "msgs": d_msgs.tolist(), "bytes_per_msg": self.bpm.tolist(),
                     "report_age_s": _age(snap, reports, self.pairs)}
        return state


def _age(snap: dict[str, Any], reports: dict[tuple[str, int], dict[str, Any]],
         pairs: list[WorkerPair]) -> float | None:
    """Seconds since the oldest sender report the state used was received."""
    t = [reports[(p.src.host, p.src.port)].get("recv", 0.0) for p in pairs
         if (p.src.host, p.src.port) in reports]
    return float(snap.get("time", 0.0) - min(t)) if t else None
