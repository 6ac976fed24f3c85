"""Messages of the reconfiguration protocol and the transport that carries them.

003 §3.4 (Algorithm 1, Fig. 6) needs FIFO channels between the manager and the
instances and between instances: data tuples and protocol messages share the
channel from one instance to the next, so a PROPAGATE always arrives after every
tuple its sender routed with the old table. ``InProcTransport`` is that channel in
one process (the simulator and the tests); a TCP or Storm-stream transport
implements the same two methods.

Every message carries its sender's per-destination sequence number: receivers drop
what they have already seen, so that a node restored from a checkpoint can replay
its input and re-send the same messages without duplicates. A node that does not
replay after a restart (the manager re-sends *new* messages) starts a new
generation: its numbers jump above anything it may have sent before.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from streamband.errors import InputError


class Kind(StrEnum):
    DATA = "DATA"
    GET_METRICS = "GET_METRICS"  # ① manager -> instance
    SEND_METRICS = "SEND_METRICS"  # ② instance -> manager
    SEND_RECONF = "SEND_RECONF"  # ③ manager -> instance
    ACK_RECONF = "ACK_RECONF"  # ④ instance -> manager
    PROPAGATE = "PROPAGATE"  # ⑤ manager -> first instances, instance -> successors
    MIGRATE = "MIGRATE"  # ⑥ instance -> instance of the same operator
    DONE = "DONE"  # instance -> manager: reconfiguration applied (completion, not in Alg. 1)
    ABORT = "ABORT"  # manager -> instance: roll back a configuration not yet propagated


class BadMessage(InputError):
    """An inbox entry that is not a protocol message (what is wrong, what was expected)."""


@dataclass(frozen=True)
class Message:
    kind: Kind
    src: str
    dst: str
    epoch: int = 0
    seq: int = 0
    payload: Any = None


class Transport(Protocol):
    """FIFO, reliable, per-destination logs (an engine's channels or TCP)."""

    def send(self, msg: Message) -> None: ...

    def receive(self, node: str, offset: int) -> Message | None:
        """The message at ``offset`` of ``node``'s inbox, or None if none yet; raises
        :class:`BadMessage` if the entry there is not a message."""
        ...


class InProcTransport:
    """In-memory inboxes (append-only logs); receivers read them at their own offset."""

    def __init__(self) -> None:
        self.logs: dict[str, list[Message]] = {}
        self.sent: dict[Kind, int] = {k: 0 for k in Kind}

    def send(self, msg: Message) -> None:
        self.logs.setdefault(msg.dst, []).append(msg)
        self.sent[msg.kind] += 1

    def receive(self, node: str, offset: int) -> Message | None:
        log = self.logs.get(node)
        if log is None or offset >= len(log):
            return None
        return log[offset]

    def backlog(self, node: str, offset: int) -> int:
        return len(self.logs.get(node, ())) - offset


class Endpoint:
    """Sequence numbering and de-duplication for one node."""

    def __init__(self, name: str, transport: Transport) -> None:
        self.name = name
        self.transport = transport
        self.offset = 0
        self.generation = 0
        self.next_seq: dict[str, int] = {}
        self.last_seq: dict[str, int] = {}
        self.skipped = 0  # inbox entries that were not messages

    def new_generation(self) -> None:
        """Number the next messages above every number used so far (2**32 per generation)."""
        self.generation += 1
        self.next_seq = {}

    def send(self, kind: Kind, dst: str, epoch: int = 0, payload: Any = None) -> None:
        seq = max(self.next_seq.get(dst, 0), self.generation << 32) + 1
        self.next_seq[dst] = seq
        self.transport.send(Message(kind, self.name, dst, epoch, seq, payload))

    def poll(self) -> Message | None:
        """The next new message (duplicates from a replaying sender are skipped, and so
        are entries that are not messages, counted in ``skipped``)."""
        while True:
            try:
                msg = self.transport.receive(self.name, self.offset)
            except BadMessage:
                # One hostile or garbled entry must not stop the node reading the rest.
                self.offset += 1
                self.skipped += 1
                continue
            if msg is None:
                return None
            self.offset += 1
            if msg.seq and msg.seq <= self.last_seq.get(msg.src, 0):
                continue
            if msg.seq:
                self.last_seq[msg.src] = msg.seq
            return msg

    def snapshot(self) -> dict:
        return {"offset": self.offset, "generation": self.generation,
                "next_seq": dict(self.next_seq), "last_seq": dict(self.last_seq)}

    def restore(self, snap: dict) -> None:
        self.offset = snap["offset"]
        self.generation = snap.get("generation", 0)
        self.next_seq = dict(snap["next_seq"])
        self.last_seq = dict(snap["last_seq"])
