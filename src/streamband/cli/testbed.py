"""``streamband testbed up SPEC | down | status | clean | selftest --json OUT``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import typer

from streamband.cli.command import App, out_file
from streamband.errors import PreconditionError
from streamband.model.testbed import load_spec
from streamband.procs import RUN_DIR, leftovers, marked_env
from streamband.procs import clean as clean_all
from streamband.testbed.registry import read_state

app = App(help="The emulated testbed: Mininet + OVS (userspace) + the controller.",
          no_args_is_help=True)


def _fail(msg: str, code: int = 2) -> None:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(code)


def _need_root() -> None:
    if os.geteuid() != 0:
        raise PreconditionError("the testbed needs root (network namespaces, Open vSwitch)")


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


@app.command()
def check(spec: str = typer.Argument(..., help="YAML file or KIND[:key=val,...]")) -> None:
    """Validate a testbed spec and show the network it describes; starts nothing."""
    parsed = load_spec(spec)
    topo = parsed.build()
    typer.echo(f"{parsed.topology}: {len(topo.hosts)} hosts ({', '.join(topo.hosts)}), "
               f"{len(topo.switches)} switches, {len(topo.links)} links, host links "
               f"{parsed.link_mbps:g} Mbit/s; controller API {parsed.api}")


@app.command()
def up(spec: str = typer.Argument(..., help="YAML file or KIND[:key=val,...]"),
       timeout: float = typer.Option(120.0, help="seconds to wait for the testbed")) -> None:
    """Start a testbed in the background (`down` stops it)."""
    parsed = load_spec(spec)
    _need_root()
    st = read_state()
    if st and _alive(st.get("pid")):
        raise PreconditionError(f"a testbed is already up (pid {st['pid']}); run "
                                f"`streamband testbed down`")
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    spec_file = RUN_DIR / "spec.json"
    spec_file.write_text(parsed.model_dump_json())
    log = open(RUN_DIR / "daemon.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "streamband.testbed.daemon", str(spec_file)],
                            stdout=log, stderr=subprocess.STDOUT, env=marked_env(),
                            start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = read_state()
        if st and st.get("ready") and st.get("pid") == proc.pid:
            typer.echo(json.dumps(st, indent=1))
            return
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    tail = (RUN_DIR / "daemon.log").read_text()[-400:].strip().splitlines()
    clean_all()
    _fail(f"testbed did not come up: {tail[-1] if tail else 'no output'}", 1)


@app.command()
def down(timeout: float = 30.0) -> None:
    """Stop the testbed started by `up`, then clean up."""
    st = read_state()
    if st and _alive(st.get("pid")):
        os.kill(st["pid"], signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _alive(st["pid"]) and time.monotonic() < deadline:
            time.sleep(0.1)
    removed = clean_all()
    typer.echo(f"down; cleaned {len(removed)} leftovers" if removed else "down")


@app.command()
def status(json_out: str = typer.Option(None, "--json",
                                        help="also write the status as JSON to this path")
           ) -> None:
    """Is a testbed up, and what does it hold?"""
    path = out_file(json_out, "--json") if json_out is not None else None
    st = read_state()
    up_ = bool(st and _alive(st.get("pid")) and st.get("ready"))
    info = {"up": up_, "state": st if up_ else None, "leftovers": [] if up_ else leftovers()}
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(info, indent=1) + "\n")
    if up_ and st:
        typer.echo(f"up (pid {st['pid']}): {st['spec']['topology']}, {len(st['hosts'])} hosts, "
                   f"{len(st['switches'])} switches, controller API {st['api']}")
    else:
        left = info["leftovers"]
        typer.echo("down" + (f"; leftovers: {', '.join(left)}" if left else ""))


@app.command()
def clean() -> None:
    """Remove every namespace, veth, bridge and process the project started."""
    _need_root()
    removed = clean_all()
    for r in removed:
        typer.echo(f"removed {r}")
    left = leftovers()
    if left:
        _fail(f"still there: {', '.join(left)}", 1)


@app.command()
def selftest(json_out: str = typer.Option(None, "--json", metavar="PATH",
                                          help="write the report here"),
             quick: bool = typer.Option(False, help="fewer samples, shorter runs")) -> None:
    """Meters, link statistics, meter update time, lease expiry, clean-up."""
    path = out_file(json_out, "--json") if json_out is not None else None
    _need_root()
    from streamband.testbed.selftest import selftest as run

    report = run(path, quick=quick)
    for m in report["meters"]:
        typer.echo(f"meter {m['rate_mbps']:5.1f} Mbit/s -> goodput {m['goodput_mbps']:6.2f}")
    typer.echo(f"link statistics max relative error {report['linkstats_max_rel_error']:.4f}")
    for n, v in report["meter_update_ms"].items():
        typer.echo(f"{n:>3} meters: modify p50 {v['p50']:.2f} ms p99 {v['p99']:.2f} ms; "
                   f"install p50 {v['install']['p50']:.2f} p99 {v['install']['p99']:.2f}")
    typer.echo(f"lease expiry {report['lease_expiry_s']:.2f} s (lease 3 dt = "
               f"{report['lease']['lease_s']:.1f} s); leftovers: {report['leftovers']}")
    failed = [k for k, ok in report["checks"].items() if not ok]
    if failed:
        _fail(f"selftest failed: {', '.join(failed)}", 1)
    typer.echo("selftest passed")
