"""The training sweep that gives BwMan its models before the loop starts (002 §III:
"the model trained off-line ... by varying the bandwidth allocation and measuring
system throughput", and recovery speed "under a fixed failure rate").

- eq. (1): every storage node's user class capped at each bandwidth in turn,
  clients at best effort (closed loop); throughput = requests served per second;
- eq. (2): every node's recovery class capped at each bandwidth in turn, no
  clients, a share of one random node's replicas deleted; recovery speed = bytes
  restored per second from the first restore to the last.

The user sweep also gives the SLO's reference (:func:`reference`) and the check of
002's premise that the network, not the CPU, limits the clients (:func:`growth`).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from streamband.alloc.bwman import Plan, Share
from streamband.loop.bwman import Points
from streamband.swift.failures import FailureGenerator
from streamband.swift.integrity import RecoveryTracker
from streamband.swift.session import Session, ops_log

WARMUP_S = 2.0


def _plan(quota_bps: float, user_bps: float) -> Plan:
    rec = quota_bps - user_bps
    return Plan(Share(user_bps, user_bps), Share(rec, rec))


class Holder:
    """Keeps a plan enforced (renewing its lease every ``period_s``) while a
    measurement runs; ``with Holder(enforcer, period) as h: h.set(plan)``."""

    def __init__(self, enforcer: Any, period_s: float) -> None:
        self.enforcer = enforcer
        self.period_s = period_s
        self.plan: Plan | None = None
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="renew", daemon=True)
        self.error: BaseException | None = None

    def set(self, plan: Plan | None) -> None:
        with self.lock:
            self.plan = plan
            self.enforcer.enforce(plan)

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            try:
                with self.lock:
                    self.enforcer.enforce(self.plan)
            except BaseException as exc:  # reported by the measurement
                self.error = exc
                return

    def __enter__(self) -> Holder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)


def user_points(s: Session, enforcer: Any, quota_bps: float,
                progress: Callable[[str], None] = lambda _: None) -> Points:
    """Throughput (op/s) at each user bandwidth of the training spec (eq. 1)."""
    tr = s.spec.training
    pts = Points("linear")
    with Holder(enforcer, s.spec.control.dt_s) as hold:
        for bw in tr.user_mbps:
            hold.set(_plan(quota_bps, min(bw * 1e6, quota_bps)))
            pts.add(bw, _closed_loop(s, tr.user_seconds), "training")
            progress(f"user {bw:g} Mbit/s: {pts.y[-1]:.1f} op/s")
    return pts


def _closed_loop(s: Session, seconds: float) -> float:
    """Requests served per second by clients at best effort (after a warm-up)."""
    proc, log = s.workload(f"train-user-{time.time():.0f}", "closed",
                           duration_s=seconds + WARMUP_S)
    proc.wait(seconds + WARMUP_S + s.spec.workload.timeout_s + 30)
    ops, _ = ops_log(log)
    served = sum(1 for o in ops if o["st"] // 100 == 2
                 and WARMUP_S < o["e"] <= WARMUP_S + seconds)
    return served / seconds


def recovery_points(s: Session, enforcer: Any, quota_bps: float,
                    progress: Callable[[str], None] = lambda _: None,
                    timeout_s: float = 600.0) -> Points:
    """Recovery speed (MB/s) at each recovery bandwidth of the training spec (eq. 2)."""
    assert s.cluster is not None
    tr, sw = s.spec.training, s.spec.swift
    pts = Points("log")
    gen = FailureGenerator(s.cluster, sw.objects, sw.object_bytes, tr.recovery_share,
                           1.0, 0.0, None, s.spec.failures.seed + 1000,
                           s.out / "train-recovery.failures.jsonl")
    with Holder(enforcer, s.spec.control.dt_s) as hold:
        for bw in tr.recovery_mbps:
            hold.set(_plan(quota_bps, quota_bps - min(bw * 1e6, quota_bps)))
            speed = recover_once(gen, sw.object_bytes, timeout_s)
            pts.add(bw, speed, "training")
            progress(f"recovery {bw:g} Mbit/s: {speed:.3f} MB/s")
    return pts


def recover_once(gen: FailureGenerator, object_bytes: int, timeout_s: float) -> float:
    """Inject one failure, wait until every replica is back; the restore speed
    (MB/s) from the first restored replica to the last."""
    tracker = RecoveryTracker(object_bytes)
    t0 = time.monotonic()
    ev = gen.inject(0.0)
    tracker.add(0.0, ev.losses)
    n0 = tracker.poll(0.0)
    first_t, first_n = None, n0
    while True:
        t = time.monotonic() - t0
        n = tracker.poll(t)
        if first_t is None and n < n0:
            first_t, first_n = t, n
        if n == 0:
            break
        if t > timeout_s:
            raise TimeoutError(f"recovery of {n0} replicas not done after {timeout_s:.0f} s")
        time.sleep(0.1)
    span = t - (first_t or 0.0)
    if span <= 0 or first_n == 0:  # all back in one poll
        return n0 * object_bytes / 1e6 / max(t, 0.1)
    return first_n * object_bytes / 1e6 / span


def reference(pts: Points, bw_mbps: float) -> float:
    """The throughput (op/s) the sweep measured with clients capped at ``bw_mbps``
    (linear between the two nearest points; the sweep must span ``bw_mbps``).

    The SLO's steps are fractions of it (002 Fig. 7: 80 -> 90 -> 100 op/s, the top
    step just reachable only when recovery is throttled): at ``bw_mbps`` (the
    clients' share of the quota, recovery holding the rest) the store serves the top
    step; more than that needs bandwidth taken from recovery. Measured rather than
    predicted by eq. (1): where the store's throughput bends, the line fitted over
    the whole sweep misses the point, and a target above what the store served is
    one no allocation can meet."""
    order = np.argsort(pts.bw)
    x, y = np.asarray(pts.bw, float)[order], np.asarray(pts.y, float)[order]
    if not x[0] <= bw_mbps <= x[-1]:
        raise ValueError(f"reference: {bw_mbps:g} Mbit/s outside the sweep "
                         f"{x[0]:g}..{x[-1]:g}")
    return float(np.interp(bw_mbps, x, y))


#: 002's premise, checked on the sweep: throughput rises at least this fast with
#: bandwidth on a log-log scale (1: the network alone limits the clients; 0: flat,
#: something else does) ...
MIN_GROWTH = 0.5
#: ... and does not fall at the top: the largest bandwidth's throughput is at least
#: this share of the best point's (a drop there means the CPU binds first; a point
#: of the sweep, ~100 requests, varies by ~5 % from one measurement to the next)
MIN_TOP = 0.9


def growth(pts: Points) -> dict[str, Any]:
    """Whether throughput grows with bandwidth over the sweep (002 §V: the network
    is the bottleneck, so that arbitrating it matters): the log-log slope of
    throughput on bandwidth, and the top point against the best."""
    bw, y = np.asarray(pts.bw, float), np.asarray(pts.y, float)
    ok_pts = (bw > 0) & (y > 0)
    slope = (float(np.polyfit(np.log(bw[ok_pts]), np.log(y[ok_pts]), 1)[0])
             if ok_pts.sum() >= 2 and np.ptp(bw[ok_pts]) > 0 else math.nan)
    top = float(y[np.argmax(bw)] / y.max()) if y.size and y.max() > 0 else math.nan
    return {"slope": slope, "top_over_best": top,
            "ok": bool(slope >= MIN_GROWTH and top >= MIN_TOP)}
