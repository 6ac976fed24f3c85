"""``streamband controller``: run the SDN controller (os-ken app + HTTP API)."""

from __future__ import annotations

import os

import typer

from streamband.sdn.server import ListenError, serve


def controller(
    listen: str = typer.Option("127.0.0.1:8181", help="HTTP API address HOST:PORT"),
    openflow: str = typer.Option("127.0.0.1:6653", help="OpenFlow listen address HOST:PORT"),
    token: str = typer.Option(
        "", help="bearer token (required off loopback; default $STREAMBAND_API_TOKEN)"
    ),
    poll: float = typer.Option(1.0, help="statistics poll interval, seconds"),
    burst: float = typer.Option(0.0, help="meter burst as seconds of rate (0: default)"),
    log_level: str = typer.Option("WARNING", help="logging level"),
) -> None:
    """Run the controller of 000 §V-B: meters with leases, link statistics, HTTP API."""
    if poll <= 0:
        typer.echo("error: --poll: expected a positive number of seconds", err=True)
        raise typer.Exit(2)
    try:
        serve(listen, openflow, token or os.environ.get("STREAMBAND_API_TOKEN") or None,
              poll, burst or None, log_level)
    except ListenError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def main() -> None:
    typer.run(controller)
