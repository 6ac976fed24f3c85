"""Nimbus's Thrift API from Python, for a manager that knows only Nimbus's address (the
flow mapper of 000 §V-A1 reads the placement from Nimbus; no Storm jars, no JVM).

Storm's default transport (``SimpleTransportPlugin``) is Thrift's framed transport with
the strict binary protocol. This client speaks just that, decoding any reply generically
(a struct is a dict of field id -> value) and picking out the fields of ``storm.thrift``
it needs: ``getClusterInfo`` (supervisors, topologies), ``getTopologyInfo`` (every
executor's component, task range, host and slot port) and ``getUserTopology`` (each
bolt's inputs: the topology's edges).
"""

from __future__ import annotations

import socket
import struct
import threading
from typing import Any

from streamband.errors import PreconditionError

# Thrift binary protocol type ids
STOP, BOOL, BYTE, DOUBLE, I16, I32, I64, STRING, STRUCT, MAP, SET, LIST = \
    0, 2, 3, 4, 6, 8, 10, 11, 12, 13, 14, 15
VERSION_1 = 0x80010000
CALL, REPLY, EXCEPTION = 1, 2, 3
MAX_FRAME = 64 << 20


class NimbusError(PreconditionError):
    """Nimbus cannot be reached, or refused a call."""


class _Reader:
    def __init__(self, buf: bytes) -> None:
        self.buf, self.pos = buf, 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.buf):
            raise NimbusError("Nimbus: truncated Thrift reply")
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def value(self, t: int) -> Any:
        if t == BOOL:
            return self.unpack("!b") != 0
        if t == BYTE:
            return self.unpack("!b")
        if t == DOUBLE:
            return self.unpack("!d")
        if t == I16:
            return self.unpack("!h")
        if t == I32:
            return self.unpack("!i")
        if t == I64:
            return self.unpack("!q")
        if t == STRING:
            return self.take(self.unpack("!i"))
        if t == STRUCT:
            return self.struct()
        if t == MAP:
            kt, vt, n = self.unpack("!b"), self.unpack("!b"), self.unpack("!i")
            return [(self.value(kt), self.value(vt)) for _ in range(n)]
        if t in (SET, LIST):
            et, n = self.unpack("!b"), self.unpack("!i")
            return [self.value(et) for _ in range(n)]
        raise NimbusError(f"Nimbus: unknown Thrift type {t}")

    def struct(self) -> dict[int, Any]:
        out: dict[int, Any] = {}
        while True:
            t = self.unpack("!b")
            if t == STOP:
                return out
            fid = self.unpack("!h")
            out[fid] = self.value(t)


def _s(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _call_message(name: str, seq: int, args: list[tuple[int, str]]) -> bytes:
    """A CALL whose arguments are all strings (field id, value)."""
    body = struct.pack("!I", VERSION_1 | CALL)
    nb = name.encode()
    body += struct.pack("!i", len(nb)) + nb + struct.pack("!i", seq)
    for fid, val in args:
        vb = val.encode()
        body += struct.pack("!bh", STRING, fid) + struct.pack("!i", len(vb)) + vb
    body += struct.pack("!b", STOP)
    return struct.pack("!i", len(body)) + body


class NimbusClient:
    """A client of one Nimbus (``HOST:PORT``, Thrift port 6627 by default); one call at a
    time, a new connection per call (Nimbus may restart between calls)."""

    def __init__(self, address: str, timeout: float = 10.0) -> None:
        host, _, port = address.rpartition(":")
        self.address = address
        self.host, self.port = host, int(port)
        self.timeout = timeout
        self._seq = 0
        self._lock = threading.Lock()

    def _call(self, name: str, args: list[tuple[int, str]] | None = None) -> Any:
        with self._lock:
            self._seq += 1
            msg = _call_message(name, self._seq, args or [])
            try:
                with socket.create_connection((self.host, self.port), self.timeout) as s:
                    s.settimeout(self.timeout)
                    s.sendall(msg)
                    size = struct.unpack("!i", _recv(s, 4))[0]
                    if not 0 < size <= MAX_FRAME:
                        raise NimbusError(f"Nimbus {self.address}: bad frame size {size}")
                    r = _Reader(_recv(s, size))
            except OSError as exc:
                raise NimbusError(f"Nimbus {self.address}: {exc}") from None
        head = r.unpack("!I")
        if head & 0xFFFF0000 != VERSION_1:
            raise NimbusError(f"Nimbus {self.address}: not a Thrift binary reply")
        r.take(r.unpack("!i"))  # the method's name
        r.unpack("!i")  # seq id
        body = r.struct()
        if head & 0xFF == EXCEPTION:
            raise NimbusError(f"Nimbus {self.address}: {name}: {_s(body.get(1, b''))}")
        if 0 in body:
            return body[0]
        for exc in body.values():  # a declared exception (NotAliveException, ...)
            raise NimbusError(f"Nimbus {self.address}: {name}: {_s(exc.get(1, b''))}")
        raise NimbusError(f"Nimbus {self.address}: {name}: empty reply")

    def cluster(self) -> dict[str, Any]:
        """Supervisors and topologies (``getClusterInfo``)."""
        cs = self._call("getClusterInfo")
        sups = [{"host": _s(s[1]), "slots": s.get(3, 0), "used": s.get(4, 0),
                 "id": _s(s.get(5, b""))} for s in cs.get(1, [])]
        tops = [{"id": _s(t[1]), "name": _s(t[2]), "workers": t.get(5, 0),
                 "uptime_s": t.get(6, 0), "status": _s(t.get(7, b""))} for t in cs.get(3, [])]
        return {"supervisors": sups, "topologies": tops}

    def topology_info(self, topology_id: str) -> dict[str, Any]:
        """The placement (``getTopologyInfo``), in the shape of the Admin CLI's ``info``."""
        ti = self._call("getTopologyInfo", [(1, topology_id)])
        ex = [{"component": _s(e[2]), "task_start": e[1][1], "task_end": e[1][2],
               "host": _s(e[3]), "port": e[4]} for e in ti.get(4, [])]
        return {"id": _s(ti[1]), "name": _s(ti[2]), "status": _s(ti.get(5, b"")),
                "sched_status": _s(ti.get(513, b"")), "executors": ex}

    def edges(self, topology_id: str) -> list[tuple[str, str]]:
        """(source component, bolt) of every input of every bolt (``getUserTopology``):
        the topology's edges as it was submitted, without Storm's system components."""
        topo = self._call("getUserTopology", [(1, topology_id)])
        out: set[tuple[str, str]] = set()
        for name, bolt in topo.get(2, []):
            for gsid, _grouping in bolt[2].get(1, []):
                out.add((_s(gsid[1]), _s(name)))
        return sorted(out)


def _recv(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise OSError("connection closed")
        buf += chunk
    return bytes(buf)
