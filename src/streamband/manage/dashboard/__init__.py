"""The manager's live dashboard and its HTTP API (FastAPI), served by
``streamband manage``: what the manager of 000 §V-A observes, decides and enforces, per
topology (flows with their rates and backlogs, link utilisation, throughput and latency,
the policy and a switch for it, the allocation log, meters and leases, alerts), and
``/metrics`` for Prometheus.

Token rules (as the controller's API): bound to loopback, no token; bound to any other
address the service refuses to start without one, and every ``/api`` and ``/metrics``
request must carry ``Authorization: Bearer TOKEN`` (401 otherwise). The page and its
static files carry no data and need no token; the page asks for it (or takes it from
``#token=...`` in its address) and sends it with every request.

The page is plain HTML and JavaScript with uPlot (MIT, from npm, in ``static/vendor``):
nothing is built or fetched at run time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, HTTPException
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, Field

from streamband.errors import SpecError
from streamband.sdn.auth import answer_422, bearer_auth

STATIC = Path(__file__).parent / "static"


class PolicySwitch(BaseModel):
    """A topology's new policy (tcp, appaware, maxmin, weighted, observe)."""

    policy: str = Field(description="the policy's name")


def create_app(service: Any) -> FastAPI:
    """The dashboard and API of a running :class:`~streamband.manage.service.Service`."""
    app = FastAPI(title="streamband manager", version="1",
                  description="The manager of paper 000 §V-A as a service: status, policies, "
                  "allocations, Prometheus metrics")
    token = service.token

    auth = bearer_auth(token)
    answer_422(app)

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        return Response(status_code=204)

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/api/v1/status", dependencies=[Depends(auth)])
    def status(points: int = 300) -> dict[str, Any]:
        """Every managed topology (policy, flows, time series of rates, backlogs,
        throughput and latency), link utilisation, meters and leases, alerts, events."""
        return service.status(max(1, min(points, 300)))

    @app.put("/api/v1/topologies/{name}/policy", dependencies=[Depends(auth)])
    def set_policy(name: str, body: PolicySwitch) -> dict[str, Any]:
        """Switch a topology's policy now (kept in the state: a restart keeps it);
        404 for an unknown topology, 422 for an unknown policy."""
        if name not in service.tops:
            raise HTTPException(404, f"no managed topology {name!r}")
        try:
            return service.set_policy(name, body.policy)
        except SpecError as exc:
            raise HTTPException(422, str(exc)) from None

    @app.get("/api/v1/allocations", dependencies=[Depends(auth)])
    def allocations(topology: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """The allocation log, newest first (rates in bit/s, null = uncapped)."""
        return service.state.allocations(topology, max(1, min(limit, 10_000)))

    @app.get("/api/v1/leases", dependencies=[Depends(auth)])
    def leases() -> list[dict[str, Any]]:
        """What was last pushed to the controller and until when (wall clock)."""
        return service.state.leases()

    @app.get("/metrics", dependencies=[Depends(auth)], include_in_schema=False)
    def metrics() -> Response:
        return Response(generate_latest(service.metrics.registry),
                        media_type=CONTENT_TYPE_LATEST)

    return app
