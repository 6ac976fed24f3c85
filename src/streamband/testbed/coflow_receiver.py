"""The receiver of :mod:`streamband.testbed.coflow` (004 §III-B): counts the bytes of
every flow and coflow it receives, decides each coflow's queue by eq. (2)-(3)
(:func:`~streamband.sim.coflow.schedulers.stream.demoted`, the simulator's rule) with
starvation mitigation, tells the senders on the flows' own connections, and writes
every flow's end, every coflow's CCT and its decisions as JSON. Its own module so that
a sender imports only the standard library."""

from __future__ import annotations

import argparse
import json
import math
import selectors
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from streamband.sim.coflow.schedulers.stream import demoted
from streamband.testbed.coflow import CHUNK, HEADER, TICK_S, load_plan, sync_t0


@dataclass
class _Conn:
    sock: socket.socket
    head: bytes = b""
    flow: int = -1


@dataclass
class Receiver:
    """Counts bytes per flow and coflow and decides each coflow's queue."""

    plan: dict[str, Any]
    out: Path
    sel: selectors.DefaultSelector = field(default_factory=selectors.DefaultSelector)
    events: list[list[float]] = field(default_factory=list)  # [t, coflow, queue]

    def __post_init__(self) -> None:
        p = self.plan
        self.t0 = time.time()  # set again by the go
        self.flows = p["flows"]
        n_c = len(p["coflows"])
        self.tau = np.array([math.inf if t is None else float(t) for t in p["tau"]])
        self.got = np.zeros(len(self.flows))
        self.end = np.full(len(self.flows), np.nan)
        self.seen = np.full(len(self.flows), np.nan)  # when its first bytes came
        self.x = np.zeros(n_c)
        self.n_seen = np.zeros(n_c)
        self.n_fin = np.zeros(n_c)
        self.q = np.zeros(n_c, np.int64)
        self.hold_until = np.full(n_c, -np.inf)
        self.last_rx = np.full(n_c, np.nan)
        self.conns: dict[int, list[_Conn]] = {c: [] for c in range(n_c)}
        self.stream = p["mode"] == "stream"
        self.buf = bytearray(CHUNK)
        self.errors: list[str] = []

    def now(self) -> float:
        return time.time() - self.t0

    def serve(self, listener: socket.socket) -> None:
        listener.setblocking(False)
        self.sel.register(listener, selectors.EVENT_READ, None)
        deadline = float(self.plan["deadline_s"])
        last_refresh = 0.0
        while not self.done() and self.now() < deadline:
            for key, _ in self.sel.select(TICK_S):
                if key.data is None:
                    self._accept(listener)
                else:
                    self._read(key.data)
            if self.stream:
                t = self.now()
                self._decide(t)
                if t - last_refresh >= float(self.plan["lease_s"]) / 3:
                    last_refresh = t
                    for c in range(len(self.q)):
                        self._tell(c)

    def done(self) -> bool:
        return bool(np.isfinite(self.end).all())

    def _accept(self, listener: socket.socket) -> None:
        try:
            s, _ = listener.accept()
        except BlockingIOError:
            return
        s.setblocking(False)
        self.sel.register(s, selectors.EVENT_READ, _Conn(s))

    def _close(self, conn: _Conn) -> None:
        self.sel.unregister(conn.sock)
        conn.sock.close()
        if conn.flow >= 0:
            c = self.flows[conn.flow]["coflow"]
            if conn in self.conns[c]:
                self.conns[c].remove(conn)

    def _read(self, conn: _Conn) -> None:
        try:
            n = conn.sock.recv_into(self.buf)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as err:
            n = 0
            self.errors.append(f"flow {conn.flow}: {err}")
        t = self.now()
        if n == 0:
            if conn.flow >= 0 and not np.isfinite(self.end[conn.flow]):
                self.errors.append(f"flow {conn.flow}: closed after {self.got[conn.flow]:.0f} "
                                   f"of {self.flows[conn.flow]['bytes']} bytes")
            self._close(conn)
            return
        data = memoryview(self.buf)[:n]
        if conn.flow < 0:
            need = HEADER.size - len(conn.head)
            conn.head += bytes(data[:need])
            data = data[need:]
            if len(conn.head) < HEADER.size:
                return
            conn.flow = HEADER.unpack(conn.head)[0]
            self.seen[conn.flow] = t
            c = self.flows[conn.flow]["coflow"]
            self.conns[c].append(conn)
            self.n_seen[c] += 1
            self.last_rx[c] = t
            self._tell(c, [conn])
        f = conn.flow
        c = self.flows[f]["coflow"]
        self.got[f] += len(data)
        self.x[c] += len(data)
        if len(data):
            self.last_rx[c] = t
        if self.got[f] >= self.flows[f]["bytes"] and not np.isfinite(self.end[f]):
            self.end[f] = t
            self.n_fin[c] += 1
            self._close(conn)  # the sender sees EOF and ends the flow

    def _decide(self, t: float) -> None:
        """eq. (2)-(3) on what this receiver observed; starvation mitigation."""
        p = self.plan
        active = self.n_seen > self.n_fin
        starving = active & (t - self.last_rx >= float(p["starve_s"]))
        raised = starving & (self.q > 0)
        self.q[raised] -= 1
        self.hold_until[starving] = t + float(p["starve_s"])
        self.last_rx[starving] = t
        q = demoted(self.q, self.x, self.n_seen, self.n_fin, 1.0, self.tau, float(p["alpha"]),
                    float(p["unit"]), free=self.hold_until <= t)
        changed = np.flatnonzero((q != self.q) | raised)
        self.q = q
        for c in changed:
            self.events.append([round(t, 4), int(c), int(q[c])])
            self._tell(int(c))

    def _tell(self, c: int, conns: list[_Conn] | None = None) -> None:
        """Send coflow ``c``'s queue to its senders, one byte per open flow."""
        if not self.stream:
            return
        msg = bytes([int(self.q[c])])
        for conn in conns if conns is not None else self.conns[c]:
            try:
                conn.sock.send(msg)
            except (BlockingIOError, InterruptedError):
                pass  # the next refresh carries it
            except OSError:
                pass  # the flow is ending

    def results(self) -> dict[str, Any]:
        arr = np.array([c["arrival"] for c in self.plan["coflows"]])
        cof = np.array([fl["coflow"] for fl in self.flows])
        ends = np.full(len(arr), -np.inf)
        np.maximum.at(ends, cof, np.nan_to_num(self.end, nan=np.inf))  # a missing flow: inf
        cct = ends - arr
        done = np.isfinite(cct)
        return {"mode": self.plan["mode"],
                "cct_s": [None if not math.isfinite(v) else round(float(v), 6) for v in cct],
                "flow_end_s": [None if not math.isfinite(v) else round(float(v), 6)
                               for v in self.end],
                "flow_seen_s": [None if not math.isfinite(v) else round(float(v), 6)
                                for v in self.seen],
                "bytes": [int(v) for v in self.got],
                "queues": self.events, "errors": self.errors[:50],
                "complete": bool(done.all())}

    def write(self) -> None:
        tmp = self.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.results()))
        tmp.replace(self.out)


def receive(plan: dict[str, Any], out: Path) -> int:
    """Listen, wait for ``t0`` (:func:`~streamband.testbed.coflow.sync_t0`), serve until
    every flow ended or the deadline, write the results; exit code 0 if every flow
    ended, 2 without a go."""
    rx = Receiver(plan, out)

    def stop(*_: object) -> None:
        rx.write()
        sys.exit(3)

    signal.signal(signal.SIGTERM, stop)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", int(plan["port"])))
    ls.listen(1024)
    t0 = sync_t0(plan, "receiver")
    if t0 is None:
        return 2
    rx.t0 = t0
    rx.serve(ls)
    rx.write()
    return 0 if rx.done() else 1


def main(argv: list[str] | None = None) -> int:
    """``python -m streamband.testbed.coflow_receiver PLAN --out OUT``."""
    ap = argparse.ArgumentParser(prog="python -m streamband.testbed.coflow_receiver")
    ap.add_argument("plan")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    return receive(load_plan(a.plan), Path(a.out))


if __name__ == "__main__":
    sys.exit(main())
