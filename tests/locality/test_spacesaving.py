"""SpaceSaving (Metwally et al. 2005) as used by 003 §3.2: the error guarantee."""

from __future__ import annotations

import numpy as np
import pytest

from streamband.locality.spacesaving import (
    ENTRY_BYTES,
    KeyCodec,
    PairSpaceSaving,
    SpaceSaving,
    decode_pairs,
    encode_pairs,
)


def check_guarantee(s: SpaceSaving, stream: np.ndarray) -> None:
    true = np.bincount(stream)
    n, m = stream.size, s.capacity
    top = s.top()
    assert s.n == n
    assert top.items.size <= m
    est = top.counts
    t = true[top.items]
    assert (est >= t).all(), "SpaceSaving never under-counts a monitored item"
    assert (est - t <= top.errors).all()
    assert (top.errors <= n / m).all() and (est - t <= n / m).all()
    assert s.min_count <= n / m
    frequent = np.flatnonzero(true > n / m)
    assert set(frequent.tolist()) <= set(top.items.tolist()), "no false negatives"


@pytest.mark.parametrize("dist", ["zipf", "uniform", "adversarial"])
@pytest.mark.parametrize("batch", [1, 7, 1000])
def test_error_guarantee(dist: str, batch: int) -> None:
    rng = np.random.default_rng(42)
    if dist == "zipf":
        stream = (rng.zipf(1.1, 30_000) - 1) % 5000
    elif dist == "uniform":
        stream = rng.integers(0, 3000, 30_000)
    else:  # heavy items late, after a long tail has filled the counters
        stream = np.concatenate([np.arange(20_000) % 4000, np.repeat([1, 2, 3], 3000)])
    s = SpaceSaving(capacity=200, batch=batch)
    for lo in range(0, stream.size, 997):  # several update calls of odd sizes
        s.update(stream[lo : lo + 997])
    check_guarantee(s, stream)


def test_one_item_at_a_time_and_weights() -> None:
    rng = np.random.default_rng(0)
    stream = (rng.zipf(1.3, 5000) - 1) % 500
    s = SpaceSaving(capacity=50, batch=64)
    for x in stream.tolist():
        s.add(x)
    check_guarantee(s, stream)
    w = SpaceSaving(capacity=50)
    uk, uc = np.unique(stream, return_counts=True)
    w.update(uk, uc)
    check_guarantee(w, stream)


def test_exact_when_it_fits_and_memory_bound() -> None:
    s = SpaceSaving()  # default 1 MB
    assert s.capacity == (1 << 20) // ENTRY_BYTES and s.memory_bytes <= 1 << 20
    x = np.array([5, 5, 7, 9, 9, 9])
    s.update(x)
    assert s.estimate(9) == 3 and s.estimate(5) == 2 and s.estimate(4) == 0
    assert s.top(1).items.tolist() == [9]
    s.reset()
    assert len(s) == 0 and s.n == 0
    with pytest.raises(ValueError):
        SpaceSaving(capacity=0)


def test_pairs() -> None:
    a = np.array([1, 1, 2, 3, 1])
    b = np.array([10, 10, 20, 30, 11])
    assert [x.tolist() for x in decode_pairs(encode_pairs(a, b))] == [a.tolist(), b.tolist()]
    p = PairSpaceSaving(capacity=10)
    p.update(a, b)
    x, y, c = p.top(1)
    assert (x[0], y[0], c[0]) == (1, 10, 2)
    codec = KeyCodec()
    assert codec.ids(["x", "y", "x"]).tolist() == [0, 1, 0] and codec.key(1) == "y"


def test_decay_weighs_past_periods_exactly_and_forgets_the_faint() -> None:
    """The opt-in decay (beyond 003 §3.2's reset): after 6 decays by 1/2, a tuple to come
    weighs 2**6 times a past one, through the integer rescaling; 2 decays later the past
    items weigh less than 1/16 of a tuple and are forgotten."""
    s = SpaceSaving(capacity=100)
    s.update(np.array([1, 1, 1, 1, 2]))
    for _ in range(6):
        s.decay(0.5)
    s.update(np.array([3]))
    top = s.top()
    assert dict(zip(top.items.tolist(), top.counts.tolist(), strict=True)) == {3: 64, 1: 4, 2: 1}
    s.decay(0.5)
    s.decay(0.5)
    assert s.top().items.tolist() == [3]
    with pytest.raises(ValueError):
        s.decay(1.0)
