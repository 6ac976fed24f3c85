"""One simulation run from CLI-level parameters, and its summary (issue 3 item 4)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from streamband.model.fabric import Fabric, big_switch, fat_tree_fabric
from streamband.sim.coflow import fast
from streamband.sim.coflow.engine import Result, Simulation
from streamband.sim.coflow.schedulers.registry import make
from streamband.sim.coflow.workloads import CATEGORIES, Workload, spread

GBIT = 2**30  # 1 Gbit/s = 2^30 bit/s (the trace's conventional reading)


def parse_topology(spec: str) -> tuple[str, int]:
    """``bigswitch`` or ``fattree:K`` (K even, >= 2)."""
    if spec == "bigswitch":
        return "bigswitch", 0
    m = re.fullmatch(r"fattree:(\d+)", spec)
    if not m or int(m.group(1)) < 2 or int(m.group(1)) % 2:
        raise ValueError(f"topology: expected 'bigswitch' or 'fattree:K' with K even, got {spec!r}")
    return "fattree", int(m.group(1))


def build_fabric(wl: Workload, topology: str, link_gbps: float) -> tuple[Workload, Fabric]:
    kind, k = parse_topology(topology)
    bps = link_gbps * GBIT
    if kind == "bigswitch":
        return wl, big_switch(wl.n_nodes, bps)
    fab = fat_tree_fabric(k, bps)
    return spread(wl, fab.n_hosts), fab


@dataclass
class Run:
    policy: str
    topology: str
    workload: Workload
    result: Result

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
            "topology": self.topology,
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


def simulate(wl: Workload, policy: str, topology: str = "bigswitch", link_gbps: float = 1.0,
             queues: int = 4, progress=None, use_fast: bool = True) -> Run:
    """Run ``policy`` on ``wl``. With ``use_fast`` every policy but ``varys`` runs in
    the compiled loops (fs / fs-static on the big switch in the port-pair loop, the
    rest in the general one); ``use_fast=False`` runs the Python reference engine."""
    sched = make(policy, queues)
    wl2, fab = build_fabric(wl, topology, link_gbps)
    if use_fast and topology == "bigswitch" and fast.supports(wl2, policy):
        res = fast.run_bigswitch(wl2, link_gbps * GBIT, policy)
    elif use_fast and policy in fast.FABRIC_POLICIES:
        res = fast.run_fabric(wl2, fab, sched)
    else:
        res = Simulation(wl2, fab, sched).run(progress)
    return Run(policy, topology, wl2, res)
