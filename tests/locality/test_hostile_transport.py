"""Hostile input to the protocol's transport: a real log server on loopback receives
raw lines from a socket, as any host of the testbed could send them. Each bad request
gets one ``{"error": ...}`` line, nothing of it is applied, and the same connection
goes on serving; readers skip an inbox entry they cannot decode instead of dying; a
bad inbox file stops the server before it serves (one line, exit 2); the manager counts
only its own instances' answers."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from streamband.errors import TraceError
from streamband.locality import wire
from streamband.locality.dataflow import Dataflow, OpSpec
from streamband.locality.reconfig import Manager, ManagerPhase
from streamband.locality.routing_table import RoutingTable
from streamband.locality.tcp import MAX_OPEN, LogServer, LogStore, TcpTransport
from streamband.locality.transport import BadMessage, Endpoint, Kind, Message


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


# -- the log server -----------------------------------------------------------------
@pytest.mark.parametrize("dst", ["../x", "../../etc/x", "a/b", "/abs", "", ".", "..", "x\0y"])
def test_node_name_that_is_no_file_name_is_refused(dst: str, client: Client,
                                                   server: LogServer, tmp_path: Path) -> None:
    refused(client.ask({"op": "append", "msgs": [msg(dst)]}), "msgs[0]", "dst")
    still_serving(client, server)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["hub"]


@pytest.mark.parametrize("line", ["[1]", '"x"', "5", "null", "true"])
def test_request_that_is_not_an_object_is_refused(line: str, client: Client,
                                                  server: LogServer) -> None:
    refused(client.ask(line), "JSON object")
    still_serving(client, server)


@pytest.mark.parametrize("msgs", ["abc", 5, {"a": 1}, None])
def test_msgs_that_is_not_a_list_is_refused(msgs: Any, client: Client,
                                            server: LogServer) -> None:
    refused(client.ask({"op": "append", "msgs": msgs}), "msgs", "array")
    still_serving(client, server)


def test_a_batch_is_all_or_nothing(client: Client, server: LogServer, tmp_path: Path) -> None:
    out = client.ask({"op": "append", "msgs": [msg("A[1]"), msg("A[2]"), {"dst": "A[1]"}]})
    refused(out, "msgs[2]")
    still_serving(client, server)
    assert list((tmp_path / "hub").iterdir()) == []
    assert LogStore(tmp_path / "hub").logs == {}  # a restarted server agrees


@pytest.mark.parametrize("bad", BAD)
def test_what_wire_cannot_decode_is_refused(bad: dict[str, Any], client: Client,
                                            server: LogServer) -> None:
    refused(client.ask({"op": "append", "msgs": [bad_message(bad)]}), "msgs[0]")
    still_serving(client, server)


@pytest.mark.parametrize("line", [
    '{"op":"append","msgs":[{"kind":"DATA","src":"S[0]","dst":"A[0]","payload":[1,[NaN]]}]}',
    '{"op":"append","msgs":[{"kind":"DATA","src":"S[0]","dst":"A[0]","payload":[1,[1e400]]}]}',
    '{"op":"read","node":"manager","wait":Infinity}',
])
def test_non_finite_numbers_are_refused(line: str, client: Client, server: LogServer) -> None:
    # A Java reader (Jackson) cannot parse NaN or Infinity: it would retry that line forever.
    refused(client.ask(line), "finite")
    still_serving(client, server)


def test_valid_messages_are_still_appended_and_read(client: Client) -> None:
    from streamband.locality.reconfig import Reconf

    r = Reconf(4, {"B": RoutingTable("B", 3, {"x": 2, 7: 0})}, {"A[1]": ["k", 3]},
               {"A[2]": [(1, "t")]})
    ms = [Message(Kind.DATA, "S[0]", "A[1]", 0, 9, (12, ("k", 3.5, None, True))),
          Message(Kind.SEND_RECONF, "manager", "A[1]", 4, 2, r),
          Message(Kind.MIGRATE, "A[0]", "A[1]", 4, 5, {"k": 7, 3: None, (1, "t"): 2}),
          Message(Kind.SEND_METRICS, "A[0]", "A[1]", 4, 3,
                  {"keys": [("k", 5)], "pairs": {"B": [("k", 3, 2)]}}),
          Message(Kind.PROPAGATE, "A[0]", "A[1]", 4, 11)]
    assert client.ask({"op": "append", "msgs": [wire.to_json(m) for m in ms]}) == {"ok": 5}
    out = client.ask({"op": "read", "node": "A[1]", "offset": 0})
    assert [wire.from_json(m) for m in out["msgs"]] == ms


@pytest.mark.parametrize("args", [
    {"offset": -1}, {"offset": 1.5}, {"offset": "0"}, {"offset": True}, {"max": -1},
    {"max": 0}, {"wait": -1}, {"wait": "nan"}, {"wait": "1"}, {"node": 5}, {"node": None},
])
def test_read_arguments_out_of_range_are_refused(args: dict[str, Any], client: Client,
                                                 server: LogServer) -> None:
    assert client.ask({"op": "append", "msgs": [msg(), msg(seq=2)]}) == {"ok": 2}
    req = {"op": "read", "node": "manager", **args}
    refused(client.ask({k: v for k, v in req.items() if v is not None}))
    assert client.ask({"op": "read", "node": "manager", "offset": 1})["end"] == 2


def test_a_huge_line_is_refused_and_the_connection_kept(tmp_path: Path) -> None:
    srv = LogServer("127.0.0.1", 0, tmp_path / "hub", max_line=1000).start()
    try:
        c = Client(srv.server_address[:2])
        big = {"op": "append", "msgs": [msg(payload=None, pad="x" * 5000)]}
        refused(c.ask(big), "1000 bytes")
        still_serving(c, srv)
        c.close()
    finally:
        srv.stop()


def test_deep_nesting_is_refused(client: Client, server: LogServer) -> None:
    refused(client.ask("[" * 100_000 + "]" * 100_000))
    refused(client.ask({"op": "append", "msgs": [msg(kind="DATA", payload=[
        1, json.loads("[" * 900 + "]" * 900)])]}))
    still_serving(client, server)


def test_invalid_utf8_is_refused(client: Client, server: LogServer) -> None:
    refused(client.raw(b'{"op": "\xff"}\n'))
    still_serving(client, server)


def test_a_line_never_finished_holds_up_no_one_else(client: Client, server: LogServer) -> None:
    client.sock.sendall(b'{"op": "append", "msgs": [')  # and never a newline
    other = Client(server.server_address[:2])
    try:
        assert other.ask({"op": "append", "msgs": [msg()]}) == {"ok": 1}
        assert other.ask({"op": "read", "node": "manager", "offset": 0})["end"] == 1
        refused(other.ask("[1]"))
        assert other.ask({"op": "stats"})["nodes"] == {"manager": 1}
    finally:
        other.close()


def test_many_node_names_do_not_use_up_the_descriptors(client: Client, server: LogServer,
                                                       tmp_path: Path) -> None:
    # On main every node ever named kept its file open: ~250 names under `ulimit -n 256`
    # and the server could neither store nor accept a connection (EMFILE).
    names = [f"n{i}" for i in range(MAX_OPEN + 10)] + ["n0"]
    for n in names:
        assert client.ask({"op": "append", "msgs": [msg(n)]}) == {"ok": 1}
    assert len(server.store.files) <= MAX_OPEN
    server.stop()
    assert LogStore(tmp_path / "hub").logs == {n: server.store.logs[n] for n in names}
    assert len(LogStore(tmp_path / "hub").logs["n0"]) == 2


def test_a_reset_connection_leaves_no_traceback(server: LogServer,
                                                capfd: pytest.CaptureFixture[str]) -> None:
    s = socket.create_connection(server.server_address[:2], timeout=5.0)
    s.sendall(b'{"op": "stats"')
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST
    s.close()
    c = Client(server.server_address[:2])
    try:
        time.sleep(0.3)
        assert c.ask({"op": "stats"}) == {"kinds": {}, "nodes": {}}
    finally:
        c.close()
    assert "Traceback" not in capfd.readouterr().err


# -- readers ------------------------------------------------------------------------
def test_reader_skips_and_counts_what_it_cannot_decode(server: LogServer) -> None:
    # The server refuses these now; an inbox written by an older server, or one whose
    # wire knows a kind this reader does not, can still hand them back.
    good = Message(Kind.PROPAGATE, "A[0]", "manager", 1, 1)
    server.store.logs["manager"] = [json.dumps(msg(kind="NOPE")), wire.dumps(good),
                                    json.dumps(msg(kind="DATA", payload=5)), "[1]"]
    end = Endpoint("manager", TcpTransport(server.address))
    assert end.poll() == good
    assert end.poll() is None
    assert (end.offset, end.skipped) == (4, 3)


def test_manager_survives_an_undecodable_answer(server: LogServer, tmp_path: Path) -> None:
    flow = Dataflow([OpSpec("S", 1), OpSpec("A", 2, 0)], [("S", "A")])
    m = Manager(flow, TcpTransport(server.address), {"A": RoutingTable("A", 2)},
                tmp_path / "store", lambda metrics, t: dict(t))
    server.store.logs["manager"] = [json.dumps(msg(kind="SEND_METRICS", payload=[1]))]
    assert m.step() is False
    assert (m.end.offset, m.end.skipped) == (1, 1)


# -- the inbox files ----------------------------------------------------------------
def test_an_unfinished_last_line_is_cut_not_glued_to_the_next(tmp_path: Path) -> None:
    hub = tmp_path / "hub"
    hub.mkdir()
    first = Message(Kind.PROPAGATE, "A[0]", "manager", 1, 1)
    # A server killed while writing the second message: never acknowledged.
    (hub / "manager.jsonl").write_text(wire.dumps(first) + "\n" + wire.dumps(first)[:20])
    srv = LogServer("127.0.0.1", 0, hub).start()
    third = Message(Kind.DONE, "A[0]", "manager", 1, 3)
    try:
        TcpTransport(srv.address).send(third)
    finally:
        srv.stop()
    srv = LogServer("127.0.0.1", 0, hub).start()  # restarted: both messages, intact
    try:
        end = Endpoint("manager", TcpTransport(srv.address))
        assert [end.poll(), end.poll(), end.poll()] == [first, third, None]
        assert end.skipped == 0
    finally:
        srv.stop()


def test_a_whole_last_line_without_its_newline_is_kept(tmp_path: Path) -> None:
    hub = tmp_path / "hub"
    hub.mkdir()
    ms = [Message(Kind.DONE, "A[0]", "manager", 1, s) for s in (1, 2, 3)]
    (hub / "manager.jsonl").write_text(wire.dumps(ms[0]) + "\n" + wire.dumps(ms[1]))
    LogStore(hub).append([wire.to_json(ms[2])])
    assert [wire.loads(ln) for ln in LogStore(hub).logs["manager"]] == ms


def test_bad_files_leave_every_file_untouched(tmp_path: Path) -> None:
    hub = tmp_path / "hub"
    hub.mkdir()
    torn = wire.dumps(Message(Kind.DONE, "A[0]", "A", 1, 1)) + "\n{\"kind\": \"DO"
    (hub / "A.jsonl").write_text(torn)
    (hub / "B.jsonl").write_text("[1]\n")
    with pytest.raises(TraceError, match=r"B\.jsonl:1: not a protocol message"):
        LogStore(hub)
    assert (hub / "A.jsonl").read_text() == torn


@pytest.mark.parametrize("line", ['{"kind": "NOPE", "src": "A[0]", "dst": "manager"}',
                                  "not json", '{"kind": "DONE", "src": "A[0]", "dst": NaN}'])
def test_a_bad_inbox_file_stops_the_server_with_one_line(line: str, tmp_path: Path) -> None:
    hub = tmp_path / "hub"
    hub.mkdir()
    good = wire.dumps(Message(Kind.DONE, "A[0]", "manager", 1, 1))
    (hub / "manager.jsonl").write_text(f"{good}\n{line}\n{good}\n")
    p = subprocess.run([sys.executable, "-m", "streamband.locality.tcp", "--listen",
                        "127.0.0.1:0", "--dir", str(hub)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2
    assert p.stdout == ""
    assert p.stderr.startswith(f"log server: {hub / 'manager.jsonl'}:2: not a protocol message")
    assert p.stderr.count("\n") == 1


@pytest.mark.parametrize("listen", ["127.0.0.1:x", "nohost", "127.0.0.1:99999"])
def test_a_bad_listen_address_is_one_line(listen: str, tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "streamband.locality.tcp", "--listen", listen],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert p.stderr.startswith("log server: --listen") and p.stderr.count("\n") == 1


# -- the manager --------------------------------------------------------------------
def test_manager_ignores_answers_from_nodes_not_in_its_dataflow(server: LogServer,
                                                                tmp_path: Path) -> None:
    flow = Dataflow([OpSpec("S", 1), OpSpec("A", 2, 0)], [("S", "A")])
    t = TcpTransport(server.address)
    m = Manager(flow, t, {"A": RoutingTable("A", 2)}, tmp_path / "store",
                lambda metrics, tables: dict(tables))
    m.start_round()
    none: dict[str, Any] = {"keys": [], "pairs": {}}
    for src in ("nobody", "A[7]", "S[0]", "A[0]"):  # two strangers, then two of three
        t.send(Message(Kind.SEND_METRICS, src, "manager", 1, 1, none))
    while m.step():
        pass
    assert m.rec.phase == ManagerPhase.COLLECTING and sorted(m._metrics) == ["A[0]", "S[0]"]
    t.send(Message(Kind.SEND_METRICS, "A[1]", "manager", 1, 1, none))
    while m.step():
        pass
    assert m.rec.phase == ManagerPhase.PREPARED
