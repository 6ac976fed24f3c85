"""The network half of every real backend (testbed, storm, cluster): link statistics
and enforcement through the SDN controller's HTTP API (:mod:`streamband.sdn`).

- :class:`ControllerLinkStats`, the link statistics collector of 000 §V-B2: each
  link's used capacity from the switch port counters and its allocatable capacity
  (000 §IV-A2), the capacity minus the traffic of flows the application does not own
  (cross traffic): ``C - max(0, used - sum of the application's flows)``.
- :class:`MeterEnforcer`, the bandwidth enforcer of 000 §V-B1: one rate per flow,
  bound to an OpenFlow meter; every push renews the flows' lease (3 Δt), so the
  controller falls back to plain TCP if the manager dies. :class:`CountingEnforcer`
  keeps the flows' counting rules and caps nothing (plain TCP).
- :class:`ShaperEnforcer`, the same rates as per-flow HTB classes on the switch egress
  ports (``PUT /v1/rates``): a flow above its rate is queued instead of dropped.
- :class:`ClassEnforcer`, App-Fair's group scheduling of 000 §VII c: every flow in its
  strict-priority class on each switch egress port of its path (``PUT /v1/classes``:
  HTB ``prio`` classes on the switch-side veths), under the same 3 Δt lease.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from streamband.loop.manager import LEASE_STEPS
from streamband.sdn.client import ControllerClient

#: the lowest rate a meter is set to, bit/s: 0 is an answer of eq. (4) (000: a receiver
#: with backlog enough for the interval), but a meter at 0 would stall the connection into
#: TCP's retransmission back-off, which outlasts the next step
MIN_RATE_BPS = 64e3


@dataclass(frozen=True)
class PortRef:
    """Where a link is counted: a switch port and the direction (``rx``: the link
    enters the switch there, ``tx``: it leaves)."""

    dpid: int
    port: str
    direction: str


def port_rates(ports: list[dict[str, Any]], refs: list[PortRef]) -> np.ndarray:
    """Each link's rate over the controller's last poll, bit/s (L2 bytes), from its port
    counters (``ports``, as ``GET /v1/ports`` returns them); 0 where a port is missing."""
    by_name = {(p["dpid"], p["name"]): p for p in ports}
    used = np.zeros(len(refs))
    for i, ref in enumerate(refs):
        p = by_name.get((ref.dpid, ref.port))
        if p is not None:
            used[i] = p["rx_bps"] if ref.direction == "rx" else p["tx_bps"]
    return used


def egress_ports(routing: Any, link_ports: Sequence[PortRef]) -> list[list[str]]:
    """Each flow's switch egress ports (the links it crosses that leave a switch), from
    the (flows x links) routing matrix."""
    r = routing.tocsr()
    return [[link_ports[int(lk)].port for lk in r.indices[r.indptr[i]:r.indptr[i + 1]]
             if link_ports[int(lk)].direction == "tx"] for i in range(r.shape[0])]


#: cross traffic is the least of this many readings: port and flow counters come from
#: separate polls, and under bursty flows (Storm's 30-KB partials) one skewed reading put
#: 95 % of a 10 Mbit/s link to cross traffic at 5 of 12 steps (paper-000 TT edge 10)
CROSS_POLLS = 3


def persistent_cross(readings: list[np.ndarray]) -> np.ndarray:
    """Cross traffic per link that persists over ``readings`` (each a poll's port rate
    minus the sum of its application flows' rates, bit/s): their least, at least 0.

    Examples
    --------
    A burst skews one poll of link 0; link 1 carries 2 Mbit/s of cross traffic throughout.

    >>> persistent_cross([np.array([0.1e6, 2e6]), np.array([9.5e6, 2.1e6]),
    ...                   np.array([0.0, 2e6])]).tolist()
    [0.0, 2000000.0]
    """
    return np.maximum(np.min(readings, axis=0), 0.0)


class ControllerLinkStats:
    """Allocatable capacities from the controller's 1-s port and flow counters: each
    link's capacity less the cross traffic of :func:`persistent_cross` over the last
    ``CROSS_POLLS`` polls, at least ``floor_frac`` of it."""

    def __init__(self, client: ControllerClient, capacity_bps: np.ndarray,
                 ports: list[PortRef], routing: sp.csr_matrix,
                 flows: list[dict[str, Any] | None], floor_frac: float = 0.05) -> None:
        self.client = client
        self.capacity = np.asarray(capacity_bps, float)
        self.refs = ports
        self.routing = routing
        self.keys = [None if f is None else _key(f) for f in flows]
        self.floor_frac = floor_frac
        self.used = np.zeros(len(self.capacity))
        self.app = np.zeros(len(self.capacity))
        self.flow_rates = np.zeros(len(self.keys))  # each flow's measured rate, bit/s
        self._cross: list[np.ndarray] = []  # the last CROSS_POLLS cross-traffic readings

    def used_bps(self) -> np.ndarray:
        """Each link's rate over the last poll, bit/s (L2 bytes)."""
        return port_rates(self.client.ports(), self.refs)

    def utilisation(self) -> np.ndarray:
        """Each link's rate over the last poll read by :meth:`allocatable`, as a share of
        its capacity (cross traffic included)."""
        return self.used / self.capacity

    def flow_bps(self) -> np.ndarray:
        """Each application flow's rate over the last poll (0 when not counted)."""
        rates = {_key(m["flow"]): m["bps"] for m in self.client.flows()}
        return np.array([rates.get(k, 0.0) if k is not None else 0.0 for k in self.keys])

    def allocatable(self) -> np.ndarray:
        self.used = self.used_bps()
        self.flow_rates = self.flow_bps()
        self.app = self.routing.T @ self.flow_rates
        self._cross = [*self._cross[-(CROSS_POLLS - 1):], self.used - self.app]
        cross = persistent_cross(self._cross)
        return np.maximum(self.capacity - cross, self.floor_frac * self.capacity)


def _key(f: dict[str, Any]) -> tuple[Any, ...]:
    return (f["src_ip"], f["dst_ip"], f.get("proto", "tcp"), f.get("src_port", 0),
            f.get("dst_port", 0))


class MeterEnforcer:
    """The bandwidth enforcer of 000 §V-B: one OpenFlow meter per flow, pushed as one
    batch with a lease (the manager stretches it when steps run late, :class:`Lease`).

    ``flows[i]`` is flow i's key (``FlowKey`` fields as a dict) or None for a flow the
    network does not carry (internal to a host); ``dpids[i]`` the switch to meter it on
    (None: every switch on its path); ``np.inf`` uncaps a flow but keeps its counting
    rule, so link statistics still see it; a finite rate is raised to
    :data:`MIN_RATE_BPS`."""

    def __init__(self, client: ControllerClient, flows: list[dict[str, Any] | None],
                 dt: float, dpids: list[int | None] | None = None,
                 min_rate_bps: float = MIN_RATE_BPS) -> None:
        self.client = client
        self.flows = flows
        self.lease_s = LEASE_STEPS * dt  # the manager stretches it when steps run late
        self.dpids = dpids or [None] * len(flows)
        self.min_rate_bps = min_rate_bps
        self.last: dict[str, Any] = {}

    def meters(self, rates_bps: np.ndarray) -> list[dict[str, Any]]:
        """The meter batch of ``rates_bps`` (the controller API's ``meters`` items)."""
        out = []
        for key, rate, dpid in zip(self.flows, rates_bps, self.dpids, strict=True):
            if key is None:
                continue
            r = None if not np.isfinite(rate) else max(float(rate), self.min_rate_bps)
            m: dict[str, Any] = {"flow": key, "rate_bps": r}
            if dpid is not None:
                m["dpid"] = dpid
            out.append(m)
        return out

    def enforce(self, rates_bps: np.ndarray) -> None:
        """Replace every meter with those of ``rates_bps``, leased for :attr:`lease_s`."""
        self.last = self.client.put_meters(self.meters(rates_bps), self.lease_s, replace=True)


class CountingEnforcer(MeterEnforcer):
    """Plain TCP (no meters), but the flows' counting rules stay installed."""

    def enforce(self, rates_bps: np.ndarray) -> None:
        super().enforce(np.full(len(self.flows), np.inf))


class ShaperEnforcer(MeterEnforcer):
    """The enforcer of :class:`MeterEnforcer` as a shaper that queues: each flow's rate is
    its own HTB class on the switch egress ports of its path (``ports[i]``, as
    :class:`ClassEnforcer`'s; ``PUT /v1/rates``, :mod:`streamband.sdn.shaper`), ``ceil``
    the link, so a flow above its rate waits instead of being dropped and what one flow
    leaves unused goes to the others in proportion to their rates. The flows keep their
    counting rules (uncapped meters) under the same lease. A host's uplink is not the
    switch's to schedule: there its flows share as TCP. ``links``: each port's link rate,
    bit/s, for ports the testbed did not shape (the controller cannot read it there). A
    port no capped flow crosses any more is given back at once (``DELETE /v1/rates``), as
    an uncapped flow's meter goes at once: a lifted cap never waits for its lease."""

    def __init__(self, client: ControllerClient, flows: list[dict[str, Any] | None],
                 ports: list[list[str]], dt: float,
                 links: dict[str, float] | None = None) -> None:
        super().__init__(client, flows, dt)
        self.ports = ports
        self.links = links or {}
        self.rates: dict[str, Any] = {}  # the controller's answer to the last push
        self.pushed: list[dict[str, Any]] = []  # the rate items of the last push
        self.shaped: set[str] = set()  # the ports the controller holds rate classes on

    def rate_items(self, rates_bps: np.ndarray) -> list[dict[str, Any]]:
        """The rate classes of ``rates_bps`` (the controller API's ``rates`` items): each
        capped flow on every port of its path; an uncapped one (``inf``) at the link's rate
        on the ports where a capped flow is, so that it is not served as unlisted traffic
        (ahead of the capped flows) there, and nowhere else.

        >>> e = ShaperEnforcer(None, [{"src_ip": "a"}, {"src_ip": "b"}, None],
        ...                    [["p1", "p2"], ["p2", "p3"], []], dt=1.0)
        >>> [(i["flow"]["src_ip"], i["port"], i["rate_bps"])
        ...  for i in e.rate_items(np.array([2e6, np.inf, 1e6]))]
        [('a', 'p1', 2000000.0), ('a', 'p2', 2000000.0), ('b', 'p2', None)]
        """
        live = [(key, rate, ports) for key, rate, ports
                in zip(self.flows, rates_bps, self.ports, strict=True) if key is not None]
        capped = {p for _, rate, ports in live if np.isfinite(rate) for p in ports}
        items = [{"flow": key, "port": p,
                  "rate_bps": float(max(rate, self.min_rate_bps)) if np.isfinite(rate) else None}
                 for key, rate, ports in live for p in ports
                 if np.isfinite(rate) or p in capped]
        for item in items:
            if item["port"] in self.links:
                item["link_rate_bps"] = float(self.links[item["port"]])
        return items

    def enforce(self, rates_bps: np.ndarray) -> None:
        self.last = self.client.put_meters(self.meters(np.full(len(self.flows), np.inf)),
                                           self.lease_s, replace=True)
        items = self.rate_items(rates_bps)
        if items:
            self.rates = self.client.put_rates(items, self.lease_s)
        self.pushed = items
        listed = {i["port"] for i in items}
        self.shaped |= listed
        for port in sorted(self.shaped - listed):
            # its classes would keep the lifted caps until their lease ran out
            self.client.delete_rates(port)
            self.shaped.discard(port)


#: how a window's rates are enforced: OpenFlow meters that police (000 §V-B1) or HTB
#: classes that queue (:class:`ShaperEnforcer`)
ENFORCE = ("meter", "shaper")


class ClassEnforcer:
    """``flows[i]``: flow i's key (as :class:`MeterEnforcer`'s) or None; ``ports[i]``: the
    switch egress ports (interface names) on its path. A host's own egress (its uplink)
    is not the switch's to schedule and is not listed (000 §VII c puts the uplinks'
    queues in Open vSwitch, whose queues do nothing on the userspace datapath)."""

    def __init__(self, client: ControllerClient, flows: list[dict[str, Any] | None],
                 ports: list[list[str]], dt: float) -> None:
        self.client = client
        self.flows = flows
        self.ports = ports
        self.lease_s = LEASE_STEPS * dt  # the manager stretches it when steps run late
        self.last: dict[str, Any] = {}

    def assign(self, classes: np.ndarray) -> None:
        items = [{"flow": key, "cls": int(c), "port": port}
                 for key, c, ports in zip(self.flows, classes, self.ports, strict=True)
                 if key is not None for port in ports]
        if items:
            self.last = self.client.put_classes(items, self.lease_s)
