"""What the kernel knows about an application's TCP connections (engine-neutral: any
stream engine whose flows are TCP connections): per socket, the bytes the peer has
acknowledged and the bytes still in the send buffer, from ``ss -tinp`` run in the
host's network namespace. Where it applies, the kernel knows better than the engine
(000 §IV-A1's V_f and part of L^s_f in bytes, where the engine counts messages).
Beside them, what tells where a backlog waits: the smoothed and the minimum RTT, the
congestion window and the retransmissions (a sender backlog behind a congestion window
on an RTT far above the path's minimum, while the path's links are not full, waits for
something other than link capacity)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

_HEAD = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\S+):(\d+)\s+(\S+):(\d+)(?:\s+(.*))?$")
_PID = re.compile(r"pid=(\d+)")
_FIELD = re.compile(r"\b(bytes_acked|bytes_sent|bytes_received|notsent|delivery_rate|cwnd):(\d+)")
_RTT = re.compile(r"\brtt:([\d.]+)/")
_MINRTT = re.compile(r"\bminrtt:([\d.]+)")
_RETRANS = re.compile(r"\bretrans:\d+/(\d+)")


@dataclass(frozen=True)
class TcpSocket:
    """One established TCP socket seen from its own host."""

    src_ip: str
    src_port: int
    dst_ip: str
    dst_port: int
    send_q: int  # bytes written by the application, not yet acknowledged by the peer
    recv_q: int
    bytes_acked: int
    bytes_sent: int
    notsent: int  # of send_q: bytes not yet sent once
    pids: tuple[int, ...]
    rtt_ms: float | None = None  # smoothed RTT
    min_rtt_ms: float | None = None  # the least RTT the connection has seen
    cwnd: int | None = None  # congestion window, segments
    retrans: int = 0  # segments retransmitted since the connection began

    @property
    def four_tuple(self) -> tuple[str, int, str, int]:
        return (self.src_ip, self.src_port, self.dst_ip, self.dst_port)


def _addr(a: str) -> str:
    a = a.strip("[]")
    return a[7:] if a.startswith("::ffff:") else a


def _number(pattern: re.Pattern[str], info: str) -> float | None:
    m = pattern.search(info)
    return float(m.group(1)) if m else None


def parse_ss(text: str) -> list[TcpSocket]:
    """Parses ``ss -tinpH state established`` (one head line, one info line each)."""
    out: list[TcpSocket] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _HEAD.match(lines[i])
        if not m:
            i += 1
            continue
        info = lines[i + 1] if i + 1 < len(lines) and not _HEAD.match(lines[i + 1]) else ""
        fields = {k: int(v) for k, v in _FIELD.findall(info)}
        out.append(TcpSocket(
            src_ip=_addr(m.group(3)), src_port=int(m.group(4)), dst_ip=_addr(m.group(5)),
            dst_port=int(m.group(6)), recv_q=int(m.group(1)), send_q=int(m.group(2)),
            bytes_acked=fields.get("bytes_acked", 0), bytes_sent=fields.get("bytes_sent", 0),
            notsent=fields.get("notsent", 0),
            pids=tuple(int(p) for p in _PID.findall(m.group(7) or "")),
            rtt_ms=_number(_RTT, info), min_rtt_ms=_number(_MINRTT, info),
            cwnd=fields.get("cwnd"), retrans=int(_number(_RETRANS, info) or 0)))
        i += 2 if info else 1
    return out


def tcp_sockets(netns_pid: int | None = None, processes: bool = True) -> list[TcpSocket]:
    """Established TCP sockets of a network namespace (that of ``netns_pid``, or this
    process's); ``processes=False`` leaves out which processes hold each socket
    (``TcpSocket.pids`` empty), which costs ``ss`` a walk of every process's file
    descriptors (several times slower beside a Storm cluster)."""
    cmd = ["ss", "-tinpH" if processes else "-tinH", "state", "established"]
    if netns_pid is not None:
        cmd = ["nsenter", f"--net=/proc/{netns_pid}/ns/net", *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    return parse_ss(r.stdout)


#: a host's established sockets: (host ip, with the processes that hold them)
SocketReader = Callable[[str, bool], list[TcpSocket]]


class HostSockets:
    """One flow state's reads of its hosts' sockets: each (host, with processes) read
    once, and the reads a profiler names together run side by side. Each read is an
    ``ss`` in the host's namespace whose time on a busy machine is mostly waiting to
    run, so one after another they kept a real loop from its Δt."""

    def __init__(self, reader: SocketReader) -> None:
        self.reader = reader
        self.seen: dict[tuple[str, bool], list[TcpSocket]] = {}

    def prefetch(self, keys: Iterable[tuple[str, bool]]) -> None:
        """Reads every (host ip, processes) of ``keys`` not read yet, side by side."""
        todo = [k for k in dict.fromkeys(keys) if k not in self.seen]
        if len(todo) == 1:
            self.seen[todo[0]] = self.reader(*todo[0])
        elif todo:
            with ThreadPoolExecutor(max_workers=len(todo)) as pool:
                self.seen.update(zip(todo, pool.map(lambda k: self.reader(*k), todo),
                                     strict=True))

    def __call__(self, ip: str, processes: bool) -> list[TcpSocket]:
        """The sockets of host ``ip`` (read now if not read yet)."""
        self.prefetch([(ip, processes)])
        return self.seen[(ip, processes)]
