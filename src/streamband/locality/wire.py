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

Keys, fields and states are null, booleans, finite numbers, strings or arrays of them
(no objects); integers fit a signed 64-bit long, epochs, sequence numbers and counts are
not negative. :func:`from_json` refuses anything else with :class:`BadMessage`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable
from typing import Any

from streamband.locality.routing_table import RoutingTable
from streamband.locality.transport import BadMessage, Kind, Message

KINDS = [k.value for k in Kind]
PAYLOAD_KINDS = {Kind.DATA, Kind.SEND_METRICS, Kind.SEND_RECONF, Kind.MIGRATE}
LONG = 1 << 63  # the Java instances read every integer as a long
MAX_DEPTH = 16  # arrays in a key, field or state; a deeper one is no tuple a workload makes


def describe(v: Any) -> str:
    """``v`` for an error line: its type and its repr, cut at 40 characters."""
    text = repr(v)
    return f"{type(v).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


def _int(v: Any, where: str, low: int = 0, high: int = LONG) -> int:
    if type(v) is not int or not low <= v < high:
        raise BadMessage(f"{where}: expected an integer in [{low}, {high}), got {describe(v)}")
    return v


def _str(v: Any, where: str) -> str:
    if not isinstance(v, str):
        raise BadMessage(f"{where}: expected a string, got {describe(v)}")
    return v


def _list(v: Any, where: str, n: int | None = None) -> list:
    if not isinstance(v, list) or (n is not None and len(v) != n):
        raise BadMessage(f"{where}: expected {'an array' if n is None else f'[{n} items]'}, "
                         f"got {describe(v)}")
    return v


def _obj(v: Any, where: str) -> dict:
    if not isinstance(v, dict):
        raise BadMessage(f"{where}: expected an object, got {describe(v)}")
    return v


def value(v: Any, where: str, depth: int = 0) -> Hashable:
    """A key, field or state: null, a boolean, a finite number, a string or an array of
    them (as a tuple); what both the instances and the manager can hash and compare."""
    if isinstance(v, list):
        if depth >= MAX_DEPTH:
            raise BadMessage(f"{where}: expected arrays nested at most {MAX_DEPTH} deep")
        return tuple(value(x, where, depth + 1) for x in v)
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return _int(v, where, -LONG)
    if isinstance(v, float) and math.isfinite(v):
        return v
    raise BadMessage(f"{where}: expected null, a boolean, a finite number, a string or an "
                     f"array of them, got {describe(v)}")


def _keys(ks: Any, where: str) -> list[Hashable]:
    return [value(k, f"{where}[{i}]") for i, k in enumerate(_list(ks, where))]


def _table(t: Any, where: str) -> RoutingTable:
    t = _obj(t, where)
    par = _int(t.get("parallelism"), f"{where}.parallelism", 1)
    table = {}
    for i, kv in enumerate(_list(t.get("table"), f"{where}.table")):
        k, v = _list(kv, f"{where}.table[{i}]", 2)
        table[value(k, f"{where}.table[{i}][0]")] = _int(v, f"{where}.table[{i}][1]", 0, par)
    return RoutingTable(_str(t.get("op"), f"{where}.op"), par, table)


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
    """The payload of a ``kind`` message from its JSON; :class:`BadMessage` if it has not
    the shape the module docstring gives."""
    from streamband.locality.reconfig import Reconf

    if kind not in PAYLOAD_KINDS:
        if p is not None:
            raise BadMessage(f"payload: expected null for {kind}, got {describe(p)}")
        return None
    if kind == Kind.DATA:
        tid, fields = _list(p, "payload", 2)
        return (_int(tid, "payload[0]", -LONG),
                tuple(value(f, f"payload[1][{i}]") for i, f in
                      enumerate(_list(fields, "payload[1]"))))
    if kind == Kind.SEND_RECONF:
        p = _obj(p, "payload")
        return Reconf(_int(p.get("epoch"), "payload.epoch"),
                      {op: _table(t, f"payload.router.{op}")
                       for op, t in _obj(p.get("router"), "payload.router").items()},
                      {d: _keys(ks, f"payload.send.{d}")
                       for d, ks in _obj(p.get("send"), "payload.send").items()},
                      {s: _keys(ks, f"payload.receive.{s}")
                       for s, ks in _obj(p.get("receive"), "payload.receive").items()})
    if kind == Kind.MIGRATE:
        out = {}
        for i, kv in enumerate(_list(p, "payload")):
            k, v = _list(kv, f"payload[{i}]", 2)
            out[value(k, f"payload[{i}][0]")] = value(v, f"payload[{i}][1]")
        return out
    p = _obj(p, "payload")  # SEND_METRICS
    keys = []
    for i, kc in enumerate(_list(p.get("keys"), "payload.keys")):
        k, c = _list(kc, f"payload.keys[{i}]", 2)
        keys.append((value(k, f"payload.keys[{i}][0]"), _int(c, f"payload.keys[{i}][1]")))
    pairs = {}
    for succ, ps in _obj(p.get("pairs"), "payload.pairs").items():
        where = f"payload.pairs.{succ}"
        pairs[succ] = []
        for i, abc in enumerate(_list(ps, where)):
            a, b, c = _list(abc, f"{where}[{i}]", 3)
            pairs[succ].append((value(a, f"{where}[{i}][0]"), value(b, f"{where}[{i}][1]"),
                                _int(c, f"{where}[{i}][2]")))
    return {"keys": keys, "pairs": pairs}


def to_json(msg: Message) -> dict[str, Any]:
    return {"kind": msg.kind.value, "src": msg.src, "dst": msg.dst, "epoch": msg.epoch,
            "seq": msg.seq, "payload": encode_payload(msg.kind, msg.payload)}


def from_json(d: Any) -> Message:
    """The message a decoded JSON value stands for; :class:`BadMessage` (what is wrong,
    what was expected) if it is not one. The one definition of a valid message: the log
    server refuses to store what this refuses, and readers skip it."""
    d = _obj(d, "message")
    k = d.get("kind")
    if k not in KINDS:
        raise BadMessage(f"kind: expected one of {', '.join(KINDS)}, got {describe(k)}")
    kind = Kind(k)
    return Message(kind, _str(d.get("src"), "src"), _str(d.get("dst"), "dst"),
                   _int(d.get("epoch", 0), "epoch"), _int(d.get("seq", 0), "seq"),
                   decode_payload(kind, d.get("payload")))


def parse(text: str | bytes) -> Any:
    """JSON as both sides read it: NaN, Infinity and numbers beyond a double are refused
    (ValueError), since the Java instances' parser rejects them."""
    return json.loads(text, parse_constant=_non_finite, parse_float=_finite)


def _non_finite(name: str) -> Any:
    raise ValueError(f"{name} is not a finite number; expected finite numbers only")


def _finite(text: str) -> float:
    f = float(text)
    if not math.isfinite(f):
        raise ValueError(f"{text[:20]} is not a finite double; expected finite numbers only")
    return f


def dumps(msg: Message) -> str:
    return json.dumps(to_json(msg), separators=(",", ":"))


def loads(line: str | bytes) -> Message:
    try:
        d = parse(line)
    except (ValueError, RecursionError) as e:
        raise BadMessage(f"message: not JSON ({e})") from None
    return from_json(d)
