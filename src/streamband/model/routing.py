"""Routing: shortest paths, ECMP by a stable hash of the flow id, and the sparse
flow x link routing matrix R of 000 eq. (1a) (R[f, l] = 1 iff flow f crosses l)."""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from streamband.model.topology import Topology


def stable_hash(key: Hashable, salt: str = "") -> int:
    """A hash that is the same in every process (unlike ``hash`` on str).

    BLAKE2b, not CRC32: CRC is affine, so the CRCs of one key salted with two
    switch names have correlated low bits and ECMP would use a fraction of its paths.
    """
    digest = hashlib.blake2b(f"{key}|{salt}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


class Router:
    """Paths between hosts over the switch graph.

    ``mode="ecmp"`` picks, at every switch, one of the next hops on a shortest
    path by a stable hash of the flow key and the switch; ``mode="shortest"``
    always takes the first one, so every flow between two hosts shares a path.
    """

    def __init__(self, topo: Topology, mode: str = "ecmp") -> None:
        if mode not in ("ecmp", "shortest"):
            raise ValueError(f"routing mode: expected 'ecmp' or 'shortest', got {mode!r}")
        self.topo = topo
        self.mode = mode
        self._sw_index = {s: i for i, s in enumerate(topo.switches)}
        n = len(topo.switches)
        src, dst, lid = [], [], []
        for lk in topo.links:
            if lk.src in self._sw_index and lk.dst in self._sw_index:
                src.append(self._sw_index[lk.src])
                dst.append(self._sw_index[lk.dst])
                lid.append(lk.id)
        order = np.lexsort((np.asarray(dst, int), np.asarray(src, int)))
        self._nbr_dst = np.asarray(dst, np.int64)[order]
        self._nbr_link = np.asarray(lid, np.int64)[order]
        self._nbr_ptr = np.searchsorted(np.asarray(src, int)[order], np.arange(n + 1))
        self._graph = sp.csr_matrix(
            (np.ones(len(src)), (np.asarray(src, int), np.asarray(dst, int))), shape=(n, n)
        )
        self._dist: dict[int, np.ndarray] = {}

    def _distances(self, dst_switches: Sequence[int]) -> None:
        todo = sorted({d for d in dst_switches if d not in self._dist})
        if not todo:
            return
        # distances *to* d are distances *from* d on the reversed graph
        dist = shortest_path(self._graph.T.tocsr(), unweighted=True, indices=todo)
        for row, d in zip(np.atleast_2d(dist), todo, strict=True):
            self._dist[d] = row

    def _switch_path(self, a: int, b: int, key: Hashable) -> list[int]:
        links: list[int] = []
        dist = self._dist[b]
        if not np.isfinite(dist[a]):
            raise ValueError(
                f"no path from switch {self.topo.switches[a]} to {self.topo.switches[b]}"
            )
        node = a
        while node != b:
            lo, hi = self._nbr_ptr[node], self._nbr_ptr[node + 1]
            nbrs = self._nbr_dst[lo:hi]
            cand = np.flatnonzero(dist[nbrs] == dist[node] - 1)
            pick = 0 if self.mode == "shortest" or len(cand) == 1 else (
                stable_hash(key, self.topo.switches[node]) % len(cand)
            )
            j = lo + cand[pick]
            links.append(int(self._nbr_link[j]))
            node = int(self._nbr_dst[j])
        return links

    def path(self, src_host: str, dst_host: str, key: Hashable = "") -> list[int]:
        """Link ids from ``src_host`` to ``dst_host``; empty for an internal flow."""
        return self.paths([(src_host, dst_host)], [key])[0]

    def paths(
        self, pairs: Sequence[tuple[str, str]], keys: Sequence[Hashable] | None = None
    ) -> list[list[int]]:
        """Paths for many (src_host, dst_host) pairs, one key each for ECMP."""
        topo = self.topo
        keys = keys if keys is not None else range(len(pairs))
        sw = [
            (self._sw_index[topo.host_switch(s)], self._sw_index[topo.host_switch(d)])
            for s, d in pairs
        ]
        self._distances([b for (s, d), (a, b) in zip(pairs, sw, strict=True) if s != d and a != b])
        out: list[list[int]] = []
        for (s, d), (a, b), key in zip(pairs, sw, keys, strict=True):
            if s == d:
                out.append([])
                continue
            mid = [] if a == b else self._switch_path(a, b, key)
            out.append([topo.uplink(s), *mid, topo.downlink(d)])
        return out


def routing_matrix(paths: Sequence[Sequence[int]], n_links: int) -> sp.csr_matrix:
    """The binary F x L matrix R with R[f, l] = 1 iff flow f crosses link l (eq. 1a)."""
    indptr = np.zeros(len(paths) + 1, np.int64)
    indptr[1:] = np.cumsum([len(p) for p in paths])
    indices = np.fromiter((lk for p in paths for lk in p), np.int64, int(indptr[-1]))
    data = np.ones(len(indices))
    return sp.csr_matrix((data, indices, indptr), shape=(len(paths), n_links))
