"""The token rule of the HTTP APIs between the tiers (the controller's and the
manager's): bound to loopback, no token; bound to any other address, a bearer token
is required to start, and every request must carry it."""

from __future__ import annotations

import secrets
from collections.abc import Callable

from fastapi import HTTPException, Request

LOOPBACK = ("127.0.0.1", "::1", "localhost")


def bearer_auth(token: str | None) -> Callable[[Request], None]:
    """A FastAPI dependency: with a token, a request without ``Authorization: Bearer
    TOKEN`` is refused (401); without one, every request passes."""
    def auth(request: Request) -> None:
        if token is None:
            return
        got = request.headers.get("authorization", "")
        if not secrets.compare_digest(got, f"Bearer {token}"):
            raise HTTPException(401, "bearer token required")
    return auth
