"""The manager of 003 §3.4 as a process of its own, over the TCP transport.

It runs :class:`~streamband.locality.reconfig.Manager` (the reference state machine)
on :class:`~streamband.locality.tcp.TcpTransport`, plans with METIS
(:class:`~streamband.locality.planner.MetisPlanner`) and starts a round every
``--period`` seconds after ``--first`` (003 §4.4: a reconfiguration every 10
minutes), until ``--rounds`` rounds have completed. Its configurations and its own
record are durable files in ``--store`` (fsync before each phase's messages); when it
finds a record there it is a restarted manager: it rolls back a round no instance can
have started and resumes one that may have (``Manager.recover``). Every phase change
is appended to ``<store>/rounds.jsonl`` (wall-clock time, epoch, phase, keys moved,
planning time) for the timelines. An inbox entry that is not a message is skipped and
counted on stderr.

``python -m streamband.locality.service --hub HOST:PORT --store DIR --flow FLOW.json
--servers N [--period S] [--first S] [--rounds K]``
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

from streamband.locality.dataflow import Dataflow
from streamband.locality.partition import DEFAULT_ALPHA
from streamband.locality.planner import MetisPlanner
from streamband.locality.reconfig import Manager, ManagerPhase
from streamband.locality.routing_table import RoutingTable
from streamband.locality.tcp import TcpTransport

ROUNDS_LOG = "rounds.jsonl"


def completed(m: Manager) -> int:
    """Rounds applied so far (rolled-back epochs do not count)."""
    return m.rec.active - sum(1 for e in m.rec.rolled_back if e < m.rec.active)


class TimedPlanner:
    """METIS planning, timed (the manager's compute step between ② and ③)."""

    def __init__(self, planner: MetisPlanner) -> None:
        self.planner = planner
        self.last_s = 0.0

    def __call__(self, metrics: dict, current: dict) -> dict:
        t0 = time.monotonic()
        out = self.planner(metrics, current)
        self.last_s = time.monotonic() - t0
        return out


def append_record(path: Path, rec: dict[str, Any]) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(rec) + "\n")
        f.flush()


def run(hub: str, store: Path, flow: Dataflow, servers: int, period_s: float, first_s: float,
        rounds: int, alpha: float = DEFAULT_ALPHA, seed: int = 0) -> int:
    store.mkdir(parents=True, exist_ok=True)
    transport = TcpTransport(hub, wait_s=0.05)
    planner = TimedPlanner(MetisPlanner(flow, servers, alpha, seed))
    log = store / ROUNDS_LOG
    restarted = (store / "manager.json").exists()
    if restarted:
        m = Manager.recover(flow, transport, store, planner)
    else:
        tables = {o.name: RoutingTable(o.name, o.parallelism) for o in flow.ops if o.keyed}
        m = Manager(flow, transport, tables, store, planner)
    append_record(log, {"t": time.time(), "event": "restarted" if restarted else "started",
                        "epoch": m.rec.epoch, "phase": m.rec.phase.value,
                        "rolled_back": m.rec.rolled_back, "active": m.rec.active})
    stop = False

    def on_term(*_: Any) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    next_start = time.monotonic() + first_s
    phase = m.rec.phase
    skipped = 0
    while not stop:
        if m.idle and completed(m) >= rounds:
            break
        if m.idle and time.monotonic() >= next_start:
            m.start_round()
            next_start = time.monotonic() + period_s
        m.step()
        if m.end.skipped != skipped:
            skipped = m.end.skipped
            print(f"manager: skipped {skipped} inbox entries that were not messages so far "
                  f"(offset {m.end.offset})", file=sys.stderr, flush=True)
        if m.rec.phase != phase:
            phase = m.rec.phase
            rec: dict[str, Any] = {"t": time.time(), "epoch": m.rec.epoch, "phase": phase.value}
            if phase == ManagerPhase.PREPARED and m.history:
                rec["moved_keys"] = m.history[-1]["moved_keys"]
                rec["plan_s"] = planner.last_s
                part = planner.planner.last
                if part is not None:
                    rec["planned_locality"] = 1.0 - part.cut_fraction()
            if phase == ManagerPhase.IDLE:
                rec["active"] = m.rec.active
            append_record(log, rec)
    transport.close()
    return 0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="003's reconfiguration manager over TCP")
    ap.add_argument("--hub", required=True, help="the log server, HOST:PORT")
    ap.add_argument("--store", required=True, type=Path, help="durable configurations")
    ap.add_argument("--flow", required=True, type=Path, help="the dataflow (JSON)")
    ap.add_argument("--servers", required=True, type=int, help="servers = METIS parts")
    ap.add_argument("--period", type=float, default=10.0, help="seconds between rounds")
    ap.add_argument("--first", type=float, default=0.0, help="seconds before the first")
    ap.add_argument("--rounds", type=int, default=1 << 30, help="stop after this many")
    ap.add_argument("--alpha", type=float, default=DEFAULT_ALPHA, help="METIS imbalance")
    a = ap.parse_args(argv)
    flow = Dataflow.from_json(json.loads(a.flow.read_text()))
    sys.exit(run(a.hub, a.store, flow, a.servers, a.period, a.first, a.rounds, a.alpha))


if __name__ == "__main__":
    main()
