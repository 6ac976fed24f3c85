"""Coflows as real TCP transfers between testbed hosts, with 004's receiver-driven
priorities (§III-B "C-SJF", §IV-A's testbed): a receiver and a sender program run in
the hosts' namespaces (``python -m streamband.testbed.coflow PLAN --host H`` for a
host's senders, ``python -m streamband.testbed.coflow_receiver PLAN --out OUT``).

- Every flow of the plan is one TCP connection from its sender host to the receiver
  host; its first 4 bytes name the flow, the rest is its data. The receiver counts the
  bytes it receives; a flow ends when all its bytes arrived, a coflow when all its
  flows did (CCT: the last flow's end less the coflow's arrival, 004 §II).
- ``mode: stream``: the receiver decides each coflow's queue from what it observes —
  the bytes it received ``x``, the flows it has seen ``n`` and seen finish
  ``n_fin`` — by eq. (2)-(3) (:func:`~streamband.sim.coflow.schedulers.stream.demoted`,
  the simulator's rule, thresholds scaled with the sizes); every coflow starts in the
  highest queue and is only demoted. It tells each of the coflow's senders the new
  queue as one byte on the flow's own connection (it travels with the receiver's ACKs,
  as 004's receiver writes it into the ACK's header) and repeats it every
  ``lease_s / 3`` s. The sender marks the flow's packets with the DSCP class selector
  of that queue (``IP_TOS``); the switch port toward the receiver serves the classes
  in strict priority (:mod:`streamband.sdn.priority`: CSn -> class 7 - n). Queue q is
  class ``class_base + q``.
- Lease: a sender that has heard no decision for ``lease_s`` since the last one (the
  receiver tells a flow its queue as soon as the flow's first bytes arrive) stops
  marking (DSCP 0, plain TCP), so a crashed receiver leaves no priority behind; the
  port's classes themselves hold only under the controller's lease.
- Starvation mitigation (004 §III-D): a coflow with open flows that received nothing
  for ``starve_s`` is raised one queue and held there ``starve_s`` (the simulator's
  rule). 004 uses 10 ms, "which is TCP RTOmin"; Linux's RTOmin is 200 ms, the
  bench's default.
- ``mode: tcp``: no decision, no marking (plain TCP sharing).
- Retransmission bounds (optional, any mode): ``rto_min_us`` and ``rto_max_ms`` set
  each flow's socket's ``TCP_RTO_MIN_US`` and ``TCP_RTO_MAX_MS`` (Linux >= 6.16 / 6.15;
  the kernel takes 1000..120000 ms for the latter). 004's sender retransmits a
  starving flow's unacknowledged packets when its 10 ms timer ("TCP RTOmin") expires
  (§III-D, §IV-A); a user-space sender cannot, but these bounds make the kernel's own
  retransmission timer start at 004's 10 ms and back off to at most ``rto_max_ms``
  (Linux's defaults: 200 ms and 120 s), so a flow that lost packets in a starved class
  probes again within that bound once the class is served. With them the sender also
  sets ``TCP_USER_TIMEOUT`` to the run's deadline and ``TCP_SYNCNT`` to its most (127):
  Linux gives up on a connection after ``tcp_retries2`` (15) expiries reckoned with
  the socket's RTO bounds, about 14 s at a 1 s ceiling, and measured so (bench
  paper-004, stream-rto without them: 3 of 120 flows starved that long in a low class
  and were reset, the run never completed).
- Every sender writes each of its flows' ``TCP_INFO`` counters when the flow ends
  (:func:`tcp_stats`: retransmissions, RTO expiries and time in RTO recovery, time
  limited by the send buffer) to ``HOST.tcp.json`` in the plan's ``sync`` directory.

A sender imports only the standard library (it starts in well under a second on a
loaded machine; the receiver's NumPy and the simulator's rule load before it reports
ready). The receiver writes its results (every flow's end, every coflow's CCT, the queue
decisions with their times) as JSON to ``--out``, also when stopped by SIGTERM. Times
are seconds since the plan's ``t0`` (wall clock: the namespaces share the host's).
"""

from __future__ import annotations

import argparse
import json
import math
import selectors
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HEADER = struct.Struct("!I")  # the flow's index in the plan
TCP_RTO_MAX_MS, TCP_RTO_MIN_US = 44, 45  # <linux/tcp.h> of Linux 6.15 / 6.16
MAX_SYNCNT = 127  # <net/tcp.h> MAX_TCP_SYNCNT
CHUNK = 64 * 1024
TICK_S = 0.01  # the receiver's decision period and both loops' longest wait
#: what a plan's agents do: decide and mark queues (004's receivers) or not (plain TCP);
#: the bench's modes (:data:`streamband.experiments.paper004_testbed.MODES`) map onto these
AGENTS = ("stream", "tcp")
GO_WAIT_S = 60.0  # how long a process waits for the go (or the launcher for "ready")
START_S = 0.5  # from the go to t0


def sync_t0(plan: dict[str, Any], name: str) -> float | None:
    """``t0`` (wall clock): the plan's, or, when it has none, report ``name`` ready in
    the plan's ``sync`` directory and wait for its ``go`` file, which holds t0 (None
    after :data:`GO_WAIT_S`)."""
    if plan.get("t0") is not None:
        return float(plan["t0"])
    d = Path(plan["sync"])
    (d / f"{name}.ready").write_text("1")
    go = d / "go"
    t_end = time.monotonic() + GO_WAIT_S
    while not go.exists():
        if time.monotonic() > t_end:
            return None
        time.sleep(0.02)
    return float(go.read_text())


def launch(popen: Callable[..., subprocess.Popen[Any]], plan: dict[str, Any], rx_host: str,
           out: Path, log: Any) -> tuple[subprocess.Popen[Any], list[subprocess.Popen[Any]]]:
    """Start the receiver (on ``rx_host``, results to ``out``) and every sender of
    ``plan`` (which has no ``t0``) with ``popen(host, cmd, **kw)`` (a testbed's
    :meth:`~streamband.testbed.network.Testbed.popen`, or a plain one on loopback), wait
    until all report ready, then give them t0 = now + :data:`START_S`: no flow starts
    late because a process was slow to start. Returns the receiver and the senders.

    Raises
    ------
    RuntimeError
        If a process exits or stays silent for :data:`GO_WAIT_S` before the go (every
        process started is killed first).
    """
    sync = Path(plan["sync"])
    sync.mkdir(parents=True, exist_ok=True)
    for f in sync.iterdir():
        f.unlink()
    pf = sync / "plan.json"
    pf.write_text(json.dumps(dict(plan, t0=None)))
    kw = {"stdout": subprocess.DEVNULL, "stderr": log}
    procs = {"receiver": popen(rx_host, [sys.executable, "-m",
                                         "streamband.testbed.coflow_receiver", str(pf),
                                         "--out", str(out)], **kw)}
    for h in sorted({f["sender"] for f in plan["flows"]}):
        procs[h] = popen(h, [sys.executable, "-m", "streamband.testbed.coflow", str(pf),
                             "--host", h], **kw)
    t_end = time.monotonic() + GO_WAIT_S
    while not all((sync / f"{n}.ready").exists() for n in procs):
        dead = [n for n, p in procs.items() if p.poll() is not None]
        if dead or time.monotonic() > t_end:
            for p in procs.values():
                p.kill()
            raise RuntimeError(f"coflow agents {dead or 'silent'} did not start "
                               f"(see {getattr(log, 'name', 'the log')})")
        time.sleep(0.02)
    tmp = sync / "go.tmp"
    tmp.write_text(repr(time.time() + START_S))
    tmp.replace(sync / "go")
    rx = procs.pop("receiver")
    return rx, list(procs.values())


def tos_of(cls: int) -> int:
    """The IP TOS byte whose DSCP class selector CSn puts a packet in class ``cls``
    of :mod:`streamband.sdn.priority` (class = 7 - n)."""
    if not 0 <= cls <= 7:
        raise ValueError(f"class: expected 0..7, got {cls}")
    return (7 - cls) << 5


#: ``struct tcp_info`` fields read by :func:`tcp_stats`: name -> (offset, format); the
#: layout of <linux/tcp.h> (6.7+ for the last three), checked on loopback by
#: tests/coflow/test_coflow_tcp.py (bytes_sent = the flow's bytes)
TCP_INFO_FIELDS: dict[str, tuple[int, str]] = {
    "rto_us": (8, "I"), "snd_cwnd": (80, "I"), "total_retrans": (100, "I"),
    "busy_us": (168, "Q"), "rwnd_limited_us": (176, "Q"), "sndbuf_limited_us": (184, "Q"),
    "bytes_sent": (200, "Q"), "bytes_retrans": (208, "Q"),
    "total_rto": (240, "H"), "total_rto_recoveries": (242, "H"), "total_rto_time_ms": (244, "I"),
}


def tcp_stats(sock: socket.socket) -> dict[str, int]:
    """The :data:`TCP_INFO_FIELDS` counters of a TCP socket (those the kernel's
    ``tcp_info`` is long enough to hold); empty if the socket is gone."""
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    except OSError:
        return {}
    return {k: struct.unpack_from("<" + f, info, off)[0]
            for k, (off, f) in TCP_INFO_FIELDS.items() if off + struct.calcsize(f) <= len(info)}


def load_plan(path: str | Path) -> dict[str, Any]:
    """The plan the bench wrote (see :func:`streamband.experiments.paper004_testbed.plan`)."""
    plan = json.loads(Path(path).read_text())
    if plan.get("mode") not in AGENTS:
        raise ValueError(f"plan {path}: mode: expected one of {', '.join(AGENTS)}, "
                         f"got {plan.get('mode')!r}")
    return plan


# -- sender ----------------------------------------------------------------------------
@dataclass
class _Flow:
    index: int
    size: int
    sock: socket.socket
    sent: int = 0
    tos: int = 0
    heard: float = math.inf  # when the receiver's last decision came (none yet: inf)
    connected: bool = False


def send(plan: dict[str, Any], host: str) -> int:
    """Start this host's flows at their times, send their bytes, follow the queue the
    receiver tells each flow (DSCP marking with a lease). Exit code 0 if every flow
    was sent and ended by the receiver, 2 without a go."""
    t0 = sync_t0(plan, host)
    if t0 is None:
        return 2
    stream = plan["mode"] == "stream"
    base, lease = int(plan["class_base"]), float(plan["lease_s"])
    todo = sorted((fl["start"], i) for i, fl in enumerate(plan["flows"]) if fl["sender"] == host)
    dest = (plan["receiver_ip"], int(plan["port"]))
    sel = selectors.DefaultSelector()
    live: dict[int, _Flow] = {}
    deadline = float(plan["deadline_s"])
    rto = [(TCP_RTO_MIN_US, plan.get("rto_min_us")), (TCP_RTO_MAX_MS, plan.get("rto_max_ms"))]
    if plan.get("rto_max_ms") is not None:  # no abort after 15 short expiries
        rto += [(socket.TCP_USER_TIMEOUT, int(deadline * 1000)),
                (socket.TCP_SYNCNT, MAX_SYNCNT)]
    stats: dict[int, dict[str, int]] = {}
    k = failed = 0
    while (k < len(todo) or live) and time.time() - t0 < deadline:
        now = time.time() - t0
        while k < len(todo) and todo[k][0] <= now:
            i = todo[k][1]
            k += 1
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            f = _Flow(i, int(plan["flows"][i]["bytes"]), s)
            if stream:
                f.tos = tos_of(base)  # every coflow starts in the highest queue
                s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, f.tos)
            for opt, val in rto:
                if val is not None:  # OSError on a kernel without it: the run fails
                    s.setsockopt(socket.IPPROTO_TCP, opt, int(val))
            s.connect_ex(dest)
            sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, f)
            live[i] = f
        wait = TICK_S if k >= len(todo) else min(TICK_S, max(0.0, todo[k][0] - now))
        for key, ev in sel.select(wait):
            f = key.data
            if ev & selectors.EVENT_READ and not _heard(f, stream, base, now):
                stats[f.index] = tcp_stats(f.sock)
                sel.unregister(f.sock)  # the receiver closed: the flow is done
                f.sock.close()
                del live[f.index]
                failed += f.sent < HEADER.size + f.size  # or it was refused
                continue
            if ev & selectors.EVENT_WRITE and not _write(f, sel):
                sel.unregister(f.sock)  # refused or reset: the receiver's record
                f.sock.close()  # shows the missing bytes
                del live[f.index]
                failed += 1
        if stream:
            for f in live.values():
                if f.tos and now - f.heard > lease:  # no decision heard: plain TCP
                    f.tos = 0
                    f.sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0)
    for f in live.values():
        stats[f.index] = tcp_stats(f.sock)
        f.sock.close()
    if plan.get("sync"):
        out = Path(plan["sync"]) / f"{host}.tcp.json"
        out.write_text(json.dumps({str(i): v for i, v in stats.items()}))
    return 0 if not live and not failed and k == len(todo) else 1


def _heard(f: _Flow, stream: bool, base: int, now: float) -> bool:
    """Read the receiver's queue bytes; False at EOF (or a reset)."""
    try:
        data = f.sock.recv(4096)
    except (BlockingIOError, InterruptedError):
        return True
    except OSError:
        return False
    if not data:
        return False
    if stream:
        f.heard = now
        tos = tos_of(base + data[-1])
        if tos != f.tos:
            f.tos = tos
            f.sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
    return True


def _write(f: _Flow, sel: selectors.BaseSelector) -> bool:
    """Send what the socket takes; False if the connection failed."""
    total = HEADER.size + f.size
    try:
        while f.sent < total:
            if f.sent < HEADER.size:
                n = f.sock.send(HEADER.pack(f.index)[f.sent:])
            else:
                n = f.sock.send(_PAYLOAD[:min(CHUNK, total - f.sent)])
            if n == 0:
                return True
            f.sent += n
    except (BlockingIOError, InterruptedError):
        return True
    except OSError:
        return False
    sel.modify(f.sock, selectors.EVENT_READ, f)  # all sent: wait for the receiver's close
    return True


_PAYLOAD = memoryview(bytes(CHUNK))


def main(argv: list[str] | None = None) -> int:
    """``python -m streamband.testbed.coflow PLAN --host HOST``: the senders of ``HOST``
    (the receiver is :mod:`streamband.testbed.coflow_receiver`)."""
    ap = argparse.ArgumentParser(prog="python -m streamband.testbed.coflow")
    ap.add_argument("plan")
    ap.add_argument("--host", required=True)
    a = ap.parse_args(argv)
    return send(load_plan(a.plan), a.host)


if __name__ == "__main__":
    sys.exit(main())
