"""Start a :class:`Dag` on a running :class:`Testbed`: one worker per host in that
host's namespace, a common start signal, results merged when they finish."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streamband.errors import PreconditionError
from streamband.testbed.harness.dag import Dag
from streamband.testbed.network import Testbed


class HarnessError(PreconditionError):
    """A worker did not start or did not finish."""


def run_dag(tb: Testbed, dag: Dag, run_dir: Path,
            on_start: Callable[[], None] | None = None) -> dict[str, Any]:
    """Run ``dag`` for ``dag.seconds``; returns the merged result."""
    run_dir.mkdir(parents=True, exist_ok=True)
    for f in run_dir.glob("*"):
        if f.is_file():
            f.unlink()
    dag.ips = {h: tb.ip(h) for h in dag.hosts()}
    dag_file = run_dir / "dag.json"
    dag.dump(dag_file)
    procs = {}
    for h in dag.hosts():
        log = open(run_dir / f"worker-{h}.log", "wb")  # noqa: SIM115
        procs[h] = tb.popen(h, [sys.executable, "-m", "streamband.testbed.harness.worker",
                                str(dag_file), h, str(run_dir)],
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while not all((run_dir / f"ready-{h}").exists() for h in procs):
        dead = [h for h, p in procs.items() if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            _kill(procs)
            log = (run_dir / f"worker-{(dead or list(procs))[0]}.log").read_text()[-400:]
            raise HarnessError(f"harness worker did not start: {log.strip()}")
        time.sleep(0.05)
    (run_dir / "go").touch()
    if on_start:
        on_start()
    for h, p in procs.items():
        try:
            p.wait(dag.seconds + 30)
        except subprocess.TimeoutExpired:
            _kill(procs)
            raise HarnessError(f"harness worker on {h} did not finish") from None
    results = []
    for h in procs:
        f = run_dir / f"result-{h}.json"
        if not f.exists():
            raise HarnessError(f"harness worker on {h} wrote no result (see {run_dir})")
        results.append(json.loads(f.read_text()))
    sinks = [r for r in results if r["measured"]]
    out = {
        "throughput_tps": sum(r["throughput_tps"] for r in sinks),
        "latency_s": _weighted([(r["latency_s"], r["completed"]) for r in sinks]),
        "latency_p50_s": max((r["latency_p50_s"] for r in sinks
                              if r["latency_p50_s"] is not None), default=None),
        "latency_p99_s": max((r["latency_p99_s"] for r in sinks
                              if r["latency_p99_s"] is not None), default=None),
        "dropped_tuples": sum(r["dropped_tuples"] for r in results),
        "emitted": sum(r["emitted"] for r in results),
        "edges": {},
        "ops": {},  # per measured instance: completed, throughput_tps, latency_s
    }
    for r in results:
        for eid, st in r["edges"].items():
            out["edges"].setdefault(eid, {}).update(st)
        out["ops"].update(r.get("ops", {}))
    return out


def _weighted(pairs: list[tuple[float | None, int]]) -> float | None:
    """The mean of per-worker means weighted by their completions."""
    ok = [(v, n) for v, n in pairs if v is not None and n > 0]
    total = sum(n for _, n in ok)
    return sum(v * n for v, n in ok) / total if total else None


def _kill(procs: dict[str, subprocess.Popen[Any]]) -> None:
    for p in procs.values():
        if p.poll() is None:
            p.kill()
            p.wait(5)
