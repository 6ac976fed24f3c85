"""``streamband kafka up | status | down | topics | lag``: one Kafka broker (KRaft,
broker and controller in one JVM) on a loopback address, for the engines' sources, and
the broker's view of its topics and consumer groups."""

from __future__ import annotations

import json
import time

import typer
from rich.console import Console

from streamband.cli.command import App, number
from streamband.kafka import broker as kb

app = App(help="Apache Kafka (one KRaft broker) for the engines' sources.",
          no_args_is_help=True)
console = Console(stderr=True)


@app.command()
def up(host: str = typer.Option("127.0.0.1", help="the address it listens on"),
       port: int = typer.Option(kb.BROKER_PORT, help="its client (bootstrap) port"),
       controller_port: int = typer.Option(kb.CONTROLLER_PORT, help="its KRaft controller port"),
       heap_mb: int = typer.Option(384, help="the broker JVM's heap, MiB"),
       ) -> None:
    """Start the broker (downloads Kafka on first use); returns once it answers."""
    for name, value in (("--port", port), ("--controller-port", controller_port)):
        number(value, name, 1, 65535)
    number(heap_mb, "--heap-mb", 64, 65536, unit="MiB")
    spec = kb.BrokerSpec(host=host, port=port, controller_port=controller_port,
                         heap_mb=heap_mb)
    with console.status("Kafka") as status:
        broker = kb.Broker(spec, progress=lambda m: status.update(m)).start()
    console.print(f"Kafka up in {broker.started_s:.1f} s: bootstrap {spec.bootstrap}, "
                  f"state in {kb.STATE_DIR}")


@app.command()
def status() -> None:
    """Whether the broker is up and answers, its address, memory and CPU (JSON)."""
    typer.echo(json.dumps(kb.status(), indent=1))


@app.command()
def down() -> None:
    """Stop the broker and every producer run from its home; remove its state."""
    t0 = time.monotonic()
    stopped = kb.attach().stop()
    console.print(f"Kafka down: {len(stopped)} processes stopped in "
                  f"{time.monotonic() - t0:.1f} s")


@app.command()
def topics() -> None:
    """Per topic/partition: first and next offset, bytes on disk (JSON; the Admin API)."""
    from streamband.kafka.replay import offsets

    typer.echo(json.dumps(offsets(kb.attach()), indent=1))


@app.command()
def lag(groups: list[str] = typer.Argument(None, help="consumer groups (default: all)")
        ) -> None:
    """Per consumer group and topic/partition: committed offset, end, lag in records and
    bytes (JSON; the Admin API)."""
    from streamband.kafka.replay import consumer_lag

    typer.echo(json.dumps(consumer_lag(kb.attach(), groups or None), indent=1))
