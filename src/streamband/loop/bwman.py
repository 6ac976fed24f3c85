"""The BwMan loop (002 §IV, Fig. 3-4): every Δt, Monitor -> Analyze -> Plan ->
Execute, with the Knowledge being the two models.

- Monitor (M1, M2): the clients' throughput and queue against the SLO, the sampled
  data integrity, the recovery speed (a :class:`Monitor` adapter of the backend);
- Analyze (A1, A2): the failure rate from the integrity; the models' prediction
  error on the points the last interval gave (a point counts only when the service
  was limited by its bandwidth: every client thread busy, or data missing, through
  the interval, and the service's class near its cap on the busiest node); a refit
  on every point so far when the error grows past ``refit_error`` (the models
  start from the training sweep, 002 §III), kept only if it fits (R²);
- Plan: the policy of :mod:`streamband.alloc.bwman`;
- Execute: the backend's enforcer (tc classes or OpenFlow meters, both leased).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from streamband.alloc.bwman import BwmanState, Models, Params, Plan, Policy, Share, fit


@dataclass(frozen=True)
class Observation:
    """The Monitor's view of one interval ``(t - dt, t]`` (t in seconds of the run)."""

    t: float
    slo_ops: float
    throughput_ops: float
    backlog_ops: float
    saturated: bool  # the clients had a queue through the whole interval
    integrity: float
    missing_mb: float  # estimated from the integrity
    recovery_mbs: float  # measured restore speed over the interval
    recovering: bool  # data was missing through the whole interval
    user_util: float | None = None  # busiest node's user class: bytes / its cap
    recovery_util: float | None = None  # the same for the recovery class


class Monitor(Protocol):
    def observe(self, t: float, dt: float) -> Observation:
        """What happened in ``(t - dt, t]``."""
        ...


class PlanEnforcer(Protocol):
    def enforce(self, plan: Plan | None) -> None:
        """Set every storage node's classes (None: plain sharing); renews the lease."""
        ...


@dataclass
class Points:
    """Measured (bandwidth Mbit/s, performance) points of one model and its error."""

    kind: str
    bw: list[float] = field(default_factory=list)
    y: list[float] = field(default_factory=list)
    source: list[str] = field(default_factory=list)
    errors: deque[float] = field(default_factory=lambda: deque(maxlen=5))
    since_refit: int = 0

    def add(self, bw: float, y: float, source: str) -> None:
        self.bw.append(bw)
        self.y.append(y)
        self.source.append(source)


@dataclass
class Step:
    """One pass of the loop, as logged."""

    t: float
    obs: Observation
    plan: Plan | None
    failure_mbs: float
    refit: list[str]
    spent_ms: float
    had_mbps: dict[str, float | None] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        plan = None
        if self.plan is not None:
            plan = {"user_bps": self.plan.user.ceil_bps, "user_rate_bps": self.plan.user.rate_bps,
                    "recovery_bps": self.plan.recovery.ceil_bps,
                    "recovery_rate_bps": self.plan.recovery.rate_bps,
                    "need_user_bps": _num(self.plan.need_user_bps),
                    "need_recovery_bps": _num(self.plan.need_recovery_bps),
                    "traded_off": self.plan.traded_off}
        return {"t": self.t, **{k: v for k, v in asdict(self.obs).items() if k != "t"},
                "failure_mbs": self.failure_mbs, "plan": plan, "refit": self.refit,
                "spent_ms": self.spent_ms, "had_mbps": self.had_mbps}


def _full(util: float | None, least: float) -> bool:
    """Whether a class used its cap (unknown when the backend cannot tell: yes)."""
    return util is None or util >= least


def _had(share: Share, util: float | None, least: float) -> float | None:
    """The bandwidth (Mbit/s) a class had over the interval, for a model's point:
    its cap when it used the cap (:func:`_full`); for a class that may borrow
    (ceil above its rate) what it measurably used; None when neither is known."""
    if share.ceil_bps > share.rate_bps:
        return None if util is None else util * share.ceil_bps / 1e6
    return share.ceil_bps / 1e6 if _full(util, least) else None


def _num(x: float) -> float | None:
    return None if not math.isfinite(x) else x


class BwmanLoop:
    """MAPE-K every ``dt`` seconds (:meth:`step`; :meth:`start` runs it in a thread)."""

    def __init__(self, monitor: Monitor, enforcer: PlanEnforcer, policy: Policy,
                 models: Models | None, params: Params, quota_bps: float, dt: float,
                 refit_error: float = 0.25, training: dict[str, Points] | None = None,
                 failure_window_s: float = 60.0, settle_s: float = 4.0,
                 min_r2: float = 0.5, min_util: float = 0.8) -> None:
        self.monitor, self.enforcer, self.policy = monitor, enforcer, policy
        self.models, self.params = models, params
        self.quota_bps, self.dt = quota_bps, dt
        self.refit_error = refit_error
        self.points = training or {"user": Points("linear"), "recovery": Points("log")}
        self.failure_window_s = failure_window_s
        self.settle_s = settle_s
        self.min_r2 = min_r2
        self.min_util = min_util
        self.history: list[Step] = []
        self.refits: list[dict[str, Any]] = []
        self.last_plan: Plan | None = None
        self.had: dict[str, float | None] = {}  # what each class had last interval, Mbit/s
        self._missing: deque[tuple[float, float]] = deque()
        self._last_loss_t = -math.inf
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    # -- Analyze ------------------------------------------------------------------------
    def failure_rate(self, t: float, missing_mb: float) -> float:
        """A2: data lost per second over the last window, from the rises of the
        missing data the integrity shows (002 §IV-A: "the current data failure
        rate, estimated from system data integrity")."""
        prev = self._missing[-1][1] if self._missing else missing_mb
        if missing_mb > prev + 1e-9:
            self._last_loss_t = t
        self._missing.append((t, missing_mb))
        while self._missing and self._missing[0][0] < t - self.failure_window_s:
            self._missing.popleft()
        pts = list(self._missing)
        lost = sum(max(0.0, b[1] - a[1]) for a, b in zip(pts, pts[1:], strict=False))
        return lost / self.failure_window_s

    def learn(self, obs: Observation) -> list[str]:
        """Add the interval's valid points, track each model's error, refit when it
        grows (the models' Knowledge, 002 §III: "built ... on-line by measuring
        performance at runtime")."""
        plan, refit = self.last_plan, []
        self.had = {}
        if plan is None or self.models is None:
            return refit
        cand = []
        user_bw = _had(plan.user, obs.user_util, self.min_util)
        rec_bw = _had(plan.recovery, obs.recovery_util, self.min_util)
        self.had = {"user": user_bw, "recovery": rec_bw}
        if obs.saturated and user_bw is not None:
            cand.append(("user", user_bw, obs.throughput_ops))
        if (obs.recovering and obs.t - self._last_loss_t > self.settle_s + self.dt
                and rec_bw is not None):
            cand.append(("recovery", rec_bw, obs.recovery_mbs))
        for name, bw, y in cand:
            model = getattr(self.models, name)
            pts = self.points[name]
            pred = model.predict(bw)
            pts.errors.append(abs(y - pred) / max(abs(pred), 1e-6))
            pts.add(bw, y, "online")
            pts.since_refit += 1
            err = sum(pts.errors) / len(pts.errors)
            if err > self.refit_error and pts.since_refit >= pts.errors.maxlen:  # type: ignore[operator]
                try:
                    new = fit(model.kind, pts.bw, pts.y)
                except ValueError:
                    continue
                if new.a1 <= 0 or new.r2 < self.min_r2:  # keep the model that fits
                    self.refits.append({"t": obs.t, "model": name, "error": err,
                                        "rejected": True, **new.as_dict()})
                    pts.since_refit = 0
                    continue
                self.models = (Models(new, self.models.recovery) if name == "user"
                               else Models(self.models.user, new))
                pts.errors.clear()
                pts.since_refit = 0
                refit.append(name)
                self.refits.append({"t": obs.t, "model": name, "error": err,
                                    "points": len(pts.bw), **new.as_dict()})
        return refit

    # -- one pass -------------------------------------------------------------------------
    def step(self, t: float) -> Step:
        t_start = time.perf_counter()
        obs = self.monitor.observe(t, self.dt)  # Monitor
        failure = self.failure_rate(t, obs.missing_mb)  # Analyze
        refit = self.learn(obs)
        state = BwmanState(slo_ops=obs.slo_ops, backlog_ops=obs.backlog_ops,
                           throughput_ops=obs.throughput_ops, integrity=obs.integrity,
                           missing_mb=obs.missing_mb, failure_mbs=failure,
                           quota_bps=self.quota_bps)
        plan = self.policy(state, self.models, self.params)  # Plan
        self.enforcer.enforce(plan)  # Execute
        self.last_plan = plan
        step = Step(t, obs, plan, failure, refit, (time.perf_counter() - t_start) * 1e3,
                    dict(self.had))
        self.history.append(step)
        return step

    def start(self, t0: float, duration_s: float) -> None:
        """Step every ``dt`` from ``t0`` (wall clock) for ``duration_s``."""

        def loop() -> None:
            k = 1
            try:
                while not self._stop.is_set():
                    t = k * self.dt
                    if t > duration_s:
                        return
                    if self._stop.wait(max(0.0, t0 + t - time.time())):
                        return
                    self.step(round(time.time() - t0, 3))
                    k += 1
            except BaseException as exc:  # the driver reports it; the lease expires
                self.error = exc

        self._thread = threading.Thread(target=loop, name="bwman", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
