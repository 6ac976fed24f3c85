"""One host of the store as one process: every Swift server of the host as a green
thread of one eventlet hub (Swift's own WSGI apps and its object replicator, loaded
from the host's config files), instead of a process per server.

``python -m streamband.swift.node LAUNCH.json`` runs inside the host's network
namespace; it touches the ``ready`` file once every server listens, and runs until
killed. Swift's log records arrive on datagram sockets (one per server) and are
appended to ``node.log``.
"""

from __future__ import annotations

import json
import os
import socket as stdsocket
import sys
import warnings
from pathlib import Path
from typing import Any


def _drain_logs(sock: Any, log: Path) -> None:
    """Swift's syslog records (one datagram each) appended to ``log``."""
    with open(log, "ab", buffering=0) as f:
        while True:
            data = sock.recv(65536)
            f.write(data.rstrip(b"\0\n") + b"\n")


def _serve(conf_path: str, section: str) -> Any:
    """Load one server's WSGI app and listen on its ``bind_ip:bind_port``;
    returns a callable that serves forever (Swift's ``run_server`` without its hub
    switch, which would drop the hub the other servers share)."""
    from eventlet import GreenPool, wsgi
    from paste.deploy import appconfig
    from swift.common.http_protocol import SwiftHttpProtocol
    from swift.common.utils import NullLogger, disable_fallocate
    from swift.common.wsgi import get_socket, loadapp

    conf = appconfig(f"config:{conf_path}", name=section)
    disable_fallocate()
    app = loadapp(conf_path, global_conf={"log_name": conf.get("log_name", section)})
    sock = get_socket(conf)

    def run() -> None:
        wsgi.server(sock, app, NullLogger(), custom_pool=GreenPool(1024),
                    protocol=SwiftHttpProtocol,
                    socket_timeout=float(conf.get("client_timeout") or 60),
                    capitalize_response_headers=False)

    return run


def main(argv: list[str] | None = None) -> None:
    launch = json.loads(Path((argv or sys.argv[1:])[0]).read_text())
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    from swift.common import utils

    utils.eventlet_monkey_patch()
    import eventlet
    import eventlet.hubs
    from eventlet.green import socket

    eventlet.hubs.use_hub(utils.get_hub())
    os.environ["TZ"] = "UTC+0"
    utils.validate_configuration()
    threads = []
    for path in launch["log_sockets"]:
        Path(path).unlink(missing_ok=True)
        sink = socket.socket(stdsocket.AF_UNIX, stdsocket.SOCK_DGRAM)
        sink.bind(path)
        threads.append(eventlet.spawn(_drain_logs, sink, Path(launch["log"])))
    runners = [_serve(conf, section) for conf, section in launch["servers"]]
    threads += [eventlet.spawn(run) for run in runners]
    if launch.get("replicator"):
        from paste.deploy import appconfig  # noqa: F401 - the readconf path below
        from swift.common.utils import readconf
        from swift.obj.replicator import ObjectReplicator

        conf = readconf(launch["replicator"], "object-replicator")
        threads.append(eventlet.spawn(ObjectReplicator(conf).run_forever))
    Path(launch["ready"]).write_text(str(os.getpid()))
    for t in threads:
        t.wait()


if __name__ == "__main__":
    main()
