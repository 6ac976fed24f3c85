"""``streamband storm up | down | status | submit JAR CLASS [ARGS] | kill NAME``: a Storm
cluster on the running testbed (Nimbus and ZooKeeper on its master host, a Supervisor
on every worker host) or, with ``--loopback N``, on loopback addresses."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from streamband.cli.command import App, engine_spec, fail
from streamband.errors import StreambandError
from streamband.storm import cluster as sc

app = App(help="Apache Storm on the testbed's hosts.", no_args_is_help=True)
console = Console(stderr=True)


def _conf(pairs: list[str]) -> dict[str, Any]:
    import yaml

    out: dict[str, Any] = {}
    for item in pairs:
        key, eq, val = item.partition("=")
        if not eq or not key:
            raise fail(f"--set: expected KEY=VALUE, got {item!r}")
        out[key] = yaml.safe_load(val)
    return out


@app.command()
def up(work: Path = typer.Option(Path("/tmp/streamband-storm"), help="the cluster's files"),
       loopback: int = typer.Option(0, help="N supervisors on 127.0.0.x instead of the testbed"),
       master: str = typer.Option("master", help="the testbed host of Nimbus and ZooKeeper"),
       ) -> None:
    """Start ZooKeeper, Nimbus and the Supervisors (downloads Storm on first use)."""
    if loopback < 0:
        raise fail(f"--loopback: expected a number of supervisors >= 1, got {loopback}")
    t0 = time.monotonic()
    try:
        spec = engine_spec(loopback, work, master, sc.loopback_spec, sc.testbed_spec)
        with console.status("Storm") as status:
            cluster = sc.StormCluster(spec, progress=lambda m: status.update(m))
            status.update("starting ZooKeeper, Nimbus and the Supervisors")
            cluster.start()
    except StreambandError as exc:
        raise fail(str(exc)) from None
    console.print(f"Storm up in {time.monotonic() - t0:.1f} s: Nimbus {spec.master.ip}:"
                  f"{spec.nimbus_port}, {len(spec.workers)} supervisors, profiles at "
                  f"{spec.collector} -> {cluster.work / 'profile.json'}")


@app.command()
def down() -> None:
    """Stop the cluster's daemons, workers and log writers."""
    try:
        cluster = sc.attach()
    except StreambandError as exc:
        raise fail(str(exc)) from None
    killed = cluster.stop()
    console.print(f"Storm down: {len(killed)} processes stopped")


@app.command()
def status() -> None:
    """Supervisors and topologies as Nimbus sees them (JSON)."""
    try:
        typer.echo(json.dumps(sc.attach().admin("list"), indent=1))
    except StreambandError as exc:
        raise fail(str(exc)) from None


@app.command()
def submit(jar: Path = typer.Argument(..., help="the topology's jar"),
           main: str = typer.Argument(..., help="its main class"),
           args: list[str] = typer.Argument(None, help="MAIN's arguments, as storm jar passes "
                                            "them (after --); none: the convention of "
                                            "storm/'s topologies, NAME CONF.yaml"),
           name: str = typer.Option(None, help="the topology's name (storm/'s topologies: "
                                    "default 'topology'; others: found on Nimbus)"),
           set_: list[str] = typer.Option([], "--set", help="KEY=VALUE for the topology conf "
                                          "(storm jar's -c: Storm's storm.options)"),
           wait: bool = typer.Option(True, help="wait until every executor has a worker"),
           ) -> None:
    """Submit a topology, as `storm jar JAR MAIN ARGS -c KEY=VALUE` does; prints its
    placement (JSON)."""
    if not jar.is_file():
        raise fail(f"jar {jar}: no such file")
    conf = _conf(set_)
    if not args and name is None:
        name = "topology"
    try:
        cluster = sc.attach()
        top = cluster.submit(jar, main, name, conf or None, list(args) if args else None)
        out = cluster.wait_running(top["name"]) if wait else cluster.admin("list")
    except StreambandError as exc:
        raise fail(str(exc)) from None
    typer.echo(json.dumps(out, indent=1))


@app.command()
def kill(name: str = typer.Argument(...), wait_s: int = typer.Option(0)) -> None:
    """Kill a topology."""
    try:
        sc.attach().kill(name, wait_s)
    except StreambandError as exc:
        raise fail(str(exc)) from None


@app.command()
def rebalance(name: str = typer.Argument(...), wait_s: int = typer.Option(0)) -> None:
    """Rebalance a topology (the scheduler places it again)."""
    try:
        sc.attach().rebalance(name, wait_s)
    except StreambandError as exc:
        raise fail(str(exc)) from None
