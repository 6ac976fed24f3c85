"""From a running topology's placement (Nimbus ``getTopologyInfo``) to the network's
flows: in Storm an instance pair between two machines travels on the one TCP
connection of its two workers (000 §IV: flows; 001 §II: internal and external flows),
so with one executor per worker a flow is a directed worker pair, matched in the network
by ``ip_src, ip_dst, tcp_dst`` = the receiving worker's slot port, plus ``tcp_src``
when another connection from the same host shares those three."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamband.loop.engine import DEFAULT_TUPLE_BYTES, FlowMapping, group_flows
from streamband.loop.sockets import TcpSocket
from streamband.model.topology import Topology

_WORKER_PORT = re.compile(rb"-Dworker\.port=(\d+)")


@dataclass(frozen=True)
class Worker:
    host: str  # the supervisor's storm.local.hostname (its address)
    port: int  # the worker's slot port


@dataclass(frozen=True)
class WorkerPair:
    """A directed worker pair: one TCP connection, ``src`` connects to ``dst``'s slot."""

    src: Worker
    dst: Worker
    label: str = ""
    #: the tasks of the sending executor (a join's store keys an input by its component,
    #: or by ``component:task`` where each sending task is an input of its own)
    src_tasks: tuple[int, ...] = ()

    @property
    def src_component(self) -> str:
        """The sending component (from :attr:`label`, ``A[i]->B[j]``)."""
        return self.label.split("->")[0].split("[")[0]

    @property
    def remote(self) -> bool:
        return self.src.host != self.dst.host

    @property
    def name(self) -> str:
        return f"{self.src.host}:{self.src.port}->{self.dst.host}:{self.dst.port}"


def placement(info: dict[str, Any]) -> dict[str, list[Worker]]:
    """Component -> the workers of its executors, in task order."""
    out: dict[str, list[tuple[int, Worker]]] = {}
    for e in info["executors"]:
        out.setdefault(e["component"], []).append(
            (e["task_start"], Worker(e["host"], int(e["port"]))))
    return {c: [w for _, w in sorted(v)] for c, v in out.items()}


def component_pairs(info: dict[str, Any], edges: list[tuple[str, str]]) -> list[WorkerPair]:
    """The worker pairs that carry the topology's ``edges`` (component pairs), every
    sending executor to every receiving one (shuffle or fields grouping), in edge order;
    pairs inside one worker carry nothing over TCP and are left out."""
    where = placement(info)
    tasks: dict[str, list[tuple[int, ...]]] = {}
    for e in sorted(info["executors"], key=lambda e: e["task_start"]):
        tasks.setdefault(e["component"], []).append(
            tuple(range(int(e["task_start"]), int(e.get("task_end", e["task_start"])) + 1)))
    pairs: list[WorkerPair] = []
    for a, b in edges:
        for i, ws in enumerate(where.get(a, [])):
            for j, wd in enumerate(where.get(b, [])):
                if ws != wd:
                    pairs.append(WorkerPair(ws, wd, f"{a}[{i}]->{b}[{j}]", tasks[a][i]))
    return pairs


def worker_port(pid: int) -> int | None:
    """The slot port of a Storm worker process (its ``-Dworker.port``), else None."""
    try:
        m = _WORKER_PORT.search(Path(f"/proc/{pid}/cmdline").read_bytes())
    except OSError:
        return None
    return int(m.group(1)) if m else None


def connection(pair: WorkerPair, sockets: list[TcpSocket]) -> TcpSocket | None:
    """The sender-side socket of ``pair`` among its host's sockets: to the receiving
    worker's slot, held by the sending worker, from the sending host's address (on
    loopback, 127.0.0.1: a connection to another 127/8 address leaves from it whatever
    address the worker's supervisor has)."""
    for s in sockets:
        if (s.dst_ip, s.dst_port) == (pair.dst.host, pair.dst.port) \
                and _from(s.src_ip, pair.src.host) \
                and any(worker_port(p) == pair.src.port for p in s.pids):
            return s
    return None


def _from(src_ip: str, host: str) -> bool:
    """Whether a socket bound to ``src_ip`` leaves from ``host``.

    Examples
    --------
    >>> _from("10.0.0.2", "10.0.0.2"), _from("127.0.0.1", "127.0.0.3")
    (True, True)
    >>> _from("10.0.0.1", "10.0.0.2")
    False
    """
    return src_ip == host or (src_ip == "127.0.0.1" and host.startswith("127."))


def flow_key(pair: WorkerPair, sockets: list[TcpSocket]) -> dict[str, Any] | None:
    """The meter match of a remote pair (None for a pair inside one host)."""
    if not pair.remote:
        return None
    key: dict[str, Any] = {"src_ip": pair.src.host, "dst_ip": pair.dst.host, "proto": "tcp",
                           "dst_port": pair.dst.port}
    mine = connection(pair, sockets)
    shared = [s for s in sockets if (s.dst_ip, s.dst_port) == (pair.dst.host, pair.dst.port)
              and _from(s.src_ip, pair.src.host) and s is not mine]
    if shared and mine is not None:
        key["src_port"] = mine.src_port
    return key


# -- the flow mapper of a cluster known by addresses (000 §V-A1) ---------------------
def flow_match(p: WorkerPair) -> dict[str, Any]:
    """The meter match of a remote worker pair (its receiving worker's slot port)."""
    return {"src_ip": p.src.host, "dst_ip": p.dst.host, "proto": "tcp", "dst_port": p.dst.port}


def map_flows(info: dict[str, Any], edges: list[tuple[str, str]], topo: Topology,
              tuple_bytes: dict[str, float] | None = None) -> FlowMapping:
    """The network flows of a placement (Nimbus's ``topology_info``) and its edges on
    ``topo``, whose hosts are addresses; ``tuple_bytes``: bytes per tuple of an edge
    ``'SRC->DST'`` until the switch has measured it (default
    :data:`DEFAULT_TUPLE_BYTES`)."""
    hint = tuple_bytes or {}
    pairs = [p for p in component_pairs(info, [e for e in edges if not e[0].startswith("__")])
             if p.remote]
    hints = []
    for p in pairs:
        a, b = p.label.split("->")
        hints.append(float(hint.get(f"{a.split('[')[0]}->{b.split('[')[0]}",
                                    DEFAULT_TUPLE_BYTES)))
    return group_flows(pairs, [flow_match(p) for p in pairs], hints, [p.name for p in pairs],
                       topo)
