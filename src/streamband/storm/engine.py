"""Storm as ``streamband manage`` sees it (:class:`~streamband.loop.engine.Engine`): the
topologies and their placement from Nimbus (:mod:`.nimbus`), the worker pairs' flows
(:func:`~streamband.storm.flows.map_flows`), the workers' reports summed per flow
(:class:`~streamband.storm.profiler.ClusterProfiler`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from streamband.loop.engine import Counters, EngineError, FlowMapping, Job
from streamband.model.topology import Topology
from streamband.storm.flows import map_flows
from streamband.storm.nimbus import NimbusClient, NimbusError
from streamband.storm.profiler import ClusterProfiler


class StormEngine:
    """The Storm cluster whose Nimbus is at ``nimbus`` (``HOST:PORT``)."""

    name, api, noun = "storm", "Nimbus", "topology"

    def __init__(self, nimbus: str, every_s: float, timeout: float = 5.0) -> None:
        self.nimbus = NimbusClient(nimbus, timeout=timeout)
        self.every_s = every_s
        self._edges: dict[str, list[tuple[str, str]]] = {}

    def jobs(self) -> dict[str, Job]:
        try:
            listing = self.nimbus.cluster()
        except NimbusError as exc:
            raise EngineError(str(exc)) from None
        return {t["name"]: Job(t["id"], "killed", True) if t["status"] == "KILLED"
                else Job(t["id"], t["status"]) for t in listing["topologies"]}

    def placement(self, job_id: str) -> tuple[Any, dict[str, Any]] | None:
        try:
            info = self.nimbus.topology_info(job_id)
        except NimbusError as exc:
            raise EngineError(str(exc)) from None
        ex = info["executors"]
        if not ex or not all(e["host"] and e["port"] for e in ex):
            return None  # being scheduled
        return tuple(sorted((e["component"], e["task_start"], e["host"], e["port"])
                            for e in ex)), info

    def flows(self, job_id: str, placement: dict[str, Any], topo: Topology,
              tuple_bytes: dict[str, float]) -> FlowMapping:
        if job_id not in self._edges:
            try:
                self._edges[job_id] = self.nimbus.edges(job_id)
            except NimbusError as exc:
                raise EngineError(str(exc)) from None
        return map_flows(placement, self._edges[job_id], topo, tuple_bytes)

    def profiler(self, snapshot: Path, job_id: str, mapping: FlowMapping,
                 counters: Counters) -> ClusterProfiler:
        return ClusterProfiler(snapshot, job_id, mapping, counters)
