"""One run of 002 §V-F on the store: the stepped target workload, the failure
schedule, the dispersion monitor and the BwMan loop under one policy, then a
tail (no clients) until every lost replica is back; measured as 002 Table I
(share of throughput windows below the SLO by more than a tolerance).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from streamband.alloc.bwman import Models, Params, get_policy
from streamband.loop.bwman import BwmanLoop, Points
from streamband.swift.adapters import SwiftMonitor
from streamband.swift.failures import FailureGenerator
from streamband.swift.integrity import RecoveryTracker
from streamband.swift.session import Session, ops_log
from streamband.swift.spec import WorkloadSpec

TOLERANCES = (0.05, 0.10, 0.15)  # 002 Table I
START_S = 2.0  # processes start this long before the run's time zero


@dataclass
class RunResult:
    """What one run measured (times in seconds of the run)."""

    policy: str
    windows: list[dict[str, float]]
    violations: dict[str, float]
    violations_two_sided: dict[str, float]
    integrity: list[tuple[float, float]]
    missing: list[tuple[float, int]]
    steps: list[dict[str, Any]]
    failures: list[dict[str, Any]]
    refits: list[dict[str, Any]]
    requests: dict[str, float]
    recovered_at: float | None  # when the last lost replica was back
    recovery_s: float | None  # from the last failure to then
    integrity_final: float
    models: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def throughput_windows(ops: list[dict[str, Any]], wl: WorkloadSpec) -> list[dict[str, float]]:
    """Served requests per ``window_s`` against the mean target over the window."""
    w = wl.window_s
    n = int(wl.duration_s // w)
    ends = np.array([o["e"] for o in ops if o["st"] // 100 == 2])
    out = []
    for k in range(n):
        a, b = k * w, (k + 1) * w
        served = int(((ends >= a) & (ends < b)).sum())
        grid = np.linspace(a, b, 21)[:-1]
        target = float(np.mean([wl.target(x) for x in grid]))
        out.append({"t": a, "throughput": served / w, "target": target})
    return out


def violations(windows: list[dict[str, float]], two_sided: bool = False) -> dict[str, float]:
    """002 Table I: the share of windows whose throughput misses the SLO by more
    than each tolerance (below it; ``two_sided``: either side)."""
    out = {}
    for tol in TOLERANCES:
        bad = 0
        for w in windows:
            low = w["throughput"] < w["target"] * (1 - tol)
            high = w["throughput"] > w["target"] * (1 + tol)
            bad += low or (two_sided and high)
        out[f"{round(tol * 100)}%"] = bad / max(1, len(windows))
    return out


def run(s: Session, enforcer: Any, policy: str, models: Models | None,
        training: dict[str, Points], name: str,
        progress: Callable[[float, str], None] = lambda *_: None,
        tail_timeout_s: float = 600.0) -> RunResult:
    """One run of the stepped workload with failures under ``policy``."""
    assert s.cluster is not None
    spec = s.spec
    wl, fs, ctl, sw = spec.workload, spec.failures, spec.control, spec.swift
    quota = spec.quota_mbps * 1e6
    params = Params(tradeoff=ctl.tradeoff, margin=ctl.margin, catchup_s=ctl.catchup_s,
                    user_floor_bps=ctl.user_floor_mbps * 1e6,
                    recovery_floor_bps=ctl.recovery_floor_mbps * 1e6,
                    static_user_share=ctl.static_user_share, borrow=ctl.borrow)
    t0 = time.time() + START_S
    horizon = wl.duration_s + tail_timeout_s
    wproc, wlog = s.workload(name, "target", duration_s=wl.duration_s, t0=t0)
    dproc, dlog = s.dispersion(name, horizon, t0)
    gen = FailureGenerator(s.cluster, sw.objects, sw.object_bytes, fs.share, fs.every_s,
                           fs.start_s, fs.stop_s, fs.seed, s.out / f"{name}.failures.jsonl")
    tracker = RecoveryTracker(sw.object_bytes)
    monitor = SwiftMonitor(wl, wlog, dlog, tracker, gen.events,
                           sw.objects * sw.object_bytes / 1e6,
                           getattr(enforcer, "utilization", None))
    pts = {k: Points(v.kind, list(v.bw), list(v.y), list(v.source)) for k, v in training.items()}
    loop = BwmanLoop(monitor, enforcer, get_policy(policy), models, params, quota, ctl.dt_s,
                     ctl.refit_error, pts)
    recovered_at = None
    try:
        gen.start(t0, wl.duration_s)
        loop.start(t0, horizon)
        while time.time() < t0 + wl.duration_s:
            time.sleep(1.0)
            _check(loop, wproc)
            progress(time.time() - t0, "workload")
        wproc.wait(wl.timeout_s + 30)
        gen.stop()
        while True:  # the tail: until every lost replica is back
            time.sleep(1.0)
            _check(loop, None)
            t = time.time() - t0
            last = loop.history[-1] if loop.history else None
            progress(t, "recovery")
            if (last is not None and last.t > wl.duration_s and not tracker.lost
                    and monitor.integrity and monitor.integrity[-1][1] >= 1.0
                    and monitor.integrity[-1][0] > max(
                        (e.t for e in gen.events), default=0.0) + 1.0):
                recovered_at = _first_zero(tracker.series, gen)
                break
            if t > horizon:
                break
    finally:
        loop.stop()
        gen.stop()
        for p in (wproc, dproc):
            if p.poll() is None:
                p.kill()
                p.wait(5)
        enforcer.enforce(None)
    ops, ticks = ops_log(wlog)
    windows = throughput_windows(ops, wl)
    served = [o for o in ops if o["st"] // 100 == 2]
    late = sum(1 for o in ops if o["b"] - o["s"] > 0.05)
    last_fail = max((e.t for e in gen.events), default=None)
    issued = max((tk.get("issued", 0) for tk in ticks), default=0)
    return RunResult(
        policy=policy, windows=windows, violations=violations(windows),
        violations_two_sided=violations(windows, two_sided=True),
        integrity=list(monitor.integrity), missing=list(tracker.series),
        steps=[st.as_dict() for st in loop.history],
        failures=[{"t": e.t, "host": e.host, "replicas": len(e.losses), "bytes": e.bytes}
                  for e in gen.events],
        refits=list(loop.refits),
        requests={"issued": issued, "served": len(served), "errors": len(ops) - len(served),
                  "late_share": late / max(1, len(ops)),
                  "latency_p50_s": _pct([o["e"] - o["b"] for o in served], 50),
                  "latency_p95_s": _pct([o["e"] - o["b"] for o in served], 95),
                  "mean_throughput": len([o for o in served if o["e"] < wl.duration_s])
                  / wl.duration_s},
        recovered_at=recovered_at,
        recovery_s=None if recovered_at is None or last_fail is None
        else recovered_at - last_fail,
        integrity_final=monitor.integrity[-1][1] if monitor.integrity else math.nan,
        models={k: v.as_dict() for k, v in (
            ("user", loop.models.user), ("recovery", loop.models.recovery))}
        if loop.models is not None else {},
    )


def _first_zero(series: list[tuple[float, int]], gen: FailureGenerator) -> float | None:
    """When the tracker first saw nothing missing after the last failure."""
    last = max((e.t for e in gen.events), default=0.0)
    return next((t for t, n in series if n == 0 and t > last), None)


def _pct(v: list[float], q: float) -> float:
    return float(np.percentile(v, q)) if v else math.nan


def _check(loop: BwmanLoop, proc: Any) -> None:
    if loop.error is not None:
        raise RuntimeError(f"BwMan loop failed: {loop.error!r}") from loop.error
    if proc is not None and proc.poll() not in (None, 0):
        raise RuntimeError(f"workload exited with {proc.returncode}")
