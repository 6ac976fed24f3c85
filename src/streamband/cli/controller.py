"""``streamband controller``: run the SDN controller (os-ken app + HTTP API)."""

from __future__ import annotations

import os

import typer

from streamband.cli.command import number
from streamband.errors import OptionError, nearest
from streamband.sdn.auth import check_token
from streamband.sdn.server import serve

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def controller(
    listen: str = typer.Option("127.0.0.1:8181", help="HTTP API address HOST:PORT"),
    openflow: str = typer.Option("127.0.0.1:6653", help="OpenFlow listen address HOST:PORT"),
    token: str = typer.Option(
        "", help="bearer token (required off loopback; default $STREAMBAND_API_TOKEN)"
    ),
    poll: float = typer.Option(1.0, help="statistics poll interval, seconds"),
    burst: float = typer.Option(0.0, help="meter burst as seconds of rate (0: default)"),
    log_level: str = typer.Option("WARNING", help="logging level: " + ", ".join(LEVELS)),
) -> None:
    """Run the controller of 000 §V-B: meters with leases, link statistics, HTTP API."""
    number(poll, "--poll", 0.0, 3600.0, low_open=True, unit="s")
    number(burst, "--burst", 0.0, 60.0, unit="s of rate")
    if log_level.upper() not in LEVELS:
        raise OptionError(f"--log-level: expected one of {', '.join(LEVELS)}, got "
                          f"{log_level!r}{nearest(log_level.upper(), LEVELS)}")
    secret = check_token(token or None, "--token") or check_token(
        os.environ.get("STREAMBAND_API_TOKEN") or None, "$STREAMBAND_API_TOKEN")
    serve(listen, openflow, secret, poll, burst or None, log_level.upper())


def main() -> None:
    """``python -m streamband.cli.controller``: the controller alone (the testbed runs it
    so), errors as one line."""
    from streamband.cli.command import App

    app = App()
    app.command()(controller)
    app()


if __name__ == "__main__":
    main()
