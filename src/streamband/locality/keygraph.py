"""The key graph of 003 §3.3 (Fig. 5).

Vertices are the keys of the stateful operators, one vertex per (operator, key),
weighted by the key's frequency at that operator; an edge joins a key of an
operator X to a key of a successor Y, weighted by how often the pair occurred
(X's instance received the first and emitted the second). For a chain X -> Y it is
the bipartite graph of Fig. 5; for a chain or DAG of several keyed operators it is
the union of the bipartite graphs of all consecutive keyed pairs (003 §6: "the same
graph partitioning technique can be applied to more complex DAGs").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

KeyCounts = tuple[np.ndarray, np.ndarray]  # keys, counts
PairCounts = tuple[np.ndarray, np.ndarray, np.ndarray]  # keys of X, keys of Y, counts


@dataclass
class KeyGraph:
    """Vertices ``(ops[op_of[v]], keys[v])`` with weights; undirected weighted edges."""

    ops: list[str]
    op_of: np.ndarray  # vertex -> operator index
    keys: np.ndarray  # vertex -> key (object array)
    vweight: np.ndarray  # vertex -> frequency (int64)
    src: np.ndarray  # edge endpoints (vertex ids), int64
    dst: np.ndarray
    eweight: np.ndarray  # int64 > 0

    @property
    def n_vertices(self) -> int:
        return int(self.keys.size)

    @property
    def n_edges(self) -> int:
        return int(self.src.size)

    def vertices_of(self, op: str) -> np.ndarray:
        return np.flatnonzero(self.op_of == self.ops.index(op))

    def csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Symmetric adjacency (xadj, adjncy, weights) as METIS wants it, duplicates summed."""
        n = self.n_vertices
        m = sp.coo_matrix(
            (
                np.concatenate([self.eweight, self.eweight]),
                (np.concatenate([self.src, self.dst]), np.concatenate([self.dst, self.src])),
            ),
            shape=(n, n),
        ).tocsr()
        m.sum_duplicates()
        m.setdiag(0)
        m.eliminate_zeros()
        return m.indptr.astype(np.int64), m.indices.astype(np.int64), m.data.astype(np.int64)

    def top_edges(self, k: int) -> KeyGraph:
        """The same vertices with only the ``k`` heaviest edges (003 Fig. 12)."""
        if k >= self.n_edges:
            return self
        keep = np.argpartition(-self.eweight, k - 1)[:k] if k > 0 else np.empty(0, np.int64)
        return KeyGraph(
            self.ops, self.op_of, self.keys, self.vweight,
            self.src[keep], self.dst[keep], self.eweight[keep],
        )


def build_keygraph(
    key_counts: Mapping[str, KeyCounts],
    pair_counts: Mapping[tuple[str, str], PairCounts],
) -> KeyGraph:
    """Build the key graph from per-operator key counts and per-edge pair counts.

    ``key_counts[op] = (keys, counts)`` (merged over the operator's instances, may
    repeat keys: counts add); ``pair_counts[(X, Y)] = (keys_x, keys_y, counts)``. A key
    seen only in pairs gets as weight the sum of its pairs' counts on that side.
    """
    ops: list[str] = []
    for op in key_counts:
        ops.append(op)
    for x, y in pair_counts:
        for op in (x, y):
            if op not in ops:
                ops.append(op)
    empty = np.empty(0, object)
    per_op_keys: list[np.ndarray] = []
    per_op_w: list[np.ndarray] = []
    for op in ops:
        parts_k = [np.asarray(key_counts[op][0], object)] if op in key_counts else []
        parts_w = [np.asarray(key_counts[op][1], np.int64)] if op in key_counts else []
        side_k: list[np.ndarray] = []
        side_w: list[np.ndarray] = []
        for (x, y), (kx, ky, c) in pair_counts.items():
            if x == op:
                side_k.append(np.asarray(kx, object))
                side_w.append(np.asarray(c, np.int64))
            if y == op:
                side_k.append(np.asarray(ky, object))
                side_w.append(np.asarray(c, np.int64))
        allk = np.concatenate(parts_k + side_k) if parts_k or side_k else empty
        uniq, inv = _unique(allk)
        w_keys = np.zeros(uniq.size, np.int64)
        w_pairs = np.zeros(uniq.size, np.int64)
        n_direct = sum(p.size for p in parts_k)
        if n_direct:
            np.add.at(w_keys, inv[:n_direct], np.concatenate(parts_w))
        if side_w:
            np.add.at(w_pairs, inv[n_direct:], np.concatenate(side_w))
        per_op_keys.append(uniq)
        per_op_w.append(np.maximum(w_keys, w_pairs) if n_direct else w_pairs)
    offsets = np.cumsum([0] + [k.size for k in per_op_keys])
    keys = np.concatenate(per_op_keys) if per_op_keys else empty
    op_of = np.repeat(np.arange(len(ops)), [k.size for k in per_op_keys])
    srcs, dsts, ws = [], [], []
    for (x, y), (kx, ky, c) in pair_counts.items():
        ix, iy = ops.index(x), ops.index(y)
        u = offsets[ix] + _lookup(per_op_keys[ix], np.asarray(kx, object))
        v = offsets[iy] + _lookup(per_op_keys[iy], np.asarray(ky, object))
        c = np.asarray(c, np.int64)
        ok = c > 0
        srcs.append(u[ok])
        dsts.append(v[ok])
        ws.append(c[ok])
    cat = (lambda xs: np.concatenate(xs).astype(np.int64)) if srcs else (
        lambda xs: np.empty(0, np.int64)
    )
    return KeyGraph(
        ops, op_of.astype(np.int64), keys,
        np.concatenate(per_op_w).astype(np.int64) if per_op_w else np.empty(0, np.int64),
        cat(srcs), cat(dsts), cat(ws),
    )


def _unique(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique for key arrays of ints or strings (object dtype allowed if homogeneous)."""
    if keys.size == 0:
        return keys, np.empty(0, np.int64)
    try:
        typed = keys.astype(np.int64) if all_int(keys) else keys.astype(str)
        u, first, inv = np.unique(typed, return_index=True, return_inverse=True)
        return keys[first], inv.ravel()
    except (TypeError, ValueError):  # mixed keys: a dictionary
        ids: dict = {}
        inv = np.fromiter((ids.setdefault(k, len(ids)) for k in keys), np.int64, keys.size)
        return np.array(list(ids), object), inv


def all_int(keys: np.ndarray) -> bool:
    if keys.dtype.kind in "iu":
        return True
    return keys.size > 0 and all(isinstance(k, int | np.integer) for k in keys[:64]) and all(
        isinstance(k, int | np.integer) for k in keys
    )


def _lookup(uniq: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Positions of ``keys`` in ``uniq`` (all present)."""
    if keys.size == 0:
        return np.empty(0, np.int64)
    index = {k: i for i, k in enumerate(uniq.tolist())}
    return np.fromiter((index[k] for k in keys.tolist()), np.int64, keys.size)
