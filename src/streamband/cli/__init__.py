"""The ``streamband`` command (Typer + rich): parses arguments, nothing more.

``run`` and ``bench`` hand their options to :mod:`streamband.experiments`; the
``coflow``, ``locality``, ``testbed`` and ``controller`` commands live beside the
packages they drive. An error the user caused ends any command with one line on
stderr and exit code 2 (:mod:`streamband.cli.command`); a bench whose checks fail exits 1.
Units: Mbit/s = 10^6 bit/s and seconds here; ``coflow`` keeps the trace's convention
(1 Gbit/s = 2^30 bit/s, MiB) and says so.
"""

from __future__ import annotations

from importlib.metadata import version as _version
from pathlib import Path

import typer
from rich.console import Console

from streamband.cli.command import App, number, out_dir
from streamband.errors import OptionError, nearest

app = App(no_args_is_help=True,
          help="Application-aware bandwidth management for stream analytics. "
               "Units: Mbit/s = 10^6 bit/s, seconds (the coflow commands: the trace's "
               "1 Gbit/s = 2^30 bit/s and MiB).")


def _mount() -> None:
    from streamband.cli.coflow import app as coflow_app
    from streamband.cli.controller import controller
    from streamband.cli.flink import app as flink_app
    from streamband.cli.kafka import app as kafka_app
    from streamband.cli.locality import app as locality_app
    from streamband.cli.manage import manage
    from streamband.cli.storm import app as storm_app
    from streamband.cli.swift import app as swift_app
    from streamband.cli.testbed import app as testbed_app

    app.add_typer(coflow_app, name="coflow")
    app.add_typer(flink_app, name="flink")
    app.add_typer(kafka_app, name="kafka")
    app.add_typer(locality_app, name="locality")
    app.add_typer(storm_app, name="storm")
    app.add_typer(swift_app, name="swift")
    app.add_typer(testbed_app, name="testbed")
    app.command("controller")(controller)
    app.command("manage")(manage)


def _console() -> Console:
    console = Console()
    return console if console.is_terminal else Console(width=150)  # logs and CI: wide tables


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"streamband {_version('streamband')}")
        raise typer.Exit(0)


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_show_version,
                                       is_eager=True, help="print the version and exit")
          ) -> None:
    """Application-aware bandwidth management for stream analytics."""


BACKEND_HELP = ("where it runs: sim (the fluid simulator), testbed (Mininet + OVS and the traffic "
                "harness, root), storm (Apache Storm on the testbed, root), flink (Apache "
                "Flink on the testbed, fed by Kafka, root)")


PENDING_HELP = ("storm: Storm's topology.max.spout.pending, tuples a spout task may have in "
                "flight (default: 1000; 0: none, the spouts paced open loop)")


SCALE_HELP = ("storm: run the spec at 1/S of its tuples, each S times the bytes (the links "
              "carry the spec's bytes/s; for machines whose cores cannot process the spec's "
              "tuple rate) (default: 1; bench paper-000: TT 10, TI 2, Kafka-fed TI 8)")


SOURCE_HELP = ("storm: the topologies' sources: spout (their own paced spouts, the "
               "default) or kafka (Kafka topics on the testbed's master host, filled at the "
               "spec's rates by a paced producer and read by one Kafka spout per topic: "
               "independent sources, open loop; a star network). flink: always kafka")


GUARANTEE_HELP = ("storm, --source kafka: at-most-once (acking off, the default) or "
                  "at-least-once (every tuple acked, failed ones replayed from Kafka)")


ENFORCE_HELP = ("storm, flink: how the managed policies' rates are enforced: meter "
                "(an OpenFlow meter per flow, policing: above its rate a packet is dropped; "
                "the default) or shaper (an HTB class per flow on the switch egress ports of "
                "its path, ceil the link: above its rate a packet waits, and what one flow "
                "leaves unused goes to the others in proportion to their rates; the "
                "default of bench paper-000's Kafka-fed runs)")
ALIGNMENT_HELP = ("flink: Flink's watermark alignment (FLIP-217), its own answer to a "
                  "lagging input: a source whose watermark runs this many ms ahead of the "
                  "slowest pauses (default: 0, off)")


DT_HELP = ("testbed, storm, flink: Δt of the manager loop, s: the metered policies' rates step "
           "every Δt (default: 1; App-Fair's classes step at the spec's sim.interval_s; "
           "000 §VI-A and the manage service: 5)")


#: the benches whose real runs take the manager loop's Δt from ``--dt``
DT_BENCHES = ("paper-000", "paper-001")


GUARD_HELP = ("testbed, storm, flink: do no harm - keep TCP's split unless an allocation moves "
              "at least 12 % of a bottleneck's capacity (default: on for testbed, off for "
              "storm and flink, whose TCP split already follows the join)")


@app.command()
def run(
    spec: str = typer.Argument(..., help="experiment spec: a YAML file or a shipped spec "
                               "name (paper-001, paper-000-tt, paper-000-ti, appfair)"),
    backend: str = typer.Option("sim", help=BACKEND_HELP),
    out_: str = typer.Option("out/run", "--out", metavar="DIR",
                             help="directory for results.json and report.html"),
    seconds: float = typer.Option(None, help="length of each run, s (default: the spec's)"),
    repeat: int = typer.Option(1, help="runs per case and policy (median and spread)"),
    guard: bool = typer.Option(None, "--guard/--no-guard", help=GUARD_HELP),
    max_pending: int = typer.Option(None, help=PENDING_HELP),
    tuple_scale: float = typer.Option(None, help=SCALE_HELP),
    source: str = typer.Option(None, help=SOURCE_HELP),
    guarantee: str = typer.Option(None, help=GUARANTEE_HELP),
    alignment_ms: float = typer.Option(None, help=ALIGNMENT_HELP),
    enforce: str = typer.Option(None, help=ENFORCE_HELP),
    dt: float = typer.Option(None, help=DT_HELP),
) -> None:
    """Run an experiment spec: a table per app, results.json and report.html."""
    from streamband.backends import backend as get_backend
    from streamband.experiments.base import with_options
    from streamband.experiments.runner import execute, write_outputs
    from streamband.model.spec import load_spec

    out = out_dir(out_)  # typed str: an empty --out is refused, not read as '.'
    opts = _options(backend, seconds, repeat, max_pending=max_pending, guard=guard,
                    tuple_scale=tuple_scale, source=source, guarantee=guarantee,
                    alignment_ms=alignment_ms, enforce=enforce, dt=dt)
    parsed = with_options(load_spec(spec), opts)
    mod = get_backend(backend)
    runner = (mod.Runner() if backend == "sim"
              else mod.Runner(out, seconds=opts.seconds or 60.0, **opts.engine()))
    console = _console()
    done = execute([parsed], runner, console, repeat=opts.repeat,
                   journal=None if backend == "sim" else out / "rows.jsonl")
    path = write_outputs(out, f"streamband run: {parsed.experiment} ({backend})", done,
                         console).write()
    console.print(f"results: {out / 'results.json'}\nreport:  {path}")


def _options(backend: str, seconds: float | None, repeat: int, max_pending: int | None = None,
             tuple_scale: float | None = None, source: str | None = None,
             guarantee: str | None = None, alignment_ms: float | None = None,
             enforce: str | None = None, dt: float | None = None,
             **more: object):  # noqa: ANN202
    from streamband.backends import BACKENDS
    from streamband.experiments.base import Options

    if backend not in BACKENDS:
        from streamband.backends import backend as get_backend

        get_backend(backend)  # the unknown-backend line
    if seconds is not None:
        number(seconds, "--seconds", 1.0, 86_400.0, unit="s")
    if not 1 <= repeat <= 100:
        raise OptionError(f"--repeat: expected 1..100 runs, got {repeat}")
    if max_pending is not None and backend != "storm":
        raise OptionError(f"--max-pending: applies to --backend storm only, got {backend}")
    if max_pending is not None and not 0 <= max_pending <= 1_000_000:
        raise OptionError(f"--max-pending: expected 0..1000000 tuples (0: unbounded), "
                          f"got {max_pending}")
    if tuple_scale is not None:
        if backend != "storm":
            raise OptionError(f"--tuple-scale: applies to --backend storm only, got {backend}")
        number(tuple_scale, "--tuple-scale", 1.0, 1000.0)
    for name, value, allowed in (("--source", source, ("spout", "kafka")),
                                 ("--guarantee", guarantee, ("at-most-once", "at-least-once"))):
        if value is None:
            continue
        if backend == "flink" and name == "--source":
            allowed = ("kafka",)  # the Flink jobs read Kafka topics only
        elif backend != "storm":
            raise OptionError(f"{name}: applies to --backend storm only, got {backend}")
        if value not in allowed:
            raise OptionError(f"{name}: expected one of {', '.join(allowed)}, got {value!r}"
                              f"{nearest(value, allowed)}")
    if backend == "flink":
        source = "kafka"  # the Flink jobs read Kafka topics only: the benches read it here
    if guarantee is not None and source != "kafka":
        raise OptionError("--guarantee: applies to --source kafka only")
    if alignment_ms is not None:
        if backend != "flink":
            raise OptionError(f"--alignment-ms: applies to --backend flink only, got {backend}")
        number(alignment_ms, "--alignment-ms", 0.0, 3_600_000.0, unit="ms")
    if enforce is not None:
        from streamband.loop.openflow import ENFORCE

        if backend not in ("storm", "flink"):
            raise OptionError(f"--enforce: applies to --backend storm or flink, got {backend}")
        if enforce not in ENFORCE:
            raise OptionError(f"--enforce: expected one of {', '.join(ENFORCE)}, got "
                              f"{enforce!r}{nearest(enforce, ENFORCE)}")
    if dt is not None:
        if backend not in ("testbed", "storm", "flink"):
            raise OptionError(f"--dt: applies to --backend testbed, storm or flink (the "
                              f"manager loop's), got {backend}")
        number(dt, "--dt", 0.2, 600.0, unit="s")  # the manage service's bounds on Δt
    return Options(backend=backend, seconds=seconds, repeat=repeat,  # type: ignore[arg-type]
                   max_pending=max_pending, tuple_scale=tuple_scale, source=source,
                   guarantee=guarantee, alignment_ms=alignment_ms, enforce=enforce, dt=dt,
                   **more)


@app.command()
def bench(
    name: str = typer.Argument(..., help="which paper's evaluation to reproduce: paper-000, "
                               "paper-001, paper-002, paper-003, paper-004, joint, appfair"),
    out: str = typer.Option(None, metavar="DIR",
                            help="output directory (default out/NAME[-BACKEND])"),
    backend: str = typer.Option(None, help=BACKEND_HELP + " (default: the bench's first; "
                                "sim, paper-002: testbed)"),
    seconds: float = typer.Option(None, help="length of each run, s (default: the bench's)"),
    repeat: int = typer.Option(1, help="runs per configuration on a noisy backend"),
    full_trace: bool = typer.Option(False, help="paper-004: the whole trace everywhere"),
    policy: str = typer.Option(None, help="the managed policy under test in place of "
                               "appaware (paper-001 on testbed and paper-000 on storm "
                               "or flink: appaware-store; paper-002: bwman) (a policy "
                               "that does "
                               "nothing must fail the checks)"),
    guard: bool = typer.Option(None, "--guard/--no-guard", help=GUARD_HELP),
    max_pending: int = typer.Option(None, help=PENDING_HELP),
    tuple_scale: float = typer.Option(None, help=SCALE_HELP),
    source: str = typer.Option(None, help=SOURCE_HELP),
    guarantee: str = typer.Option(None, help=GUARANTEE_HELP),
    alignment_ms: float = typer.Option(None, help=ALIGNMENT_HELP),
    enforce: str = typer.Option(None, help=ENFORCE_HELP),
    dt: float = typer.Option(None, help=DT_HELP + " (bench paper-000 and paper-001 only)"),
    spec: Path = typer.Option(None, help="paper-002: a Swift experiment spec (YAML) in "
                              "place of the shipped one (other experiments: streamband "
                              "run SPEC)"),
) -> None:
    """Reproduce a paper's evaluation: tables, checks, results.json and report.html.
    Exit code 1 when a check fails."""
    from streamband.alloc.registry import policy_entry
    from streamband.experiments import experiment

    mod = experiment(name)
    backend = backend or mod.BACKENDS[0]
    if backend not in mod.BACKENDS:
        raise OptionError(f"--backend: {name} runs on {', '.join(mod.BACKENDS)}, got {backend!r}")
    if full_trace and name != "paper-004":
        raise OptionError(f"--full-trace: applies to paper-004 only, got {name}")
    if policy is not None and hasattr(mod, "check_policy"):
        mod.check_policy(policy)  # a reproduction with policies of its own kind
    elif policy is not None and policy_entry(policy).kind != "loop":
        raise OptionError(f"--policy: expected a manager-loop policy, got {policy!r} "
                          f"(kind {policy_entry(policy).kind})")
    if dt is not None and name not in DT_BENCHES:
        raise OptionError(f"--dt: applies to bench {' and '.join(DT_BENCHES)} (the others "
                          f"step at their spec's or paper's period), got {name}")
    given: dict[str, object] = {}
    if spec is not None:
        if name != "paper-002":
            raise OptionError(f"--spec: applies to paper-002 only (other experiments: "
                              f"streamband run SPEC), got {name}")
        from streamband.swift.spec import load

        given["spec"] = load(spec)
    opts = _options(backend, seconds, repeat, full_trace=full_trace, policy=policy,
                    guard=guard, max_pending=max_pending, tuple_scale=tuple_scale,
                    source=source, guarantee=guarantee, alignment_ms=alignment_ms,
                    enforce=enforce, dt=dt)
    target = out_dir(out if out is not None
                     else Path("out") / (name + ("" if backend == "sim" else f"-{backend}")))
    outcome = mod.run(target, opts, _console(), **given)
    if not outcome.ok:
        failed = [c.what for c in outcome.comparison.checks if not c.ok]
        typer.echo(f"{len(failed)} check(s) failed: {'; '.join(failed[:3])}"
                   + (" ..." if len(failed) > 3 else ""), err=True)
        raise typer.Exit(1)


_mount()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
