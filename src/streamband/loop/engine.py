"""What ``streamband manage`` needs of a stream engine it knows only by its addresses, the
same for Storm (:mod:`streamband.storm.engine`) and Flink (:mod:`streamband.flink.engine`):
a source of placements and flow states (:class:`Engine`).

- the running applications by name (:meth:`Engine.jobs`: a Storm topology or a Flink job,
  its id and status);
- where one runs (:meth:`Engine.placement`: a signature that changes when it is placed
  anew, and the placement itself);
- its network flows (:meth:`Engine.flows`): the engine's connections between hosts (a
  directed worker pair in Storm, a directed TaskManager pair in Flink), each with the
  meter match a switch can count it by; pairs that share a match are one flow
  (:func:`group_flows`, routed on the config's network);
- their flow states (:meth:`Engine.profiler`): the engine's own profiler over its pairs,
  summed per flow, the bytes sent measured by each flow's counting rule on its switch
  (:class:`SwitchMeasured`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp

from streamband.alloc.base import FlowState
from streamband.model.routing import Router, routing_matrix
from streamband.model.topology import Topology

#: bytes per message assumed until the switch has counted a flow
DEFAULT_TUPLE_BYTES = 1024.0

#: the controller's cumulative bytes per counted flow, by its match (sorted items)
Counters = Callable[[], dict[tuple[Any, ...], float]]


class EngineError(Exception):
    """The engine's API did not answer (one line)."""


@dataclass(frozen=True)
class Job:
    """A running application as its engine lists it: ``gone`` once it has ended (killed,
    canceled, failed, finished), its flows to be dropped."""

    id: str
    status: str
    gone: bool = False


@dataclass
class FlowMapping:
    """The network flows of one placement: flow ``i`` is ``keys[i]``, carrying the pairs
    ``members[i]`` (indices into ``pairs``), on the links of row ``i`` of ``routing``;
    ``bytes_hint[j]``: bytes per tuple of pair ``j`` until measured; ``unrouted``: pairs
    between hosts the config does not list."""

    pairs: list[Any]
    keys: list[dict[str, Any]]
    names: list[str]
    members: list[list[int]]
    routing: sp.csr_matrix
    paths: list[list[int]]
    bytes_hint: list[float]
    unrouted: list[str] = field(default_factory=list)
    #: per flow, the source tasks whose records it carries, where the engine's flow
    #: control is credit-based (Flink; :func:`streamband.loop.guard.paced_links`); None
    #: otherwise
    sources: list[frozenset[Any]] | None = None

    @property
    def n(self) -> int:
        return len(self.keys)


def flow_name(key: dict[str, Any]) -> str:
    """A flow's name from its match: the addresses, with the ports it matches.

    Examples
    --------
    >>> flow_name({"src_ip": "10.0.0.2", "dst_ip": "10.0.0.3", "dst_port": 6700})
    '10.0.0.2->10.0.0.3:6700'
    >>> flow_name({"src_ip": "10.0.0.2", "dst_ip": "10.0.0.3", "src_port": 6121})
    '10.0.0.2:6121->10.0.0.3'
    """
    src = f"{key['src_ip']}:{key['src_port']}" if key.get("src_port") else key["src_ip"]
    dst = f"{key['dst_ip']}:{key['dst_port']}" if key.get("dst_port") else key["dst_ip"]
    return f"{src}->{dst}"


def group_flows(pairs: list[Any], keys: list[dict[str, Any]], hints: list[float],
                names: list[str], topo: Topology) -> FlowMapping:
    """The flows of remote ``pairs`` (each with its meter match ``keys[j]``, bytes per
    tuple ``hints[j]`` and readable name ``names[j]``) on ``topo``, whose hosts are
    addresses: pairs sharing a match are one flow; pairs to or from a host ``topo`` does
    not have are left ``unrouted``; routes are shortest paths, ECMP by host pair."""
    kept, kept_keys, kept_hints, unrouted = [], [], [], []
    for p, k, h, name in zip(pairs, keys, hints, names, strict=True):
        if k["src_ip"] in topo.hosts and k["dst_ip"] in topo.hosts:
            kept.append(p)
            kept_keys.append(k)
            kept_hints.append(float(h))
        else:
            unrouted.append(name)
    flows: list[dict[str, Any]] = []
    members: list[list[int]] = []
    where: dict[tuple[Any, ...], int] = {}
    for i, k in enumerate(kept_keys):
        t = tuple(sorted(k.items()))
        if t not in where:
            where[t] = len(flows)
            flows.append(k)
            members.append([])
        members[where[t]].append(i)
    ends = [(k["src_ip"], k["dst_ip"]) for k in flows]
    paths = [list(x) for x in Router(topo, "ecmp").paths(ends, ends)] if flows else []
    routing = routing_matrix(paths, len(topo.links)) if flows else sp.csr_matrix(
        (0, len(topo.links)))
    return FlowMapping(kept, flows, [flow_name(k) for k in flows], members, routing.tocsr(),
                       paths, kept_hints, unrouted)


class PairProfiler(Protocol):
    """An engine's profiler over the pairs of a mapping: flow ``j`` of its state is pair
    ``j``; ``last``: what its last state was made of."""

    last: dict[str, Any] | None

    def flow_state(self) -> FlowState: ...


class SwitchMeasured:
    """The 5-metric tuple of every network flow of one mapping (000 §IV-A1): the pairs'
    states from the engine's profiler summed per flow, the bytes sent measured by each
    flow's counting rule on its switch (``counters``) where it has one. An engine that
    converts messages to bytes calibrates in :meth:`measured`."""

    def __init__(self, inner: PairProfiler, mapping: FlowMapping, counters: Counters) -> None:
        self.inner = inner
        self.mapping = mapping
        self.counters = counters
        self.keys = [tuple(sorted(k.items())) for k in mapping.keys]
        self._bytes = self._switch_bytes()
        self.last: dict[str, Any] | None = None

    def _switch_bytes(self) -> np.ndarray:
        got = self.counters()
        return np.array([got.get(k, np.nan) for k in self.keys], float)

    def measured(self, idx: list[int], sent: float) -> None:
        """The switch counted ``sent`` bytes of the flow of pairs ``idx`` in the
        interval (an engine's calibration; nothing here)."""

    def extra(self) -> dict[str, Any]:
        """What :attr:`last` adds of the engine's own."""
        return {}

    def flow_state(self) -> FlowState:
        m = self.mapping
        pair = self.inner.flow_state()
        now = self._switch_bytes()
        measured = now - self._bytes  # NaN where not counted, negative after a re-install
        self._bytes = now
        agg = [np.zeros(m.n) for _ in range(5)]
        for f, idx in enumerate(m.members):
            for j, a in enumerate((pair.ls0, pair.ls1, pair.lr0, pair.lr1, pair.sent)):
                agg[j][f] = float(np.sum(np.asarray(a)[idx]))
            if np.isfinite(measured[f]) and measured[f] >= 0:
                agg[4][f] = measured[f]
                self.measured(idx, float(measured[f]))
        state = FlowState(*agg)
        self.last = {"sent": agg[4].tolist(), "ls": agg[1].tolist(), "lr": agg[3].tolist(),
                     **self.extra()}
        return state.check()


class Engine(Protocol):
    """A source of placements and flow states: one per engine section of the config."""

    #: ``storm`` or ``flink``: the config's section and the ``engine`` of its topologies
    name: str
    #: what its API is called in alerts and events (``Nimbus``, ``Flink's REST API``)
    api: str
    #: what one application is called (``topology``, ``job``)
    noun: str
    #: seconds between two readings of the placements
    every_s: float

    def jobs(self) -> dict[str, Job]:
        """The applications by name (raises :class:`EngineError`)."""
        ...

    def placement(self, job_id: str) -> tuple[Any, dict[str, Any]] | None:
        """(signature, placement) of a running application; None while it is being
        scheduled (raises :class:`EngineError`)."""
        ...

    def flows(self, job_id: str, placement: dict[str, Any], topo: Topology,
              tuple_bytes: dict[str, float]) -> FlowMapping:
        """The network flows of a placement on ``topo`` (raises :class:`EngineError`)."""
        ...

    def profiler(self, snapshot: Path, job_id: str, mapping: FlowMapping,
                 counters: Counters) -> SwitchMeasured:
        """The flow states of ``mapping``, from the reports in the receiver's
        ``snapshot``."""
        ...
