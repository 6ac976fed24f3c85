"""Strict priority between up to 8 classes on chosen egress ports, for App-Fair
(000 §VII c: "a multi-level strict priority scheduler among a set Q = {q1..qm}
of queues, where m = 8 in our testbed", flows of one group in the same queue
index, re-associated online by the controller) and for coflow priorities (004).

Mechanism: Linux HTB classes with ``prio`` on the switch-side veth, classified
by u32 on the flow's 5-tuple (with a DSCP class-selector fallback).
---------------------------------------------------------------------------

On a port the controller is asked to prioritise, the single HTB class that
shapes the link (Mininet's ``TCLink``: ``5:1`` at the link's rate) is replaced by

- ``5:1``  HTB at the link rate (rate = ceil), the link's capacity as before;
- ``5:10`` ... ``5:17``: one leaf per class c = 0..7 under ``5:1``, ``prio c``,
  a tiny assured rate (1/1000 of the link, at least 8 kbit/s) and ``ceil`` = the
  link rate. HTB lends the parent's spare tokens to the leaves in ``prio`` order,
  so a lower class number gets every byte it asks for before a higher one gets
  any: strict priority, with the tiny assured rate as the only leak (no
  starvation to zero, which 000 §VII also wants);
- u32 filters on the root, one per (port, flow): IPv4 source/destination,
  protocol, transport ports (0 = any) -> ``5:1c``. Re-assigning a flow adds the
  new filter before deleting the old one, so a swap is atomic enough for TCP;
- fallback filters after them: a sender that marks its packets with a DSCP class
  selector CSn gets class 7 - n (CS7 highest), so senders may mark instead of
  being listed;
- anything else goes to the default class 7 (lowest);
- each leaf's own queue is a pfifo of ``LEAF_LIMIT_PKTS`` = 8 packets, not the
  default leaf qdisc (a pfifo of the device's txqueuelen, 1000 packets). Why: the
  userspace datapath sends on every port through one AF_PACKET socket (ifindex 0)
  with the default 212,992-byte send buffer, and a packet queued in tc holds its
  skb's truesize (2,304 bytes measured for these frames) of that buffer until it
  leaves the port. With 1000-packet leaves a low class's backlog fills the buffer
  (the port's queue stopped at 92 packets = 212,992 / 2,304, every class together),
  and then the high class's packets wait in the socket, or are dropped there, before
  tc's priority can act: head-of-line blocking in front of the scheduler. With 8
  packets a leaf, 8 leaves hold at most 64 x 2,304 = 147 kB, less than the buffer.
  Measured (2 applications, tests/testbed/test_appfair.py, App-Fair phase): the
  socket's send-buffer use median 127 kB, max 212 kB (full) with 1000-packet leaves,
  25 kB / 37 kB with 8; in ``bench appfair --backend testbed --seconds 115`` (five
  applications with 1-5 flows) Jain's index under App-Fair at alpha = 0.25 / 0.5 /
  0.75 / 1 went from 0.86 / 0.90 / 0.88 / 0.91 to 1.00 / 0.97 / 0.99 / 0.97 (a
  second run with 8: 0.95 / 0.99 / 0.99 / 0.97; TCP 0.78, 0.75) at the
  same offered load (the same spec; every run carried 18.9-19.1 Mbit/s in all on
  the 20 Mbit/s downlink). tests/testbed/test_priority.py checks the buffer stays
  under a quarter full beside a backlogged low class (1000-packet leaves: 67 %).

A port's shape (:class:`PortShape`, given with an assignment) may change two things:
each class's pfifo length (every class ``LEAF_LIMIT_PKTS`` by default, which App-Fair's
figures above depend on), so that e.g. one class can hold the whole port's buffer
(8 x 8 = 64 packets in one leaf, for plain TCP beside Stream's 8 classes of 8), and a
reserved leaf ``5:18`` (index ``RESERVED`` = 8) served at an assured rate ahead of the
eight classes (``prio 0``, ``rate`` = the reserve, ``ceil`` = the link): HTB sends from
a leaf below its own rate before it lends to any borrowing leaf, so traffic listed in it
(004's steady background) takes its rate off the link and leaves all eight strict
classes to the rest. Every leaf of a port together may hold at most
``SEND_BUFFER_PKTS`` = 212,992 // 2,304 = 92 packets, the point where the switch's send
buffer is full (above).

Assignments carry a lease like the meters (3 s by default through the API,
renewed by ``POST /v1/lease``): when it runs out the flow loses its filter, and a
port with no listed flow left gets its single HTB class back, so a crashed
manager leaves plain sharing behind, not a stale priority order.

Why not OVS queues: on this machine OVS runs the userspace datapath (no kernel
module: checked on this machine kind). ``ovs-vsctl set port P qos=@q ... type=linux-htb`` with
two queues (``priority`` 0 and 7) *does* build an HTB tree on the netdev port,
and flow rules with ``set_queue:N`` match (their counters move), but every packet
lands in queue 0's class: the userspace datapath sends through an AF_PACKET
socket without the skb priority that ``set_queue`` would set in the kernel
datapath, so the queues never see traffic (checked: 9.8 / 9.3 Mbit/s for
"queue 0" / "queue 1" flows on a 20 Mbit/s port, the second class's counter 0).
Nor the ``prio`` qdisc (not in this kernel). So the controller drives ``tc``
itself: it runs in the root namespace, where the switch-side veths live.

The u32 port matches assume IPv4 headers without options (``ip sport/dport``
read offset 20), which is what the hosts send.
"""

from __future__ import annotations

import math
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from streamband.errors import RunError
from streamband.sdn.flowkey import FlowKey

CLASSES = 8
#: packets each leaf class may queue (its own pfifo): short, so that a low class's
#: backlog waits in tc, behind the priority, and not in the switch's shared send
#: buffer in front of it (see the module's docstring)
LEAF_LIMIT_PKTS = 8
#: the most packets all leaves of a port may hold together: the userspace datapath's
#: AF_PACKET send buffer over one queued frame's truesize (see the module's docstring)
SEND_BUFFER_PKTS = 212_992 // 2_304
RESERVED = CLASSES  # a port's reserved leaf (5:18), when its shape has one
HANDLE = 5  # Mininet's TCLink root handle: the tree keeps it
FIRST_PREF, FALLBACK_PREF = 100, 60000  # u32 filter priorities: flows first, DSCP after
MIN_ASSURED_BPS = 8e3
DEFAULT_CLASS = CLASSES - 1
_RATE = re.compile(r"\brate (\d+(?:\.\d+)?)([KMG]?)bit\b")
_UNIT = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}


def assured_bps(link_bps: float) -> float:
    """A class leaf's assured rate on a link of ``link_bps``: what a class gets when every
    higher class takes the whole link (1/1000 of it, at least ``MIN_ASSURED_BPS``)."""
    return max(MIN_ASSURED_BPS, link_bps / 1000.0)


class PriorityError(RunError):
    """A port that cannot be prioritised or a failed ``tc`` call."""


def tc_batch(lines: list[str]) -> None:
    """Run ``tc`` commands in one process (``tc -batch``); raise on the first error."""
    if not lines:
        return
    r = subprocess.run(["tc", "-batch", "-"], input="\n".join(lines) + "\n",
                       capture_output=True, text=True)
    if r.returncode:
        raise PriorityError(f"tc: {r.stderr.strip()[-300:]}")


def link_rate_bps(dev: str) -> float | None:
    """The rate of ``dev``'s root HTB class (the link's shaping), None if unshaped."""
    r = subprocess.run(["tc", "class", "show", "dev", dev], capture_output=True, text=True)
    if r.returncode:
        raise PriorityError(f"port {dev}: {r.stderr.strip() or 'no such device'}")
    for line in r.stdout.splitlines():
        if line.startswith(f"class htb {HANDLE}:1 ") and " root " in line:
            m = _RATE.search(line)
            if m:
                return float(m.group(1)) * _UNIT[m.group(2)]
    return None


def restore_link(dev: str, rate_bps: float) -> None:
    """Shape ``dev`` with one HTB class at ``rate_bps`` again, as Mininet's TCLink left it
    (plain sharing); nothing when the port is gone (the testbed is down)."""
    subprocess.run(["tc", "qdisc", "del", "dev", dev, "root"], capture_output=True)
    try:
        tc_batch([
            f"qdisc add dev {dev} root handle {HANDLE}:0 htb default 1",
            f"class add dev {dev} parent {HANDLE}:0 classid {HANDLE}:1 htb "
            f"rate {rate_bps:.0f}bit burst 15k",
        ])
    except PriorityError:
        pass


def u32_filter(dev: str, pref: int, flow: FlowKey, flowid: str) -> str:
    """The ``tc`` line that sends ``flow``'s packets on ``dev`` to class ``flowid``."""
    proto = 6 if flow.proto == "tcp" else 17
    match = (f"match ip src {flow.src_ip}/32 match ip dst {flow.dst_ip}/32 "
             f"match ip protocol {proto} 0xff")
    if flow.src_port:
        match += f" match ip sport {flow.src_port} 0xffff"
    if flow.dst_port:
        match += f" match ip dport {flow.dst_port} 0xffff"
    return (f"filter add dev {dev} parent {HANDLE}: protocol ip pref {pref} u32 {match} "
            f"flowid {flowid}")


@dataclass(frozen=True)
class PortShape:
    """How a port's tree is built: each class's pfifo length in packets, and a reserved
    leaf (``reserve_bps`` > 0) served at that rate ahead of the strict classes, with a
    pfifo of ``reserve_pkts``."""

    leaf_pkts: tuple[int, ...] = (LEAF_LIMIT_PKTS,) * CLASSES
    reserve_bps: float = 0.0
    reserve_pkts: int = LEAF_LIMIT_PKTS

    @property
    def total_pkts(self) -> int:
        """Packets every leaf of the port may hold together."""
        return sum(self.leaf_pkts) + (self.reserve_pkts if self.reserve_bps > 0 else 0)

    def check(self, dev: str, rate_bps: float) -> None:
        """Raise PriorityError unless the shape fits a port of ``rate_bps``: one
        length >= 1 per class, a reserve below the link rate, at most
        :data:`SEND_BUFFER_PKTS` packets in all."""
        if len(self.leaf_pkts) != CLASSES or min(self.leaf_pkts) < 1 or self.reserve_pkts < 1:
            raise PriorityError(f"port {dev}: leaf_pkts: expected {CLASSES} lengths >= 1, "
                                f"got {list(self.leaf_pkts)} (reserve {self.reserve_pkts})")
        if not 0 <= self.reserve_bps < rate_bps:
            raise PriorityError(f"port {dev}: reserve_bps: expected 0..<{rate_bps:.0f}, "
                                f"got {self.reserve_bps:.0f}")
        if self.total_pkts > SEND_BUFFER_PKTS:
            raise PriorityError(f"port {dev}: leaves hold {self.total_pkts} packets in all, "
                                f"more than the switch's send buffer ({SEND_BUFFER_PKTS})")


DEFAULT_SHAPE = PortShape()


def _leaf_lines(dev: str, rate: float, shape: PortShape, old: PortShape | None) -> list[str]:
    """``tc`` lines that give ``dev``'s classes (built with ``old``; None: not yet) the
    leaf lengths and reserved leaf of ``shape``."""
    h, lines = HANDLE, []
    for c, n in enumerate(shape.leaf_pkts):
        if old is None or old.leaf_pkts[c] != n:
            verb = "add" if old is None else "replace"
            lines.append(f"qdisc {verb} dev {dev} parent {h}:{10 + c} handle {10 + c}: "
                         f"pfifo limit {n}")
    had = old is not None and old.reserve_bps > 0
    if shape.reserve_bps > 0:
        if not had or old.reserve_bps != shape.reserve_bps:
            lines.append(f"class {'change' if had else 'add'} dev {dev} parent {h}:1 "
                         f"classid {h}:{10 + RESERVED} htb rate {shape.reserve_bps:.0f}bit "
                         f"ceil {rate:.0f}bit burst 15k prio 0 quantum 1514")
        if not had or old.reserve_pkts != shape.reserve_pkts:
            lines.append(f"qdisc {'replace' if had else 'add'} dev {dev} parent "
                         f"{h}:{10 + RESERVED} handle {10 + RESERVED}: pfifo limit "
                         f"{shape.reserve_pkts}")
    elif had:
        lines.append(f"class del dev {dev} classid {h}:{10 + RESERVED}")
    return lines


@dataclass
class PortTree:
    """The priority tree on one egress port and its flow filters."""

    dev: str
    rate_bps: float
    shape: PortShape = DEFAULT_SHAPE
    prefs: dict[tuple[Any, ...], tuple[int, int, FlowKey]] = field(default_factory=dict)
    expires: dict[tuple[Any, ...], float] = field(default_factory=dict)  # monotonic s
    next_pref: int = FIRST_PREF
    free: list[int] = field(default_factory=list)

    def alloc(self) -> int:
        if self.free:
            return self.free.pop()
        if self.next_pref >= FALLBACK_PREF:
            raise PriorityError(f"port {self.dev}: too many prioritised flows")
        self.next_pref += 1
        return self.next_pref - 1


class PriorityQueues:
    """The controller's priority classes: per-port HTB trees and flow filters."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ports: dict[str, PortTree] = {}

    def _tree(self, dev: str, rate_bps: float | None,
              shape: PortShape | None = None) -> PortTree:
        """``dev``'s tree, built on first use with ``shape`` (the default when None);
        an existing tree takes ``shape``'s leaf lengths and reserve in place (its
        filters stay)."""
        tree = self.ports.get(dev)
        if tree is not None:
            if shape is not None and shape != tree.shape:
                shape.check(dev, tree.rate_bps)
                if (shape.reserve_bps <= 0 < tree.shape.reserve_bps
                        and any(c == RESERVED for _, c, _ in tree.prefs.values())):
                    raise PriorityError(f"port {dev}: flows are listed in the reserved "
                                        "leaf; a shape without one cannot drop it")
                tc_batch(_leaf_lines(dev, tree.rate_bps, shape, tree.shape))
                tree.shape = shape
            return tree
        rate = rate_bps or link_rate_bps(dev)
        if rate is None:
            raise PriorityError(f"port {dev}: not shaped; rate_bps is required")
        shape = shape or DEFAULT_SHAPE
        shape.check(dev, rate)
        assured = assured_bps(rate)
        h = HANDLE
        lines = [
            f"qdisc add dev {dev} root handle {h}: htb default {10 + DEFAULT_CLASS} r2q 100",
            f"class add dev {dev} parent {h}: classid {h}:1 htb rate {rate:.0f}bit "
            f"ceil {rate:.0f}bit burst 15k",
        ]
        for c in range(CLASSES):
            lines.append(f"class add dev {dev} parent {h}:1 classid {h}:{10 + c} htb "
                         f"rate {assured:.0f}bit ceil {rate:.0f}bit burst 15k "
                         f"prio {c} quantum 1514")
        lines += _leaf_lines(dev, rate, shape, None)
        for cs in range(8):  # DSCP class selector CSn -> class 7 - n
            lines.append(f"filter add dev {dev} parent {h}: protocol ip pref "
                         f"{FALLBACK_PREF + cs} u32 match ip tos {cs << 5:#04x} 0xe0 "
                         f"flowid {h}:{10 + DEFAULT_CLASS - cs}")
        # no root qdisc yet is fine: ignore this one's status
        subprocess.run(["tc", "qdisc", "del", "dev", dev, "root"], capture_output=True)
        tc_batch(lines)
        tree = PortTree(dev, rate, shape)
        self.ports[dev] = tree
        return tree

    def assign(self, items: list[tuple[str, FlowKey, int, float | None]],
               lease_s: float = math.inf,
               shapes: dict[str, PortShape] | None = None) -> dict[str, Any]:
        """Put each ``(port, flow, class, link rate or None)`` in its class (0..7, or
        :data:`RESERVED` on a port whose shape has a reserve), creating the port's
        tree on first use with its shape in ``shapes`` (the default when absent; a
        listed shape also reshapes an existing tree), for ``lease_s`` seconds (renewed
        by a later assignment or :meth:`renew`; see :meth:`expire`); returns counts
        and the time spent."""
        t0 = time.perf_counter()
        counts = {"assigned": 0, "unchanged": 0}
        expires = time.monotonic() + lease_s
        shapes = shapes or {}
        if set(shapes) - {dev for dev, *_ in items}:
            raise PriorityError(f"shapes: ports {sorted(set(shapes) - {d for d, *_ in items})}"
                                " have no flow in this assignment")
        with self.lock:
            adds: list[str] = []
            dels: list[str] = []
            freed: list[tuple[PortTree, int]] = []  # reusable after this batch only
            for dev, *_, rate in items:  # shapes first: a flow may need the reserve
                if dev in shapes:
                    self._tree(dev, rate, shapes[dev])
            for dev, flow, cls, rate in items:
                tree = self._tree(dev, rate)
                reserve = tree.shape.reserve_bps > 0
                if not (0 <= cls < CLASSES or cls == RESERVED and reserve):
                    raise PriorityError(f"class: expected 0..{CLASSES - 1}"
                                        f"{f' or {RESERVED} (the reserve)' if reserve else ''}"
                                        f" on port {dev}, got {cls}")
                old = tree.prefs.get(flow.key())
                tree.expires[flow.key()] = expires
                if old is not None and old[1] == cls:
                    counts["unchanged"] += 1
                    continue
                pref = tree.alloc()
                adds.append(u32_filter(dev, pref, flow, f"{HANDLE}:{10 + cls}"))
                if old is not None:
                    dels.append(f"filter del dev {dev} parent {HANDLE}: protocol ip "
                                f"pref {old[0]}")
                    freed.append((tree, old[0]))
                tree.prefs[flow.key()] = (pref, cls, flow)
                counts["assigned"] += 1
            tc_batch(adds)  # new filters first: a re-assigned flow is never unclassified
            tc_batch(dels)
            for tree, pref in freed:
                tree.free.append(pref)
        out: dict[str, Any] = dict(counts)
        out["elapsed_ms"] = (time.perf_counter() - t0) * 1e3
        return out

    def unassign(self, dev: str, flow: FlowKey) -> bool:
        """Back to the default class; False if the flow had no class on ``dev``."""
        with self.lock:
            tree = self.ports.get(dev)
            old = tree.prefs.pop(flow.key(), None) if tree else None
            if tree is None or old is None:
                return False
            tree.expires.pop(flow.key(), None)
            tc_batch([f"filter del dev {dev} parent {HANDLE}: protocol ip pref {old[0]}"])
            tree.free.append(old[0])
            return True

    def renew(self, lease_s: float) -> int:
        """Every assignment's lease runs ``lease_s`` from now; returns how many."""
        with self.lock:
            deadline = time.monotonic() + lease_s
            n = 0
            for tree in self.ports.values():
                for key in tree.expires:
                    tree.expires[key] = deadline
                    n += 1
            return n

    def expire(self, now: float | None = None) -> int:
        """Drop the assignments whose lease ran out (fail-open, like the meters): their
        flows go back to the default class, and a port left with no listed flow is
        reset to one HTB class (plain sharing). Returns how many were dropped."""
        now = time.monotonic() if now is None else now
        dropped = 0
        with self.lock:
            for tree in list(self.ports.values()):
                dead = [k for k, t in tree.expires.items() if t <= now]
                if not dead:
                    continue
                lines = []
                for k in dead:
                    del tree.expires[k]
                    pref = tree.prefs.pop(k)[0]
                    lines.append(f"filter del dev {tree.dev} parent {HANDLE}: protocol ip "
                                 f"pref {pref}")
                    tree.free.append(pref)
                dropped += len(dead)
                if tree.prefs:
                    tc_batch(lines)
                else:
                    self._reset(tree.dev)
        return dropped

    def listing(self) -> list[dict[str, Any]]:
        with self.lock:
            return [{"port": t.dev, "flow": f.model_dump(), "cls": c, "link_rate_bps": t.rate_bps}
                    for t in self.ports.values() for _, c, f in t.prefs.values()]

    def class_bytes(self, dev: str) -> list[int]:
        """Bytes sent so far by each class 0..7 of ``dev`` (tc's counters), and by its
        reserved leaf (a 9th entry) when its shape has one."""
        tree = self.ports.get(dev)
        n = CLASSES + (1 if tree is not None and tree.shape.reserve_bps > 0 else 0)
        r = subprocess.run(["tc", "-s", "class", "show", "dev", dev], capture_output=True,
                           text=True)
        out = [0] * n
        cur: int | None = None
        for line in r.stdout.splitlines():
            m = re.match(rf"class htb {HANDLE}:(\w+) ", line)
            if m:
                cid = int(m.group(1), 16)
                cur = cid - 0x10 if 0x10 <= cid < 0x10 + n else None
            elif cur is not None and line.strip().startswith("Sent "):
                out[cur] = int(line.split()[1])
        return out

    def reset(self, dev: str | None = None) -> list[str]:
        """Remove the tree of ``dev`` (every port when None) and shape the link with
        one HTB class again, as Mininet's TCLink left it. Returns the ports reset."""
        with self.lock:
            devs = [dev] if dev is not None else list(self.ports)
            return [d for d in devs if self._reset(d)]

    def _reset(self, dev: str) -> bool:
        """:meth:`reset` of one port, the lock held; False if it had no tree."""
        tree = self.ports.pop(dev, None)
        if tree is None:
            return False
        restore_link(dev, tree.rate_bps)
        return True
