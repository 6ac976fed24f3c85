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

``python -m streamband.locality.tcp --listen HOST:PORT --dir DIR``
"""

from __future__ import annotations

import argparse
import json
import socket
import socketserver
import threading
import time
from pathlib import Path
from typing import Any

from streamband.locality import wire
from streamband.locality.transport import Kind, Message


class LogStore:
    """Per-node append-only logs of raw JSON lines, mirrored to files when ``directory``."""

    def __init__(self, directory: Path | None = None) -> None:
        self.dir = Path(directory) if directory else None
        self.logs: dict[str, list[str]] = {}
        self.files: dict[str, Any] = {}
        self.stats: dict[str, list[int]] = {}
        self.cond = threading.Condition()
        if self.dir:
            self.dir.mkdir(parents=True, exist_ok=True)
            for f in sorted(self.dir.glob("*.jsonl")):
                lines = [ln for ln in f.read_text().splitlines() if ln]
                self.logs[f.stem] = lines

    def append(self, msgs: list[dict[str, Any]]) -> int:
        with self.cond:
            for m in msgs:
                line = json.dumps(m, separators=(",", ":"))
                node = str(m["dst"])
                self.logs.setdefault(node, []).append(line)
                s = self.stats.setdefault(str(m.get("kind")), [0, 0])
                s[0] += 1
                s[1] += len(line)
                if self.dir:
                    f = self.files.get(node)
                    if f is None:
                        f = self.files[node] = open(self.dir / f"{node}.jsonl", "a")  # noqa: SIM115
                    f.write(line + "\n")
                    f.flush()  # survives the death of any process; not fsynced per message
            self.cond.notify_all()
        return len(msgs)

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


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        store: LogStore = self.server.store  # type: ignore[attr-defined]
        for raw in self.rfile:
            try:
                req = json.loads(raw)
                op = req.get("op")
                if op == "append":
                    out = json.dumps({"ok": store.append(req["msgs"])})
                elif op == "read":
                    end, lines = store.read(str(req["node"]), int(req.get("offset", 0)),
                                            int(req.get("max", 1000)),
                                            min(float(req.get("wait", 0.0)), 30.0))
                    out = f'{{"end":{end},"msgs":[{",".join(lines)}]}}'
                elif op == "stats":
                    with store.cond:
                        out = json.dumps({"kinds": store.stats,
                                          "nodes": {n: len(v) for n, v in store.logs.items()}})
                else:
                    out = json.dumps({"error": f"unknown op {op!r}"})
            except (ValueError, KeyError, TypeError) as e:
                out = json.dumps({"error": f"bad request: {e}"})
            self.wfile.write(out.encode() + b"\n")
            self.wfile.flush()


class LogServer(socketserver.ThreadingTCPServer):
    """The inboxes of every node of one protocol run, served over TCP."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str, port: int, directory: Path | None = None) -> None:
        self.store = LogStore(directory)
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
    host, _, port = address.rpartition(":")
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
        self._cache: dict[str, tuple[int, list[Message]]] = {}
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
            base, msgs = offset, [wire.from_json(m) for m in out["msgs"]]
            self._cache[node] = (base, msgs)
            if not msgs:
                return None
        return msgs[offset - base]

    def stats(self) -> dict[str, Any]:
        return self._call({"op": "stats"})

    def close(self) -> None:
        self._rfile.close()
        self._sock.close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="the reconfiguration protocol's log server")
    ap.add_argument("--listen", required=True, help="HOST:PORT")
    ap.add_argument("--dir", type=Path, default=None, help="where the inboxes are kept")
    a = ap.parse_args(argv)
    host, port = split_address(a.listen)
    srv = LogServer(host, port, a.dir)
    print(f"log server on {srv.address}", flush=True)
    try:
        srv.serve_forever()
    finally:
        srv.store.close()


if __name__ == "__main__":
    main()
