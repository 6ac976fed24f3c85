"""Hostile input to the protocol's transport: a real log server on loopback receives
raw lines from a socket, as any host of the testbed could send them. Each bad request
gets one ``{"error": ...}`` line, nothing of it is applied, and the same connection
goes on serving; readers skip an inbox entry they cannot decode instead of dying."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from streamband.locality import wire
from streamband.locality.tcp import LogServer
from streamband.locality.transport import BadMessage


class Client:
    """One raw connection: a line out, a line back (5 s at most)."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.sock = socket.create_connection(address, timeout=5.0)
        self.rfile = self.sock.makefile("rb")

    def raw(self, data: bytes) -> dict[str, Any]:
        self.sock.sendall(data)
        line = self.rfile.readline()
        assert line, "the server dropped the connection"
        return json.loads(line)

    def ask(self, req: Any) -> dict[str, Any]:
        return self.raw((req if isinstance(req, str) else json.dumps(req)).encode() + b"\n")

    def close(self) -> None:
        self.rfile.close()
        self.sock.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LogServer]:
    srv = LogServer("127.0.0.1", 0, tmp_path / "hub").start()
    yield srv
    srv.stop()


@pytest.fixture
def client(server: LogServer) -> Iterator[Client]:
    c = Client(server.server_address[:2])
    yield c
    c.close()


def msg(dst: str = "manager", **kw: Any) -> dict[str, Any]:
    return {"kind": "PROPAGATE", "src": "A[0]", "dst": dst, "epoch": 1, "seq": 1,
            "payload": None, **kw}


def still_serving(c: Client, server: LogServer) -> None:
    """The same connection still answers, and nothing was appended."""
    assert c.ask({"op": "stats"}) == {"kinds": {}, "nodes": {}}
    assert server.store.logs == {}


def refused(out: dict[str, Any], *words: str) -> None:
    assert set(out) == {"error"}, out
    assert "\n" not in out["error"]
    for w in words:
        assert w in out["error"], out


# -- messages -----------------------------------------------------------------------
BAD: list[dict[str, Any]] = [
    {"kind": "NOPE"}, {"kind": None}, {"src": 3}, {"dst": ["manager"]}, {"epoch": "1"},
    {"epoch": -1}, {"seq": 1.5}, {"seq": True}, {"epoch": 1 << 63},
    {"kind": "DATA", "payload": 5}, {"kind": "DATA", "payload": [1]},
    {"kind": "DATA", "payload": [1, "ab"]}, {"kind": "DATA", "payload": [1, [{"k": 1}]]},
    {"kind": "DATA", "payload": ["t", [1]]},
    {"kind": "SEND_METRICS", "payload": {"keys": 5, "pairs": {}}},
    {"kind": "SEND_METRICS", "payload": {"keys": [[{"k": 1}, 3]], "pairs": {}}},
    {"kind": "SEND_METRICS", "payload": [1, 2]},
    {"kind": "SEND_RECONF", "payload": {"epoch": 1, "router": [], "send": {}, "receive": {}}},
    {"kind": "SEND_RECONF", "payload": {"epoch": 1, "router": {}, "send": {"A[1]": [{}]},
                                        "receive": {}}},
    {"kind": "MIGRATE", "payload": [[1, 2, 3]]}, {"kind": "MIGRATE", "payload": {"k": 1}},
    {"kind": "MIGRATE", "payload": [[[], {"a": 1}]]},
    {"kind": "DATA", "payload": [1, [1 << 64]]},
    {"kind": "DATA", "payload": [1, [json.loads("[" * 20 + "]" * 20)]]},
    {"kind": "SEND_RECONF", "payload": {"epoch": 1, "router": {"A": {
        "op": "A", "parallelism": 2, "table": [["k", 2]]}}, "send": {}, "receive": {}}},
    {"kind": "GET_METRICS", "payload": {"x": 1}},
]


def bad_message(bad: dict[str, Any]) -> dict[str, Any]:
    """A message with the fields of ``bad`` (None: the field left out)."""
    m = {**msg(), **bad}
    return {k: v for k, v in m.items() if v is not None or k == "payload"}


@pytest.mark.parametrize("bad", [*BAD, {"kind": "DATA", "payload": [1, [float("nan")]]}])
def test_wire_refuses_what_is_not_a_message(bad: dict[str, Any]) -> None:
    with pytest.raises(BadMessage) as e:
        wire.from_json(bad_message(bad))
    assert "expected" in str(e.value) and "\n" not in str(e.value)
