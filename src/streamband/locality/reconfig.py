"""The online reconfiguration protocol of 003 §3.4 (Algorithm 1, Fig. 6).

Two explicit state machines talk over a ``Transport``:

``Manager``  IDLE -①-> COLLECTING -②/compute/write-> PREPARED -③④-> PROPAGATING -⑤..-> IDLE
``Instance`` IDLE -③-> PREPARED -⑤ from all predecessors-> SWITCHED (routing updated, ⑥ sent)
             -⑥ from every sender-> IDLE (⑤ to successors, DONE to manager)

The stream is never paused. An instance keeps processing while PREPARED and
SWITCHED; a tuple whose key's state is still on its way (a key of the instance's
``receive`` list) is buffered and processed, in arrival order, once the MIGRATE
that carries the state arrives. Because a PROPAGATE follows every tuple its sender
routed with the old table on the same FIFO channel, an instance that has received
PROPAGATE from all its predecessors will never see another old-routed tuple: it can
hand over the state of the keys it loses (``send`` list) knowing it is final.

Durability and restart:

- the manager writes each configuration (``config-<epoch>.json``) and its own record
  (``manager.json``: phase, epoch, inbox offset, sequence numbers) with temp file +
  fsync + rename at every phase change, *before* sending the messages of the phase;
  after a restart it re-reads its inbox from the saved offset (the answers that
  arrived since are replayed). A restarted manager
  (``Manager.recover``) rolls back a configuration that no instance can have started
  (phase COLLECTING or PREPARED: ABORT to every instance, the old tables stay) and
  resumes one that may have started (PROPAGATING: it re-sends ⑤ to the first
  instances; duplicates are ignored) and waits for the remaining DONEs.
- an instance checkpoints its whole state (keyed state, buffer, protocol record,
  inbox offset and sequence numbers) every ``checkpoint_every`` messages (any
  message boundary is a consistent cut, processing is deterministic). A restarted
  instance (``Instance.recover``) loads the
  checkpoint and replays its inbox from the saved offset; it re-sends the same
  messages with the same sequence numbers, which the receivers drop. This is the
  engine's replay guarantee that 003 §3.4 relies on ("the guarantees are the ones
  provided by the streaming engine").

Extensions to Algorithm 1 (stated, needed for the above): DONE, ABORT, epochs on
every message, sequence numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from streamband.errors import InternalError
from streamband.locality.dataflow import Dataflow
from streamband.locality.durable import (
    atomic_write_json,
    atomic_write_pickle,
    read_json,
    read_pickle,
)
from streamband.locality.routing_table import RoutingTable
from streamband.locality.spacesaving import (
    DEFAULT_MEMORY_BYTES,
    KeyCodec,
    PairSpaceSaving,
    SpaceSaving,
)
from streamband.locality.transport import Endpoint, Kind, Message, Transport
from streamband.model.app import split_instance

MANAGER = "manager"
INPUT = "input"  # the external stream feeding the sources

#: state update of a keyed operator: (old value or None, tuple id, fields) -> new value
Update = Callable[[Any, int, tuple], Any]
#: merge of a migrated value into a local one (local is None unless keys came back)
Merge = Callable[[Any, Any], Any]


def count_update(old: Any, tid: int, fields: tuple) -> Any:
    """The paper's evaluation operator: count the occurrences of the key (003 §4.1)."""
    return (old or 0) + 1


def replace_merge(local: Any, migrated: Any) -> Any:
    return migrated if local is None else local


class ProtocolError(InternalError):
    """A message that the protocol says cannot happen (a bug, never a condition)."""


class InstancePhase(StrEnum):
    IDLE = "IDLE"
    PREPARED = "PREPARED"  # ③ received and acknowledged, waiting for ⑤
    SWITCHED = "SWITCHED"  # new routing in force, ⑥ sent, waiting for incoming ⑥


class ManagerPhase(StrEnum):
    IDLE = "IDLE"
    COLLECTING = "COLLECTING"  # ① sent, waiting for ②
    PREPARED = "PREPARED"  # configuration durable, ③ sent, waiting for ④
    PROPAGATING = "PROPAGATING"  # ⑤ sent to the first instances, waiting for DONE


@dataclass
class Reconf:
    """What ③ carries to one instance (003 §3.4: router, send, receive)."""

    epoch: int
    router: dict[str, RoutingTable]  # tables of the instance's successor operators
    send: dict[str, list[Hashable]]  # destination instance -> keys whose state it sends
    receive: dict[str, list[Hashable]]  # source instance -> keys whose state it expects


@dataclass
class InstanceRecord:
    """Everything an instance must keep across a restart (its checkpoint)."""

    phase: InstancePhase = InstancePhase.IDLE
    applied: int = 0  # last configuration epoch applied
    pending: Reconf | None = None
    propagated_from: set[str] = field(default_factory=set)
    migrated_from: set[str] = field(default_factory=set)
    waiting: dict[Hashable, str] = field(default_factory=dict)  # key -> instance sending it
    gone: set[Hashable] = field(default_factory=set)  # keys whose state was handed over
    buffer: list[tuple[int, tuple]] = field(default_factory=list)
    state: dict[Hashable, Any] = field(default_factory=dict)
    tables: dict[str, RoutingTable] = field(default_factory=dict)


class Instance:
    """One operator instance (POI) running the instance side of Algorithm 1."""

    def __init__(
        self,
        iid: str,
        flow: Dataflow,
        transport: Transport,
        tables: Mapping[str, RoutingTable],
        checkpoint_dir: Path | None = None,
        update: Update = count_update,
        merge: Merge = replace_merge,
        checkpoint_every: int = 256,
        stats_memory_bytes: int = DEFAULT_MEMORY_BYTES,
        stats_decay: float = 0.0,
    ) -> None:
        self.iid = iid
        self.stats_decay = stats_decay
        self.op, self.index = split_instance(iid)
        self.flow = flow
        self.spec = flow.op(self.op)
        self.end = Endpoint(iid, transport)
        self.update = update
        self.merge = merge
        self.checkpoint_dir = checkpoint_dir
        self.checkpoint_every = checkpoint_every
        self.successors = flow.successors(self.op)
        preds = flow.predecessors(self.op)
        self.predecessors = [i for p in preds for i in flow.instances(p)] or [MANAGER]
        self.rec = InstanceRecord(tables={s: tables[s] for s in self.successors})
        self.codec = KeyCodec()
        self.key_stats = SpaceSaving(memory_bytes=stats_memory_bytes)
        self.pair_stats = {s: PairSpaceSaving(memory_bytes=stats_memory_bytes)
                           for s in self.successors if flow.op(s).keyed}
        self.processed = 0
        self._since_checkpoint = 0

    # -- the event loop -----------------------------------------------------
    def step(self) -> bool:
        """Handle one message if one is waiting; True if one was handled."""
        msg = self.end.poll()
        if msg is None:
            return False
        self.handle(msg)
        self._since_checkpoint += 1
        if self._since_checkpoint >= self.checkpoint_every:
            self.checkpoint()
        return True

    def handle(self, msg: Message) -> None:
        handler = {
            Kind.DATA: self._on_data,
            Kind.GET_METRICS: self._on_get_metrics,
            Kind.SEND_RECONF: self._on_reconf,
            Kind.PROPAGATE: self._on_propagate,
            Kind.MIGRATE: self._on_migrate,
            Kind.ABORT: self._on_abort,
        }.get(msg.kind)
        if handler is None:
            raise ProtocolError(f"{self.iid}: unexpected {msg.kind} from {msg.src}")
        handler(msg)

    # -- data ---------------------------------------------------------------
    def _on_data(self, msg: Message) -> None:
        tid, fields = msg.payload
        if not self.spec.keyed:
            self._emit(tid, fields, None)
            return
        key = fields[self.spec.key_field]
        if key in self.rec.waiting:
            self.rec.buffer.append((tid, fields))  # state not here yet: buffer, never drop
            return
        if key in self.rec.gone:
            raise ProtocolError(f"{self.iid}: tuple {tid} for key {key!r} after its state left")
        self._process(tid, fields)

    def _process(self, tid: int, fields: tuple) -> None:
        key = fields[self.spec.key_field]  # type: ignore[index]
        st = self.rec.state
        st[key] = self.update(st.get(key), tid, fields)
        self.processed += 1
        self.key_stats.add(self.codec.id(key))
        self._emit(tid, fields, key)

    def _emit(self, tid: int, fields: tuple, in_key: Hashable | None) -> None:
        for succ in self.successors:
            spec = self.flow.op(succ)
            out_key = fields[spec.key_field]  # type: ignore[index]
            dest = self.rec.tables[succ].route(out_key)
            if in_key is not None and succ in self.pair_stats:
                self.pair_stats[succ].add(self.codec.id(in_key), self.codec.id(out_key))
            self.end.send(Kind.DATA, f"{succ}[{dest}]", payload=(tid, fields))

    # -- ① ② statistics -------------------------------------------------------
    def metrics(self) -> dict:
        """Key and key-pair counts (003 Fig. 4), decoded to keys."""
        dec = self.codec.key
        top = self.key_stats.top()
        out: dict[str, Any] = {"keys": [(dec(k), int(c)) for k, c in zip(top.items, top.counts,
                                                                       strict=True)],
                               "pairs": {}}
        for succ, ps in self.pair_stats.items():
            a, b, c = ps.top()
            out["pairs"][succ] = [(dec(x), dec(y), int(n)) for x, y, n in zip(a, b, c,
                                                                              strict=True)]
        return out

    def _on_get_metrics(self, msg: Message) -> None:
        self.end.send(Kind.SEND_METRICS, MANAGER, msg.epoch, self.metrics())

    # -- ③ ④ ------------------------------------------------------------------
    def _on_reconf(self, msg: Message) -> None:
        r: Reconf = msg.payload
        rec = self.rec
        if r.epoch <= rec.applied or (rec.pending is not None and rec.pending.epoch == r.epoch):
            self.end.send(Kind.ACK_RECONF, MANAGER, r.epoch)  # a re-sent ③: re-acknowledge
            return
        if rec.pending is not None:
            raise ProtocolError(f"{self.iid}: ③ for epoch {r.epoch} while {rec.pending.epoch} runs")
        rec.pending = r
        rec.phase = InstancePhase.PREPARED
        rec.propagated_from = set()
        rec.migrated_from = set()
        for src, keys in r.receive.items():
            for k in keys:
                rec.waiting[k] = src
                rec.gone.discard(k)
        self.end.send(Kind.ACK_RECONF, MANAGER, r.epoch)

    def _on_abort(self, msg: Message) -> None:
        rec = self.rec
        if rec.pending is None or rec.pending.epoch != msg.epoch:
            return
        if rec.phase != InstancePhase.PREPARED or rec.propagated_from:
            raise ProtocolError(f"{self.iid}: ABORT of epoch {msg.epoch} after it started")
        rec.pending = None
        rec.phase = InstancePhase.IDLE
        rec.waiting.clear()
        self._drain_buffer()

    # -- ⑤ ⑥ ------------------------------------------------------------------
    def _on_propagate(self, msg: Message) -> None:
        rec = self.rec
        if msg.epoch <= rec.applied:
            return  # a duplicate from a restarted manager
        if rec.pending is None or rec.pending.epoch != msg.epoch:
            raise ProtocolError(f"{self.iid}: ⑤ for epoch {msg.epoch} before its ③")
        rec.propagated_from.add(msg.src)
        if rec.phase == InstancePhase.PREPARED and rec.propagated_from >= set(self.predecessors):
            self._switch()

    def _switch(self) -> None:
        """All predecessors route with the new tables: switch ours, hand over states."""
        rec = self.rec
        r = rec.pending
        assert r is not None
        rec.tables = {s: r.router[s] for s in self.successors}
        for dst, keys in r.send.items():
            states = {}
            for k in keys:
                states[k] = rec.state.pop(k, None)
                rec.gone.add(k)
            self.end.send(Kind.MIGRATE, dst, r.epoch, states)
        rec.phase = InstancePhase.SWITCHED
        self._maybe_done()

    def _on_migrate(self, msg: Message) -> None:
        rec = self.rec
        if msg.epoch <= rec.applied:
            return
        if rec.pending is None or rec.pending.epoch != msg.epoch:
            raise ProtocolError(f"{self.iid}: ⑥ for epoch {msg.epoch} before its ③")
        for k, v in msg.payload.items():
            if v is not None:
                rec.state[k] = self.merge(rec.state.get(k), v)
            if rec.waiting.get(k) == msg.src:
                del rec.waiting[k]
        rec.migrated_from.add(msg.src)
        self._drain_buffer()
        self._maybe_done()

    def _drain_buffer(self) -> None:
        rec = self.rec
        if not rec.buffer:
            return
        keep = []
        for tid, fields in rec.buffer:
            if fields[self.spec.key_field] in rec.waiting:  # type: ignore[index]
                keep.append((tid, fields))
            else:
                self._process(tid, fields)
        rec.buffer = keep

    def _maybe_done(self) -> None:
        rec = self.rec
        r = rec.pending
        if r is None or rec.phase != InstancePhase.SWITCHED:
            return
        if not rec.migrated_from >= set(r.receive):
            return
        rec.applied = r.epoch
        rec.pending = None
        rec.phase = InstancePhase.IDLE
        rec.propagated_from = set()
        rec.migrated_from = set()
        for succ in self.successors:
            for i in self.flow.instances(succ):
                self.end.send(Kind.PROPAGATE, i, r.epoch)
        self.end.send(Kind.DONE, MANAGER, r.epoch)
        if self.stats_decay:  # the opt-in extension: past periods weigh stats_decay as much
            self.key_stats.decay(self.stats_decay)
            for ps in self.pair_stats.values():
                ps.decay(self.stats_decay)
            return
        self.key_stats.reset()  # 003 §3.2: statistics restart after every reconfiguration
        for ps in self.pair_stats.values():
            ps.reset()
        self.codec = KeyCodec()

    # -- checkpoints ----------------------------------------------------------
    def _path(self) -> Path | None:
        return self.checkpoint_dir / f"instance-{self.iid}.pkl" if self.checkpoint_dir else None

    def checkpoint(self) -> None:
        self._since_checkpoint = 0
        path = self._path()
        if path is None:
            return
        for s in [self.key_stats, *(p.summary for p in self.pair_stats.values())]:
            s.flush()
        atomic_write_pickle(path, {
            "end": self.end.snapshot(), "rec": self.rec, "codec": self.codec,
            "key_stats": self.key_stats, "pair_stats": self.pair_stats,
            "processed": self.processed,
        })

    @classmethod
    def recover(cls, iid: str, flow: Dataflow, transport: Transport, checkpoint_dir: Path,
                **kw: Any) -> Instance:
        """A restarted instance: its last checkpoint, then replay of its inbox."""
        snap = read_pickle(checkpoint_dir / f"instance-{iid}.pkl")
        inst = cls.__new__(cls)
        cls.__init__(inst, iid, flow, transport, snap["rec"].tables, checkpoint_dir, **kw)
        inst.end.restore(snap["end"])
        inst.rec = snap["rec"]
        inst.codec = snap["codec"]
        inst.key_stats = snap["key_stats"]
        inst.pair_stats = snap["pair_stats"]
        inst.processed = snap["processed"]
        return inst


# -- the manager --------------------------------------------------------------
#: computes new tables from the instances' metrics and the current tables
Planner = Callable[[dict[str, dict], dict[str, RoutingTable]], dict[str, RoutingTable]]


@dataclass
class ManagerRecord:
    phase: ManagerPhase = ManagerPhase.IDLE
    active: int = 0  # epoch of the configuration in force
    epoch: int = 0  # epoch of the round under way (or last one)
    acks: list[str] = field(default_factory=list)
    dones: list[str] = field(default_factory=list)
    endpoint: dict = field(default_factory=dict)
    rolled_back: list[int] = field(default_factory=list)


class Manager:
    """The manager side of Algorithm 1, with durable configurations."""

    def __init__(
        self,
        flow: Dataflow,
        transport: Transport,
        tables: Mapping[str, RoutingTable],
        store: Path,
        planner: Planner,
    ) -> None:
        self.flow = flow
        self.end = Endpoint(MANAGER, transport)
        self.store = Path(store)
        self.planner = planner
        self.tables = dict(tables)  # in force
        self.rec = ManagerRecord()
        self.instances = flow.instances()
        self.first = [i for op in flow.order() if not flow.predecessors(op)
                      for i in flow.instances(op)]
        self._metrics: dict[str, dict] = {}
        self._proposed: dict[str, RoutingTable] = {}
        self.migrated_keys = 0
        self.history: list[dict] = []
        if not (self.store / "manager.json").exists():
            self._write_config(0, self.tables)
            self._save()

    # -- durable files ----------------------------------------------------------
    def _config_path(self, epoch: int) -> Path:
        return self.store / f"config-{epoch:06d}.json"

    def _write_config(self, epoch: int, tables: Mapping[str, RoutingTable]) -> None:
        atomic_write_json(self._config_path(epoch),
                          {"epoch": epoch, "tables": {k: t.to_json() for k, t in tables.items()}})

    def _read_config(self, epoch: int) -> dict[str, RoutingTable]:
        d = read_json(self._config_path(epoch))
        return {k: RoutingTable.from_json(t) for k, t in d["tables"].items()}

    def _save(self) -> None:
        self.rec.endpoint = self.end.snapshot()
        r = self.rec
        atomic_write_json(self.store / "manager.json", {
            "phase": r.phase.value, "active": r.active, "epoch": r.epoch, "acks": r.acks,
            "dones": r.dones, "endpoint": r.endpoint, "rolled_back": r.rolled_back,
        })

    @classmethod
    def recover(cls, flow: Dataflow, transport: Transport, store: Path,
                planner: Planner) -> Manager:
        """A restarted manager: roll back an unstarted configuration, resume a started one."""
        d = read_json(Path(store) / "manager.json")
        m = cls.__new__(cls)
        m.__init__(flow, transport, {}, store, planner)  # type: ignore[misc]
        m.rec = ManagerRecord(ManagerPhase(d["phase"]), d["active"], d["epoch"], d["acks"],
                              d["dones"], d["endpoint"], d["rolled_back"])
        m.end.restore(d["endpoint"])
        m.end.new_generation()  # it re-sends new messages rather than replaying its own
        m.tables = m._read_config(m.rec.active)
        if m.rec.phase in (ManagerPhase.COLLECTING, ManagerPhase.PREPARED):
            m.rec.rolled_back.append(m.rec.epoch)
            m.rec.phase = ManagerPhase.IDLE
            m._save()
            for i in m.instances:
                m.end.send(Kind.ABORT, i, m.rec.epoch)
        elif m.rec.phase == ManagerPhase.PROPAGATING:
            m._proposed = m._read_config(m.rec.epoch)
            m._save()
            for i in m.first:
                m.end.send(Kind.PROPAGATE, i, m.rec.epoch)
        else:
            m._save()
        return m

    # -- the state machine ------------------------------------------------------
    @property
    def idle(self) -> bool:
        return self.rec.phase == ManagerPhase.IDLE

    def start_round(self) -> None:
        """① GET_METRICS to every instance."""
        if not self.idle:
            raise ProtocolError(f"manager: a round is already in phase {self.rec.phase}")
        self.rec.epoch += 1
        self.rec.phase = ManagerPhase.COLLECTING
        self.rec.acks, self.rec.dones = [], []
        self._metrics = {}
        self._save()
        for i in self.instances:
            self.end.send(Kind.GET_METRICS, i, self.rec.epoch)

    def step(self) -> bool:
        msg = self.end.poll()
        if msg is None:
            return False
        self.handle(msg)
        return True

    def handle(self, msg: Message) -> None:
        r = self.rec
        if msg.epoch != r.epoch:
            return  # a late answer for a rolled-back round
        if msg.src not in self.instances:
            return  # counted, it would stand in for an instance's answer: only ours count
        if msg.kind == Kind.SEND_METRICS and r.phase == ManagerPhase.COLLECTING:
            self._metrics[msg.src] = msg.payload
            if len(self._metrics) == len(self.instances):
                self._compute_and_send()
        elif msg.kind == Kind.ACK_RECONF and r.phase == ManagerPhase.PREPARED:
            if msg.src not in r.acks:
                r.acks.append(msg.src)
                if len(r.acks) == len(self.instances):
                    r.phase = ManagerPhase.PROPAGATING
                    self._save()  # durable before the first ⑤
                    for i in self.first:
                        self.end.send(Kind.PROPAGATE, i, r.epoch)
        elif msg.kind == Kind.DONE and r.phase == ManagerPhase.PROPAGATING:
            if msg.src not in r.dones:
                r.dones.append(msg.src)
                if len(r.dones) == len(self.instances):
                    self.tables = self._proposed
                    r.active = r.epoch
                    r.phase = ManagerPhase.IDLE
                    self._save()

    def _compute_and_send(self) -> None:
        """② received from all: plan, write the configuration durably, then ③."""
        r = self.rec
        new = self.planner(self._metrics, self.tables)
        reconfs = self.reconfigurations(self.tables, new, r.epoch)
        self._write_config(r.epoch, new)  # 003 §3.4: stable storage before starting
        self._proposed = new
        r.phase = ManagerPhase.PREPARED
        self._save()
        moved = sum(len(k) for rc in reconfs.values() for k in rc.send.values())
        self.migrated_keys += moved
        self.history.append({"epoch": r.epoch, "moved_keys": moved})
        for i in self.instances:
            self.end.send(Kind.SEND_RECONF, i, r.epoch, reconfs[i])

    def reconfigurations(self, old: Mapping[str, RoutingTable], new: Mapping[str, RoutingTable],
                         epoch: int) -> dict[str, Reconf]:
        """③ for every instance: its successors' tables, the keys it sends and receives."""
        out = {}
        for op in self.flow.order():
            for i in self.flow.instances(op):
                router = {s: new[s] for s in self.flow.successors(op)}
                out[i] = Reconf(epoch, router, {}, {})
        for op, table in new.items():
            if op not in old:
                continue
            for k, (a, b) in old[op].owners_changed(table).items():
                src, dst = f"{op}[{a}]", f"{op}[{b}]"
                out[src].send.setdefault(dst, []).append(k)
                out[dst].receive.setdefault(src, []).append(k)
        return out
