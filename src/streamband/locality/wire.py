"""The protocol's messages as JSON, the one format both sides of a real transport speak.

003 §3.4's messages (Fig. 6) cross process and language boundaries on a TCP
transport (:mod:`streamband.locality.tcp`) and inside Storm (the Java instances of
``storm/``, package ``streamband.storm.locality``): one JSON object per message,
``{"kind", "src", "dst", "epoch", "seq", "payload"}``. Keys are JSON strings or
integers (a JSON array stands for a tuple key). Payloads by kind:

- DATA: ``[tid, [field, ...]]``;
- SEND_METRICS: ``{"keys": [[key, count], ...], "pairs": {succ: [[key, key', count], ...]}}``
  (003 Fig. 4);
- SEND_RECONF: ``{"epoch", "router": {op: table}, "send": {dst: [key, ...]},
  "receive": {src: [key, ...]}}`` (003 §3.4: reconfiguration_router, _send, _receive),
  a table being :meth:`RoutingTable.to_json`;
- MIGRATE: ``[[key, state], ...]`` (a state is ``null`` for a key that had none);
- the others: ``null``.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from typing import Any

from streamband.locality.routing_table import RoutingTable
from streamband.locality.transport import Kind, Message


def plain(v: Any) -> Any:
    """A decoded JSON value with arrays as tuples (hashable keys, comparable states)."""
    if isinstance(v, list):
        return tuple(plain(x) for x in v)
    return v


def _keys(ks: list) -> list[Hashable]:
    return [plain(k) for k in ks]


def encode_payload(kind: Kind, payload: Any) -> Any:
    from streamband.locality.reconfig import Reconf

    if payload is None:
        return None
    if kind == Kind.DATA:
        tid, fields = payload
        return [tid, list(fields)]
    if kind == Kind.SEND_RECONF:
        r: Reconf = payload
        return {"epoch": r.epoch, "router": {op: t.to_json() for op, t in r.router.items()},
                "send": {d: list(ks) for d, ks in r.send.items()},
                "receive": {s: list(ks) for s, ks in r.receive.items()}}
    if kind == Kind.MIGRATE:
        return [[k, v] for k, v in payload.items()]
    if kind == Kind.SEND_METRICS:
        return {"keys": [[k, c] for k, c in payload["keys"]],
                "pairs": {s: [[a, b, c] for a, b, c in ps]
                          for s, ps in payload["pairs"].items()}}
    return payload


def decode_payload(kind: Kind, p: Any) -> Any:
    from streamband.locality.reconfig import Reconf

    if p is None:
        return None
    if kind == Kind.DATA:
        return (p[0], plain(p[1]))
    if kind == Kind.SEND_RECONF:
        return Reconf(int(p["epoch"]),
                      {op: RoutingTable.from_json(t) for op, t in p["router"].items()},
                      {d: _keys(ks) for d, ks in p["send"].items()},
                      {s: _keys(ks) for s, ks in p["receive"].items()})
    if kind == Kind.MIGRATE:
        return {plain(k): plain(v) for k, v in p}
    if kind == Kind.SEND_METRICS:
        return {"keys": [(plain(k), int(c)) for k, c in p["keys"]],
                "pairs": {s: [(plain(a), plain(b), int(c)) for a, b, c in ps]
                          for s, ps in p["pairs"].items()}}
    return p


def to_json(msg: Message) -> dict[str, Any]:
    return {"kind": msg.kind.value, "src": msg.src, "dst": msg.dst, "epoch": msg.epoch,
            "seq": msg.seq, "payload": encode_payload(msg.kind, msg.payload)}


def from_json(d: dict[str, Any]) -> Message:
    kind = Kind(d["kind"])
    return Message(kind, d["src"], d["dst"], int(d.get("epoch", 0)), int(d.get("seq", 0)),
                   decode_payload(kind, d.get("payload")))


def dumps(msg: Message) -> str:
    return json.dumps(to_json(msg), separators=(",", ":"))


def loads(line: str | bytes) -> Message:
    return from_json(json.loads(line))
