"""The protocol's transport over TCP: a log server holding every node's inbox, and
the client that implements :class:`~streamband.locality.transport.Transport` on it.

003 §3.4 needs reliable FIFO channels between the manager and the instances, and a
manager whose restart loses nothing (its configurations are on stable storage; the
answers sent while it was down must still reach it). The log server keeps one
append-only inbox per node (the same per-destination logs as ``InProcTransport``),
each also appended to ``<dir>/<node>.jsonl``, so a restarted server reloads them; a
reader fetches its inbox from its own offset, so a restarted manager re-reads the
answers from the offset it saved (``Manager.recover``). The server runs in its own
process, apart from the manager it outlives.

Wire format: one JSON object per line each way (messages as in
:mod:`streamband.locality.wire`):

- ``{"op": "append", "msgs": [msg, ...]}`` -> ``{"ok": n}``;
- ``{"op": "read", "node": N, "offset": k, "max": m, "wait": s}`` ->
  ``{"end": len, "msgs": [msg, ...]}``: N's messages from offset k, waiting up to s
  seconds for the first one;
- ``{"op": "stats"}`` -> messages and bytes per kind so far.

Any host of the testbed can connect, so every request is checked before anything of
it is applied: a bad one gets ``{"error": "..."}`` (what was wrong, what was expected)
and the connection goes on. An append stores all its messages or none; a message is
stored only if :func:`streamband.locality.wire.from_json` decodes it and its ``dst``
can name a file in the directory.

``python -m streamband.locality.tcp --listen HOST:PORT --dir DIR``
"""

from __future__ import annotations

import argparse
import json
import socket
import socketserver
import sys
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, NoReturn

from streamband.errors import StreambandError, TraceError
from streamband.locality import wire
from streamband.locality.transport import BadMessage, Kind, Message

MAX_LINE = 64 << 20  # bytes of a request; a SEND_RECONF of a large table is a few MiB
MAX_WAIT_S = 30.0
MAX_OPEN = 64  # inbox files kept open: a run's manager and instances, or most of them
NODE_BYTES = 200  # a node's file name, with ".jsonl", must fit NAME_MAX (255)


class BadRequest(ValueError):
    """A request the log server refuses (what is wrong, what was expected)."""


def check_node(node: object, where: str) -> str:
    """``node`` if it can name the file ``<dir>/<node>.jsonl`` inside the directory."""
    if (not isinstance(node, str) or node in ("", ".", "..") or "/" in node
            or "\\" in node or not node.isprintable() or len(node.encode()) > NODE_BYTES):
        raise BadMessage(f"{where}: expected a node name (printable, 1 to {NODE_BYTES} bytes, "
                         f"no '/' or '\\', not '.' or '..'), got {wire.describe(node)}")
    return node


def _message(line: bytes) -> str | None:
    """Why ``line`` is not a protocol message, or None if it is one."""
    try:
        wire.from_json(wire.parse(line))
    except (ValueError, RecursionError) as e:
        return str(e) or type(e).__name__
    return None


class LogStore:
    """Per-node append-only logs of raw JSON lines, mirrored to files when ``directory``."""

    def __init__(self, directory: Path | None = None) -> None:
        self.dir = Path(directory) if directory else None
        self.logs: dict[str, list[str]] = {}
        self.files: OrderedDict[str, Any] = OrderedDict()  # open inbox files, least recent first
        self.stats: dict[str, list[int]] = {}
        self.cond = threading.Condition()
        if self.dir:
            self.dir.mkdir(parents=True, exist_ok=True)
            loaded = {f: self._load(f) for f in sorted(self.dir.glob("*.jsonl"))}
            for f, (lines, tail) in loaded.items():  # every file read: now repair the tails
                self.logs[f.stem] = lines
                if tail is None:
                    continue
                if _message(tail) is None:  # written whole but for its newline
                    with open(f, "ab") as fh:
                        fh.write(b"\n")
                    lines.append(tail.decode())
                else:
                    with open(f, "r+b") as fh:
                        fh.truncate(f.stat().st_size - len(tail))
                    print(f"log server: {f}: cut an unfinished last line of {len(tail)} bytes",
                          file=sys.stderr, flush=True)

    @staticmethod
    def _load(f: Path) -> tuple[list[str], bytes | None]:
        """The messages of one inbox file and what follows its last newline (None if
        nothing), or :class:`TraceError` at the first line that is not a message. A last
        line without its newline was being written when a server died; the caller cuts it
        off the file if unfinished, else gives it its newline, so that the next append
        starts a line of its own."""
        data = f.read_bytes()
        lines = data.split(b"\n")
        tail = lines.pop()
        out = []
        for n, ln in enumerate(lines, 1):
            if ln.strip():
                if (e := _message(ln)) is not None:
                    raise TraceError(f"{f}:{n}: not a protocol message ({e}); expected one "
                                     "JSON message per line")
                out.append(ln.decode())
        return out, tail or None

    def append(self, msgs: object) -> int:
        """Appends every message of ``msgs`` (a JSON array) or, if one is not a message
        (:class:`BadMessage`, naming it), none."""
        if not isinstance(msgs, list):
            raise BadMessage(f"msgs: expected an array of messages, got {wire.describe(msgs)}")
        batch = []
        for i, m in enumerate(msgs):
            try:
                msg = wire.from_json(m)
                check_node(msg.dst, "dst")
            except BadMessage as e:
                raise BadMessage(f"msgs[{i}]: {e}") from None
            # Stored as wire encodes what it decoded: no field a reader would not read.
            batch.append((msg, wire.dumps(msg)))
        with self.cond:
            for msg, line in batch:
                if self.dir:  # on disk before in memory, so a failed write leaves them equal
                    f = self._file(self.dir, msg.dst)
                    f.write(line + "\n")
                    f.flush()  # survives the death of any process; not fsynced per message
                self.logs.setdefault(msg.dst, []).append(line)
                s = self.stats.setdefault(msg.kind.value, [0, 0])
                s[0] += 1
                s[1] += len(line)
            self.cond.notify_all()
        return len(batch)

    def _file(self, directory: Path, node: str) -> Any:
        """``node``'s inbox file, open for appending; at most MAX_OPEN stay open, since a
        file held per node ever named would let any client use up the descriptors."""
        f = self.files.get(node)
        if f is None:
            if len(self.files) >= MAX_OPEN:
                self.files.popitem(last=False)[1].close()
            f = self.files[node] = open(directory / f"{node}.jsonl", "a")  # noqa: SIM115
        self.files.move_to_end(node)
        return f

    def read(self, node: str, offset: int, limit: int, wait: float) -> tuple[int, list[str]]:
        deadline = time.monotonic() + wait
        with self.cond:
            while True:
                log = self.logs.get(node, [])
                if offset < len(log) or wait <= 0:
                    return len(log), log[offset : offset + limit]
                left = deadline - time.monotonic()
                if left <= 0:
                    return len(log), []
                self.cond.wait(left)

    def close(self) -> None:
        with self.cond:
            for f in self.files.values():
                f.close()
            self.files.clear()


def _arg(req: dict[str, Any], name: str, default: Any, low: float, cap: float | None = None,
         integer: bool = True) -> Any:
    """``read``'s argument ``name``: a number >= ``low`` (an integer unless not
    ``integer``), cut to ``cap``; BadRequest otherwise."""
    v = req.get(name, default)
    ok = (type(v) is int or (not integer and type(v) is float)) and low <= v < float("inf")
    if not ok:
        kind = "an integer" if integer else "a finite number"
        raise BadRequest(f"read: {name}: expected {kind} >= {low:g}, got {wire.describe(v)}")
    return v if cap is None else min(v, cap)


def answer(store: LogStore, raw: bytes) -> str:
    """The response line to one request line (``{"error": ...}`` if it is refused)."""
    try:
        req = wire.parse(raw)
        if not isinstance(req, dict):
            raise BadRequest(f"expected a JSON object with an op, got {wire.describe(req)}")
        op = req.get("op")
        if op == "append":
            return json.dumps({"ok": store.append(req.get("msgs"))})
        if op == "read":
            node = check_node(req.get("node"), "read: node")
            end, lines = store.read(node, _arg(req, "offset", 0, 0), _arg(req, "max", 1000, 1),
                                    _arg(req, "wait", 0.0, 0, MAX_WAIT_S, integer=False))
            return f'{{"end":{end},"msgs":[{",".join(lines)}]}}'
        if op == "stats":
            with store.cond:
                return json.dumps({"kinds": store.stats,
                                   "nodes": {n: len(v) for n, v in store.logs.items()}})
        raise BadRequest(f"op: expected append, read or stats, got {wire.describe(op)}")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        return json.dumps({"error": f"bad request: not JSON ({e}); expected a JSON object"})
    except RecursionError:
        return json.dumps({"error": "bad request: nested too deeply; expected a JSON object"})
    except ValueError as e:  # BadRequest, BadMessage, a non-finite number
        return json.dumps({"error": f"bad request: {e}"})
    except OSError as e:
        return json.dumps({"error": f"log server: cannot store the messages: {e}"})


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        try:
            self._serve()
        except ConnectionError:
            pass  # the client went away: no one to answer, and no traceback for the log

    def _serve(self) -> None:
        store: LogStore = self.server.store  # type: ignore[attr-defined]
        limit: int = self.server.max_line  # type: ignore[attr-defined]
        while raw := self.rfile.readline(limit + 1):
            if len(raw) > limit and not raw.endswith(b"\n"):
                while (rest := self.rfile.readline(1 << 16)) and not rest.endswith(b"\n"):
                    pass  # skip to the next line, so the connection stays in step
                out = json.dumps({"error": f"bad request: longer than {limit} bytes; "
                                           "expected one JSON line of at most that"})
            else:
                out = answer(store, raw)
            self.wfile.write(out.encode() + b"\n")
            self.wfile.flush()


class LogServer(socketserver.ThreadingTCPServer):
    """The inboxes of every node of one protocol run, served over TCP."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str, port: int, directory: Path | None = None,
                 max_line: int = MAX_LINE) -> None:
        self.store = LogStore(directory)
        self.max_line = max_line
        super().__init__((host, port), _Handler)

    @property
    def address(self) -> str:
        host, port = self.server_address[:2]
        return f"{host}:{port}"

    def start(self) -> LogServer:
        """Serves in a daemon thread (in-process use: tests, the simulator)."""
        threading.Thread(target=self.serve_forever, daemon=True, name="logserver").start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.store.close()


def split_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` as (host, port); ValueError if it is not one."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"expected HOST:PORT with a port up to 65535, got {address!r}")
    return host, int(port)


class TcpTransport:
    """:class:`~streamband.locality.transport.Transport` on a :class:`LogServer`.

    ``receive`` returns ``None`` when nothing is there after waiting up to ``wait_s``
    (0: do not wait), like the in-process transport; fetched messages are cached per
    node, ``batch`` at a time."""

    def __init__(self, address: str, wait_s: float = 0.0, batch: int = 1000,
                 connect_timeout_s: float = 30.0) -> None:
        self.address = address
        self.wait_s = wait_s
        self.batch = batch
        self.sent: dict[Kind, int] = {k: 0 for k in Kind}
        self._cache: dict[str, tuple[int, list[Message | BadMessage]]] = {}
        self._sock = self._connect(connect_timeout_s)
        self._rfile = self._sock.makefile("rb")

    def _connect(self, timeout: float) -> socket.socket:
        host, port = split_address(self.address)
        deadline = time.monotonic() + timeout
        while True:
            try:
                return socket.create_connection((host, port), timeout=60.0)
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _call(self, req: dict[str, Any]) -> dict[str, Any]:
        self._sock.sendall(json.dumps(req, separators=(",", ":")).encode() + b"\n")
        line = self._rfile.readline()
        if not line:
            raise ConnectionError(f"log server {self.address} closed the connection")
        out = json.loads(line)
        if "error" in out:
            raise RuntimeError(f"log server {self.address}: {out['error']}")
        return out

    def send(self, msg: Message) -> None:
        self._call({"op": "append", "msgs": [wire.to_json(msg)]})
        self.sent[msg.kind] += 1

    def receive(self, node: str, offset: int) -> Message | None:
        base, msgs = self._cache.get(node, (0, []))
        if not base <= offset < base + len(msgs):
            out = self._call({"op": "read", "node": node, "offset": offset, "max": self.batch,
                              "wait": self.wait_s})
            base, msgs = offset, [self._decode(m) for m in out["msgs"]]
            self._cache[node] = (base, msgs)
            if not msgs:
                return None
        got = msgs[offset - base]
        if isinstance(got, BadMessage):
            raise got
        return got

    @staticmethod
    def _decode(m: Any) -> Message | BadMessage:
        try:
            return wire.from_json(m)
        except BadMessage as e:
            return e

    def stats(self) -> dict[str, Any]:
        return self._call({"op": "stats"})

    def close(self) -> None:
        self._rfile.close()
        self._sock.close()


def _refuse(line: str) -> NoReturn:
    print(f"log server: {line}", file=sys.stderr)
    sys.exit(2)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="the reconfiguration protocol's log server")
    ap.add_argument("--listen", required=True, help="HOST:PORT")
    ap.add_argument("--dir", type=Path, default=None, help="where the inboxes are kept")
    a = ap.parse_args(argv)
    try:
        host, port = split_address(a.listen)
    except ValueError as e:
        _refuse(f"--listen: {e}")
    try:
        srv = LogServer(host, port, a.dir)
    except StreambandError as e:
        _refuse(str(e))
    except OSError as e:
        _refuse(f"--listen {a.listen}: cannot listen there ({e.strerror})")
    print(f"log server on {srv.address}", flush=True)
    try:
        srv.serve_forever()
    finally:
        srv.store.close()


if __name__ == "__main__":
    main()
