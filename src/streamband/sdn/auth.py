"""What the HTTP APIs between the tiers (the controller's and the manager's) share: the
token rule (bound to loopback, no token; bound to any other address, a bearer token is
required to start, and every request must carry it) and their answer to a body that does
not validate (422 naming the field, whatever the body held)."""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from streamband.errors import OptionError

LOOPBACK = ("127.0.0.1", "::1", "localhost")


def check_token(token: str | None, where: str) -> str | None:
    """``token`` if it can travel in an ``Authorization`` header: printable ASCII, no
    spaces (None stays None).

    Raises
    ------
    OptionError
        Naming ``where`` the token came from (an option, an environment variable).

    Examples
    --------
    >>> check_token("s3cret", "--token")
    's3cret'
    """
    if token is not None and not (token.isascii() and token.isprintable()
                                  and " " not in token):
        raise OptionError(f"{where}: the token holds characters an HTTP header cannot "
                          f"carry, expected printable ASCII without spaces")
    return token


def bearer_auth(token: str | None) -> Callable[[Request], None]:
    """A FastAPI dependency: with a token, a request without ``Authorization: Bearer
    TOKEN`` is refused (401); without one, every request passes."""
    want = f"Bearer {token}".encode() if token is not None else b""

    def auth(request: Request) -> None:
        if token is None:
            return
        # the header as the bytes sent (HTTP decodes it as Latin-1): any byte compares
        got = request.headers.get("authorization", "").encode("latin-1", "replace")
        if not secrets.compare_digest(got, want):
            raise HTTPException(401, "bearer token required")
    return auth


def _shown(value: Any) -> Any:
    """``value`` as JSON can carry it: a non-finite number as its text, anything
    that is not JSON as its repr (cut)."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, str | int | float | bool) or value is None:
        return value if not isinstance(value, str) else value[:200]
    if isinstance(value, list | tuple):
        return [_shown(v) for v in value[:20]]
    if isinstance(value, dict):
        return {str(k)[:200]: _shown(v) for k, v in list(value.items())[:20]}
    return repr(value)[:200]


async def _unprocessable(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    detail = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""),
               "type": e.get("type", ""), "input": _shown(e.get("input"))}
              for e in exc.errors()]
    return JSONResponse({"detail": detail}, status_code=422)


def answer_422(api: FastAPI) -> FastAPI:
    """Make ``api`` answer a body that does not validate with 422 and the errors, the
    input of each shown as JSON can carry it (FastAPI's own answer fails, 500, when
    the body held NaN or infinity)."""
    api.add_exception_handler(RequestValidationError, _unprocessable)
    return api
