"""One harness worker: runs the operators of a :class:`Dag` placed on its host,
one TCP connection per remote flow, and writes every half second the 5-metric
tuple of its flows (000 §IV-A1: sent bytes, sender backlog, receiver backlog) to
``RUN/stats-HOST.json``; at the end, ``RUN/result-HOST.json``.

``python -m streamband.testbed.harness.worker DAG.json HOST RUN_DIR``, started in
the host's namespace. The wire format of a tuple: id (u64), emit time (f64),
payload length (u32), payload.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import struct
import sys
import threading
import time
from pathlib import Path

from streamband.testbed.harness.dag import Dag, Edge

HEADER = struct.Struct("!QdI")
SNDBUF = 32 * 1024  # small socket buffers: backlog shows in the sender's queue
GOLDEN = 0.6180339887498949  # tid * GOLDEN mod 1 spreads tuple ids evenly over [0, 1)


class FlowCounters:
    """Per-edge counters (bytes)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent = 0
        self.ls = 0  # sender backlog
        self.lr = 0  # receiver backlog
        self.dropped = 0


class Worker:
    def __init__(self, dag: Dag, host: str, run: Path) -> None:
        self.dag, self.host, self.run = dag, host, run
        self.local = {o.name: o for o in dag.operators if o.host == host}
        self.counters = {e.id: FlowCounters() for e in dag.edges}
        self.inbox: dict[str, queue.Queue[tuple[int, int, float, int]]] = {
            n: queue.Queue() for n in self.local}
        self.sendq: dict[int, queue.Queue[tuple[int, float] | None]] = {
            e.id: queue.Queue(dag.queue_tuples) for e in dag.edges
            if e.src in self.local and dag.remote(e)}
        self.stop = threading.Event()
        self.t0 = 0.0
        self.groups = self._groups()
        self.joined: list[tuple[float, float, str]] = []  # (completion time, latency, op)
        self.join_dropped = 0
        self.emitted = 0

    # -- emission -----------------------------------------------------------------
    def _groups(self) -> dict[str, list[list[Edge]]]:
        """Per local operator, its out-edges grouped by downstream operator."""
        out: dict[str, dict[str, list[Edge]]] = {}
        for e in self.dag.edges:
            if e.src in self.local:
                out.setdefault(e.src, {}).setdefault(e.dst.rpartition("[")[0] or e.dst,
                                                    []).append(e)
        return {op: list(g.values()) for op, g in out.items()}

    @staticmethod
    def _pick(group: list[Edge], tid: int) -> list[Edge]:
        """The edges a tuple takes: all of them under ``all``, else one chosen from the
        tuple id by the shares, which sum to 1 over a group (the same choice on every
        input of a join)."""
        if group[0].grouping == "all":
            return group
        u = (tid * GOLDEN) % 1.0
        for e in group:
            u -= e.share
            if u < 0:
                return [e]
        return [group[-1]]

    def emit(self, op: str, tid: int, ts: float) -> None:
        for group in self.groups.get(op, ()):
            for e in self._pick(group, tid):
                self._send(e, tid, ts)

    def _send(self, e: Edge, tid: int, ts: float) -> None:
        c = self.counters[e.id]
        if e.id in self.sendq:
            try:
                self.sendq[e.id].put_nowait((tid, ts))
                with c.lock:
                    c.ls += e.tuple_bytes
            except queue.Full:
                with c.lock:
                    c.dropped += 1
        else:  # a local edge: no network
            with c.lock:
                c.sent += e.tuple_bytes
                c.lr += e.tuple_bytes
            self.inbox[e.dst].put((e.id, tid, ts, e.tuple_bytes))

    def source(self, name: str, rate: float) -> None:
        op = self.local[name]
        k, start = 0, time.monotonic()
        while not self.stop.is_set():
            due = start + k / rate
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            # ids interleave over the operator's instances: distinct across them
            self.emit(name, k * op.parallelism + op.index, time.time())
            self.emitted += 1
            k += 1

    def _complete(self, name: str, tid: int, ts: float) -> None:
        if self.local[name].measured:
            now = time.time()
            self.joined.append((now, now - ts, name))
        self.emit(name, tid, ts)

    def process(self, name: str, kind: str) -> None:
        op = self.local[name]
        src_op = {e.id: e.src.rpartition("[")[0] or e.src
                  for e in self.dag.edges if e.dst == name}
        inputs = set(src_op.values())
        pending: dict[int, tuple[set[str], float, float]] = {}
        latest: dict[str, float] = {}
        waiting: list[tuple[int, float]] = []  # latest mode: primary tuples before records
        last_sweep = time.monotonic()
        while not self.stop.is_set():
            try:
                eid, tid, ts, nbytes = self.inbox[name].get(timeout=0.2)
            except queue.Empty:
                continue
            c = self.counters[eid]
            with c.lock:
                c.lr -= nbytes
            if kind == "relay":
                self._complete(name, tid, ts)
                continue
            if op.mode == "latest":
                src = src_op[eid]
                if src != op.primary:
                    latest[src] = ts
                    if waiting and len(latest) == len(inputs) - 1:
                        for w in waiting:
                            self._complete(name, *w)
                        waiting.clear()
                elif len(latest) == len(inputs) - 1:
                    self._complete(name, tid, ts)
                else:
                    waiting.append((tid, ts))
                continue
            got, ts0, first = pending.get(tid, (set(), ts, time.monotonic()))
            got.add(src_op[eid])
            if got >= inputs:
                pending.pop(tid, None)
                self._complete(name, tid, ts0)
            else:
                pending[tid] = (got, ts0, first)
            if self.dag.join_timeout_s and time.monotonic() - last_sweep > 1.0:
                last_sweep = time.monotonic()
                old = [k for k, v in pending.items()
                       if last_sweep - v[2] > self.dag.join_timeout_s]
                for k in old:
                    del pending[k]
                self.join_dropped += len(old)

    # -- network ----------------------------------------------------------------------
    def sender(self, e: Edge) -> None:
        dst = self.dag.ips[self.dag.op(e.dst).host]
        sock = None
        while sock is None and not self.stop.is_set():
            try:
                sock = socket.create_connection((dst, e.port), timeout=1.0)
            except OSError:
                time.sleep(0.1)
        if sock is None:
            return
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SNDBUF)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(None)
        payload = bytes(e.tuple_bytes)
        c, q = self.counters[e.id], self.sendq[e.id]
        try:
            while not self.stop.is_set():
                item = q.get()
                if item is None:
                    break
                tid, ts = item
                sock.sendall(HEADER.pack(tid, ts, e.tuple_bytes) + payload)
                with c.lock:
                    c.ls -= e.tuple_bytes
                    c.sent += e.tuple_bytes
        except OSError:
            pass
        finally:
            sock.close()

    def receiver(self, e: Edge, server: socket.socket) -> None:
        server.settimeout(1.0)
        conn = None
        while conn is None and not self.stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
        if conn is None:
            return
        conn.settimeout(1.0)
        c = self.counters[e.id]
        buf = bytearray()
        while not self.stop.is_set():
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            while len(buf) >= HEADER.size:
                tid, ts, n = HEADER.unpack_from(buf)
                if len(buf) < HEADER.size + n:
                    break
                del buf[: HEADER.size + n]
                with c.lock:
                    c.lr += n
                self.inbox[e.dst].put((e.id, tid, ts, n))
        conn.close()

    # -- reporting --------------------------------------------------------------------
    def snapshot(self) -> dict[str, object]:
        edges: dict[str, dict[str, int]] = {}
        for e in self.dag.edges:
            c = self.counters[e.id]
            st: dict[str, int] = {}
            if e.src in self.local:
                st.update(sent=c.sent, ls=max(c.ls, 0), dropped=c.dropped)
            if e.dst in self.local:
                st.update(lr=max(c.lr, 0))
            if st:
                edges[str(e.id)] = st
        return {"t": time.time(), "host": self.host, "edges": edges}

    def write(self, name: str, data: dict[str, object]) -> None:
        tmp = self.run / f".{name}.tmp"
        tmp.write_text(json.dumps(data))
        tmp.replace(self.run / name)

    def result(self) -> dict[str, object]:
        start = self.t0 + self.dag.warmup_s
        window = [(t, lat, op) for t, lat, op in self.joined if t >= start]
        span = max(time.time() - start, 1e-9)
        lats = sorted(lat for _, lat, _ in window)
        ops: dict[str, dict[str, float | None]] = {}
        for name, o in self.local.items():
            if o.measured:
                mine = [lat for _, lat, op in window if op == name]
                ops[name] = {"completed": len(mine), "throughput_tps": len(mine) / span,
                             "latency_s": sum(mine) / len(mine) if mine else None}
        return {
            "host": self.host,
            "completed": len(window),
            "throughput_tps": len(window) / span,
            "latency_s": sum(lats) / len(lats) if lats else None,
            "latency_p50_s": lats[len(lats) // 2] if lats else None,
            "latency_p99_s": lats[int(0.99 * (len(lats) - 1))] if lats else None,
            "emitted": self.emitted,
            "dropped_tuples": sum(c.dropped for c in self.counters.values())
            + self.join_dropped,
            "measured": any(o.measured for o in self.local.values()),
            "ops": ops,
            **self.snapshot(),
        }

    def main(self) -> None:
        self.run.mkdir(parents=True, exist_ok=True)
        threads = []
        for e in self.dag.edges:
            if e.dst in self.local and self.dag.remote(e):
                srv = socket.socket()
                srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                srv.bind(("0.0.0.0", e.port))
                srv.listen(1)
                threads.append(threading.Thread(target=self.receiver, args=(e, srv)))
        self.write(f"ready-{self.host}", {"pid": os.getpid()})
        go = self.run / "go"
        while not go.exists():
            time.sleep(0.02)
        self.t0 = time.time()
        for e in self.dag.edges:
            if e.id in self.sendq:
                threads.append(threading.Thread(target=self.sender, args=(e,)))
        for o in self.local.values():
            if o.kind == "source":
                threads.append(threading.Thread(target=self.source, args=(o.name, o.rate_tps)))
            else:
                threads.append(threading.Thread(target=self.process, args=(o.name, o.kind)))
        for t in threads:
            t.daemon = True
            t.start()
        end = self.t0 + self.dag.seconds
        while time.time() < end:
            self.write(f"stats-{self.host}.json", self.snapshot())
            time.sleep(min(0.5, max(0.0, end - time.time())))
        self.write(f"result-{self.host}.json", self.result())
        self.stop.set()
        for q in self.sendq.values():
            try:
                q.put_nowait(None)
            except queue.Full:
                pass


def main(argv: list[str] | None = None) -> None:
    args = argv or sys.argv[1:]
    Worker(Dag.load(Path(args[0])), args[1], Path(args[2])).main()
    os._exit(0)  # threads blocked in sockets must not hold the process


if __name__ == "__main__":
    main()
