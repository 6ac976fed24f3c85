"""Time-stepped fluid simulator of a stream application on a network (000, 001).

Every flow has a sender queue (tuples waiting for the network: L^s of 000 Fig. 5)
and a receiver queue (tuples waiting for the receiving instance: L^r). Sources emit
open loop at their arrival rate (as the papers emulate arrival rates), or, with
``backpressure``, stop while any queue is above the high watermark until every queue
is below the low one (Storm 1.x's topology-wide backpressure).

Operators are infinitely fast; the network is the only bottleneck. Joins and time
windows are aligned on event time: an instance processes its inputs up to the
smallest watermark among its input flows (a flow's watermark is the origin of its
oldest undelivered tuple, or its sender's watermark when nothing is queued). This is
what makes a join stall when one of its inputs is throttled (000 §IV-A1).

Link sharing: max-min fair among backlogged flows, recomputed every step (the TCP
model), under per-flow rate caps (a capped flow does not use leftover capacity, as
with a meter) and strict-priority classes (0 served first, max-min fair inside a
class: :func:`~streamband.alloc.priority.priority_rates`, the sharing App-Fair's
queues of 000 §VII and 004's coflow queues both mean). The caps and classes are fixed
(``static``: caps) or set by the manager loop of 000 Fig. 4 that
:mod:`streamband.backends.sim` attaches: the 5-metric tuple sampled every
``sample_s``, a new allocation every ``interval_s`` (Δt).

Latency is event-time latency: the age of every tuple the measured operators take
in, from its source time (exact in the fluid queues); its mean and percentiles.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from streamband.alloc.maxmin import maxmin_rates
from streamband.alloc.priority import priority_rates
from streamband.model.flows import FlowMap
from streamband.sim.queues import Chunk, FluidQueue, age_sum, origin_mass, total


@dataclass
class SimConfig:
    """Knobs of one simulated run (defaults: 000 §VI-A)."""

    duration_s: float = 300.0
    step_s: float = 0.1
    interval_s: float = 5.0  # Δt between allocations
    sample_s: float = 1.0  # 5-metric tuple sampling period
    warmup_s: float = 10.0  # excluded from throughput and latency
    buffer_tuples: float | None = None  # bound of every queue; None = unbounded
    backpressure: tuple[float, float] | None = None  # (high, low) watermarks, tuples
    #: a join keeps the tuples it cannot match yet in its own store, as the testbed
    #: harness's does, not in its inputs' receiver queues: the 5-metric tuple's L^r of a
    #: join's inputs reads 0 (the join itself waits for its slowest input either way)
    join_store: bool = False


@dataclass
class SimResult:
    """Metrics of one run; rates in Mbit/s, latency in ms."""

    policy: str
    throughput_tps: float
    latency_ms: float
    latency_p50_s: float
    latency_p99_s: float
    link_utilization: float | None
    optimizer_ms: float | None
    dropped_tuples: float
    goodput_mbps: float  # bytes/s the measured operators took in, as Mbit/s
    flow_ids: list[str]
    sample_times: np.ndarray
    flow_rates_mbps: np.ndarray  # samples x flows
    bottleneck_links: list[int]
    link_util: np.ndarray  # mean used / capacity of every link over the measured period
    allocations: int = 0
    extras: dict[str, float] = field(default_factory=dict)
    #: per measured operator: (tuples/s it took in, mean latency s) over the measured period
    by_operator: dict[str, tuple[float, float]] = field(default_factory=dict)


class _Instance:
    __slots__ = ("id", "op", "kind", "ins", "outs", "by_input", "out_wm", "acc", "acc_mass",
                 "next_fire", "rate")

    def __init__(self, iid: str, op: str, kind: str) -> None:
        self.id = iid
        self.op = op
        self.kind = kind
        self.ins: list[int] = []
        self.outs: list[int] = []
        self.by_input: dict[str, list[int]] = {}
        self.out_wm = 0.0
        self.acc = 0.0
        self.acc_mass = 0.0  # sum of n * origin of the open window's contents
        self.next_fire = 0.0
        self.rate = 0.0


class FluidSim:
    """One application on one network: its queues, operators and links.

    Parameters
    ----------
    fm : FlowMap
        The application placed on a topology: flows, their links and tuple sizes.
    policy : str
        The name of the policy the run is under (reported in the result).
    cfg : SimConfig, optional
        Duration, step, sampling and allocation periods, warm-up, queue bounds and
        backpressure (default :class:`SimConfig`).
    caps : dict of int to float, optional
        Fixed rate caps in bit/s by flow index (``static``); a manager loop attached
        as :attr:`manager` overrides them every Δt.

    Examples
    --------
    >>> from streamband.model.app import App
    >>> from streamband.model.flows import FlowMap
    >>> from streamband.model.topology import star
    >>> app = App.model_validate({"name": "pair", "operators": [
    ...     {"name": "a", "kind": "source", "rate_tps": 100}, {"name": "b", "kind": "sink"}],
    ...     "edges": [{"src": "a", "dst": "b", "tuple_bytes": 1000}]})
    >>> fm = FlowMap(app, star(2, 1e6), {"a[0]": "h1", "b[0]": "h2"})
    >>> round(FluidSim(fm, "tcp", SimConfig(duration_s=30)).run().throughput_tps)
    100
    """

    def __init__(
        self,
        fm: FlowMap,
        policy: str,
        cfg: SimConfig | None = None,
        caps: dict[int, float] | None = None,
    ) -> None:
        self.fm = fm
        self.cfg = cfg or SimConfig()
        self.policy = policy
        app = fm.app
        n = len(fm.flows)
        lim = self.cfg.buffer_tuples
        self.sq = [FluidQueue(lim) for _ in range(n)]
        self.rq = [FluidQueue(lim) for _ in range(n)]
        self.tb = np.array([f.tuple_bytes for f in fm.flows])
        self.share = np.array([f.share for f in fm.flows])
        self.src_of = [f.src for f in fm.flows]
        self.external = fm.external.copy()
        self.ext_idx = np.flatnonzero(self.external)
        self.sent_bytes = np.zeros(n)
        self.caps = np.full(n, np.inf)
        #: strict-priority class of every flow (0 served first); all 0: plain max-min
        self.classes = np.zeros(n, np.int64)
        if caps:
            for k, v in caps.items():
                self.caps[k] = v
        self.capacity = fm.topo.capacities
        self.R_ext = fm.routing[self.ext_idx].tocsr()
        self.inst: dict[str, _Instance] = {}
        self.order: list[_Instance] = []
        measured = set(app.measured())
        self.measured: list[_Instance] = []
        for name in app.order():
            op = app.op(name)
            for i in range(op.parallelism):
                inst = _Instance(f"{name}[{i}]", name, op.kind)
                if op.kind == "source":
                    inst.rate = (op.rate_tps or 0.0) / op.parallelism
                if op.kind == "window" and op.window_s:
                    inst.next_fire = op.window_s
                self.inst[inst.id] = inst
                self.order.append(inst)
                if name in measured:
                    self.measured.append(inst)
        for f in fm.flows:
            self.inst[f.src].outs.append(f.index)
            dst = self.inst[f.dst]
            dst.ins.append(f.index)
            dst.by_input.setdefault(f.src.rpartition("[")[0], []).append(f.index)
        self.measured_set = set(self.measured)
        #: flows whose receiver backlog the profiler sees (SimConfig.join_store)
        self.lr_seen = np.array([not (self.cfg.join_store and self.inst[f.dst].kind == "join")
                                 for f in fm.flows], bool)
        self.processed = 0.0
        self.processed_bytes = 0.0
        self.latency_mass = 0.0
        self.op_mass: dict[str, list[float]] = {}  # operator -> [tuples, latency mass]
        self.ages: list[float] = []  # (age of a chunk's middle, tuples) pairs, flattened
        self.paused = False
        #: the manager loop of a ``loop`` policy (set by the backend); None: caps stay
        self.manager: Any = None

    # -- observation --------------------------------------------------------
    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(sender backlog, receiver backlog, cumulative sent), bytes per flow; a join's
        inputs' receiver backlog reads 0 under ``SimConfig.join_store``."""
        ls = np.array([q.count for q in self.sq]) * self.tb
        lr = np.array([q.count for q in self.rq]) * self.tb * self.lr_seen
        return ls, lr, self.sent_bytes.copy()

    def _flow_wm(self, f: int) -> float:
        head = self.sq[f].watermark()
        return head if head is not None else self.inst[self.src_of[f]].out_wm

    # -- one step -----------------------------------------------------------
    def _network(self, step: float) -> None:
        idx = self.ext_idx
        if not len(idx):
            return
        queued = np.array([self.sq[k].count for k in idx]) * self.tb[idx]
        demand = np.minimum(queued * 8.0 / step, self.caps[idx])
        cls = self.classes[idx]
        rates = (maxmin_rates(self.R_ext, self.capacity, demand) if not cls.any()
                 else priority_rates(self.R_ext, self.capacity, demand, cls))
        move = rates * step / 8.0 / self.tb[idx]
        for k, n in zip(idx, move, strict=True):
            if n > 0.0:
                chunks = self.sq[k].pop(n)
                moved = total(chunks)
                self.sent_bytes[k] += moved * self.tb[k]
                self.rq[k].push_chunks(chunks)

    def _emit(self, inst: _Instance, chunks: list[Chunk], scale: float) -> None:
        for f in inst.outs:
            self.sq[f].push_chunks(chunks, scale * self.share[f])

    def _record(self, chunks: list[Chunk], now: float, nbytes: float, op: str) -> None:
        n = total(chunks)
        mass = age_sum(chunks, now)
        self.processed += n
        self.processed_bytes += nbytes
        self.latency_mass += mass
        acc = self.op_mass.setdefault(op, [0.0, 0.0])
        acc[0] += n
        acc[1] += mass
        for c in chunks:
            self.ages += (now - 0.5 * (c[1] + c[2]), c[0])

    def _process(self, inst: _Instance, t: float, step: float, measure: bool) -> None:
        app = self.fm.app
        for f in inst.ins:
            if not self.external[f] and self.sq[f].count > 0.0:
                chunks = self.sq[f].pop_all()
                self.sent_bytes[f] += total(chunks) * self.tb[f]
                self.rq[f].push_chunks(chunks)
        kind = inst.kind
        now = t + step
        is_measured = measure and inst in self.measured_set
        if kind == "source":
            if not self.paused:
                self._emit(inst, [[inst.rate * step, t, t + step]], 1.0)
            inst.out_wm = t + step
            return
        wm = min(self._flow_wm(f) for f in inst.ins)
        op = app.op(inst.op)
        if kind == "join":
            taken = {
                src: [c for f in flows for c in self.rq[f].pop_before(wm)]
                for src, flows in inst.by_input.items()
            }
            if op.join_mode == "latest":
                out = taken[op.primary or ""]
            else:
                out = min(taken.values(), key=total)
            if is_measured:
                self._record(out, now, self._join_bytes(inst, out), inst.op)
            self._emit(inst, out, 1.0)
            inst.out_wm = wm
            return
        if kind == "window" and op.window_s:
            taken_all = [c for f in inst.ins for c in self._take(f, wm, is_measured, now, inst.op)]
            inst.acc += total(taken_all)
            inst.acc_mass += origin_mass(taken_all)
            while wm >= inst.next_fire:
                if inst.acc > 0.0:
                    origin = inst.acc_mass / inst.acc
                    self._emit(inst, [[float(op.emit), origin, origin]], 1.0)
                inst.acc = inst.acc_mass = 0.0
                inst.next_fire += op.window_s
            inst.out_wm = min(wm, inst.next_fire - op.window_s)
            return
        taken_all = [c for f in inst.ins for c in self._take(f, None, is_measured, now, inst.op)]
        if kind == "map":
            self._emit(inst, taken_all, op.selectivity)
        elif kind == "window":
            n = total(taken_all)
            inst.acc += n
            inst.acc_mass += origin_mass(taken_all)
            k = op.window_count or 1
            fires = math.floor(inst.acc / k + 1e-9)
            if fires > 0:
                origin = inst.acc_mass / inst.acc
                self._emit(inst, [[float(fires * op.emit), origin, origin]], 1.0)
                left = inst.acc - fires * k
                inst.acc_mass = origin * left
                inst.acc = left
        inst.out_wm = wm

    def _take(self, f: int, wm: float | None, measured: bool, now: float, op: str
              ) -> list[Chunk]:
        chunks = self.rq[f].pop_all() if wm is None else self.rq[f].pop_before(wm)
        if measured and chunks:
            self._record(chunks, now, total(chunks) * self.tb[f], op)
        return chunks

    def _join_bytes(self, inst: _Instance, out: list[Chunk]) -> float:
        """Bytes of the tuples that went into the joined outputs: one tuple per input."""
        n = total(out)
        per_input = 0.0
        for flows in inst.by_input.values():
            per_input += float(np.mean(self.tb[flows]))
        return n * per_input

    def _backpressure(self) -> None:
        bp = self.cfg.backpressure
        if bp is None:
            return
        high, low = bp
        worst = max(max(q.count for q in self.sq), max(q.count for q in self.rq))
        if not self.paused and worst > high:
            self.paused = True
        elif self.paused and worst < low:
            self.paused = False

    def run(self, progress: Callable[[float], None] | None = None) -> SimResult:
        cfg = self.cfg
        steps = int(round(cfg.duration_s / cfg.step_s))
        per_sample = max(1, int(round(cfg.sample_s / cfg.step_s)))
        # the manager steps every Δt, or every step of a policy on two periods
        loop_dt = cfg.interval_s if self.manager is None else self.manager.dt
        per_interval = max(1, int(round(loop_dt / cfg.step_s)))
        warm = int(round(cfg.warmup_s / cfg.step_s))
        samples_t: list[float] = []
        samples_r: list[np.ndarray] = []
        samples_b: list[np.ndarray] = []
        last_sent = self.sent_bytes.copy()
        for k in range(steps):
            t = k * cfg.step_s
            self._backpressure()
            self._network(cfg.step_s)
            measure = k >= warm
            for inst in self.order:
                self._process(inst, t, cfg.step_s, measure)
            if (k + 1) % per_sample == 0:
                samples_t.append(t + cfg.step_s)
                sent = self.sent_bytes - last_sent
                samples_r.append(sent * 8.0 / cfg.sample_s / 1e6)
                # backlogged: more queued than two steps of what the flow moves (plus a tuple)
                queued = np.array([q.count for q in self.sq]) * self.tb
                samples_b.append(queued > 2.0 * cfg.step_s * sent / cfg.sample_s + self.tb)
                last_sent = self.sent_bytes.copy()
            if self.manager is not None and (k + 1) % per_interval == 0:
                self.manager.step(t + cfg.step_s)
            if progress is not None and (k + 1) % per_sample == 0:
                progress((k + 1) / steps)
        return self._result(
            np.array(samples_t), np.array(samples_r), np.array(samples_b), warm * cfg.step_s
        )

    def _result(
        self, times: np.ndarray, rates: np.ndarray, backlogged: np.ndarray, warm_s: float
    ) -> SimResult:
        cfg = self.cfg
        span = max(cfg.duration_s - warm_s, 1e-9)
        keep = times > warm_s
        # bottlenecked links: full (>= 95 %) while a crossing flow waits, in most samples
        R = self.fm.routing.toarray()
        link_util = np.zeros(R.shape[1])
        hot: list[int] = []
        if keep.any():
            per_sample = (rates[keep] * 1e6) @ R / self.capacity
            waiting = (backlogged[keep].astype(float) @ R) > 0
            link_util = per_sample.mean(axis=0)
            frac = (waiting & (per_sample >= 0.95)).mean(axis=0)
            hot = [int(lk) for lk in np.flatnonzero(frac >= 0.5)]
        util = float(np.mean(link_util[hot])) if hot else None
        opt = None
        if self.manager is not None and self.manager.history:
            opt = 1000.0 * float(np.mean([a.optimizer_s for a in self.manager.history]))
        dropped = sum(q.dropped for q in self.sq) + sum(q.dropped for q in self.rq)
        p50, p99 = weighted_percentiles(np.array(self.ages).reshape(-1, 2), (50.0, 99.0))
        return SimResult(
            policy=self.policy,
            throughput_tps=self.processed / span,
            latency_ms=1000.0 * self.latency_mass / self.processed if self.processed else math.nan,
            latency_p50_s=p50,
            latency_p99_s=p99,
            link_utilization=util,
            optimizer_ms=opt,
            dropped_tuples=dropped,
            goodput_mbps=self.processed_bytes * 8.0 / span / 1e6,
            flow_ids=[f.id for f in self.fm.flows],
            sample_times=times,
            flow_rates_mbps=rates,
            bottleneck_links=hot,
            link_util=link_util,
            allocations=len(self.manager.history) if self.manager else 0,
            by_operator={op: (n / span, mass / n if n else math.nan)
                         for op, (n, mass) in self.op_mass.items()},
        )


def weighted_percentiles(pairs: np.ndarray, qs: tuple[float, ...]) -> tuple[float, ...]:
    """Percentiles ``qs`` of values weighted by mass: ``pairs`` is (value, weight) rows.

    Examples
    --------
    >>> weighted_percentiles(np.array([[1.0, 1.0], [2.0, 3.0]]), (50.0, 99.0))
    (2.0, 2.0)
    """
    pairs = pairs[pairs[:, 1] > 0] if len(pairs) else pairs
    if not len(pairs):
        return tuple(math.nan for _ in qs)
    order = np.argsort(pairs[:, 0], kind="stable")
    vals, w = pairs[order, 0], np.cumsum(pairs[order, 1])
    return tuple(float(vals[min(np.searchsorted(w, q / 100.0 * w[-1]), len(vals) - 1)])
                 for q in qs)
