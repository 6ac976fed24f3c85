"""BwMan's plan (002 §IV) on constructed states: what each service gets when the
quota covers both and when it does not (the trade-off policy of 002 §IV-B)."""

from __future__ import annotations

import math

import pytest

from streamband.alloc.bwman import (
    BwmanState,
    Fit,
    Models,
    Params,
    bwman,
    get_policy,
    none,
    static,
)
from streamband.errors import OptionError

# throughput = 3 op/s per Mbit/s + 2; recovery = 0.2 ln(bw) + 0.1 MB/s
MODELS = Models(Fit("linear", 3.0, 2.0, 1.0, 5), Fit("log", 0.2, 0.1, 1.0, 5))
Q = 10e6  # a node's quota, bit/s


def state(slo=20.0, backlog=0.0, integrity=1.0, missing=0.0, failure=0.0, quota=Q):
    return BwmanState(slo, backlog, slo, integrity, missing, failure, quota)


def test_no_recovery_pending_gives_the_clients_all_but_the_floor():
    p = bwman(state(), MODELS, Params(margin=0.0))
    assert p.user.rate_bps == pytest.approx(Q - 0.5e6)
    assert p.recovery.rate_bps == pytest.approx(0.5e6)
    assert p.need_user_bps == pytest.approx(6e6)  # (20 - 2) / 3 Mbit/s
    assert not p.traded_off


def test_both_fit_clients_get_their_need_recovery_the_rest():
    # recovery: 12 MB in 60 s = 0.2 MB/s = 0.1 + 0.2 ln(bw) -> e^0.5 = 1.65 Mbit/s;
    # clients: (20 - 2) / 3 = 6 Mbit/s + 10 %; both fit in 10 Mbit/s
    s = state(integrity=0.99, missing=12.0)
    p = bwman(s, MODELS, Params(margin=0.1))
    assert p.need_user_bps == pytest.approx(6.6e6)
    assert p.need_recovery_bps == pytest.approx(math.exp(0.5) * 1e6)
    assert not p.traded_off
    assert p.user.rate_bps == pytest.approx(6.6e6)
    assert p.recovery.rate_bps == pytest.approx(Q - 6.6e6)  # the spare speeds recovery
    assert p.user.rate_bps + p.recovery.rate_bps == pytest.approx(Q)


def test_tradeoff_user_first_keeps_the_slo():
    # clients (26 - 2) / 3 = 8 Mbit/s; recovery 30 MB / 60 s -> e^2 = 7.39 Mbit/s
    s = state(slo=26.0, integrity=0.9, missing=30.0)
    p = bwman(s, MODELS, Params(margin=0.0))
    assert p.traded_off
    assert p.user.rate_bps == pytest.approx(8e6)
    assert p.recovery.rate_bps == pytest.approx(2e6)


def test_tradeoff_user_first_leaves_recovery_its_floor():
    s = state(slo=32.0, integrity=0.9, missing=30.0)  # user needs all 10 Mbit/s
    p = bwman(s, MODELS, Params(margin=0.0, recovery_floor_bps=1e6))
    assert p.user.rate_bps == pytest.approx(9e6)
    assert p.recovery.rate_bps == pytest.approx(1e6)


def test_tradeoff_system_first_serves_recovery():
    s = state(slo=26.0, integrity=0.9, missing=30.0)
    p = bwman(s, MODELS, Params(margin=0.0, tradeoff="system-first"))
    assert p.traded_off
    assert p.recovery.rate_bps == pytest.approx(math.exp(2.0) * 1e6)
    assert p.user.rate_bps == pytest.approx(Q - math.exp(2.0) * 1e6)


def test_failure_rate_and_backlog_raise_the_needs():
    calm = bwman(state(integrity=0.99, missing=12.0), MODELS, Params(margin=0.0))
    failing = bwman(state(integrity=0.99, missing=12.0, failure=0.3), MODELS,
                    Params(margin=0.0))
    assert failing.need_recovery_bps > calm.need_recovery_bps
    queued = bwman(state(backlog=30.0), MODELS, Params(margin=0.0, catchup_s=10.0))
    assert queued.need_user_bps == pytest.approx((23.0 - 2.0) / 3.0 * 1e6)


def test_classes_borrow_up_to_the_quota_served_side_first():
    # the guarantees as above; either class may use the whole quota when the other
    # leaves it, the trade-off's first side first in line
    s = state(slo=26.0, integrity=0.9, missing=30.0)
    user_first = bwman(s, MODELS, Params(margin=0.0))
    assert user_first.first == "user"
    assert (user_first.user.ceil_bps, user_first.recovery.ceil_bps) == (Q, Q)
    sys_first = bwman(s, MODELS, Params(margin=0.0, tradeoff="system-first"))
    assert sys_first.first == "recovery"
    assert (sys_first.user.ceil_bps, sys_first.recovery.ceil_bps) == (Q, Q)


def test_hard_buckets_when_classes_do_not_borrow():
    # 002's token buckets: each class capped at its guarantee
    for s in (state(), state(integrity=0.99, missing=12.0), state(slo=26.0, missing=30.0)):
        p = bwman(s, MODELS, Params(margin=0.0, borrow=False))
        assert p.user.ceil_bps == p.user.rate_bps
        assert p.recovery.ceil_bps == p.recovery.rate_bps
        assert p.user.rate_bps + p.recovery.rate_bps == pytest.approx(Q)


def test_bwman_needs_models():
    with pytest.raises(ValueError, match="models"):
        bwman(state(), None, Params())


def test_baselines():
    assert none(state(), MODELS, Params()) is None
    p = static(state(integrity=0.5, missing=100.0), None, Params(static_user_share=0.3))
    assert (p.user.ceil_bps, p.recovery.ceil_bps) == pytest.approx((3e6, 7e6))


def test_unknown_policy_is_one_line():
    assert get_policy("bwman") is bwman
    with pytest.raises(OptionError) as err:
        get_policy("bwmann")
    assert "\n" not in str(err.value) and "did you mean 'bwman'" in str(err.value)


def test_a_models_point_takes_the_bandwidth_the_class_had():
    from streamband.alloc.bwman import Share
    from streamband.loop.bwman import _had

    # a hard class that used its cap: the cap; that did not: no point
    assert _had(Share(3e6, 3e6), 0.9, 0.8) == pytest.approx(3.0)
    assert _had(Share(3e6, 3e6), 0.5, 0.8) is None
    assert _had(Share(3e6, 3e6), None, 0.8) == pytest.approx(3.0)  # backend cannot tell
    # a borrowing class: what it measurably used (here half of its 6 Mbit/s ceiling)
    assert _had(Share(1e6, 6e6), 0.5, 0.8) == pytest.approx(3.0)
    assert _had(Share(1e6, 6e6), None, 0.8) is None
