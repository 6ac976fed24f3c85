"""A measured window of the manager loop (000 Fig. 4) over an engine's flows on an
OpenFlow network: the loop of a policy (tcp: counted, never capped), started with its
counting rules in place, the links' load over the window from the switch ports' byte
counters, and what the loop did (its allocations, errors, last rates, the guard's share of
capped steps). The Storm and Flink runners measure their windows with it."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from streamband.alloc.registry import get_policy, policy_entry
from streamband.loop.guard import HarmGuard
from streamband.loop.live import LiveLoop
from streamband.loop.manager import Manager
from streamband.loop.openflow import (
    ControllerLinkStats,
    CountingEnforcer,
    MeterEnforcer,
    PortRef,
    ShaperEnforcer,
    egress_ports,
)
from streamband.sdn.client import ControllerClient


def window_manager(client: ControllerClient, capacities: np.ndarray,
                   link_ports: Sequence[PortRef], link_kind: np.ndarray, routing: Any,
                   keys: list[dict[str, Any]], policy: str, profiler: Any, dt: float,
                   weights: np.ndarray, guard: bool = False, enforce: str = "meter",
                   **extra: Any) -> Manager:
    """The manager of a window of ``policy`` over the flows ``keys``: a tcp (per-step)
    policy counts the flows and caps none (max-min decides what is logged), every other
    one enforces their rates, with meters or, ``enforce="shaper"``, with rate classes on
    the switch egress ports of their paths (:class:`ShaperEnforcer`); ``guard``: do no
    harm (:class:`HarmGuard`), except under tcp and ``observe``; ``extra``: the Manager's
    other settings (applications, classes)."""
    tcp = policy_entry(policy).kind == "per-step"
    linkstats = ControllerLinkStats(client, capacities, list(link_ports), routing, keys)
    enforcer: MeterEnforcer
    if tcp:
        enforcer = CountingEnforcer(client, keys, dt)
    elif enforce == "shaper":
        enforcer = ShaperEnforcer(client, keys, egress_ports(routing, link_ports), dt)
    else:
        enforcer = MeterEnforcer(client, keys, dt)
    return Manager(routing=routing, link_kind=link_kind,
                   policy=get_policy("maxmin" if tcp else policy), profiler=profiler,
                   linkstats=linkstats, enforcer=enforcer, dt=dt, weights=weights,
                   guard=HarmGuard() if guard and not tcp and policy != "observe" else None,
                   **extra)


def start_loop(manager: Manager, log: Path | None = None,
               on_step: Callable[[ControllerLinkStats], None] | None = None) -> LiveLoop:
    """Starts the live loop of ``manager`` on a window's flows: their counting rules first
    (every flow uncapped), the link statistics' first poll, the profiler's baseline, so
    that the loop's first interval starts with it; ``on_step`` gets the link statistics
    after every step."""
    manager.enforcer.enforce(np.full(manager.routing.shape[0], np.inf))
    time.sleep(2.0)  # the counting rules' first polls
    linkstats = manager.linkstats
    linkstats.allocatable()
    loop = LiveLoop(manager, log=log)
    if on_step is not None:
        loop.on_step = lambda: on_step(linkstats)  # type: ignore[arg-type]
    manager.profiler.flow_state()  # the first interval starts with the loop, not at set-up
    loop.start()
    return loop


def clear_enforcement(client: ControllerClient) -> None:
    """Remove every meter, priority class and rate class: the links share as plain TCP."""
    client.delete_meters()
    client.delete_classes()
    client.delete_rates()


def port_bytes(client: ControllerClient) -> dict[str, dict[str, Any]]:
    """Every switch port's counters, read now (port name -> counters)."""
    return {p["name"]: p for p in client.ports(fresh=True)}


def link_loads(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]],
               link_ports: Sequence[PortRef], span: float) -> np.ndarray:
    """(L,) each link's load over ``span`` seconds between two :func:`port_bytes`
    readings, bit/s."""
    return np.array([8.0 * (after[r.port][f"{r.direction}_bytes"]
                            - before[r.port][f"{r.direction}_bytes"]) / span
                     for r in link_ports])


def loop_record(manager: Manager, loop: LiveLoop) -> dict[str, Any]:
    """What the loop did in a window: the optimizer's mean time per allocation (ms), the
    allocations, its first errors, the last rates it decided (null: uncapped) and the
    share of steps in which the guard let the allocation cap."""
    opt = [a.optimizer_s * 1e3 for a in manager.history]
    last = manager.history[-1].rates_bps if manager.history else []
    return {
        "optimizer_ms": float(np.mean(opt)) if opt else None,
        "allocations": len(manager.history), "loop_errors": loop.errors[:3],
        "last_rates_bps": [None if not np.isfinite(r) else float(r) for r in last],
        "capped_share": (float(np.mean(manager.guard.decisions))
                         if manager.guard is not None and manager.guard.decisions else None),
    }
