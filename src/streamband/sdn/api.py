"""The HTTP/JSON interface between the manager (tier 1) and the controller
(tier 2): 000 §V-A3 uses a socket interface between the bandwidth optimizer and
the bandwidth enforcer; this is that interface as FastAPI (OpenAPI at
``/openapi.json``). Loopback by default; a bearer token is required whenever the
server is bound to another address.
"""

from __future__ import annotations

import math
import secrets
import time
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from pydantic import BaseModel, Field

from streamband.sdn.app import EnforcerError, StreambandApp
from streamband.sdn.flowkey import FlowKey


class MeterSpec(BaseModel):
    """A flow and its cap; ``rate_bps`` null (or infinite) counts without a meter."""

    flow: FlowKey
    rate_bps: float | None = Field(None, gt=0)
    dpid: int | None = None


class MeterBatch(BaseModel):
    """One allocation: every listed flow's rate, and the lease they carry (3 Δt)."""

    meters: list[MeterSpec]
    lease_s: float = Field(3.0, gt=0, le=3600)
    replace: bool = False


class Lease(BaseModel):
    lease_s: float = Field(3.0, gt=0, le=3600)


def create_api(osken: StreambandApp, token: str | None = None) -> FastAPI:
    """The FastAPI application bound to a running :class:`StreambandApp`."""
    api = FastAPI(title="streamband controller", version="1",
                  description="Bandwidth enforcer and link statistics (paper 000 §V-B)")

    def auth(request: Request) -> None:
        if token is None:
            return
        got = request.headers.get("authorization", "")
        if not secrets.compare_digest(got, f"Bearer {token}"):
            raise HTTPException(401, "bearer token required")

    def run(fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except EnforcerError as exc:
            raise HTTPException(409, str(exc)) from None

    @api.get("/v1/health", dependencies=[Depends(auth)])
    def health() -> dict[str, Any]:
        return {"switches": sorted(osken.datapaths), "flows": len(osken.flows),
                "expired_total": osken.expired_total, "time": time.time()}

    @api.put("/v1/meters", dependencies=[Depends(auth)])
    def put_meters(batch: MeterBatch) -> dict[str, Any]:
        items = []
        for m in batch.meters:
            rate = None if m.rate_bps is None or math.isinf(m.rate_bps) else m.rate_bps
            items.append((m.flow, rate, m.dpid))
        return run(osken.set_flows, items, batch.lease_s, batch.replace)

    @api.get("/v1/meters", dependencies=[Depends(auth)])
    def get_meters() -> list[dict[str, Any]]:
        return osken.flow_list()

    @api.delete("/v1/meters", dependencies=[Depends(auth)])
    def delete_meters() -> dict[str, int]:
        return {"removed": run(osken.delete_flows, None)}

    @api.delete("/v1/meters/{flow_id}", dependencies=[Depends(auth)])
    def delete_meter(flow_id: int) -> dict[str, int]:
        n = run(osken.delete_flows, [flow_id])
        if not n:
            raise HTTPException(404, f"no managed flow {flow_id}")
        return {"removed": n}

    @api.post("/v1/lease", dependencies=[Depends(auth)])
    def renew(lease: Lease) -> dict[str, int]:
        return {"renewed": osken.renew(lease.lease_s)}

    @api.get("/v1/ports", dependencies=[Depends(auth)])
    def ports(fresh: bool = False) -> list[dict[str, Any]]:
        """Port counters and rates; ``fresh`` reads the switches now."""
        if fresh:
            run(osken.poll)
        return osken.port_list()

    @api.get("/v1/flows", dependencies=[Depends(auth)])
    def flows(fresh: bool = False) -> list[dict[str, Any]]:
        if fresh:
            run(osken.poll)
        return osken.flow_list()

    return api
