"""The experiments of 003 §4: synthetic (Fig. 7-9) and a time-varying dataset (Fig. 11-12).

Locality is the share of A -> B tuples routed to an instance on the same server;
imbalance is max instance load / mean instance load of an operator (003 §3.1), the
larger of A's and B's. Throughput comes from ``throughput.chain_throughput`` (the
analytic max-min steady state unless another network model is passed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from streamband.locality.keygraph import KeyGraph, build_keygraph
from streamband.locality.partition import DEFAULT_ALPHA, partition_keygraph
from streamband.locality.routing_table import hash_route
from streamband.locality.spacesaving import DEFAULT_MEMORY_BYTES, PairSpaceSaving, SpaceSaving
from streamband.locality.throughput import (
    NetworkModel,
    ThroughputResult,
    chain_throughput,
    fluid_network,
)
from streamband.locality.workloads import Flights, Synthetic, synthetic

POLICIES_SYN = ("hash", "locality_aware", "worst_case")
POLICIES_FLIGHTS = ("hash", "offline", "online")


def hash_array(n_codes: int, op: str, n: int, names: np.ndarray | None = None) -> np.ndarray:
    """Hash-fallback instance of every key code (the default fields grouping)."""
    keys = names if names is not None else np.arange(n_codes)
    return np.fromiter((hash_route(k, op, n) for k in keys.tolist()), np.int64, n_codes)


def share_matrix(src: np.ndarray, dst: np.ndarray, n: int) -> np.ndarray:
    m = np.bincount(src * n + dst, minlength=n * n).reshape(n, n).astype(float)
    return m / max(m.sum(), 1.0)


def imbalance(dest: np.ndarray, n: int) -> float:
    if dest.size == 0:
        return 1.0
    c = np.bincount(dest, minlength=n)
    return float(c.max() / c.mean())


# -- synthetic (003 §4.2) -------------------------------------------------------
@dataclass
class SynPoint:
    n: int
    locality_param: float
    padding: int
    bw_bps: float
    locality: dict[str, float]
    throughput_tps: dict[str, float]
    network_limited: dict[str, bool]


def synthetic_routes(w: Synthetic, policy: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(source instance, A instance, B instance) of every tuple under ``policy``."""
    n = w.n
    src = w.a % n  # the source is partitioned by the first field's group
    if policy == "hash":
        k = n * w.keys_per_group
        return src, hash_array(k, "A", n)[w.a], hash_array(k, "B", n)[w.b]
    if policy == "locality_aware":  # 003 §4.2: (i, j, p) goes to A_i then B_j
        return src, w.a % n, w.b % n
    if policy == "worst_case":  # tuples (i, i, p) always cross the network
        return src, w.a % n, (w.b + 1) % n
    raise ValueError(f"policy: expected one of {POLICIES_SYN}, got {policy!r}")


def synthetic_point(n: int, locality: float, padding: int, bw_bps: float,
                    tuples: int = 100_000, seed: int = 0,
                    network: NetworkModel = fluid_network) -> SynPoint:
    w = synthetic(n, locality, tuples, seed=seed)
    loc, thr, lim = {}, {}, {}
    for p in POLICIES_SYN:
        s, a, b = synthetic_routes(w, p)
        r: ThroughputResult = chain_throughput(
            share_matrix(s, a, n), share_matrix(a, b, n), padding, bw_bps, network=network
        )
        loc[p] = float(np.mean(a == b))
        thr[p] = r.throughput_tps
        lim[p] = r.network_limited
    return SynPoint(n, locality, padding, bw_bps, loc, thr, lim)


# -- flights (003 §4.3) ---------------------------------------------------------
#: imbalance windows after a reconfiguration: the whole period it opens (the headline,
#: what 003 Fig. 11b plots per week), its first day, its first FIRST_N tuples
IMBALANCE_WINDOWS = ("period", "first_day", "first_n")
FIRST_N = 2000


@dataclass
class FlightsRun:
    n: int
    period_h: float
    weeks: list[int]  # period index (ISO week - 1 for 7-day periods) of every measurement
    locality: dict[str, list[float]]
    imbalance: dict[str, list[float]]  # per period, max of A and B, every policy
    imbalance_after_reconfig: list[float]  # online, the period that starts with it
    planned_imbalance: list[float]  # on the statistics the partition was computed from
    throughput_tps: dict[str, float]
    reconfigurations: int
    extra: dict = field(default_factory=dict)


class FlightsRouter:
    """Routing tables over key codes: a table entry or the hash fallback."""

    def __init__(self, f: Flights, n: int) -> None:
        self.n = n
        self.hash_a = hash_array(f.tail_names.size, "A", n, f.tail_names)
        self.hash_b = hash_array(f.dest_names.size, "B", n, f.dest_names)
        self.a = self.hash_a.copy()
        self.b = self.hash_b.copy()
        self.in_table_a = np.zeros(f.tail_names.size, bool)

    def set_tables(self, graph: KeyGraph, parts: np.ndarray) -> None:
        """Part p = server p = instance p of A and of B (instance i on server i).

        The new tables *replace* the old ones (003 §3.3-3.4: "the new routing table");
        a key absent from the new statistics falls back to hash (003 §4.3: keys "not
        observed previously ... are thus routed using hash functions")."""
        self.a = self.hash_a.copy()
        self.b = self.hash_b.copy()
        for oi, arr in ((0, self.a), (1, self.b)):
            v = np.flatnonzero(graph.op_of == oi)
            arr[graph.keys[v].astype(np.int64)] = parts[v]
        self.in_table_a = np.zeros_like(self.in_table_a)
        self.in_table_a[graph.keys[graph.op_of == 0].astype(np.int64)] = True


class InstanceStats:
    """The statistics the instances of A and B keep (003 §3.2, Fig. 4): per A instance
    its keys and its (tailnum, dest) pairs, per B instance its keys, each a SpaceSaving
    summary of ``memory_bytes``. After a reconfiguration they restart (``reset``, 003's
    method) or, opted in, decay (the extension beyond 003: past periods weigh keep,
    keep², ..., :meth:`SpaceSaving.decay`); statistics stay with the instance that
    counted them (they do not migrate with the keys), as in
    :class:`streamband.locality.reconfig.Instance`."""

    def __init__(self, n: int, memory_bytes: int) -> None:
        self.n = n
        self.a = [SpaceSaving(memory_bytes=memory_bytes) for _ in range(n)]
        self.pairs = [PairSpaceSaving(memory_bytes=memory_bytes) for _ in range(n)]
        self.b = [SpaceSaving(memory_bytes=memory_bytes) for _ in range(n)]

    def update(self, tail: np.ndarray, dest: np.ndarray, inst_a: np.ndarray,
               inst_b: np.ndarray) -> None:
        for i in range(self.n):
            mine_a = inst_a == i
            self.a[i].update(tail[mine_a])
            self.pairs[i].update(tail[mine_a], dest[mine_a])
            self.b[i].update(dest[inst_b == i])

    def graph(self, top_edges: int | None = None) -> KeyGraph:
        """The manager's merge of every instance's ② (003 Fig. 5)."""
        ka, ca, kb, cb, pa, pb, pc = [], [], [], [], [], [], []
        for i in range(self.n):
            t = self.a[i].top()
            ka.append(t.items)
            ca.append(t.counts)
            x, y, c = self.pairs[i].top(top_edges)
            pa.append(x)
            pb.append(y)
            pc.append(c)
            tb = self.b[i].top()
            kb.append(tb.items)
            cb.append(tb.counts)
        cat = np.concatenate
        g = build_keygraph({"A": (cat(ka), cat(ca)), "B": (cat(kb), cat(cb))},
                           {("A", "B"): (cat(pa), cat(pb), cat(pc))})
        return g.top_edges(top_edges) if top_edges is not None else g

    def after_reconfiguration(self, decay: float) -> None:
        for s in [*self.a, *self.pairs, *self.b]:
            if decay:
                s.decay(decay)
            else:
                s.reset()


def collect_graph(tail: np.ndarray, dest: np.ndarray, inst_a: np.ndarray, inst_b: np.ndarray,
                  n: int, memory_bytes: int, top_edges: int | None = None) -> KeyGraph:
    """One period's statistics as the instances collect them (003 §3.2, Fig. 4), merged
    by the manager."""
    st = InstanceStats(n, memory_bytes)
    st.update(tail, dest, inst_a, inst_b)
    return st.graph(top_edges)


def _imb2(ia: np.ndarray, ib: np.ndarray, n: int) -> tuple[float, float]:
    return imbalance(ia, n), imbalance(ib, n)


def run_flights(f: Flights, n: int = 6, period_h: float = 168.0, alpha: float = DEFAULT_ALPHA,
                memory_bytes: int = DEFAULT_MEMORY_BYTES, padding: int = 4096,
                bw_bps: float = 1e9, seed: int = 0, first_n: int = FIRST_N,
                progress: Callable[[int, int], None] | None = None,
                decay: float = 0.0) -> FlightsRun:
    """Online (re-partition every period) vs offline (once, after the first period)
    vs hash, replaying ``f`` in time order (003 §4.3, Fig. 11).

    Periods start at ``f.hours = 0`` (Monday of ISO week 1), so 7-day periods are the
    calendar weeks of 2013. Locality is the share of A -> B tuples (the keyed hop whose
    key pairs 003 counts) whose A and B instances are on the same server; the
    source -> A hop is not counted: the source is not keyed and sits on no particular
    server (003 §4.1, one source S). Imbalance is max instance load / mean instance
    load, the larger of A's and B's, over the windows of ``IMBALANCE_WINDOWS``.

    ``decay``: at every reconfiguration the instances' statistics keep this share of
    their weight instead of restarting (an extension beyond 003, see
    :class:`InstanceStats`); 0: 003's reset."""
    period = np.floor(f.hours / period_h).astype(np.int64)
    n_periods = int(period.max()) + 1
    bounds = np.searchsorted(period, np.arange(n_periods + 1))
    routers = {p: FlightsRouter(f, n) for p in POLICIES_FLIGHTS}
    loc = {p: [] for p in POLICIES_FLIGHTS}
    imb = {p: [] for p in POLICIES_FLIGHTS}
    win = {p: {k: [] for k in IMBALANCE_WINDOWS} for p in POLICIES_FLIGHTS}
    imb_ab = {p: {"A": [], "B": []} for p in POLICIES_FLIGHTS}
    planned, planned_loc, seen_share, seen_loc, days, tuples = [], [], [], [], [], []
    share_ab = {p: np.zeros((n, n)) for p in POLICIES_FLIGHTS}
    load_a = {p: np.zeros(n) for p in POLICIES_FLIGHTS}
    reconfs = 0
    weeks = []
    stats = InstanceStats(n, memory_bytes)
    for w in range(n_periods):
        lo, hi = bounds[w], bounds[w + 1]
        if hi == lo:
            continue
        tail, dest, hours = f.tail[lo:hi], f.dest[lo:hi], f.hours[lo:hi]
        routed = {p: (r.a[tail], r.b[dest]) for p, r in routers.items()}
        if reconfs:
            weeks.append(w)
            # days of data in the period (the first and last weeks of 2013 are partial)
            days.append(float(np.unique(np.floor(hours / 24.0)).size))
            tuples.append(int(hi - lo))
            start = w * period_h  # the reconfiguration happened at the period boundary
            day = hours < start + 24.0
            for p, (ia, ib) in routed.items():
                loc[p].append(float(np.mean(ia == ib)))
                ea, eb = _imb2(ia, ib, n)
                imb[p].append(max(ea, eb))
                imb_ab[p]["A"].append(ea)
                imb_ab[p]["B"].append(eb)
                win[p]["period"].append(max(ea, eb))
                win[p]["first_day"].append(max(_imb2(ia[day], ib[day], n)))
                win[p]["first_n"].append(max(_imb2(ia[:first_n], ib[:first_n], n)))
                share_ab[p] += np.bincount(ia * n + ib, minlength=n * n).reshape(n, n)
                load_a[p] += np.bincount(ia, minlength=n)
            seen = routers["online"].in_table_a[tail]
            ia, ib = routed["online"]
            seen_share.append(float(seen.mean()))
            seen_loc.append(float(np.mean(ia[seen] == ib[seen])) if seen.any() else 0.0)
        # end of the period: the online manager re-partitions on the instances' statistics
        # (reset after every reconfiguration, 003 §3.2, or decayed); offline after the first
        ia, ib = routed["online"]
        stats.update(tail, dest, ia, ib)
        g = stats.graph()
        stats.after_reconfiguration(decay)
        part = partition_keygraph(g, n, alpha, seed)
        planned.append(max(part.imbalance().values()))
        planned_loc.append(1.0 - part.cut_fraction())
        routers["online"].set_tables(g, part.parts)
        if reconfs == 0:
            routers["offline"].set_tables(g, part.parts)
        reconfs += 1
        if progress:
            progress(w + 1, n_periods)
    thr = {}
    for p in POLICIES_FLIGHTS:
        m = share_ab[p] / max(share_ab[p].sum(), 1.0)
        sa = np.outer(np.full(n, 1.0 / n), load_a[p] / max(load_a[p].sum(), 1.0))
        thr[p] = chain_throughput(sa, m, padding, bw_bps).throughput_tps
    extra = {
        "imbalance_windows": win, "imbalance_by_op": imb_ab, "first_n": first_n,
        "period_days": days, "period_tuples": tuples, "planned_locality": planned_loc,
        "online_share_in_table": seen_share, "online_locality_in_table": seen_loc,
    }
    return FlightsRun(n, period_h, weeks, loc, imb, list(win["online"]["period"]), planned,
                      thr, reconfs, extra)


def full_periods(r: FlightsRun) -> list[int]:
    """Indices (into ``r.weeks``) of the measurements over a period with data on
    every day of it (for 7-day periods: all of 2013 but Mon 30 - Tue 31 December)."""
    need = round(r.period_h / 24.0)
    return [i for i, d in enumerate(r.extra["period_days"]) if d >= need or r.period_h < 24.0]


def locality_vs_edges(f: Flights, ns: tuple[int, ...] = (2, 4, 6),
                      edges: tuple[int, ...] = (1, 10, 100, 1000, 10_000, 100_000),
                      alpha: float = DEFAULT_ALPHA, seed: int = 0) -> dict:
    """003 Fig. 12: locality when only the top-k key pairs feed the partitioner.

    The graph is the whole year's; locality is measured on the whole year."""
    out: dict = {"edges": list(edges), "total_edges": 0, "locality": {}}
    for n in ns:
        r = FlightsRouter(f, n)
        g = collect_graph(f.tail, f.dest, r.a[f.tail], r.b[f.dest], n, 1 << 30)
        out["total_edges"] = g.n_edges
        row = []
        for k in edges:
            part = partition_keygraph(g.top_edges(k), n, alpha, seed)
            r.set_tables(g, part.parts)
            row.append(float(np.mean(r.a[f.tail] == r.b[f.dest])))
        out["locality"][str(n)] = row
    return out


def throughput_point(n: int, locality: float, padding: int, bw_bps: float,
                     network: NetworkModel = fluid_network) -> dict[str, float]:
    return synthetic_point(n, locality, padding, bw_bps, network=network).throughput_tps
