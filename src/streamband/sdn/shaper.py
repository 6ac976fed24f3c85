"""Per-flow rate classes on switch egress ports: the bandwidth enforcer of 000 §V-B1 as a
shaper that queues, beside the OpenFlow meters that police.

A meter drops every packet above its flow's rate; TCP reads each drop as congestion and
halves its window, so a metered flow carries less than its rate (on Storm's Trending
Topics, paper-000 at 10-20 Mbit/s, the metered counters reached 70-90 % of their caps and
the aggregator's downlink carried 3-7 % fewer bytes than under plain TCP). Here each
listed flow gets its own HTB leaf on an egress port of its path (the switch-side veth of
a link) at the allocation's rate (eq. (4), 000 §IV-B), ``ceil`` the link's rate:

- ``5:1``  the link (rate = ceil = its capacity, as Mininet's TCLink shaped it);
- ``5:2``  traffic nobody listed (the reverse direction's ACKs, another tenant's or a
  source's own input, e.g. a Kafka consumer's fetches), ``prio 0``, assured what the
  listed rates leave of the link and at least what TCP would give one more flow,
  C / (n + 1) with n listed flows (:meth:`ShapedPort.other_rate`); it borrows first, so
  the flows leaving a host are never starved of their ACKs;
- ``5:100``... one leaf per listed flow, ``prio 1``, ``ceil`` = the link, assured its
  rate, scaled down with the others' where the listed rates and the unlisted class's
  share exceed the link (the split among the listed flows kept); quantum proportional to
  the rate: a backlogged flow always gets its assured rate, and what a class leaves
  unused goes to the backlogged ones in proportion to their rates (HTB's borrowing),
  instead of idling as it does behind a meter.

Why the unlisted class's share: the allocation gives the listed flows the link less the
cross traffic it measured, and a shaper that assured the unlisted class only that
remainder would pin cross traffic at what it got the step before, which ratchets it
down to nothing (measured on Kafka-fed Trending Topics at 15 Mbit/s, a spout's Kafka
fetches sharing the aggregator's downlink: 0.9-1.2 Mbit/s under such a shaper against
2.8-3.7 Mbit/s under TCP and under meters, where cross traffic still meets the capped
flows as TCP). A flow above its rate waits
  in its leaf's pfifo, whose length follows its assured rate (:func:`leaf_pkts`): every
  leaf then holds the same time's worth of its rate, as the port's one FIFO does for every
  flow under TCP, so a flow's window can grow to its rate's share of the port's queue; and
  all leaves together stay within the switch's send buffer
  (:data:`streamband.sdn.priority.SEND_BUFFER_PKTS`, the reason is there).

Leases as the priority classes': a flow whose lease runs out loses its leaf and filter,
and a port with no listed flow left gets its one HTB class back (plain TCP sharing).
"""

from __future__ import annotations

import math
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from streamband.sdn.flowkey import FlowKey
from streamband.sdn.priority import (
    CLASSES,
    FIRST_PREF,
    HANDLE,
    LEAF_LIMIT_PKTS,
    MIN_ASSURED_BPS,
    SEND_BUFFER_PKTS,
    PriorityError,
    link_rate_bps,
    restore_link,
    tc_batch,
    u32_filter,
)

OTHER = 2  # the class of traffic nobody listed (5:2)
FIRST_LEAF = 0x100
#: the least share of the link kept for unlisted traffic (ACKs of the port's reverse flows)
MIN_OTHER_FRAC = 0.02
#: bytes a leaf's quantum holds per bit/s of its rate: HTB lends spare capacity in
#: proportion to the quanta, so they follow the rates (within HTB's 1 MTU .. 200 kB)
QUANTUM_PER_BPS = 1 / 80
MIN_QUANTUM, MAX_QUANTUM = 1514, 200_000
#: packets every class of a port may queue beyond :data:`MIN_PKTS` each, split by rate:
#: the 8 x 8 that App-Fair's priority leaves hold together, measured to keep the switch's
#: send buffer from filling (in :mod:`streamband.sdn.priority`)
PORT_PKTS = CLASSES * LEAF_LIMIT_PKTS
MIN_PKTS = 2


def leaf_pkts(share: float, classes: int) -> int:
    """A class's pfifo length, packets, for ``share`` of the link's rate assured to it
    among ``classes`` classes on the port (the unlisted one included): :data:`MIN_PKTS`
    plus its share of :data:`PORT_PKTS`, so that a leaf queues as long (in time) as the
    others at their rates, and all of them together at most the switch's send buffer.

    >>> leaf_pkts(0.35, 5), leaf_pkts(0.05, 5), leaf_pkts(0.35, 60)
    (24, 5, 2)
    """
    budget = max(0, min(PORT_PKTS, SEND_BUFFER_PKTS - MIN_PKTS * classes))
    return MIN_PKTS + int(budget * min(1.0, max(0.0, share)))


def quantum(rate_bps: float) -> int:
    """A leaf's HTB quantum, bytes: proportional to its rate, within HTB's bounds."""
    return int(min(MAX_QUANTUM, max(MIN_QUANTUM, rate_bps * QUANTUM_PER_BPS)))


@dataclass
class Leaf:
    """One listed flow's class on a port."""

    minor: int
    pref: int
    flow: FlowKey
    rate_bps: float  # asked
    expires: float  # monotonic s
    set_bps: float = 0.0  # assured on the port (the asked rate, scaled to fit)
    pkts: int = 0  # its pfifo's length (0: none yet)


@dataclass
class ShapedPort:
    """The rate tree on one egress port."""

    dev: str
    link_bps: float
    leaves: dict[tuple[Any, ...], Leaf] = field(default_factory=dict)
    other_bps: float = 0.0
    other_pkts: int = LEAF_LIMIT_PKTS
    next_pref: int = FIRST_PREF
    next_minor: int = FIRST_LEAF
    free: list[tuple[int, int]] = field(default_factory=list)  # (minor, pref) to reuse

    def slot(self) -> tuple[int, int]:
        if self.free:
            return self.free.pop()
        if self.next_minor > 0xFFFF:
            raise PriorityError(f"port {self.dev}: too many shaped flows")
        self.next_minor += 1
        self.next_pref += 1
        return self.next_minor - 1, self.next_pref - 1

    def leaf_class(self, verb: str, lf: Leaf) -> str:
        return (f"class {verb} dev {self.dev} parent {HANDLE}:1 classid {HANDLE}:{lf.minor:x} "
                f"htb rate {lf.set_bps:.0f}bit ceil {self.link_bps:.0f}bit burst 15k prio 1 "
                f"quantum {quantum(lf.set_bps)}")

    def other_class(self, verb: str) -> str:
        return (f"class {verb} dev {self.dev} parent {HANDLE}:1 classid {HANDLE}:{OTHER} htb "
                f"rate {self.other_bps:.0f}bit ceil {self.link_bps:.0f}bit burst 15k prio 0 "
                f"quantum {MIN_QUANTUM}")

    def other_rate(self) -> float:
        """The unlisted class's assured rate: what the listed rates leave of the link, and
        at least one more flow's equal share of it, C / (n + 1), and the floor.

        >>> p = ShapedPort("p", 10e6)
        >>> p.leaves = {k: Leaf(0, 0, None, r, 0.0) for k, r in enumerate([6e6, 3e6])}
        >>> round(p.other_rate() / 1e6, 3), round(p.scale(), 3)
        (3.333, 0.741)
        """
        listed = sum(lf.rate_bps for lf in self.leaves.values())
        return max(self.link_bps * MIN_OTHER_FRAC, MIN_ASSURED_BPS, self.link_bps - listed,
                   self.link_bps / (len(self.leaves) + 1))

    def scale(self) -> float:
        """The factor on every listed rate that fits them beside the unlisted class."""
        listed = sum(lf.rate_bps for lf in self.leaves.values())
        room = self.link_bps - self.other_rate()
        return min(1.0, room / listed) if listed > 0 else 1.0


class FlowShaper:
    """The controller's per-flow rate classes: per-port HTB trees and flow filters."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ports: dict[str, ShapedPort] = {}

    def _port(self, dev: str, rate_bps: float | None) -> ShapedPort:
        port = self.ports.get(dev)
        if port is not None:
            return port
        link = rate_bps or link_rate_bps(dev)
        if link is None:
            raise PriorityError(f"port {dev}: not shaped; link_rate_bps is required")
        port = ShapedPort(dev, link, other_bps=link)
        h = HANDLE
        lines = [f"qdisc add dev {dev} root handle {h}: htb default {OTHER}",
                 f"class add dev {dev} parent {h}: classid {h}:1 htb rate {link:.0f}bit "
                 f"ceil {link:.0f}bit burst 15k",
                 port.other_class("add"),
                 f"qdisc add dev {dev} parent {h}:{OTHER} handle {OTHER}: pfifo limit "
                 f"{port.other_pkts}"]
        # no root qdisc yet is fine: ignore this one's status
        subprocess.run(["tc", "qdisc", "del", "dev", dev, "root"], capture_output=True)
        tc_batch(lines)
        self.ports[dev] = port
        return port

    def assign(self, items: list[tuple[str, FlowKey, float, float | None]],
               lease_s: float = math.inf) -> dict[str, Any]:
        """Give each ``(port, flow, rate bit/s, link rate or None)`` its leaf at that rate
        (infinite: the link's), creating the port's tree on first use, for ``lease_s``
        seconds (renewed by a later assignment or :meth:`renew`; see :meth:`expire`);
        returns counts and the time spent."""
        t0 = time.perf_counter()
        counts = {"added": 0, "changed": 0, "unchanged": 0}
        expires = time.monotonic() + lease_s
        with self.lock:
            adds: list[str] = []
            filters: list[str] = []
            touched: dict[str, ShapedPort] = {}
            for dev, flow, rate, link in items:
                port = self._port(dev, link)
                touched[dev] = port
                rate = min(max(rate, MIN_ASSURED_BPS), port.link_bps)
                lf = port.leaves.get(flow.key())
                if lf is not None:
                    lf.expires = expires
                    counts["unchanged" if abs(lf.rate_bps - rate) < 1e3 else "changed"] += 1
                    lf.rate_bps = rate
                    continue
                minor, pref = port.slot()
                port.leaves[flow.key()] = Leaf(minor, pref, flow, rate, expires)
                filters.append(u32_filter(dev, pref, flow, f"{HANDLE}:{minor:x}"))
                counts["added"] += 1
            for port in touched.values():
                adds += self._refit(port)
            tc_batch(adds)  # the leaves before the filters that lead to them
            tc_batch(filters)
        return {**counts, "elapsed_ms": (time.perf_counter() - t0) * 1e3}

    @staticmethod
    def _refit(port: ShapedPort) -> list[str]:
        """``tc`` lines that give ``port``'s leaves (a new one has ``set_bps`` 0) and its
        unlisted class their assured rates, and every class its queue length."""
        lines = []
        other, scale = port.other_rate(), port.scale()
        if abs(other - port.other_bps) >= 1e3:
            port.other_bps = other
            lines.append(port.other_class("change"))
        classes = len(port.leaves) + 1
        pkts = leaf_pkts(other / port.link_bps, classes)
        if pkts != port.other_pkts:
            port.other_pkts = pkts
            lines.append(f"qdisc replace dev {port.dev} parent {HANDLE}:{OTHER} handle "
                         f"{OTHER}: pfifo limit {pkts}")
        for lf in port.leaves.values():
            rate = max(lf.rate_bps * scale, MIN_ASSURED_BPS)
            pkts = leaf_pkts(rate / port.link_bps, classes)
            if lf.set_bps == 0.0:
                lf.set_bps, lf.pkts = rate, pkts
                lines += [port.leaf_class("add", lf),
                          f"qdisc add dev {port.dev} parent {HANDLE}:{lf.minor:x} handle "
                          f"{lf.minor:x}: pfifo limit {pkts}"]
                continue
            if abs(lf.set_bps - rate) >= 1e3:
                lf.set_bps = rate
                lines.append(port.leaf_class("change", lf))
            if pkts != lf.pkts:
                lf.pkts = pkts
                lines.append(f"qdisc replace dev {port.dev} parent {HANDLE}:{lf.minor:x} "
                             f"handle {lf.minor:x}: pfifo limit {pkts}")
        return lines

    def renew(self, lease_s: float) -> int:
        """Every leaf's lease runs ``lease_s`` from now; returns how many."""
        with self.lock:
            deadline = time.monotonic() + lease_s
            n = 0
            for port in self.ports.values():
                for lf in port.leaves.values():
                    lf.expires = deadline
                    n += 1
            return n

    def expire(self, now: float | None = None) -> int:
        """Drop the leaves whose lease ran out (fail-open): their flows go to the unlisted
        class, and a port left with no leaf gets its one HTB class back. Returns how many."""
        now = time.monotonic() if now is None else now
        dropped = 0
        with self.lock:
            for port in list(self.ports.values()):
                dead = [k for k, lf in port.leaves.items() if lf.expires <= now]
                if not dead:
                    continue
                dropped += len(dead)
                if len(dead) == len(port.leaves):
                    self._reset(port.dev)
                    continue
                filters, classes = [], []
                for k in dead:
                    lf = port.leaves.pop(k)
                    filters.append(f"filter del dev {port.dev} parent {HANDLE}: protocol ip "
                                   f"pref {lf.pref}")
                    classes.append(f"class del dev {port.dev} classid {HANDLE}:{lf.minor:x}")
                    port.free.append((lf.minor, lf.pref))
                tc_batch(filters)  # no packet may be sent to a class about to go
                tc_batch(classes + self._refit(port))
        return dropped

    def listing(self) -> list[dict[str, Any]]:
        now = time.monotonic()
        with self.lock:
            return [{"port": p.dev, "flow": lf.flow.model_dump(), "rate_bps": lf.rate_bps,
                     "assured_bps": lf.set_bps, "link_rate_bps": p.link_bps,
                     "expires_in_s": lf.expires - now}
                    for p in self.ports.values() for lf in p.leaves.values()]

    def reset(self, dev: str | None = None) -> list[str]:
        """Remove the tree of ``dev`` (every port when None) and shape the link with one
        HTB class again. Returns the ports reset."""
        with self.lock:
            devs = [dev] if dev is not None else list(self.ports)
            return [d for d in devs if self._reset(d)]

    def _reset(self, dev: str) -> bool:
        port = self.ports.pop(dev, None)
        if port is None:
            return False
        restore_link(dev, port.link_bps)
        return True
