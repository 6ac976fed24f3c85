"""The HTTP/JSON interface between the manager (tier 1) and the controller
(tier 2): 000 §V-A3 uses a socket interface between the bandwidth optimizer and
the bandwidth enforcer; this is that interface as FastAPI (OpenAPI at
``/openapi.json``). Loopback by default; a bearer token is required whenever the
server is bound to another address.
"""

from __future__ import annotations

import math
import time
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException
from pydantic import Field, field_validator, model_validator

from streamband.model.network import MAX_LINK_MBPS
from streamband.model.numbers import Numbers
from streamband.sdn.app import EnforcerError, StreambandApp
from streamband.sdn.auth import answer_422, bearer_auth
from streamband.sdn.flowkey import FlowKey, ipv4
from streamband.sdn.priority import CLASSES, LEAF_LIMIT_PKTS, PortShape

#: the fastest rate a meter or class takes, bit/s (a spec's fastest link)
MAX_RATE_BPS = MAX_LINK_MBPS * 1e6
#: a datapath id is 64 bits
Dpid = Annotated[int, Field(ge=1, le=2**64 - 1)]


class MeterSpec(Numbers):
    """A flow and its cap; ``rate_bps`` null (or infinite) counts without a meter."""

    flow: FlowKey
    rate_bps: float | None = Field(None, description="bit/s; null or infinity: no meter")
    dpid: Dpid | None = None

    @field_validator("rate_bps")
    @classmethod
    def _rate(cls, v: float | None) -> float | None:
        if v is not None and not (0 < v <= MAX_RATE_BPS or v == math.inf):  # NaN fails too
            raise ValueError(f"expected a rate in (0, {MAX_RATE_BPS:g}] bit/s, or null or "
                             f"infinity for no meter")
        return v


class MeterBatch(Numbers):
    """One allocation: every listed flow's rate, and the lease they carry (3 Δt)."""

    meters: list[MeterSpec]
    lease_s: float = Field(3.0, gt=0, le=3600, allow_inf_nan=False)
    replace: bool = False


class FlowOnPort(Numbers):
    """A flow on an egress port, the port named by interface (``port``) or by ``dpid`` +
    ``port_no``; ``link_rate_bps`` only for a port the testbed did not shape."""

    flow: FlowKey
    port: str | None = None
    dpid: Dpid | None = None
    port_no: int | None = Field(None, ge=1, le=2**32 - 1)
    link_rate_bps: float | None = Field(None, gt=0, le=MAX_RATE_BPS, allow_inf_nan=False)

    @model_validator(mode="after")
    def _one_port(self) -> FlowOnPort:
        if (self.port is None) == (self.dpid is None or self.port_no is None):
            raise ValueError("port: give either port (a name) or dpid and port_no")
        return self


class ClassSpec(FlowOnPort):
    """A flow's strict-priority class (0 highest .. 7) on one egress port, named by
    interface (``port``) or by ``dpid`` + ``port_no``; ``link_rate_bps`` only for a port
    the testbed did not shape (000 §VII: queue index per group)."""

    cls: int = Field(ge=0, le=8)  # 8: the port's reserved leaf (its shape has a reserve)


class ShapeSpec(Numbers):
    """A port's tree (``streamband.sdn.priority.PortShape``): each class's pfifo length
    and a reserved leaf served at ``reserve_bps`` ahead of the strict classes."""

    leaf_pkts: list[Annotated[int, Field(ge=1, le=100_000)]] = Field(
        default_factory=lambda: [LEAF_LIMIT_PKTS] * CLASSES, min_length=CLASSES,
        max_length=CLASSES)
    reserve_bps: float = Field(0.0, ge=0, le=MAX_RATE_BPS, allow_inf_nan=False)
    reserve_pkts: int = Field(LEAF_LIMIT_PKTS, ge=1, le=100_000)

    def shape(self) -> PortShape:
        return PortShape(tuple(self.leaf_pkts), self.reserve_bps, self.reserve_pkts)


class ClassBatch(Numbers):
    """Class assignments and the lease they carry (renewed by ``POST /v1/lease``);
    when it runs out the flows go back to the default class and a port with no
    listed flow left is shaped by one HTB class again (fail-open). ``shapes``: the
    trees of ports named in ``classes`` (by interface name)."""

    classes: list[ClassSpec]
    lease_s: float = Field(3.0, gt=0, le=3600, allow_inf_nan=False)
    shapes: dict[str, ShapeSpec] = Field(default_factory=dict)


class RateSpec(FlowOnPort):
    """A flow's rate class on one egress port (``streamband.sdn.shaper``), the port named
    as in :class:`ClassSpec`; ``rate_bps`` null (or infinite): the link's rate, an
    uncapped flow that shares the port with capped ones."""

    rate_bps: float | None = Field(description="bit/s; null or infinity: the link's rate")

    @field_validator("rate_bps")
    @classmethod
    def _rate(cls, v: float | None) -> float | None:
        if v is not None and not (0 < v <= MAX_RATE_BPS or v == math.inf):  # NaN fails too
            raise ValueError(f"expected a rate in (0, {MAX_RATE_BPS:g}] bit/s, or null or "
                             "infinity for the link's rate")
        return v


class RateBatch(Numbers):
    """Rate classes and the lease they carry (renewed by ``POST /v1/lease``); when it runs
    out a flow loses its class, and a port with none left is one HTB class again."""

    rates: list[RateSpec]
    lease_s: float = Field(3.0, gt=0, le=3600, allow_inf_nan=False)


class HostMap(Numbers):
    """Where hosts attach: IPv4 -> dpid of the edge switch (the meter's switch)."""

    hosts: dict[str, Dpid]
    replace: bool = False

    @field_validator("hosts")
    @classmethod
    def _ips(cls, v: dict[str, int]) -> dict[str, int]:
        return {ipv4(ip): dpid for ip, dpid in v.items()}


class Lease(Numbers):
    lease_s: float = Field(3.0, gt=0, le=3600, allow_inf_nan=False)


def create_api(osken: StreambandApp, token: str | None = None) -> FastAPI:
    """The FastAPI application bound to a running :class:`StreambandApp`."""
    api = FastAPI(title="streamband controller", version="1",
                  description="Bandwidth enforcer and link statistics (paper 000 §V-B)")

    auth = bearer_auth(token)
    answer_422(api)

    def run(fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except EnforcerError as exc:
            raise HTTPException(409, str(exc)) from None

    @api.get("/v1/health", dependencies=[Depends(auth)])
    def health() -> dict[str, Any]:
        """The connected switches (dpids), the managed flows, meters expired so far."""
        return {"switches": sorted(osken.datapaths), "flows": len(osken.flows),
                "expired_total": osken.expired_total, "time": time.time()}

    @api.put("/v1/meters", dependencies=[Depends(auth)])
    def put_meters(batch: MeterBatch) -> dict[str, Any]:
        """One allocation: bind each listed flow to a meter at its rate (null or
        infinite: count it without a meter), carrying a lease of ``lease_s`` seconds
        (the manager uses 3 Δt); ``replace`` drops managed flows not listed. When a lease
        runs out the flow's meter goes and it shares as plain TCP (fail-open)."""
        items = []
        for m in batch.meters:
            rate = None if m.rate_bps is None or math.isinf(m.rate_bps) else m.rate_bps
            items.append((m.flow, rate, m.dpid))
        return run(osken.set_flows, items, batch.lease_s, batch.replace)

    @api.get("/v1/meters", dependencies=[Depends(auth)])
    def get_meters() -> list[dict[str, Any]]:
        """Every managed flow: its key, meter rate, lease expiry and counters."""
        return osken.flow_list()

    @api.delete("/v1/meters", dependencies=[Depends(auth)])
    def delete_meters() -> dict[str, int]:
        """Remove every managed flow and its meter."""
        return {"removed": run(osken.delete_flows, None)}

    @api.delete("/v1/meters/{flow_id}", dependencies=[Depends(auth)])
    def delete_meter(flow_id: int) -> dict[str, int]:
        """Remove one managed flow (404 if there is none with that id)."""
        n = run(osken.delete_flows, [flow_id])
        if not n:
            raise HTTPException(404, f"no managed flow {flow_id}")
        return {"removed": n}

    @api.put("/v1/hosts", dependencies=[Depends(auth)])
    def put_hosts(hm: HostMap) -> dict[str, int]:
        """Register host attachments: a meter without ``dpid`` goes on the sender's
        edge switch (the first switch of the flow's path)."""
        return {"hosts": osken.set_hosts(hm.hosts, hm.replace)}

    @api.get("/v1/hosts", dependencies=[Depends(auth)])
    def get_hosts() -> dict[str, int]:
        """Host IP -> the dpid of its edge switch."""
        return dict(osken.hosts)

    @api.put("/v1/classes", dependencies=[Depends(auth)])
    def put_classes(batch: ClassBatch) -> dict[str, Any]:
        """Assign flows to strict-priority classes 0..7 (0 highest) on egress ports
        (HTB ``prio`` classes on the switch-side veth; see ``streamband.sdn.priority``)."""
        items = []
        for c in batch.classes:
            name = c.port if c.port is not None else run(osken.port_name, c.dpid, c.port_no)
            items.append((name, c.flow, c.cls, c.link_rate_bps))
        shapes = {port: sh.shape() for port, sh in batch.shapes.items()}
        return run(osken.set_classes, items, batch.lease_s, shapes)

    @api.get("/v1/classes", dependencies=[Depends(auth)])
    def get_classes() -> list[dict[str, Any]]:
        """Every port's class assignments with their lease expiry."""
        return osken.priorities.listing()

    @api.get("/v1/classes/{port}/bytes", dependencies=[Depends(auth)])
    def class_bytes(port: str) -> list[int]:
        """Bytes sent by each class 0..7 on ``port`` so far."""
        if port not in osken.priorities.ports:
            raise HTTPException(404, f"port {port!r} has no priority classes")
        return osken.priorities.class_bytes(port)

    @api.delete("/v1/classes", dependencies=[Depends(auth)])
    def delete_classes(port: str | None = None) -> dict[str, list[str]]:
        """Remove the classes of ``port`` (every port when omitted): the link is
        shaped by one HTB class again."""
        return {"reset": osken.priorities.reset(port)}

    @api.put("/v1/rates", dependencies=[Depends(auth)])
    def put_rates(batch: RateBatch) -> dict[str, Any]:
        """Give each flow its own HTB class at its rate on egress ports (a shaper that
        queues a flow above its rate where a meter would drop; see
        ``streamband.sdn.shaper``). A port holds priority classes or rate classes, not
        both (409)."""
        items = []
        for r in batch.rates:
            name = r.port if r.port is not None else run(osken.port_name, r.dpid, r.port_no)
            items.append((name, r.flow, math.inf if r.rate_bps is None else r.rate_bps,
                          r.link_rate_bps))
        return run(osken.set_rates, items, batch.lease_s)

    @api.get("/v1/rates", dependencies=[Depends(auth)])
    def get_rates() -> list[dict[str, Any]]:
        """Every port's rate classes with their lease."""
        return osken.shaper.listing()

    @api.delete("/v1/rates", dependencies=[Depends(auth)])
    def delete_rates(port: str | None = None) -> dict[str, list[str]]:
        """Remove the rate classes of ``port`` (every port when omitted): the link is
        shaped by one HTB class again."""
        return {"reset": osken.shaper.reset(port)}

    @api.post("/v1/lease", dependencies=[Depends(auth)])
    def renew(lease: Lease) -> dict[str, int]:
        """Renew every meter's and class's (priority and rate) lease for ``lease_s`` s."""
        return {"renewed": osken.renew(lease.lease_s)}

    @api.get("/v1/ports", dependencies=[Depends(auth)])
    def ports(fresh: bool = False) -> list[dict[str, Any]]:
        """Port counters and rates; ``fresh`` reads the switches now."""
        if fresh:
            run(osken.poll)
        return osken.port_list()

    @api.get("/v1/flows", dependencies=[Depends(auth)])
    def flows(fresh: bool = False) -> list[dict[str, Any]]:
        """Per managed flow: counters and rate over the last poll; ``fresh`` reads
        the switches now."""
        if fresh:
            run(osken.poll)
        return osken.flow_list()

    return api
