"""From a running Flink job (the JobManager's REST API: its plan, its vertices' subtask
locations, the TaskManagers' data ports) to the network's flows.

Flink multiplexes every channel between two TaskManagers over one TCP connection
(``taskmanager.network.max-num-tcp-connections``, default 1): the consumer's TaskManager
connects to the producer's ``taskmanager.data.port`` and the data flows from producer to
consumer. A flow is therefore a directed TaskManager pair (:class:`TmPair`), carrying the
channels of every job edge between subtasks there; with one operator group per
TaskManager (:func:`streamband.flink.cluster.taskmanagers`) it carries one job edge. The
meter matches the producer's address and data port and the consumer's address
(:func:`flow_key`), plus the consumer's port where two consumer TaskManagers on one host
read from the same producer.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamband.loop.sockets import TcpSocket

RestFn = Callable[[str], Any]
_CONF_DIR = re.compile(rb"--configDir\x00([^\x00]+)/conf\x00")


@dataclass(frozen=True)
class TaskManagerRef:
    """A TaskManager as the REST API names it: its resource id, address and data port."""

    id: str
    host: str
    data_port: int


@dataclass(frozen=True)
class Channel:
    """One channel of a job edge: producer subtask to consumer subtask."""

    src_vertex: str
    src_subtask: int
    dst_vertex: str
    dst_subtask: int


@dataclass(frozen=True)
class TmPair:
    """A directed TaskManager pair: one TCP connection from ``dst`` to ``src``'s data port,
    data from ``src`` to ``dst``; ``edges``: the job edges it carries (``A->B``, component
    names); ``channels``: its channels."""

    src: TaskManagerRef
    dst: TaskManagerRef
    edges: tuple[str, ...] = ()
    channels: tuple[Channel, ...] = field(default=(), compare=False)

    @property
    def remote(self) -> bool:
        """Whether the pair crosses the network (two hosts)."""
        return self.src.host != self.dst.host

    @property
    def name(self) -> str:
        return f"{self.src.id}->{self.dst.id}"

    @property
    def label(self) -> str:
        return f"{','.join(self.edges)}@{self.name}"

    @property
    def src_component(self) -> str:
        return self.edges[0].split("->")[0] if self.edges else ""


def component(vertex_name: str) -> str:
    """The component a vertex (a chain of operators) stands for: its first operator's name
    without Flink's ``Source: `` prefix and the benchmark sources' ``-kafka`` suffix.

    Examples
    --------
    >>> component("Source: A-kafka -> A")
    'A'
    >>> component("D -> D-end")
    'D'
    >>> component("Source: file-input -> tokenizer")
    'file-input'
    """
    first = vertex_name.split(" -> ")[0].strip()
    first = first.removeprefix("Source: ")
    return first.removesuffix("-kafka")


def placement(rest: RestFn, job: str) -> dict[str, Any]:
    """What the REST API says of ``job``'s placement: per vertex its name, component,
    parallelism and each subtask's TaskManager (id, endpoint); the plan's edges (producer,
    consumer, ship strategy); each TaskManager's address and data port."""
    plan = rest(f"/jobs/{job}/plan")["plan"]
    tms = {}
    for t in rest("/taskmanagers")["taskmanagers"]:
        host = re.search(r"@([^:/]+):", t.get("path", ""))
        tms[t["id"]] = {"host": host.group(1) if host else "", "data_port": int(t["dataPort"])}
    vertices = {}
    for v in rest(f"/jobs/{job}")["vertices"]:
        det = rest(f"/jobs/{job}/vertices/{v['id']}")
        subs = [{"subtask": s["subtask"], "tm": s.get("taskmanager-id"),
                 "endpoint": s.get("endpoint") or s.get("host"), "status": s.get("status")}
                for s in det.get("subtasks", [])]
        vertices[v["id"]] = {"name": v["name"], "component": component(v["name"]),
                             "parallelism": v["parallelism"], "subtasks": subs}
    edges = [{"src": i["id"], "dst": n["id"], "ship": i.get("ship_strategy", "")}
             for n in plan["nodes"] for i in n.get("inputs", [])]
    return {"job": job, "vertices": vertices, "edges": edges, "taskmanagers": tms}


def _tm(place: dict[str, Any], tm_id: str | None, endpoint: str | None) -> TaskManagerRef:
    t = place["taskmanagers"].get(tm_id or "")
    if t:
        return TaskManagerRef(str(tm_id), t["host"], int(t["data_port"]))
    host, _, port = (endpoint or ":-1").rpartition(":")
    return TaskManagerRef(str(tm_id), host, int(port))


def channels(place: dict[str, Any]) -> list[Channel]:
    """Every channel of the job's edges: a FORWARD edge joins subtask i to subtask i, any
    other (hash, rebalance, broadcast, rescale taken as all-to-all) every pair."""
    out = []
    for e in place["edges"]:
        a, b = place["vertices"][e["src"]], place["vertices"][e["dst"]]
        for s in a["subtasks"]:
            for d in b["subtasks"]:
                if e["ship"] == "FORWARD" and s["subtask"] != d["subtask"]:
                    continue
                out.append(Channel(e["src"], s["subtask"], e["dst"], d["subtask"]))
    return out


def tm_pairs(place: dict[str, Any]) -> list[TmPair]:
    """The directed TaskManager pairs the job's channels cross (pairs inside one
    TaskManager carry nothing over TCP and are left out), in edge order."""
    vs = place["vertices"]
    where = {(vid, s["subtask"]): _tm(place, s["tm"], s["endpoint"])
             for vid, v in vs.items() for s in v["subtasks"]}
    pairs: dict[tuple[TaskManagerRef, TaskManagerRef], tuple[list[str], list[Channel]]] = {}
    for ch in channels(place):
        a, b = where[(ch.src_vertex, ch.src_subtask)], where[(ch.dst_vertex, ch.dst_subtask)]
        if a.id == b.id:
            continue
        edges, chans = pairs.setdefault((a, b), ([], []))
        label = f"{vs[ch.src_vertex]['component']}->{vs[ch.dst_vertex]['component']}"
        if label not in edges:
            edges.append(label)
        chans.append(ch)
    return [TmPair(a, b, tuple(e), tuple(c)) for (a, b), (e, c) in pairs.items()]


def pair_sources(place: dict[str, Any], pairs: list[TmPair]) -> list[frozenset[tuple[str, int]]]:
    """Per pair, the source subtasks (vertex id, subtask; a subtask with no input channel)
    whose records its channels carry, through every channel upstream: what credit-based
    flow control paces the pair with (:func:`streamband.loop.guard.paced_links`)."""
    inputs: dict[tuple[str, int], list[tuple[str, int]]] = {}
    for ch in channels(place):
        inputs.setdefault((ch.dst_vertex, ch.dst_subtask), []).append(
            (ch.src_vertex, ch.src_subtask))
    memo: dict[tuple[str, int], frozenset[tuple[str, int]]] = {}

    def up(task: tuple[str, int]) -> frozenset[tuple[str, int]]:
        if task not in memo:
            memo[task] = frozenset()  # a cycle (iterations) adds nothing twice
            srcs = inputs.get(task)
            memo[task] = (frozenset({task}) if not srcs
                          else frozenset().union(*(up(t) for t in srcs)))
        return memo[task]

    return [frozenset().union(*(up((c.src_vertex, c.src_subtask)) for c in p.channels))
            for p in pairs]


def tm_pids(tag_pids: list[int]) -> dict[int, str]:
    """pid -> TaskManager name of the TaskManager JVMs among ``tag_pids`` (the name of
    its configuration directory, ``WORK/NAME/conf``)."""
    out = {}
    for pid in tag_pids:
        try:
            m = _CONF_DIR.search(Path(f"/proc/{pid}/cmdline").read_bytes())
        except OSError:
            continue
        if m and b"TaskManagerRunner" in Path(f"/proc/{pid}/cmdline").read_bytes():
            out[pid] = os.fsdecode(m.group(1)).rsplit("/", 1)[-1]
    return out


def connection(pair: TmPair, producer: list[TcpSocket], consumer: list[TcpSocket],
               names: dict[int, str]) -> TcpSocket | None:
    """The producer-side socket of ``pair`` (local: the producer's data port): its peer is
    the consumer-side socket that ``pair.dst``'s JVM holds (``consumer``: the sockets of the
    consumer's host, with their processes; ``names``: pid -> TaskManager name)."""
    peers = {(s.src_ip, s.src_port) for s in consumer
             if (s.dst_ip, s.dst_port) == (pair.src.host, pair.src.data_port)
             and any(names.get(p) == pair.dst.id for p in s.pids)}
    for s in producer:
        if (s.src_ip, s.src_port) == (pair.src.host, pair.src.data_port) \
                and (s.dst_ip, s.dst_port) in peers:
            return s
    return None


def flow_key(pair: TmPair, sock: TcpSocket | None, producer: list[TcpSocket]
             ) -> dict[str, Any] | None:
    """The meter match of a remote pair (None for a pair inside one host): producer address
    and data port to the consumer's address, and the consumer's port when another
    connection from that producer port goes to the same address."""
    if not pair.remote:
        return None
    key: dict[str, Any] = {"src_ip": pair.src.host, "dst_ip": pair.dst.host, "proto": "tcp",
                           "src_port": pair.src.data_port}
    shared = [s for s in producer if (s.src_ip, s.src_port, s.dst_ip) ==
              (pair.src.host, pair.src.data_port, pair.dst.host) and s is not sock]
    if shared and sock is not None:
        key["dst_port"] = sock.dst_port
    return key
