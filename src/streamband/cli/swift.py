"""``streamband swift up [SPEC] | down | status | run SPEC``: the Swift store of
paper 002 on the testbed, and BwMan experiments on it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import typer

from streamband.cli.command import App
from streamband.errors import PreconditionError
from streamband.swift.cluster import check_tools
from streamband.swift.layout import STATE, SWIFT_DIR
from streamband.swift.spec import SwiftSpec, load
from streamband.testbed.registry import read_state

app = App(help="OpenStack Swift on the testbed and BwMan (paper 002).", no_args_is_help=True)


def _alive(pid: int | None) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    if not pid:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _state() -> dict | None:
    try:
        st = json.loads(STATE.read_text())
    except (OSError, ValueError):
        return None
    return st if _alive(st.get("pid")) else None


def _load(spec: Path | None) -> SwiftSpec:
    parsed = load(spec)
    check_tools()
    return parsed


@app.command()
def up(spec: Path = typer.Argument(None, help="experiment spec (YAML); default: the "
                                   "built-in one of bench paper-002"),
       populate: bool = typer.Option(True, help="write the object space once"),
       timeout: float = typer.Option(300.0, help="seconds to wait for the store")) -> None:
    """Start the testbed and the store in the background (`down` stops them)."""
    if spec is None:
        from streamband.experiments.paper002 import SPEC

        spec = SPEC
    parsed = _load(spec)
    tb = read_state()
    if tb and _alive(tb.get("pid")):
        raise PreconditionError(f"a testbed is already up (pid {tb['pid']}); run "
                                "`streamband swift down` or `streamband testbed down`")
    SWIFT_DIR.mkdir(parents=True, exist_ok=True)
    spec_file = SWIFT_DIR / "spec.json"
    spec_file.write_text(parsed.model_dump_json())
    log_path = SWIFT_DIR / "daemon.log"
    from streamband.procs import marked_env

    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamband.backends.swift", str(spec_file),
             *([] if populate else ["--no-populate"])],
            stdout=log, stderr=subprocess.STDOUT, env=marked_env(), start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = _state()
        if st and st.get("ready") and st.get("pid") == proc.pid:
            typer.echo(f"up (pid {proc.pid}): proxy {st['proxy']}, storage "
                       f"{', '.join(st['storage'])}, {st['replicas']} replicas; store start-up "
                       f"{st['startup_s']:.1f} s, {st.get('populated', 0)} objects")
            return
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    tail = log_path.read_text(errors="replace").strip().splitlines()
    from streamband.procs import clean

    clean()
    typer.echo(f"error: the store did not come up: {tail[-1] if tail else 'no output'}",
               err=True)
    raise typer.Exit(1)


@app.command()
def down(timeout: float = 30.0) -> None:
    """Stop the store and its testbed, then clean up."""
    st = _state()
    if st:
        os.kill(st["pid"], signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _alive(st["pid"]) and time.monotonic() < deadline:
            time.sleep(0.1)
    from streamband.procs import clean

    removed = clean()
    STATE.unlink(missing_ok=True)
    typer.echo(f"down; cleaned {len(removed)} leftovers" if removed else "down")


@app.command()
def status(as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """Is the store up, and where?"""
    st = _state()
    if as_json:
        typer.echo(json.dumps({"up": st is not None, "state": st}, indent=1))
    elif st:
        typer.echo(f"up (pid {st['pid']}): proxy {st['proxy']}, storage "
                   f"{', '.join(st['storage'])}, {len(st['processes'])} processes")
    else:
        typer.echo("down")


