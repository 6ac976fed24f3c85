"""FIFO fluid queues whose contents remember when they left the source.

A queue holds chunks ``[tuples, lo, hi]``: ``tuples`` (a real number: fluid) whose
source times are spread evenly over ``[lo, hi)``. Splitting a chunk splits that
interval, earliest first, so the delay of every unit is known exactly when it
leaves (FIFO), which is what end-to-end latency needs (no Little's-law estimate),
and a receiver knows exactly up to which source time it has seen a flow.
"""

from __future__ import annotations

from collections import deque

Chunk = list[float]  # [tuples, lo, hi]


class FluidQueue:
    """A FIFO of ``[tuples, lo, hi]`` chunks, optionally bounded in tuples."""

    __slots__ = ("chunks", "count", "limit", "dropped")

    def __init__(self, limit: float | None = None) -> None:
        self.chunks: deque[Chunk] = deque()
        self.count = 0.0
        self.limit = limit
        self.dropped = 0.0

    def push(self, n: float, lo: float, hi: float) -> float:
        """Append ``n`` tuples from ``[lo, hi)``; returns how many were dropped (tail
        drop: the newest part of the interval is lost)."""
        if n <= 0.0:
            return 0.0
        lost = 0.0
        if self.limit is not None and self.count + n > self.limit:
            lost = min(n, self.count + n - self.limit)
            self.dropped += lost
            keep = n - lost
            if keep <= 1e-12:
                return lost
            hi = lo + (hi - lo) * keep / n
            n = keep
        last = self.chunks[-1] if self.chunks else None
        if last is not None and last[1] == lo and last[2] == hi:
            last[0] += n
        else:
            self.chunks.append([n, lo, hi])
        self.count += n
        return lost

    def push_chunks(self, chunks: list[Chunk], scale: float = 1.0) -> float:
        lost = 0.0
        for n, lo, hi in chunks:
            lost += self.push(n * scale, lo, hi)
        return lost

    def _split(self, head: Chunk, n: float) -> Chunk:
        """Take the earliest ``n`` tuples of ``head`` (in place); return them."""
        n0, lo, hi = head
        cut = lo + (hi - lo) * n / n0
        head[0], head[1] = n0 - n, cut
        self.count -= n
        return [n, lo, cut]

    def pop(self, n: float) -> list[Chunk]:
        """Remove up to ``n`` tuples from the head."""
        if n >= self.count:
            out = list(self.chunks)
            self.chunks = deque()
            self.count = 0.0
            return out
        out: list[Chunk] = []
        chunks = self.chunks
        while n > 1e-12 and chunks:
            head = chunks[0]
            if head[0] <= n:
                chunks.popleft()
                out.append(head)
                n -= head[0]
                self.count -= head[0]
            else:
                out.append(self._split(head, n))
                n = 0.0
        if not chunks:
            self.count = 0.0
        return out

    def pop_all(self) -> list[Chunk]:
        return self.pop(self.count)

    def pop_before(self, watermark: float) -> list[Chunk]:
        """Remove every tuple whose source time is earlier than ``watermark``."""
        out: list[Chunk] = []
        chunks = self.chunks
        while chunks:
            head = chunks[0]
            n, lo, hi = head
            if hi <= watermark and lo < watermark:
                chunks.popleft()
                out.append(head)
                self.count -= n
            elif lo < watermark < hi:
                out.append(self._split(head, n * (watermark - lo) / (hi - lo)))
                break
            else:
                break
        if not chunks:
            self.count = 0.0
        return out

    def watermark(self) -> float | None:
        """Source time of the oldest queued tuple (None when empty)."""
        return self.chunks[0][1] if self.chunks else None


def total(chunks: list[Chunk]) -> float:
    return sum(c[0] for c in chunks)


def origin_mass(chunks: list[Chunk]) -> float:
    """Sum over units of their source time."""
    return sum(n * 0.5 * (lo + hi) for n, lo, hi in chunks)


def age_sum(chunks: list[Chunk], now: float) -> float:
    """Sum over units of (now - source time): the latency mass of ``chunks`` at ``now``."""
    return sum(n * (now - 0.5 * (lo + hi)) for n, lo, hi in chunks)
