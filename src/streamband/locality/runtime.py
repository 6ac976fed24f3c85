"""An in-process engine for keyed dataflows, for the simulator and the tests.

It owns the transport, the instances and the manager, feeds the sources from an
external input and delivers messages one at a time in a seeded random order, so
that every interleaving the FIFO channels allow can happen. Crashes are injected by
dropping a node object and recovering it from its durable files.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

from streamband.locality.dataflow import Dataflow
from streamband.locality.reconfig import (
    INPUT,
    Instance,
    Manager,
    Merge,
    Planner,
    Update,
    count_update,
    replace_merge,
)
from streamband.locality.routing_table import RoutingTable
from streamband.locality.transport import Endpoint, InProcTransport, Kind


class LocalCluster:
    def __init__(
        self,
        flow: Dataflow,
        store: Path,
        planner: Planner | None = None,
        tables: Mapping[str, RoutingTable] | None = None,
        update: Update = count_update,
        merge: Merge = replace_merge,
        seed: int = 0,
        checkpoint_every: int = 64,
        stats_memory_bytes: int = 1 << 16,
        stats_decay: float = 0.0,
    ) -> None:
        self.flow = flow
        self.store = Path(store)
        self.rng = random.Random(seed)
        self.transport = InProcTransport()
        self.tables = dict(tables) if tables else {
            o.name: RoutingTable(o.name, o.parallelism) for o in flow.ops if o.keyed
        }
        self.kw: dict[str, Any] = {"update": update, "merge": merge,
                                   "checkpoint_every": checkpoint_every,
                                   "stats_memory_bytes": stats_memory_bytes,
                                   "stats_decay": stats_decay}
        self.instances = {
            iid: Instance(iid, flow, self.transport, self.tables, self.store, **self.kw)
            for iid in flow.instances()
        }
        for inst in self.instances.values():
            inst.checkpoint()
        self.planner = planner
        self.manager = Manager(flow, self.transport, self.tables, self.store,
                               planner or (lambda m, t: dict(t)))
        self.input = Endpoint(INPUT, self.transport)
        self.sources = [i for op in flow.order() if not flow.op(op).keyed
                        for i in flow.instances(op)]
        self._next_source = 0
        self.rounds_done = 0

    # -- input ------------------------------------------------------------------
    def feed(self, tid: int, fields: tuple) -> None:
        """The external stream: round robin over the source instances."""
        src = self.sources[self._next_source % len(self.sources)]
        self._next_source += 1
        self.input.send(Kind.DATA, src, payload=(tid, fields))

    # -- delivery ---------------------------------------------------------------
    def _ready(self) -> list[str]:
        out = [i for i, inst in self.instances.items()
               if self.transport.backlog(i, inst.end.offset) > 0]
        if self.transport.backlog("manager", self.manager.end.offset) > 0:
            out.append("manager")
        return out

    def step(self) -> bool:
        """Deliver one message to a random node that has one; False if none has."""
        ready = self._ready()
        if not ready:
            return False
        node = self.rng.choice(ready)
        if node == "manager":
            was = self.manager.rec.active
            self.manager.step()
            if self.manager.rec.active != was:
                self.rounds_done += 1
        else:
            self.instances[node].step()
        return True

    def drain(self, max_steps: int = 10**8) -> None:
        for _ in range(max_steps):
            if not self.step():
                return
        raise RuntimeError("runtime: messages still flowing after max_steps")

    # -- crashes ----------------------------------------------------------------
    def crash_instance(self, iid: str) -> None:
        self.instances[iid] = Instance.recover(iid, self.flow, self.transport, self.store,
                                               **self.kw)

    def crash_manager(self) -> None:
        self.manager = Manager.recover(self.flow, self.transport, self.store,
                                       self.manager.planner)

    # -- results ----------------------------------------------------------------
    def state(self) -> dict[tuple[str, Hashable], Any]:
        """(operator, key) -> state, over all instances (each key must live once)."""
        out: dict[tuple[str, Hashable], Any] = {}
        for inst in self.instances.values():
            for k, v in inst.rec.state.items():
                if (inst.op, k) in out:
                    raise AssertionError(f"key {k!r} of {inst.op} lives on two instances")
                out[(inst.op, k)] = v
        return out

    def buffered(self) -> int:
        return sum(len(i.rec.buffer) for i in self.instances.values())
