"""``stream`` and ``stream-oracle``: 004's receiver-driven C-SJF (§III-B/C/D).

The decision unit is a receiver's sub-coflow (a trace coflow's reducer; a DAG node's
reducer). Each receiver decides from what it has seen:

- own bytes received ``x`` (sum of x_f of eq. 2), flows seen ``n_c`` and finished
  ``n_c^fnsh`` (eq. 3; n_c grows as new waves arrive, "adjusted as new information
  becomes available");
- Information-Relay (IR, eq. 5, §III-C): ``S`` = bytes received by the other receivers
  of the same coflow, as far as this receiver has learnt them (``relay``):

  * ``"decentralized"`` (``stream``): a sender that serves several receivers of a
    coflow hears each one's bytes received on its ACKs and piggybacks the sum of the
    others' on the data it sends to a receiver. Receiver u learns through sender h, at
    an event at which h served u at a positive rate, ``V[u,h] = sum of x[u'] over the
    receivers u' != u that h serves``, as it was ``info_delay_s`` earlier (the ACK and
    the data each take half a round trip); it keeps the last value while h is not
    sending to it. ``S = max over its senders h of V[u,h]``: reports of different
    senders overlap, so they are not added. A receiver that shares no sender with a
    peer never sees that peer's bytes;
  * ``"oracle"`` (``stream-oracle``): the whole coflow's byte count at every event
    (Aalo's central view, kept as an upper reference);
  * ``"none"``: no relay (S = 0);
- Child-to-Parent (CP, §III-C): when a child sub-coflow completes, its size reaches the
  receivers of the parent, once; the children's bytes are subtracted from the relayed
  total so that IR does not count them a second time;
- Weighted-Priority (WP, eq. 4): for a sub-coflow with internal id m > 1 (Algorithm 1)
  the literal weight is ``W = alpha ln(m + 1)``, else 1. With alpha = 0.5 that is below 1
  for m <= 6, so later sub-coflows would be demoted *more slowly* than the first batch,
  against §III-C's stated purpose ("sub-coflows of the same coflow that arrive later will
  be deprioritized faster"). ``weight="max1"`` (the default) uses
  ``W = max(1, alpha ln(m + 1))``, which never slows demotion and grows with m;
  ``weight="literal"`` is eq. (4) as written.

Reading of eq. (2): a unit in queue k stays while ``min(1, (tau_k + alpha H_c) /
(W (beta S + x))) = 1`` and is demoted to k+1 otherwise (repeated until it fits), with
exponentially spaced tau_k (§III-D); priorities never rise back (P_f = max(P_f, P_f')).
The test allows 1e-9 relative (``DUE``), so the event scheduled at a crossing demotes.
The exact crossing time of the own-byte term is known in closed form (rates are
constant between events), so demotions are events, not ticks; relayed bytes are
applied at events. Starvation mitigation (§III-D): a unit whose flows got no bandwidth
for ``starve_s`` is raised one queue and held there for ``starve_s``; the default 10 ms
is the timer of 004 §IV-A ("the timer expires at 10ms, which is TCP RTOmin").
"""

from __future__ import annotations

import numpy as np

from streamband.sim.coflow.engine import Scheduler, fabric_rtt
from streamband.sim.coflow.schedulers.thresholds import thresholds
from streamband.sim.coflow.trace import MIB

#: 004 §IV-A: the starvation timer (TCP RTOmin), seconds.
STARVE_S = 0.010
RELAYS = ("decentralized", "oracle", "none")
#: a unit is demoted once W y exceeds the limit less 1e-9 relative, so that the event
#: scheduled at the exact crossing demotes it whatever the rounding of y
DUE = 1.0 - 1e-9
WEIGHTS = ("max1", "literal")


def wp_weight(subid: np.ndarray, alpha: float, form: str) -> np.ndarray:
    """Weighted-Priority W of eq. (4) per unit from its internal sub-coflow id m."""
    m = np.asarray(subid, float)
    lit = np.where(m > 1, alpha * np.log(m + 1), 1.0)
    if form == "literal":
        return np.maximum(lit, 1e-9)  # alpha = 0 would divide by zero in the crossing
    return np.maximum(lit, 1.0)


def eq2_limit(tau: np.ndarray, n_seen: np.ndarray, n_fin: np.ndarray, y: np.ndarray,
              alpha: float, unit: float = MIB) -> np.ndarray:
    """Right side of 004's eq. (2) test for a unit in a queue of threshold ``tau``:
    ``tau + alpha H_c`` with eq. (3)'s ``H_c = tau (n_fin / n + n unit / y)`` (``n``
    flows seen, at least 1; ``y`` bytes seen); inf for the last queue (tau = inf).
    ``unit`` is the MiB of eq. (3) (a workload whose sizes are scaled by s passes
    ``s MiB``, with thresholds scaled alike, and gets the same decisions)."""
    n = np.maximum(n_seen, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = tau * (n_fin / n + np.where(y > 0, n * unit / np.maximum(y, 1e-300), 1e300))
        lim = tau + alpha * h
    return np.where(np.isfinite(tau), lim, np.inf)  # the last queue has no limit


def demoted(q: np.ndarray, y: np.ndarray, n_seen: np.ndarray, n_fin: np.ndarray,
            w: np.ndarray, tau: np.ndarray, alpha: float, unit: float = MIB,
            free: np.ndarray | bool = True) -> np.ndarray:
    """The queues after 004's eq. (2) test, repeated until every unit fits: a unit in
    queue k (of ``len(tau)``) whose ``W y`` exceeds :func:`eq2_limit` goes to k+1;
    queues never rise (P_f = max(P_f, P_f')); units not ``free`` (held by starvation
    mitigation) stay. Arrays are per unit; returns a new array."""
    q = np.array(q, np.int64)
    k = len(tau)
    for _ in range(k - 1):
        lim = eq2_limit(tau[q], n_seen, n_fin, y, alpha, unit)
        dem = free & (q < k - 1) & (w * y > lim * DUE)
        if not dem.any():
            break
        q[dem] += 1
    return q


class Stream(Scheduler):
    name = "stream"

    def __init__(self, queues: int = 4, alpha: float = 0.5, beta: float = 1.0,
                 starve_s: float = STARVE_S, relay: str = "decentralized",
                 weight: str = "max1", info_delay_s: float | None = None) -> None:
        if not 2 <= queues <= 8:
            raise ValueError(f"queues: expected 2..8 (004 §III-D), got {queues}")
        if relay not in RELAYS:
            raise ValueError(f"relay: expected one of {', '.join(RELAYS)}, got {relay!r}")
        if weight not in WEIGHTS:
            raise ValueError(f"weight: expected one of {', '.join(WEIGHTS)}, got {weight!r}")
        self.K, self.alpha, self.beta, self.starve_s = queues, alpha, beta, starve_s
        self.relay, self.weight, self.info_delay_s = relay, weight, info_delay_s
        self.tau = thresholds(queues)

    def params(self) -> dict:
        """The scheduler's parameters by name (what the compiled loop receives)."""
        return {"queues": self.K, "alpha": self.alpha, "beta": self.beta,
                "starve_s": self.starve_s, "relay": self.relay, "weight": self.weight,
                "info_delay_s": self.info_delay_s}

    def delay_s(self, fabric) -> float:
        """The information delay: ``info_delay_s``, or one round trip of ``fabric``."""
        return fabric_rtt(fabric) if self.info_delay_s is None else float(self.info_delay_s)

    def compiled_params(self, fabric) -> dict:
        return {"policy": "stream", "tau": [float(x) for x in self.tau], "alpha": self.alpha,
                "beta": self.beta, "starve_s": self.starve_s, "relay": self.relay,
                "info_delay_s": self.delay_s(fabric) if self.relay == "decentralized" else 0.0}

    def bind(self, sim) -> None:
        super().bind(sim)
        wl = sim.wl
        U, C, G = len(wl.unit_coflow), wl.n_coflows, len(wl.group_arrival)
        self.delay = self.delay_s(sim.fabric)
        self.x = np.zeros(U)
        self.q = np.zeros(U, np.int64)
        self.n_seen = np.zeros(U)
        self.n_fin = np.zeros(U)
        self.cof_bytes = np.zeros(C)
        self.cp = np.zeros(G)
        self.group_bytes = np.bincount(wl.group, weights=wl.size, minlength=G)
        self.W = self.unit_weights(wl)
        self.r_u = np.zeros(U)
        self.has_active = np.zeros(U, bool)
        self.starve_since = np.full(U, np.nan)
        self.hold_until = np.full(U, -np.inf)
        # Information-Relay: one (sender, unit) pair per hub-receiver relation
        hub_key = wl.coflow * wl.n_nodes + wl.src
        pair_key = hub_key * U + wl.unit
        upair, self.f_pair = np.unique(pair_key, return_inverse=True)
        self.f_pair = self.f_pair.ravel()
        _, self.p_hub = np.unique(upair // U, return_inverse=True)
        self.p_hub = self.p_hub.ravel()
        self.p_unit = upair % U
        self.view = np.zeros(len(upair))  # V[u, h] last delivered
        self.r_flow = np.zeros(wl.n_flows)  # rate of every flow over the last interval
        self.hist: list[tuple[float, np.ndarray, np.ndarray]] = []  # (t, x(t), r_u after t)

    def unit_weights(self, wl) -> np.ndarray:
        """Weighted-Priority (eq. 4), in the form chosen by ``weight``."""
        return wp_weight(wl.unit_subid, self.alpha, self.weight)

    # -- what the receiver has seen --------------------------------------------
    def on_release(self, flows: np.ndarray, t: float) -> None:
        self.n_seen += np.bincount(self.sim.wl.unit[flows], minlength=len(self.x))

    def on_complete(self, flows: np.ndarray, t: float) -> None:
        wl, sim = self.sim.wl, self.sim
        self.n_fin += np.bincount(wl.unit[flows], minlength=len(self.x))
        for g in np.unique(wl.group[flows]):
            if sim.group_left[g] == 0:  # Child-to-Parent: report the child's size, once
                for p in sim.group_parents[g]:
                    self.cp[p] += self.group_bytes[g]

    def on_advance(self, act: np.ndarray, rates: np.ndarray, dt: float) -> None:
        wl = self.sim.wl
        b = rates * dt
        self.x += np.bincount(wl.unit[act], weights=b, minlength=len(self.x))
        self.cof_bytes += np.bincount(wl.coflow[act], weights=b, minlength=len(self.cof_bytes))
        self.r_flow[:] = 0.0
        self.r_flow[act] = rates

    # -- Information-Relay -------------------------------------------------------
    def _x_at(self, tau: float) -> np.ndarray:
        """Every unit's bytes received at time ``tau`` (exact: rates are constant
        between the recorded events)."""
        h = self.hist
        i = len(h) - 1
        while i >= 0 and h[i][0] > tau:
            i -= 1
        if i < 0:
            return np.zeros(len(self.x))
        t0, x0, r0 = h[i]
        return x0 + r0 * (tau - t0)

    def _relay(self, t: float) -> None:
        """Deliver what the senders serving a unit at a positive rate relay to it."""
        if self.relay != "decentralized":
            return
        xd = self._x_at(t - self.delay)
        hub_sum = np.bincount(self.p_hub, weights=xd[self.p_unit],
                              minlength=int(self.p_hub.max(initial=-1)) + 1)
        served = np.zeros(len(self.view), bool)
        served[self.f_pair[self.r_flow > 0]] = True
        self.view[served] = hub_sum[self.p_hub[served]] - xd[self.p_unit[served]]

    def _peers(self) -> np.ndarray:
        """S of eq. (5) per unit, children's bytes (CP) not counted a second time."""
        wl = self.sim.wl
        if self.relay == "none":
            return np.zeros(len(self.x))
        if self.relay == "oracle":
            s = self.cof_bytes[wl.unit_coflow] - self.x
        else:
            s = np.full(len(self.x), -np.inf)
            np.maximum.at(s, self.p_unit, self.view)
        return np.maximum(s - self.cp[wl.unit_group], 0.0)

    # -- eq. (2)-(5) ---------------------------------------------------------
    def _seen(self) -> np.ndarray:
        wl = self.sim.wl
        return self.x + self.beta * (self._peers() + self.cp[wl.unit_group])

    def _decide(self, t: float) -> None:
        self._relay(t)
        y = self._seen()
        self.q = demoted(self.q, y, self.n_seen, self.n_fin, self.W, self.tau, self.alpha,
                         free=self.hold_until <= t)

    def levels(self, act: np.ndarray, t: float) -> np.ndarray:
        self._decide(t)
        return self.q[self.sim.wl.unit[act]]

    def rates(self, act: np.ndarray, t: float) -> np.ndarray:
        r = super().rates(act, t)
        unit = self.sim.wl.unit[act]
        U = len(self.x)
        self.r_u = np.bincount(unit, weights=r, minlength=U)
        self.has_active = np.bincount(unit, minlength=U) > 0
        starving = self.has_active & (self.r_u <= 0)
        newly = starving & np.isnan(self.starve_since)
        self.starve_since[newly] = t
        self.starve_since[~starving] = np.nan
        if self.relay == "decentralized":
            h = self.hist
            if h and h[-1][0] == t:
                h.pop()
            h.append((t, self.x.copy(), self.r_u.copy()))
            while len(h) > 1 and h[1][0] <= t - self.delay:
                h.pop(0)
        return r

    def next_event(self, t: float) -> float:
        cand = [np.inf]
        live = self.has_active & (self.r_u > 0) & (self.q < self.K - 1)
        if live.any():
            y = self._seen()[live]
            q = self.q[live]
            tau = self.tau[q]
            n = np.maximum(self.n_seen[live], 1.0)
            W = self.W[live]
            b = tau * (1 + self.alpha * self.n_fin[live] / n)
            c = self.alpha * tau * n * MIB
            ystar = (b + np.sqrt(b * b + 4 * W * c)) / (2 * W)
            tc = t + np.maximum(ystar - y, 0) / self.r_u[live]
            tc = np.maximum(tc, self.hold_until[live])
            tc = tc[tc > t * (1 + 1e-12) + 1e-12]
            if tc.size:
                cand.append(float(tc.min()))
        s = self.starve_since + self.starve_s
        s = s[np.isfinite(s)]
        if s.size:
            cand.append(float(s.min()))
        return min(cand)

    def on_event(self, t: float) -> None:
        due = self.starve_since + self.starve_s <= t * (1 + 1e-12) + 1e-12
        if due.any():  # starvation mitigation: raise one queue, hold it
            self.q[due] = np.maximum(self.q[due] - 1, 0)
            self.hold_until[due] = t + self.starve_s
            self.starve_since[due] = np.nan


class StreamOracle(Stream):
    """``stream-oracle``: Stream with the coflow's whole byte count at every event
    (central view), kept beside the decentralized ``stream`` as an upper reference."""

    name = "stream-oracle"

    def __init__(self, queues: int = 4, alpha: float = 0.5, beta: float = 1.0,
                 starve_s: float = STARVE_S, weight: str = "max1") -> None:
        super().__init__(queues, alpha, beta, starve_s, relay="oracle", weight=weight)
