"""``streamband flink up | status | down | submit JAR [--class C] [--set KEY=VALUE]``: a
Flink session cluster on the running testbed (the JobManager on its master host, a
TaskManager on every worker host) or, with ``--loopback N``, on loopback addresses; the
profile receiver beside the JobManager."""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer
from rich.console import Console

from streamband.cli.command import App, engine_spec, fail
from streamband.errors import StreambandError
from streamband.flink import cluster as fc
from streamband.model.testbed import address

app = App(help="Apache Flink on the testbed's hosts.", no_args_is_help=True)
console = Console(stderr=True)


@app.command()
def up(work: Path = typer.Option(Path("/tmp/streamband-flink"), help="the cluster's files"),
       loopback: int = typer.Option(0, help="N TaskManagers on 127.0.0.x instead of the testbed"),
       master: str = typer.Option("master", help="the testbed host of the JobManager"),
       kafka: str = typer.Option("", help="HOST:PORT of the Kafka broker the jobs' sources "
                                 "read: the reporters ask it for the topics' end offsets, "
                                 "each source's backlog (default: the sources' "
                                 "pendingRecords only)"),
       ) -> None:
    """Start the JobManager, the TaskManagers and the profile receiver (downloads Flink
    on first use)."""
    if loopback < 0:
        raise fail(f"--loopback: expected a number of TaskManagers >= 1, got {loopback}")
    if kafka:
        try:
            address(kafka, "--kafka broker")
        except ValueError as exc:
            raise fail(f"--kafka: {exc}") from None
    t0 = time.monotonic()
    try:
        spec = engine_spec(loopback, work, master, fc.loopback_spec, fc.testbed_spec)
        spec.kafka = kafka
        with console.status("Flink") as status:
            cluster = fc.FlinkCluster(spec, progress=lambda m: status.update(m))
            status.update("starting the JobManager and the TaskManagers")
            cluster.start()
            cluster.start_receiver()
    except StreambandError as exc:
        raise fail(str(exc)) from None
    console.print(f"Flink up in {time.monotonic() - t0:.1f} s: REST {spec.rest}, "
                  f"{len(spec.taskmanagers)} TaskManagers, profiles at {spec.collector} -> "
                  f"{cluster.work / 'profile.json'}")


@app.command()
def down() -> None:
    """Stop the cluster's JobManager, TaskManagers, clients and profile receiver."""
    try:
        cluster = fc.attach()
    except StreambandError as exc:
        raise fail(str(exc)) from None
    killed = cluster.stop()
    console.print(f"Flink down: {len(killed)} processes stopped")


@app.command()
def status() -> None:
    """TaskManagers (id, data port, slots), jobs and each process's memory and CPU (JSON)."""
    try:
        c = fc.attach()
        tms = [{"id": t["id"], "dataPort": t["dataPort"], "slots": t["slotsNumber"],
                "freeSlots": t["freeSlots"]} for t in c.rest("/taskmanagers")["taskmanagers"]]
        out = {"rest": c.spec.rest, "taskmanagers": tms, "jobs": c.jobs(),
               "processes": fc.usage(str(c.work))}
    except StreambandError as exc:
        raise fail(str(exc)) from None
    typer.echo(json.dumps(out, indent=1))


@app.command()
def submit(jar: Path = typer.Argument(..., help="the job's jar"),
           args: list[str] = typer.Argument(None, help="the job's own arguments"),
           class_: str = typer.Option(None, "--class", help="its main class (default: the "
                                      "jar's Main-Class)"),
           set_: list[str] = typer.Option([], "--set", help="KEY=VALUE into the job's "
                                          "configuration (flink run -D)"),
           parallelism: int = typer.Option(None, help="the job's default parallelism"),
           classpath: list[Path] = typer.Option([], "--classpath", help="a jar every Flink "
                                                "process reads from its own disk (flink run "
                                                "-C), e.g. flink/target/streamband-flink-"
                                                "kafka.jar for streamband's jobs"),
           wait: bool = typer.Option(True, help="wait until every subtask runs"),
           ) -> None:
    """Submit a job detached, as `flink run -d [-c C] [-D K=V] JAR ARGS`; prints its id and
    where each subtask runs (JSON)."""
    for j in (jar, *classpath):
        if not j.is_file():
            raise fail(f"jar {j}: no such file")
    conf: dict[str, str] = {}
    for item in set_:
        key, eq, val = item.partition("=")
        if not eq or not key:
            raise fail(f"--set: expected KEY=VALUE, got {item!r}")
        conf[key] = val
    try:
        c = fc.attach()
        job = c.submit(jar, class_, list(args or []), conf, parallelism,
                       classpath=list(classpath))
        out = {"job": job}
        if wait:
            from streamband.flink.flows import placement

            out["placement"] = placement(c.rest, job)
    except StreambandError as exc:
        raise fail(str(exc)) from None
    typer.echo(json.dumps(out, indent=1))
