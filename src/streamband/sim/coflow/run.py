"""One simulation run from command-line-level parameters, and its summary.

Units: the trace's convention, 1 Gbit/s = 2^30 bit/s, sizes in MiB = 2^20 bytes
(CoflowSim's reading of FB2010); CCTs in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamband.errors import OptionError, SpecError
from streamband.model.fabric import Fabric, big_switch, fat_tree_fabric
from streamband.model.network import split_short
from streamband.sim.coflow import fast
from streamband.sim.coflow.engine import Result, Simulation
from streamband.sim.coflow.schedulers.registry import REGISTRY, make
from streamband.sim.coflow.workloads import CATEGORIES, Workload, spread

GBIT = 2**30  # 1 Gbit/s = 2^30 bit/s (the trace's conventional reading)
UNITS = "1 Gbit/s = 2^30 bit/s, MiB = 2^20 bytes (the trace's reading), CCT in seconds"
TOPOLOGIES = "big_switch | fat_tree:k=K (K even, 2..64)"


@dataclass(frozen=True)
class Topology:
    """``big_switch`` (the trace's ports on one non-blocking switch, 004 §II) or
    ``fat_tree`` of arity ``k`` (004 Table 1)."""

    kind: str
    k: int = 0

    def __str__(self) -> str:
        return self.kind if self.kind == "big_switch" else f"fat_tree:k={self.k}"


def parse_topology(spec: str) -> Topology:
    """The project's topology grammar ``KIND[:key=value,...]`` restricted to what the
    coflow simulator runs: ``big_switch`` or ``fat_tree:k=K``.

    Raises
    ------
    OptionError
        Naming the right form (``fattree:8`` -> ``fat_tree:k=8``).
    """
    expected = f"expected {TOPOLOGIES}"
    kind = spec.partition(":")[0].strip()
    if kind in ("big_switch", "fat_tree"):
        try:
            data = split_short(spec, "--topology")
        except SpecError as err:
            raise OptionError(f"{err} ({expected})") from None
        data.pop("topology")
    else:
        hint = ""
        low = str(kind).replace("_", "").replace("-", "").lower()
        if low.startswith("fattree"):
            digits = "".join(c for c in str(spec) if c.isdigit())
            hint = f"; did you mean fat_tree:k={digits or 8}?"
        elif low.startswith("bigswitch"):
            hint = "; did you mean big_switch?"
        raise OptionError(f"--topology: {expected}, got {spec!r}{hint}")
    if kind == "big_switch":
        if data:
            raise OptionError(f"--topology: big_switch takes no keys (its ports are the "
                              f"trace's), got {', '.join(data)}")
        return Topology(kind)
    extra = set(data) - {"k"}
    if extra:
        raise OptionError(f"--topology: fat_tree takes only k (the link rate is --link-gbps), "
                          f"got {', '.join(sorted(extra))}")
    k = data.get("k")
    if not isinstance(k, int) or isinstance(k, bool) or not 2 <= k <= 64 or k % 2:
        raise OptionError(f"--topology: fat_tree:k=K with K even, 2..64, got k={k!r}")
    return Topology(kind, k)


def build_fabric(wl: Workload, topology: str | Topology, link_gbps: float
                 ) -> tuple[Workload, Fabric]:
    topo = parse_topology(topology) if isinstance(topology, str) else topology
    bps = link_gbps * GBIT
    if topo.kind == "big_switch":
        return wl, big_switch(wl.n_nodes, bps)
    fab = fat_tree_fabric(topo.k, bps)
    return spread(wl, fab.n_hosts), fab


@dataclass
class Run:
    policy: str
    topology: str
    workload: Workload
    result: Result
    params: dict

    def summary(self) -> dict:
        wl, r = self.workload, self.result
        cct = r.cct
        cat = wl.categories()
        mice = cat == 0
        by = {}
        for i, name in enumerate(CATEGORIES):
            sel = cat == i
            by[name] = float(cct[sel].mean()) if sel.any() else None
        return {
            "policy": self.policy,
            "params": self.params,
            "topology": self.topology,
            "units": UNITS,
            "workload": wl.name,
            "coflows": int(wl.n_coflows),
            "flows": int(wl.n_flows),
            "avg_cct_s": float(cct.mean()),
            "p95_cct_s": float(np.percentile(cct, 95)),
            "mice_avg_cct_s": float(cct[mice].mean()) if mice.any() else None,
            "avg_cct_by_category": by,
            "events": int(r.events),
            "wall_s": float(r.wall_s),
        }


def simulate(wl: Workload, policy: str, topology: str | Topology = "big_switch",
             link_gbps: float = 1.0, queues: int | None = None,
             progress: fast.ProgressFn | None = None,
             use_fast: bool = True, **options) -> Run:
    """Run scheduler ``policy`` (a registry name) on ``wl``. ``queues`` and
    ``options`` set the scheduler's parameters where it takes them. With
    ``use_fast`` a compiled scheduler runs in the compiled loop (fs / fs-static on the
    big switch in the port-pair loop); ``use_fast=False`` runs the Python reference.
    ``progress(t_sim_s, flows_done)``, if given, is called as the run goes (every
    0.25 s of wall time at most in the compiled loops, at every completion in the
    reference) and after the last flow."""
    topo = parse_topology(topology) if isinstance(topology, str) else topology
    entry = REGISTRY.get(policy)
    if entry is not None and "queues" in entry.options():
        options["queues"] = queues
    sched = make(policy, **options)
    wl2, fab = build_fabric(wl, topo, link_gbps)
    if use_fast and topo.kind == "big_switch" and fast.bigswitch_supports(wl2, policy):
        res = fast.run_bigswitch(wl2, link_gbps * GBIT, policy, progress)
    elif use_fast and REGISTRY[policy].compiled:
        res = fast.run_compiled(wl2, fab, sched, progress)
    else:
        res = Simulation(wl2, fab, sched).run(progress)
    return Run(policy, str(topo), wl2, res, sched.params())
