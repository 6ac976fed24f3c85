"""Workloads of 004 §IV-B built from the trace: single wave, multi-wave (Table 2),
bursty, and many-to-many DAGs (TPC-DS query-42 and Facebook-Tao, Fig. 4).

A :class:`Workload` is the flat, array form the engine runs: one row per flow with its
coflow, its *unit* (the receiver-side sub-coflow that makes 004's priority decision,
§III-B/C), its *release group* (flows released together; a group may wait for other
groups: the next wave, or the child sub-coflows of a DAG node), endpoints and bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from streamband.model.fabric import mix64
from streamband.sim.coflow.trace import MIB, Trace

#: 004 Table 2: fraction of a coflow's senders (mappers) in each wave.
WAVE_FRACTIONS: dict[int, tuple[float, ...]] = {
    1: (1.0,),
    2: (0.9, 0.1),
    3: (0.81, 0.09, 0.10),
    4: (0.81, 0.09, 0.04, 0.06),
}

#: 004 Table 3: upper bounds (bytes) of categories I..IV; V is everything above.
CATEGORY_BOUNDS_A = (100 * MIB, 1024 * MIB, 10 * 1024 * MIB, 100 * 1024 * MIB)
CATEGORY_BOUNDS_B = (1024 * MIB, 10 * 1024 * MIB, 100 * 1024 * MIB, 1024 * 1024 * MIB)
CATEGORIES = ("I", "II", "III", "IV", "V")

#: Fig. 4 DAGs as {node: children}; node 1 is the root (the last stage), a parent
#: completes after its children, data flows child -> parent. Our reading of Fig. 4a/b.
DAGS: dict[str, dict[int, tuple[int, ...]]] = {
    # TPC-DS query-42: scan(date_dim) + scan(store_sales) -> join -> join(item) -> agg -> sort
    "tpcds": {1: (2,), 2: (3,), 3: (4, 5), 4: (6, 7), 5: (), 6: (), 7: ()},
    # Facebook-Tao: web server <- 2 cache followers <- 2 cache leaders <- database
    "tao": {1: (2, 3), 2: (4, 5), 3: (4, 5), 4: (6,), 5: (6,), 6: ()},
}


@dataclass
class Workload:
    """Flows in array form plus the coflow, unit and release-group tables."""

    name: str
    n_nodes: int
    coflow: np.ndarray  # (F,) coflow index
    unit: np.ndarray  # (F,) decision unit (receiver of a sub-coflow)
    group: np.ndarray  # (F,) release group
    src: np.ndarray  # (F,) node index
    dst: np.ndarray  # (F,) node index
    size: np.ndarray  # (F,) bytes
    coflow_arrival: np.ndarray  # (C,) s
    coflow_id: np.ndarray  # (C,) id in the trace
    unit_coflow: np.ndarray  # (U,)
    unit_subid: np.ndarray  # (U,) internal sub-coflow id of Algorithm 1 (1 = first batch)
    unit_group: np.ndarray  # (U,) the release group (sub-coflow) the unit belongs to
    group_arrival: np.ndarray  # (G,) s, earliest release
    group_deps: list[tuple[int, ...]]  # groups that must complete before release
    size_bounds: tuple[float, ...] = CATEGORY_BOUNDS_A
    meta: dict = field(default_factory=dict)

    @property
    def n_flows(self) -> int:
        return len(self.size)

    @property
    def n_coflows(self) -> int:
        return len(self.coflow_arrival)

    def coflow_bytes(self) -> np.ndarray:
        return np.bincount(self.coflow, weights=self.size, minlength=self.n_coflows)

    def categories(self) -> np.ndarray:
        """Table 3 category index 0..4 (I..V) of every coflow by its total bytes."""
        return np.searchsorted(np.asarray(self.size_bounds), self.coflow_bytes(), side="left")


def _flows_of(trace: Trace, mapper_waves: int = 1):
    """Per-flow arrays of the conventional reading, mapper-wave index per flow."""
    fr = WAVE_FRACTIONS[mapper_waves]
    cof, red, src, dst, size, wave = [], [], [], [], [], []
    for ci, c in enumerate(trace.coflows):
        m = len(c.mappers)
        maps = np.asarray(c.mappers)
        # 004 §IV-B multi-wave: senders split by Table 2; the first wave keeps >= 1
        cuts = np.floor(np.cumsum(fr) * m + 1e-9).astype(int)
        cuts[-1] = m
        cuts = np.maximum(cuts, 1)
        mw = np.searchsorted(cuts, np.arange(m), side="right")
        r = len(c.reducers)
        cof.append(np.full(m * r, ci))
        red.append(np.repeat(np.arange(r), m))
        src.append(np.tile(maps, r))
        dst.append(np.repeat(np.asarray(c.reducers), m))
        size.append(np.repeat(np.asarray(c.reducer_bytes) / m, m))
        wave.append(np.tile(mw, r))
    cat = np.concatenate
    return cat(cof), cat(red), cat(src), cat(dst), cat(size), cat(wave)


def from_trace(trace: Trace, waves: int = 1, bursty: bool = False) -> Workload:
    """004's many-to-one workloads: the trace (``waves=1``), multi-wave (Table 2: wave
    w+1 of a coflow is released when wave w completes) and bursty (every coflow arrives
    at t=0, 004 §IV-B "Bursty traffic"). Units are (coflow, reducer): each reducer is
    the receiver that decides its coflow's priority (§III-B)."""
    if waves not in WAVE_FRACTIONS:
        raise ValueError(f"waves: expected 1..4 (004 Table 2), got {waves}")
    cof, red, src, dst, size, wave = _flows_of(trace, waves)
    C = len(trace.coflows)
    arrival = np.array([0.0 if bursty else c.arrival_s for c in trace.coflows])
    # units: (coflow, reducer)
    nred = np.array([len(c.reducers) for c in trace.coflows])
    ubase = np.concatenate([[0], np.cumsum(nred)[:-1]])
    unit = ubase[cof] + red
    U = int(nred.sum())
    unit_coflow = np.repeat(np.arange(C), nred)
    # groups: (coflow, wave), renumbered densely; wave w depends on wave w-1
    gkey = cof * waves + wave
    ukeys, group = np.unique(gkey, return_inverse=True)
    g_cof, g_wave = ukeys // waves, ukeys % waves
    deps: list[tuple[int, ...]] = []
    for g in range(len(ukeys)):
        prev = g - 1
        deps.append((prev,) if g_wave[g] > 0 and prev >= 0 and g_cof[prev] == g_cof[g] else ())
    unit_group = np.searchsorted(ukeys, unit_coflow * waves)  # first wave's group
    name = "trace" if waves == 1 else f"{waves}-wave"
    return Workload(
        name=("bursty " if bursty else "") + name,
        n_nodes=trace.ports,
        coflow=cof.astype(np.int64),
        unit=unit.astype(np.int64),
        group=group.astype(np.int64),
        src=src.astype(np.int64),
        dst=dst.astype(np.int64),
        size=size.astype(float),
        coflow_arrival=arrival,
        coflow_id=np.array([c.id for c in trace.coflows]),
        unit_coflow=unit_coflow,
        unit_subid=np.ones(U, np.int64),
        unit_group=unit_group.astype(np.int64),
        group_arrival=arrival[g_cof],
        group_deps=deps,
    )


def subcoflow_ids(children: dict[int, tuple[int, ...]]) -> dict[int, int]:
    """004 Algorithm 1: internal ids, proposed by parents when they invoke children.

    The master gives the first batch (roots) ids 1, 2, ...; a parent with id D proposes
    D + 1 + j to its j-th child (parents have lower ids than their children, §III-C).
    A child takes ``ID + |Parents| - 1`` if all proposals agree, else the largest.
    """
    parents: dict[int, list[int]] = {n: [] for n in children}
    for p, ch in children.items():
        for c in ch:
            parents[c].append(p)
    roots = sorted(n for n, ps in parents.items() if not ps)
    ids = {r: i + 1 for i, r in enumerate(roots)}
    proposals: dict[int, list[int]] = {n: [] for n in children}
    order = list(roots)
    while order:
        node = order.pop(0)
        for j, c in enumerate(children[node]):
            proposals[c].append(ids[node] + 1 + j)
            if len(proposals[c]) == len(parents[c]):
                props = proposals[c]
                ids[c] = props[0] + len(props) - 1 if len(set(props)) == 1 else max(props)
                order.append(c)
    return ids


def many_to_many(trace: Trace, structure: str, reducer_shift: int = 37) -> Workload:
    """004 §IV-B many-to-many: DAG ``structure`` (``tpcds`` or ``tao``, Fig. 4) per trace
    coflow; every node is an exact replica of that coflow (its mappers, its bytes), the
    replicas' reducers rotated by ``node * reducer_shift`` ports so the sub-coflows have
    distinct receivers that share senders (what Information-Relay uses). A node is
    released when all its children have completed (Child-to-Parent dependencies)."""
    if structure not in DAGS:
        raise ValueError(f"structure: expected one of {sorted(DAGS)}, got {structure!r}")
    dag = DAGS[structure]
    ids = subcoflow_ids(dag)
    nodes = sorted(dag)
    base = from_trace(trace)
    P = trace.ports
    C = base.n_coflows
    nred = np.bincount(base.unit_coflow, minlength=C)
    U0 = len(base.unit_coflow)
    fl = {k: [] for k in ("cof", "unit", "group", "src", "dst", "size")}
    g_arr, g_deps = [], []
    u_cof, u_sub, u_grp = [], [], []
    gid = {}
    for ci in range(C):
        for n in nodes:
            gid[(ci, n)] = len(gid)
    for ni, n in enumerate(nodes):
        g = np.array([gid[(ci, n)] for ci in range(C)])
        fl["cof"].append(base.coflow)
        fl["unit"].append(base.unit + ni * U0)
        fl["group"].append(g[base.coflow])
        fl["src"].append(base.src)
        fl["dst"].append((base.dst + ni * reducer_shift) % P)
        fl["size"].append(base.size)
    for n in nodes:
        u_cof.append(base.unit_coflow)
        u_sub.append(np.full(U0, ids[n]))
        u_grp.append(np.array([gid[(ci, n)] for ci in base.unit_coflow]))
    for ci in range(C):
        for n in nodes:
            g_arr.append(base.coflow_arrival[ci])
            g_deps.append(tuple(gid[(ci, c)] for c in dag[n]))
    cat = np.concatenate
    del nred
    return Workload(
        name=f"many-to-many {structure}",
        n_nodes=P,
        coflow=cat(fl["cof"]),
        unit=cat(fl["unit"]),
        group=cat(fl["group"]),
        src=cat(fl["src"]),
        dst=cat(fl["dst"]),
        size=cat(fl["size"]),
        coflow_arrival=base.coflow_arrival,
        coflow_id=base.coflow_id,
        unit_coflow=cat(u_cof),
        unit_subid=cat(u_sub),
        unit_group=cat(u_grp),
        group_arrival=np.asarray(g_arr),
        group_deps=g_deps,
        size_bounds=CATEGORY_BOUNDS_B,
        meta={"dag": {str(k): list(v) for k, v in dag.items()}, "subcoflow_ids": ids},
    )


def spread(wl: Workload, n_hosts: int, seed: int = 0) -> Workload:
    """Spread the trace's rack ports over a fabric of ``n_hosts`` hosts (004 Table 1):
    port p owns the hosts h with h mod ports == p (or host p mod n_hosts when the fabric
    is smaller than the trace), and every mapper/reducer task lands on one of its port's
    hosts by a stable hash of (coflow, port, seed)."""
    P = wl.n_nodes
    if n_hosts <= P:
        return _replace_nodes(wl, wl.src % n_hosts, wl.dst % n_hosts, n_hosts)
    per = np.array([len(range(p, n_hosts, P)) for p in range(P)])

    def place(port: np.ndarray, salt: int) -> np.ndarray:
        h = mix64(wl.coflow * 1_000_003 + port * 7919 + salt * 104_729 + seed)
        return port + P * (h % per[port].astype(np.uint64)).astype(np.int64)

    return _replace_nodes(wl, place(wl.src, 1), place(wl.dst, 2), n_hosts)


def _replace_nodes(wl: Workload, src: np.ndarray, dst: np.ndarray, n: int) -> Workload:
    out = Workload(**{**wl.__dict__, "src": src, "dst": dst, "n_nodes": n})
    out.meta = {**wl.meta, "spread_over_hosts": n}
    return out
