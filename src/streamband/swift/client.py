"""A small Swift client over one keep-alive HTTP connection (tempauth, object GET,
PUT and HEAD), and direct HEADs to an object server (what swift-dispersion does).
Plain :mod:`http.client`, so a client thread costs little CPU next to the store."""

from __future__ import annotations

import http.client
from urllib.parse import quote, urlsplit

from streamband.errors import RunError
from streamband.swift.layout import KEY, USER


class SwiftError(RunError):
    """A request the store refused or that failed on the wire."""


class Connection:
    """One client connection to the proxy: ``auth()`` once, then requests."""

    def __init__(self, proxy_url: str, timeout: float = 20.0) -> None:
        u = urlsplit(proxy_url)
        self.host, self.port = u.hostname or "127.0.0.1", u.port or 80
        self.timeout = timeout
        self.conn: http.client.HTTPConnection | None = None
        self.token = ""
        self.storage_path = ""

    def _request(self, method: str, path: str, body: bytes | None = None,
                 headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port,
                                                       timeout=self.timeout)
            try:
                self.conn.request(method, path, body=body, headers=headers or {})
                resp = self.conn.getresponse()
                data = resp.read()
                return resp.status, data, dict(resp.getheaders())
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                if attempt or isinstance(exc, TimeoutError):
                    raise SwiftError(f"{method} {path}: {exc}") from None
        raise AssertionError("unreachable")

    def auth(self) -> None:
        status, _, hdr = self._request("GET", "/auth/v1.0",
                                       headers={"X-Auth-User": USER, "X-Auth-Key": KEY})
        if status // 100 != 2:
            raise SwiftError(f"auth: {status}")
        lower = {k.lower(): v for k, v in hdr.items()}
        self.token = lower["x-auth-token"]
        self.storage_path = urlsplit(lower["x-storage-url"]).path

    def _path(self, container: str, name: str | None = None) -> str:
        p = f"{self.storage_path}/{quote(container)}"
        return p if name is None else f"{p}/{quote(name)}"

    def put_container(self, container: str) -> None:
        status, _, _ = self._request("PUT", self._path(container),
                                     headers={"X-Auth-Token": self.token})
        if status // 100 != 2:
            raise SwiftError(f"PUT container {container}: {status}")

    def put(self, container: str, name: str, body: bytes) -> int:
        status, _, _ = self._request("PUT", self._path(container, name), body=body,
                                     headers={"X-Auth-Token": self.token,
                                              "Content-Length": str(len(body))})
        return status

    def get(self, container: str, name: str) -> tuple[int, int]:
        """(status, body bytes)."""
        status, data, _ = self._request("GET", self._path(container, name),
                                        headers={"X-Auth-Token": self.token})
        return status, len(data)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def direct_head(ip: str, port: int, device: str, part: int, account: str, container: str,
                name: str, timeout: float = 5.0) -> int:
    """HEAD one replica on its object server (bypassing the proxy); the status."""
    conn = http.client.HTTPConnection(ip, port, timeout=timeout)
    try:
        conn.request("HEAD", f"/{device}/{part}/{account}/{quote(container)}/{quote(name)}",
                     headers={"X-Backend-Storage-Policy-Index": "0"})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    except (OSError, http.client.HTTPException):
        return 0
    finally:
        conn.close()


def roundtrip(proxy_url: str, container: str, name: str, size: int) -> dict[str, object]:
    """PUT ``size`` random bytes as ``name``, GET it back: statuses and whether the
    bytes came back unchanged."""
    import os

    body = os.urandom(size)
    conn = Connection(proxy_url)
    conn.auth()
    conn.put_container(container)
    put = conn.put(container, name, body)
    status, data, _ = conn._request("GET", conn._path(container, name),
                                    headers={"X-Auth-Token": conn.token})
    conn.close()
    return {"put": put, "get": status, "same": data == body}


def main(argv: list[str] | None = None) -> None:
    """``python -m streamband.swift.client PROXY CONTAINER NAME BYTES``: one round trip."""
    import json
    import sys

    proxy, container, name, size = (argv or sys.argv[1:])[:4]
    print(json.dumps(roundtrip(proxy, container, name, int(size))))


if __name__ == "__main__":
    main()
