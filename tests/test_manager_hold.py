"""The manager's hysteresis of the cap / no-cap decision: a link found bottlenecked
stays so for ``hold`` steps after its demands last reached its capacity, for every
policy (on Storm, caps were lifted and reinstated at consecutive 1-s steps)."""

import numpy as np
import pytest
import scipy.sparse as sp

from streamband.alloc.appaware import appaware
from streamband.alloc.base import UPLINK, FlowState
from streamband.alloc.maxmin import maxmin
from streamband.alloc.weighted import weighted
from streamband.loop.manager import HOLD_STEPS, Manager

MBIT = 1e6
CAP = 20 * MBIT


class Replay:
    """Profiler and link statistics of one 20 Mbit/s uplink crossed by two flows: each
    step's flow state sends ``sent_mbit`` (Mbit per flow in Δt = 1 s), no backlog, so the
    demand of each flow is what it sent (000 eq. 3's numerator)."""

    def __init__(self, sent_mbit: list[tuple[float, float]]) -> None:
        self.steps = iter(sent_mbit)

    def flow_state(self) -> FlowState:
        z = np.zeros(2)
        return FlowState(z, z, z, z, np.array(next(self.steps)) * MBIT / 8.0)

    def allocatable(self) -> np.ndarray:
        return np.array([CAP])


class Recorder:
    def __init__(self) -> None:
        self.rates: list[np.ndarray] = []

    def enforce(self, rates_bps: np.ndarray) -> None:
        self.rates.append(np.array(rates_bps, float))


HOT, CALM = (14.0, 10.0), (8.0, 6.0)  # 24 and 14 Mbit/s of demand on 20
#: two hot steps, a 1-step dip, hot, a 2-step dip, hot, then calm for good
TRACE = [HOT, HOT, CALM, HOT, CALM, CALM, HOT, CALM, CALM, CALM, CALM]


def capped(policy: object, hold: int) -> list[bool]:
    replay, rec = Replay(TRACE), Recorder()
    m = Manager(routing=sp.csr_matrix(np.ones((2, 1))), link_kind=np.array([UPLINK]),
                policy=policy, profiler=replay, linkstats=replay, enforcer=rec, dt=1.0,
                weights=np.array([1.0, 1.0]), hold=hold)
    for t in range(len(TRACE)):
        m.step(float(t))
    return [bool(np.isfinite(r).all()) for r in rec.rates]


@pytest.mark.parametrize("policy", [appaware, maxmin, weighted])
def test_short_dips_keep_the_caps_and_a_long_calm_lifts_them(policy):
    assert HOLD_STEPS == 3
    got = capped(policy, HOLD_STEPS)
    # dips of 1 and 2 steps are bridged; the third calm step in a row lifts the caps
    assert got == [True] * 9 + [False, False]


def test_hold_one_is_the_step_alone_the_flapping_it_prevents():
    got = capped(appaware, 1)
    assert got == [t == HOT for t in TRACE]
    switches = sum(a != b for a, b in zip(got[:-1], got[1:], strict=True))
    assert switches == 5  # against 1 with the default hold


def test_a_held_link_is_shared_by_the_policy_not_capped_at_the_demands():
    replay, rec = Replay(TRACE), Recorder()
    m = Manager(routing=sp.csr_matrix(np.ones((2, 1))), link_kind=np.array([UPLINK]),
                policy=appaware, profiler=replay, linkstats=replay, enforcer=rec, dt=1.0)
    for t in range(3):
        m.step(float(t))
    # step 2 is a dip (14 of 20 Mbit/s): problem (3) still splits all of C by demand
    assert rec.rates[2] == pytest.approx(np.array([8.0, 6.0]) * CAP / 14.0)


@pytest.mark.parametrize(("name", "value"), [("hold", 0), ("full_frac", 80.0)])
def test_hold_is_at_least_one_step_and_full_frac_a_share_of_capacity(name, value):
    replay = Replay(TRACE)
    with pytest.raises(ValueError, match=name):
        Manager(routing=sp.csr_matrix(np.ones((2, 1))), link_kind=np.array([UPLINK]),
                policy=appaware, profiler=replay, linkstats=replay, enforcer=Recorder(),
                dt=1.0, **{name: value})


def test_the_allocation_log_keeps_this_steps_links_and_the_held_ones(tmp_path):
    import json

    from streamband.loop.live import LiveLoop

    replay, rec = Replay(TRACE), Recorder()
    m = Manager(routing=sp.csr_matrix(np.ones((2, 1))), link_kind=np.array([UPLINK]),
                policy=appaware, profiler=replay, linkstats=replay, enforcer=rec, dt=1.0)
    loop = LiveLoop(m, log=tmp_path / "alloc.jsonl")
    for _ in range(3):
        loop.step()
    loop.log.close()
    lines = [json.loads(s) for s in (tmp_path / "alloc.jsonl").read_text().splitlines()]
    assert [(r["hot"], r["held"]) for r in lines] == [([0], [0]), ([0], [0]), ([], [0])]


class LateReplay(Replay):
    """A real clock's profiler: each state covers ``interval_s`` seconds, not Δt."""

    def __init__(self, sent_mbit: list[tuple[float, float]], interval_s: float) -> None:
        super().__init__(sent_mbit)
        self.interval_s = interval_s


@pytest.mark.parametrize(("interval_s", "bottlenecked"), [(3.0, False), (1.0, True)])
def test_a_late_step_reads_its_bytes_over_the_interval_they_took(interval_s, bottlenecked):
    # 14 + 10 Mbit moved: over a 3-s interval (a starved loop), 8 Mbit/s on 20, not 24
    replay, rec = LateReplay([HOT], interval_s), Recorder()
    m = Manager(routing=sp.csr_matrix(np.ones((2, 1))), link_kind=np.array([UPLINK]),
                policy=appaware, profiler=replay, linkstats=replay, enforcer=rec, dt=1.0)
    alloc = m.step(0.0)
    assert bool(alloc.hot[0]) is bottlenecked
    assert bool(np.isfinite(rec.rates[0]).all()) is bottlenecked


def test_a_near_zero_interval_is_read_over_a_quarter_of_dt():
    m = Manager(routing=sp.csr_matrix(np.ones((2, 1))), link_kind=np.array([UPLINK]),
                policy=appaware, profiler=LateReplay([HOT], 0.01), linkstats=Replay([]),
                enforcer=Recorder(), dt=2.0)
    assert m.interval() == 0.5


def test_the_lease_follows_late_steps():
    """A loop stepping late (here 2.5 Δt between steps) renews its enforcers' leases for
    3 of its real gaps, not 3 Δt, so the caps do not lapse between two slow steps, nor
    in a stall a few steps later; back on time, the lease shrinks to 3 Δt again once the
    late gaps leave the window (LEASE_WINDOW gaps)."""
    from streamband.loop.manager import LEASE_WINDOW

    on_time = [6.0 + k for k in range(1, LEASE_WINDOW + 1)]
    replay = Replay([HOT] * (4 + len(on_time)))

    class Leased(Recorder):
        lease_s = 0.0

        def enforce(self, rates_bps: np.ndarray) -> None:
            super().enforce(rates_bps)
            self.leases = [*getattr(self, "leases", []), self.lease_s]

    rec = Leased()
    m = Manager(routing=sp.csr_matrix(np.ones((2, 1))), link_kind=np.array([UPLINK]),
                policy=appaware, profiler=replay, linkstats=replay, enforcer=rec, dt=1.0,
                weights=np.array([1.0, 1.0]))
    for t in (0.0, 1.0, 3.5, 6.0, *on_time):
        m.step(t)
    # the gap ending at 6.0 leaves the window at the LEASE_WINDOW-th on-time step
    assert rec.leases == pytest.approx([3.0, 3.0, 7.5, 7.5, *[7.5] * (LEASE_WINDOW - 1), 3.0])


class Counted(Replay):
    """:class:`Replay` on a switch that counts the link's load: ``util`` per step."""

    def __init__(self, sent_mbit: list[tuple[float, float]], util: list[float]) -> None:
        super().__init__(sent_mbit)
        self.util = iter(util)
        self.now = 0.0

    def allocatable(self) -> np.ndarray:
        self.now = next(self.util)
        return np.array([CAP])

    def utilisation(self) -> np.ndarray:
        return np.array([self.now])


def test_a_link_whose_backlogs_outgrow_it_is_held_only_while_the_counters_show_it_full():
    """Demands of 24 Mbit/s on 20 at every step (a backlog that waits on something
    other than the link), the link 95 % full for 2 steps, then 40 %: its caps are held
    by the hysteresis for 2 more steps and then lifted; without the counters (Algorithm 1
    line 11 as written, ``full_frac=None``) they stay for good."""
    util = [0.95, 0.95, 0.4, 0.4, 0.4, 0.4, 0.4]

    def run(full_frac: float | None) -> list[bool]:
        replay, rec = Counted([HOT] * len(util), util), Recorder()
        m = Manager(routing=sp.csr_matrix(np.ones((2, 1))), link_kind=np.array([UPLINK]),
                    policy=appaware, profiler=replay, linkstats=replay, enforcer=rec, dt=1.0,
                    full_frac=full_frac)
        hot = [bool(m.step(float(t)).hot[0]) for t in range(len(util))]
        assert hot == [u >= (full_frac or 0.0) for u in util]
        return [bool(np.isfinite(r).all()) for r in rec.rates]

    assert run(0.8) == [True, True, True, True, False, False, False]
    assert run(None) == [True] * len(util)


def test_the_live_loop_reads_and_logs_the_counted_loads(tmp_path):
    import json

    from streamband.loop.live import LiveLoop

    util = [0.95, 0.4]
    replay = Counted([HOT] * len(util), util)
    m = Manager(routing=sp.csr_matrix(np.ones((2, 1))), link_kind=np.array([UPLINK]),
                policy=appaware, profiler=replay, linkstats=replay, enforcer=Recorder(),
                dt=1.0)
    loop = LiveLoop(m, log=tmp_path / "alloc.jsonl")
    for _ in util:
        loop.step()
    loop.log.close()
    lines = [json.loads(s) for s in (tmp_path / "alloc.jsonl").read_text().splitlines()]
    assert [(r["util"], r["hot"]) for r in lines] == [([0.95], [0]), ([0.4], [])]


def test_the_loops_wrapper_forwards_the_counters_and_copies_without_recursion():
    import copy

    from streamband.loop.live import _Recording

    replay = Counted([HOT], [0.5])
    rec = _Recording(replay)
    assert rec.allocatable().tolist() == [CAP] and rec.last.tolist() == [CAP]
    assert rec.utilisation().tolist() == [0.5]  # forwarded to the backend's statistics
    with pytest.raises(AttributeError):
        rec.no_such_counter  # noqa: B018
    twin = copy.copy(rec)  # copy builds the object without __init__: no `inner` yet
    assert twin.inner is replay


class Stalling(Replay):
    """A profiler whose ``stall_at``-th read blocks for ``stall_s`` (a stopped or starved
    manager) and which records when each step read it."""

    def __init__(self, n: int, stall_at: int, stall_s: float) -> None:
        super().__init__([CALM] * n)
        self.stall_at, self.stall_s = stall_at, stall_s
        self.at: list[float] = []

    def flow_state(self) -> FlowState:
        import time

        self.at.append(time.monotonic())
        if len(self.at) == self.stall_at:
            time.sleep(self.stall_s)
        return super().flow_state()


def test_a_stalled_loop_drops_the_steps_it_missed():
    # a 5-Δt stall: the steps after it keep at least MIN_INTERVAL_FRAC Δt apart, where a
    # catch-up burst ran 5 steps back to back and pushed the stall out of the lease window
    import threading

    from streamband.loop.live import LiveLoop
    from streamband.loop.manager import MIN_INTERVAL_FRAC

    dt, n = 0.1, 12
    replay = Stalling(n, stall_at=3, stall_s=5 * dt)
    m = Manager(routing=sp.csr_matrix(np.ones((2, 1))), link_kind=np.array([UPLINK]),
                policy=appaware, profiler=replay, linkstats=replay, enforcer=Recorder(),
                dt=dt)
    loop = LiveLoop(m)
    done = threading.Event()
    loop.on_step = lambda: done.set() if len(replay.at) >= n - 1 else None
    loop.start()
    try:
        assert done.wait(60), "the loop ran its steps"
    finally:
        loop.stop()
    gaps = np.diff(replay.at[: n - 1])
    assert gaps[2] >= 5 * dt  # the stalled step
    assert gaps.min() >= MIN_INTERVAL_FRAC * dt, gaps.round(3).tolist()
    assert not loop.errors


@pytest.mark.parametrize("policy", [appaware, maxmin, weighted])
def test_a_paced_link_is_never_capped(policy):
    """A link whose flows one source paces (:func:`~streamband.loop.guard.paced_links`)
    is found hot at every hot step, and neither flow on it is capped at any step."""
    replay, rec = Replay(TRACE), Recorder()
    m = Manager(routing=sp.csr_matrix(np.ones((2, 1))), link_kind=np.array([UPLINK]),
                policy=policy, profiler=replay, linkstats=replay, enforcer=rec, dt=1.0,
                weights=np.array([1.0, 1.0]), paced=np.array([True]))
    for t in range(len(TRACE)):
        m.step(float(t))
    assert [bool(a.hot[0]) for a in m.history] == [s == HOT for s in TRACE]
    assert not any(a.held.any() for a in m.history)
    assert all(np.isinf(r).all() for r in rec.rates)
