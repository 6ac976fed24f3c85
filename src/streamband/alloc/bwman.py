"""BwMan's Analyze and Plan (002 §III, §IV): the two predictive models and the
policies that turn the monitored state into each storage node's bandwidth for its
user-centric (client) and system-centric (recovery) services.

Models (fitted on measurements of the running store, never constants here):

- eq. (1): throughput [op/s] = a1 * bandwidth + a2 (user-centric, 002 §III-A);
- eq. (2): recovery speed [MB/s] = a1 * ln(bandwidth) + a2 (002 §III-B);

bandwidth is what one storage node gives the service, in Mbit/s (the unit of the
models' coefficients); a plan is in bit/s.

Policies are pure functions ``(BwmanState, Models, Params) -> Plan | None``:

- ``bwman``: the bandwidth each service needs from the models; when the quota
  cannot cover both, the trade-off policy decides (002 §IV-B; user-centric first
  by default, as in 002 §V-F). The plan's rates are guarantees; with ``borrow``
  (the default) each class may also use what the other leaves, the side served
  first by the trade-off policy first in line (HTB ``ceil`` = quota, ``prio``),
  where 002's token buckets are hard (``borrow=False``: ceil = rate);
- ``none``: no management (None: plain sharing of the link);
- ``static``: a fixed split of the quota.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from streamband.errors import OptionError, nearest

# -- the models (Analyze) -------------------------------------------------------------


@dataclass(frozen=True)
class Fit:
    """A fitted model: ``y = a1 * f(x) + a2`` with f = identity (eq. 1) or ln (eq. 2),
    x in Mbit/s; ``r2`` on the ``n`` points it was fitted on."""

    kind: str  # "linear" (eq. 1) | "log" (eq. 2)
    a1: float
    a2: float
    r2: float
    n: int

    def _f(self, x: np.ndarray | float) -> np.ndarray | float:
        return np.log(x) if self.kind == "log" else x

    def predict(self, bw_mbps: float) -> float:
        """The performance the model predicts at ``bw_mbps``."""
        return float(self.a1 * self._f(max(bw_mbps, 1e-9)) + self.a2)

    def inverse(self, y: float) -> float:
        """The bandwidth (Mbit/s) the model says ``y`` needs; inf when the model
        does not grow with bandwidth."""
        if self.a1 <= 0:
            return math.inf
        z = (y - self.a2) / self.a1
        if self.kind == "log":
            return math.exp(min(z, 700.0))
        return max(z, 0.0)

    def as_dict(self) -> dict[str, float | int | str]:
        return {"kind": self.kind, "a1": self.a1, "a2": self.a2, "r2": self.r2, "n": self.n}


def fit(kind: str, bw_mbps: list[float] | np.ndarray, y: list[float] | np.ndarray) -> Fit:
    """Least squares of eq. (1) (``kind="linear"``) or eq. (2) (``"log"``)."""
    x = np.asarray(bw_mbps, float)
    yy = np.asarray(y, float)
    if x.size < 2 or np.ptp(x) == 0:
        raise ValueError(f"fit {kind}: need points at two bandwidths at least, got {x.size}")
    if kind == "log" and (x <= 0).any():
        raise ValueError("fit log: bandwidths must be positive")
    f = np.log(x) if kind == "log" else x
    a = np.vstack([f, np.ones_like(f)]).T
    (a1, a2), *_ = np.linalg.lstsq(a, yy, rcond=None)
    pred = a1 * f + a2
    ss_res = float(((yy - pred) ** 2).sum())
    ss_tot = float(((yy - yy.mean()) ** 2).sum())
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else (1.0 if ss_res == 0 else 0.0)
    return Fit(kind, float(a1), float(a2), r2, int(x.size))


@dataclass(frozen=True)
class Models:
    """The two models the plan uses: ``user`` (eq. 1), ``recovery`` (eq. 2)."""

    user: Fit
    recovery: Fit


# -- state and plan ---------------------------------------------------------------------


@dataclass(frozen=True)
class BwmanState:
    """What the Monitor saw over the last interval (002 §IV-A, M1 and M2).

    ``slo_ops``: the desired throughput of the whole store now; ``backlog_ops``:
    requests waiting in the clients' queue; ``throughput_ops``: achieved;
    ``integrity``: sampled share of objects with all replicas; ``missing_mb``:
    data still to recover; ``failure_mbs``: data lost per second lately (the
    failure rate, from integrity); ``quota_bps``: each node's bandwidth quota.
    """

    slo_ops: float
    backlog_ops: float
    throughput_ops: float
    integrity: float
    missing_mb: float
    failure_mbs: float
    quota_bps: float

    @property
    def recovering(self) -> bool:
        return self.missing_mb > 0 or self.integrity < 1.0


@dataclass(frozen=True)
class Share:
    """One service class on one node: guaranteed ``rate_bps``, capped at ``ceil_bps``."""

    rate_bps: float
    ceil_bps: float


@dataclass(frozen=True)
class Plan:
    """Every storage node's two classes (homogeneous, as 002 §III-B allocates
    recovery bandwidth); ``need_*`` is what the models asked for, before trade-off."""

    user: Share
    recovery: Share
    need_user_bps: float = math.nan
    need_recovery_bps: float = math.nan
    traded_off: bool = False
    first: str = "user"  # the class that borrows first ("user" | "recovery")


@dataclass(frozen=True)
class Params:
    """The knobs of the plan (from the experiment's control spec)."""

    tradeoff: str = "user-first"  # | "system-first"
    margin: float = 0.15  # head-room on the user model's need
    catchup_s: float = 10.0  # queued requests are planned to be served within this
    recovery_horizon_s: float = 60.0  # missing data planned to be restored within this
    user_floor_bps: float = 0.5e6
    recovery_floor_bps: float = 0.5e6
    static_user_share: float = 0.5
    borrow: bool = True  # work-conserving classes (see the module doc); False: 002's hard buckets


Policy = Callable[[BwmanState, "Models | None", Params], "Plan | None"]


def _split(quota: float, user: float, need_u: float, need_r: float, traded: bool,
           p: Params | None = None) -> Plan:
    """``user`` guaranteed to the clients, the rest to recovery; each capped at its
    guarantee, or at the quota when the classes borrow (``p.borrow``; the side
    ``p.tradeoff`` serves first first in line). No ``p``: hard caps."""
    borrow = p is not None and p.borrow
    first = "recovery" if p is not None and p.tradeoff == "system-first" else "user"
    user = min(max(user, 0.0), quota)
    rec = quota - user
    if borrow:
        return Plan(Share(user, quota), Share(rec, quota), need_u, need_r, traded, first)
    return Plan(Share(user, user), Share(rec, rec), need_u, need_r, traded, first)


def bwman(state: BwmanState, models: Models | None, p: Params) -> Plan:
    """002 §IV: Plan the bandwidth each service needs for its objective, from the
    models; trade off by policy when the quota cannot cover both (§IV-B).

    User-centric need: eq. (1) inverted at the SLO plus the queue to catch up,
    with ``margin`` head-room. System-centric need: eq. (2) inverted at the speed
    that keeps up with the failure rate and restores the missing data within the
    horizon. When both fit, the spare goes to recovery while data is missing (it
    finishes sooner), else to the clients. With ``p.borrow`` these are guarantees
    and either class may use the other's unused part (see the module doc)."""
    if models is None:
        raise ValueError("bwman: needs fitted models")
    q = state.quota_bps
    want_ops = state.slo_ops + state.backlog_ops / p.catchup_s
    need_u = max(p.user_floor_bps, models.user.inverse(want_ops) * 1e6 * (1.0 + p.margin))
    if not state.recovering:
        return _split(q, q - p.recovery_floor_bps, need_u, 0.0, False, p)
    speed = state.failure_mbs + state.missing_mb / p.recovery_horizon_s
    need_r = max(p.recovery_floor_bps, models.recovery.inverse(speed) * 1e6)
    if need_u + need_r <= q:
        return _split(q, need_u, need_u, need_r, False, p)
    if p.tradeoff == "user-first":
        return _split(q, min(need_u, q - p.recovery_floor_bps), need_u, need_r, True, p)
    return _split(q, max(q - need_r, p.user_floor_bps), need_u, need_r, True, p)


def none(state: BwmanState, models: Models | None, p: Params) -> None:
    """No management: every class back to plain sharing of the link."""
    return None


def static(state: BwmanState, models: Models | None, p: Params) -> Plan:
    """A fixed split: ``static_user_share`` of the quota to clients, the rest to
    recovery, whatever the load."""
    q = state.quota_bps
    return _split(q, p.static_user_share * q, math.nan, math.nan, False)


POLICIES: dict[str, Policy] = {"bwman": bwman, "none": none, "static": static}


def get_policy(name: str) -> Policy:
    """The BwMan policy registered as ``name``."""
    try:
        return POLICIES[name]
    except KeyError:
        raise OptionError(f"policy: unknown policy {name!r}, expected one of "
                          f"{', '.join(POLICIES)}{nearest(name, POLICIES)}") from None
