"""The manager's side of the tier-1/tier-2 interface (000 §V-A3): a small client
of the controller's HTTP API (:mod:`streamband.sdn.api`)."""

from __future__ import annotations

import os
import time
from typing import Any

import httpx

from streamband.errors import PreconditionError


class ControllerError(PreconditionError):
    """The controller refused a request (``status``: its HTTP status) or cannot be
    reached (``status`` None)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ControllerClient:
    """Calls on ``http://HOST:PORT/v1/...``; bearer ``token`` when given (default:
    ``$STREAMBAND_API_TOKEN``, as the controller reads it)."""

    def __init__(self, address: str = "127.0.0.1:8181", token: str | None = None,
                 timeout: float = 10.0) -> None:
        token = token if token is not None else os.environ.get("STREAMBAND_API_TOKEN") or None
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=f"http://{address}", headers=headers, timeout=timeout)

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        try:
            r = self.http.request(method, path, **kw)
        except httpx.HTTPError as exc:
            raise ControllerError(f"controller {self.http.base_url}: {exc}") from None
        if r.status_code >= 400:
            raise ControllerError(f"{method} {path}: {r.status_code} {r.text[:300]}",
                                  r.status_code)
        return r.json()

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/v1/health")

    def wait_ready(self, switches: int = 1, timeout: float = 30.0) -> dict[str, Any]:
        """Wait until the API answers and ``switches`` switches are connected."""
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                h = self.health()
                if len(h["switches"]) >= switches:
                    return h
            except ControllerError as exc:
                last = exc
            time.sleep(0.1)
        raise ControllerError(f"controller not ready after {timeout:.0f} s: {last}")

    def put_meters(self, meters: list[dict[str, Any]], lease_s: float,
                   replace: bool = False) -> dict[str, Any]:
        """``meters``: ``{"flow": FlowKey dict, "rate_bps": float|None, "dpid"?: int}``."""
        return self._call("PUT", "/v1/meters",
                          json={"meters": meters, "lease_s": lease_s, "replace": replace})

    def meters(self) -> list[dict[str, Any]]:
        return self._call("GET", "/v1/meters")

    def delete_meters(self) -> int:
        return self._call("DELETE", "/v1/meters")["removed"]

    def renew(self, lease_s: float) -> int:
        return self._call("POST", "/v1/lease", json={"lease_s": lease_s})["renewed"]

    def ports(self, fresh: bool = False) -> list[dict[str, Any]]:
        return self._call("GET", "/v1/ports", params={"fresh": fresh})

    def flows(self, fresh: bool = False) -> list[dict[str, Any]]:
        return self._call("GET", "/v1/flows", params={"fresh": fresh})

    def put_hosts(self, hosts: dict[str, int], replace: bool = False) -> int:
        """Register host attachments (IP -> edge switch dpid) for metering."""
        return self._call("PUT", "/v1/hosts", json={"hosts": hosts, "replace": replace})["hosts"]

    def put_classes(self, classes: list[dict[str, Any]], lease_s: float = 3.0,
                    shapes: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
        """``classes``: ``{"flow": FlowKey dict, "cls": 0..7, "port": NAME}`` (or
        ``"dpid"`` + ``"port_no"``): strict priority on that egress port (000 §VII),
        for ``lease_s`` seconds unless renewed (:meth:`renew`). ``shapes``: port name
        -> ``{"leaf_pkts": [8 lengths], "reserve_bps": .., "reserve_pkts": ..}``, the
        tree of a port in ``classes`` (cls 8: its reserved leaf)."""
        body: dict[str, Any] = {"classes": classes, "lease_s": lease_s}
        if shapes:
            body["shapes"] = shapes
        return self._call("PUT", "/v1/classes", json=body)

    def classes(self) -> list[dict[str, Any]]:
        return self._call("GET", "/v1/classes")

    def class_bytes(self, port: str) -> list[int]:
        return self._call("GET", f"/v1/classes/{port}/bytes")

    def delete_classes(self, port: str | None = None) -> list[str]:
        params = {"port": port} if port else {}
        return self._call("DELETE", "/v1/classes", params=params)["reset"]

    def put_rates(self, rates: list[dict[str, Any]], lease_s: float = 3.0) -> dict[str, Any]:
        """``rates``: ``{"flow": FlowKey dict, "rate_bps": .., "port": NAME}`` (or
        ``"dpid"`` + ``"port_no"``): the flow's own HTB class at that rate on that egress
        port, for ``lease_s`` seconds unless renewed (:meth:`renew`)."""
        return self._call("PUT", "/v1/rates", json={"rates": rates, "lease_s": lease_s})

    def rates(self) -> list[dict[str, Any]]:
        return self._call("GET", "/v1/rates")

    def delete_rates(self, port: str | None = None) -> list[str]:
        params = {"port": port} if port else {}
        return self._call("DELETE", "/v1/rates", params=params)["reset"]

    def close(self) -> None:
        self.http.close()
