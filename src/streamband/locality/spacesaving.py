"""SpaceSaving (Metwally, Agrawal, El Abbadi, ICDT 2005) over keys and key pairs.

003 §3.2: every stateful instance counts the keys it receives and the pairs
(input key, output key) it sends, in bounded memory, and reports the most
frequent ones to the manager. This module keeps the summary in three numpy
arrays (item, count, error) and ingests the stream in *batches*:

1. the batch is counted exactly (``np.unique``);
2. items already monitored get their batch count added;
3. new items enter with ``count = mu + w`` and ``error = mu``, where ``mu`` is the
   summary's minimum count when it is full (0 otherwise) and ``w`` their batch count;
4. the summary keeps its ``capacity`` largest counts.

This is SpaceSaving with weighted updates (the merge of two summaries, the second
one exact). It keeps SpaceSaving's guarantees, tested in
``tests/locality/test_spacesaving.py``: with N items seen and m counters,

- every estimate over-counts: ``true <= count <= true + error`` and ``error <= N/m``;
- an item that is not monitored has ``true <= mu <= N/m``, so every item with
  frequency > N/m is monitored (no false negatives).

Proof sketch. Before a batch every unmonitored item has true count <= mu. A new item
enters with mu + w >= true + w. Kept entries all have count >= mu, so the new
minimum mu' >= mu and an evicted item (count <= mu') keeps true <= mu'. The sum of
the counts never exceeds N: a batch adds its w's plus ``k * mu`` for its k new
items, and the truncation evicts k entries of count >= mu. Hence m * mu' <= N.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

import numpy as np

#: bytes per monitored entry: item, count and error as int64 (003 §4.3: "1 MB per POI")
ENTRY_BYTES = 24
DEFAULT_MEMORY_BYTES = 1 << 20
#: the unit of a tuple's count after the first ``decay`` (and the rescaling factor)
DECAY_UNIT = 16


@dataclass(frozen=True)
class Counted:
    """The summary's view: items with their estimated count and maximal over-count."""

    items: np.ndarray  # int64
    counts: np.ndarray  # int64, descending
    errors: np.ndarray  # int64


class SpaceSaving:
    """The SpaceSaving summary over int64 items, batched (see module docstring)."""

    def __init__(
        self,
        capacity: int | None = None,
        memory_bytes: int = DEFAULT_MEMORY_BYTES,
        batch: int = 1 << 16,
    ) -> None:
        """``capacity`` counters, or as many as fit in ``memory_bytes`` (default 1 MB)."""
        cap = capacity if capacity is not None else memory_bytes // ENTRY_BYTES
        if cap < 1:
            raise ValueError(f"SpaceSaving: capacity must be >= 1 counter, got {cap}")
        self.capacity = int(cap)
        self.batch = int(batch)
        self.n = 0  # total weight seen
        self._items = np.empty(0, np.int64)  # sorted by item
        self._counts = np.empty(0, np.int64)
        self._errors = np.empty(0, np.int64)
        self._pending: list[int] = []
        self.unit = 1  # what one tuple counts (grows with ``decay``)
        self._unit_f = 1.0

    # -- ingestion ----------------------------------------------------------
    def add(self, item: int) -> None:
        """Count one item (buffered; flushed every ``batch`` items or on read)."""
        self._pending.append(item)
        if len(self._pending) >= self.batch:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            pending, self._pending = self._pending, []
            self.update(np.asarray(pending, np.int64))

    def update(self, items: np.ndarray, weights: np.ndarray | None = None) -> None:
        """Count ``items`` (int64), each with weight 1 or ``weights[k]`` (positive ints)."""
        items = np.asarray(items, np.int64).ravel()
        if items.size == 0:
            return
        if weights is None:
            for lo in range(0, items.size, self.batch):
                uk, uc = np.unique(items[lo : lo + self.batch], return_counts=True)
                self._merge(uk, uc.astype(np.int64) * self.unit)
            return
        w = np.asarray(weights, np.int64).ravel()
        if w.shape != items.shape or (w <= 0).any():
            raise ValueError("SpaceSaving.update: weights must be positive, one per item")
        order = np.argsort(items, kind="stable")
        s_items, s_w = items[order], w[order] * self.unit
        starts = np.flatnonzero(np.r_[True, s_items[1:] != s_items[:-1]])
        self._merge(s_items[starts], np.add.reduceat(s_w, starts))

    def _merge(self, uk: np.ndarray, uc: np.ndarray) -> None:
        """Merge an exact batch count (sorted unique ``uk`` with counts ``uc``)."""
        self.n += int(uc.sum())
        items, counts, errors = self._items, self._counts, self._errors
        mu = int(counts.min()) if items.size >= self.capacity else 0
        pos = np.searchsorted(items, uk)
        pos_c = np.minimum(pos, max(items.size - 1, 0))
        hit = (pos < items.size) & (items[pos_c] == uk) if items.size else np.zeros(uk.size, bool)
        if hit.any():
            counts = counts.copy()
            np.add.at(counts, pos[hit], uc[hit])
        new_k = uk[~hit]
        if new_k.size == 0:
            self._counts = counts
            return
        all_items = np.concatenate([items, new_k])
        all_counts = np.concatenate([counts, uc[~hit] + mu])
        all_errors = np.concatenate([errors, np.full(new_k.size, mu, np.int64)])
        if all_items.size > self.capacity:
            keep = np.argpartition(-all_counts, self.capacity - 1)[: self.capacity]
            all_items, all_counts, all_errors = all_items[keep], all_counts[keep], all_errors[keep]
        order = np.argsort(all_items, kind="stable")
        self._items, self._counts, self._errors = (
            all_items[order],
            all_counts[order],
            all_errors[order],
        )

    # -- queries ------------------------------------------------------------
    def __len__(self) -> int:
        self.flush()
        return int(self._items.size)

    @property
    def min_count(self) -> int:
        """``mu``: an upper bound on the true count of every unmonitored item."""
        self.flush()
        return int(self._counts.min()) if self._items.size >= self.capacity else 0

    def top(self, k: int | None = None) -> Counted:
        """Monitored items by decreasing estimated count (the ``k`` first if given)."""
        self.flush()
        order = np.argsort(-self._counts, kind="stable")
        if k is not None:
            order = order[:k]
        return Counted(self._items[order], self._counts[order], self._errors[order])

    def estimate(self, item: int) -> int:
        """Estimated count of ``item`` (``min_count`` if it is not monitored)."""
        self.flush()
        i = int(np.searchsorted(self._items, item))
        if i < self._items.size and self._items[i] == item:
            return int(self._counts[i])
        return self.min_count

    def reset(self) -> None:
        """Forget everything (003 §3.2: statistics restart after each reconfiguration)."""
        self.__init__(self.capacity, batch=self.batch)  # type: ignore[misc]

    def decay(self, keep: float) -> None:
        """Past counts weigh ``keep`` (0 < keep < 1) of what they did: the opt-in decay
        that replaces the reset of 003 §3.2 (an extension beyond 003: the statistics of
        past periods weigh keep, keep², ... of the current one's).

        Exact in integers: the tuples to come count ``unit`` (from ``DECAY_UNIT`` on,
        growing by 1/keep at every decay) instead of past counts shrinking; when the unit
        reaches ``DECAY_UNIT ** 2``, every count, error and the unit are divided by
        ``DECAY_UNIT`` (items left at zero weigh less than 1/``DECAY_UNIT`` of a tuple
        to come and are forgotten)."""
        if not 0.0 < keep < 1.0:
            raise ValueError(f"SpaceSaving.decay: keep must be in (0, 1), got {keep}")
        self.flush()
        if self._unit_f == 1.0:
            self._counts, self._errors = self._counts * DECAY_UNIT, self._errors * DECAY_UNIT
            self.n *= DECAY_UNIT
            self._unit_f = float(DECAY_UNIT)
        self._unit_f /= keep
        if self._unit_f >= DECAY_UNIT * DECAY_UNIT:
            counts, errors = self._counts // DECAY_UNIT, self._errors // DECAY_UNIT
            kept = counts > 0
            self._items, self._counts, self._errors = (self._items[kept], counts[kept],
                                                       errors[kept])
            self.n //= DECAY_UNIT
            self._unit_f /= DECAY_UNIT
        self.unit = int(math.floor(self._unit_f + 0.5))

    @property
    def memory_bytes(self) -> int:
        return self.capacity * ENTRY_BYTES


# -- key pairs ---------------------------------------------------------------
PAIR_BITS = 32
_LOW = (1 << PAIR_BITS) - 1


def encode_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pack two arrays of key ids (< 2**31) into one int64 per pair."""
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    return (a << PAIR_BITS) | (b & _LOW)


def decode_pairs(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    codes = np.asarray(codes, np.int64)
    return codes >> PAIR_BITS, codes & _LOW


class PairSpaceSaving:
    """SpaceSaving over pairs (input key id, output key id) of one instance (003 Fig. 4)."""

    def __init__(self, capacity: int | None = None, memory_bytes: int = DEFAULT_MEMORY_BYTES):
        self.summary = SpaceSaving(capacity, memory_bytes)

    def update(self, a: np.ndarray, b: np.ndarray) -> None:
        self.summary.update(encode_pairs(a, b))

    def add(self, a: int, b: int) -> None:
        self.summary.add((a << PAIR_BITS) | (b & _LOW))

    def top(self, k: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(input key ids, output key ids, estimated counts), most frequent first."""
        c = self.summary.top(k)
        a, b = decode_pairs(c.items)
        return a, b, c.counts

    @property
    def n(self) -> int:
        return self.summary.n

    def reset(self) -> None:
        self.summary.reset()

    def decay(self, keep: float) -> None:
        self.summary.decay(keep)


class KeyCodec:
    """Dense int ids for hashable keys, so that summaries can stay numpy arrays.

    In an engine the id is the key's position in the instance's dictionary; the
    dictionary is the instance's key state, which it holds anyway.
    """

    def __init__(self) -> None:
        self._ids: dict[Hashable, int] = {}
        self.keys: list[Hashable] = []

    def id(self, key: Hashable) -> int:
        i = self._ids.get(key)
        if i is None:
            i = self._ids[key] = len(self.keys)
            self.keys.append(key)
        return i

    def ids(self, keys: Iterable[Hashable]) -> np.ndarray:
        return np.fromiter((self.id(k) for k in keys), np.int64)

    def key(self, i: int) -> Hashable:
        return self.keys[int(i)]
