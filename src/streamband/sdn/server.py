"""Start the controller process: os-ken's app manager with
:class:`~streamband.sdn.app.StreambandApp`, and the HTTP API in a thread.

os-ken 4.x has no packaged entry point; this follows its ``run_apps``.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import threading

from streamband.errors import OptionError
from streamband.sdn.auth import LOOPBACK, check_token


class ListenError(OptionError):
    """A listen address that cannot be used."""


def parse_listen(listen: str) -> tuple[str, int]:
    """``HOST:PORT`` -> (host, port); one clear error otherwise."""
    host, sep, port = listen.rpartition(":")
    if not sep or not host or not re.fullmatch(r"[0-9]{1,5}", port) \
            or not 0 < int(port) < 65536:
        raise ListenError(f"--listen: expected HOST:PORT, got {listen!r}")
    host = host.strip("[]")
    if host != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise ListenError(f"--listen: {host!r} is not an IP address") from None
    return host, int(port)


def serve(
    listen: str = "127.0.0.1:8181",
    openflow: str = "127.0.0.1:6653",
    token: str | None = None,
    poll_interval_s: float = 1.0,
    burst_s: float | None = None,
    log_level: str = "WARNING",
) -> None:
    """Run the controller until killed. Raises :class:`ListenError` on bad input."""
    host, port = parse_listen(listen)
    of_host, of_port = parse_listen(openflow)
    check_token(token, "--token")
    if host not in LOOPBACK and not token:
        raise ListenError(f"--listen {listen}: a non-loopback address needs --token")
    logging.basicConfig(level=log_level, format="%(asctime)s %(name)s %(message)s")

    import uvicorn
    from os_ken import cfg
    from os_ken.base.app_manager import AppManager
    from os_ken.controller import controller  # noqa: F401 - registers its options
    from os_ken.lib import hub

    from streamband.sdn import app as sdn_app
    from streamband.sdn.api import create_api

    sdn_app.SETTINGS.poll_interval_s = poll_interval_s
    if burst_s is not None:
        sdn_app.SETTINGS.burst_s = burst_s
    cfg.CONF(args=["--ofp-listen-host", of_host, "--ofp-tcp-listen-port", str(of_port)],
             project="os_ken")
    mgr = AppManager.get_instance()
    mgr.load_apps(["streamband.sdn.app"])
    services = mgr.instantiate_apps(**mgr.create_contexts())
    osken = mgr.applications["StreambandApp"]
    server = uvicorn.Server(uvicorn.Config(create_api(osken, token), host=host, port=port,
                                           log_level="warning", access_log=False))
    threading.Thread(target=server.run, name="api", daemon=True).start()
    try:
        hub.joinall(services)
    finally:
        server.should_exit = True
        mgr.close()
