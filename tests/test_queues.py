"""FIFO fluid queues with source-time intervals."""

import pytest

from streamband.sim.queues import FluidQueue, age_sum, total


def test_fifo_split_keeps_the_earliest_part():
    q = FluidQueue()
    q.push(10, 0.0, 1.0)
    q.push(10, 1.0, 2.0)
    out = q.pop(5)
    assert out == [[5, 0.0, 0.5]]
    assert q.watermark() == 0.5
    out = q.pop(10)
    assert total(out) == pytest.approx(10) and out[-1][2] == pytest.approx(1.5)
    assert q.count == pytest.approx(5)


def test_pop_before_watermark_splits_a_chunk():
    q = FluidQueue()
    q.push(10, 0.0, 1.0)
    q.push(10, 1.0, 2.0)
    out = q.pop_before(1.25)
    assert total(out) == pytest.approx(12.5)
    assert q.watermark() == pytest.approx(1.25)


def test_bounded_queue_drops_the_newest():
    q = FluidQueue(limit=15)
    q.push(10, 0.0, 1.0)
    lost = q.push(10, 1.0, 2.0)
    assert lost == pytest.approx(5) and q.dropped == pytest.approx(5) and q.count == 15
    assert q.chunks[-1][2] == pytest.approx(1.5)


def test_age_sum_is_exact_for_uniform_chunks():
    assert age_sum([[4, 0.0, 2.0]], 3.0) == pytest.approx(4 * 2.0)
