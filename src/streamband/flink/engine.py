"""Flink as ``streamband manage`` sees it (:class:`~streamband.loop.engine.Engine`): the
jobs and their subtasks' TaskManagers from the JobManager's REST API, the remote
TaskManager pairs as flows (:mod:`.flows`: matched by the producer's address and data
port and the consumer's address), the reporter plug-in's channels summed per flow
(:class:`~streamband.flink.profiler.FlinkProfiler`), the bytes sent counted by each
flow's rule on its switch.

With no view of the hosts' sockets, two consumer TaskManagers on one host that read from
the same producer share a match: they are one flow (as Storm's worker pairs that share
one are)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from streamband.errors import PreconditionError
from streamband.flink.cluster import rest_get
from streamband.flink.flows import flow_key, pair_sources, placement, tm_pairs
from streamband.flink.profiler import FlinkProfiler
from streamband.loop.engine import (
    DEFAULT_TUPLE_BYTES,
    Counters,
    EngineError,
    FlowMapping,
    Job,
    SwitchMeasured,
    group_flows,
)
from streamband.model.topology import Topology
from streamband.procs import Host

#: the states after which a job runs no more (Flink's globally and locally terminal ones)
ENDED = frozenset({"FINISHED", "CANCELED", "FAILED", "SUSPENDED"})


class FlinkEngine:
    """The Flink session cluster whose JobManager's REST API is at ``rest``
    (``HOST:PORT``, Flink's ``rest.address`` and ``rest.port``)."""

    name, api, noun = "flink", "Flink's REST API", "job"

    def __init__(self, rest: str, every_s: float, timeout: float = 5.0) -> None:
        host, _, port = rest.rpartition(":")
        self.host, self.port = Host("jobmanager", host), int(port)
        self.every_s = every_s
        self.timeout = timeout

    def rest(self, path: str) -> Any:
        try:
            return rest_get(self.host, self.port, path, self.timeout)
        except (PreconditionError, ValueError) as exc:  # ValueError: not JSON
            raise EngineError(str(exc)) from None

    def jobs(self) -> dict[str, Job]:
        """Per name the job that runs (the newest), else the newest that ran."""
        try:
            return self._jobs(self.rest("/jobs/overview")["jobs"])
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise EngineError(f"Flink REST GET /jobs/overview: unexpected answer ({exc!r})"
                              ) from None

    @staticmethod
    def _jobs(listing: list[dict[str, Any]]) -> dict[str, Job]:
        best: dict[str, tuple[tuple[bool, float], Job]] = {}
        for j in listing:
            state = str(j.get("state", ""))
            gone = state in ENDED
            job = Job(str(j["jid"]), state.lower() if gone else state, gone)
            rank = (not gone, float(j.get("start-time") or 0))
            name = str(j.get("name", ""))
            if name not in best or rank > best[name][0]:
                best[name] = (rank, job)
        return {name: job for name, (_, job) in best.items()}

    def placement(self, job_id: str) -> tuple[Any, dict[str, Any]] | None:
        try:
            place = placement(self.rest, job_id)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise EngineError(f"Flink REST, job {job_id}: unexpected answer ({exc!r})"
                              ) from None
        subs = [(vid, s["subtask"], s["tm"], s["status"])
                for vid, v in place["vertices"].items() for s in v["subtasks"]]
        if not subs or not all(tm and status == "RUNNING" for *_, tm, status in subs):
            return None  # being deployed
        tms = place["taskmanagers"]
        sig = tuple(sorted((vid, sub, tm, tms.get(tm, {}).get("host"),
                            tms.get(tm, {}).get("data_port")) for vid, sub, tm, _ in subs))
        return sig, place

    def flows(self, job_id: str, placement: dict[str, Any], topo: Topology,
              tuple_bytes: dict[str, float]) -> FlowMapping:
        pairs = [p for p in tm_pairs(placement) if p.remote]
        hints = [float(np.mean([tuple_bytes.get(e, DEFAULT_TUPLE_BYTES) for e in p.edges]))
                 if p.edges else DEFAULT_TUPLE_BYTES for p in pairs]
        keys = [flow_key(p, None, []) or {} for p in pairs]
        names = [f"{p.src.host}:{p.src.data_port}->{p.dst.host} ({p.name})" for p in pairs]
        mapping = group_flows(pairs, keys, hints, names, topo)
        srcs = pair_sources(placement, pairs)
        mapping.sources = [frozenset().union(*(srcs[j] for j in idx)) for idx in mapping.members]
        return mapping

    def profiler(self, snapshot: Path, job_id: str, mapping: FlowMapping,
                 counters: Counters) -> SwitchMeasured:
        return SwitchMeasured(FlinkProfiler(snapshot, job_id, mapping.pairs), mapping, counters)
