"""003 Fig. 13 on the simulator: throughput and locality over time with the
reconfiguration protocol of 003 §3.4 actually running, not instant table swaps.

The keyed chain S -> A -> B (instance i of each on server i of a star) runs in
:class:`~streamband.locality.runtime.LocalCluster`: every tuple is a DATA message,
the manager and the instances exchange ①-⑥ on the same FIFO channels, key state
moves in MIGRATE messages and tuples of keys whose state is on its way are buffered.
Time advances window by window: a window of ``window`` tuples lasts as long as the
routing in force lets them through (:func:`~streamband.locality.throughput.chain_throughput`
on the window's measured S -> A and A -> B traffic matrices; A pads what it sends
to B, S sends keys only, as in the Storm chain), plus the time the
window's MIGRATE bytes take on a server's link (migration costs time and bandwidth).
A round starts at the first window boundary after each period; its duration is the
simulated time from ① to the last DONE.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from streamband.locality import wire
from streamband.locality.dataflow import Dataflow, OpSpec
from streamband.locality.planner import MetisPlanner
from streamband.locality.runtime import LocalCluster
from streamband.locality.throughput import chain_throughput, maxmin_network
from streamband.locality.transport import Kind, Message

POLICIES = ("hash", "offline", "online")


@dataclass
class SimTimeline:
    """One policy's run: per window its end time (s), throughput and A -> B locality."""

    policy: str
    t: list[float] = field(default_factory=list)
    throughput: list[float] = field(default_factory=list)
    locality: list[float] = field(default_factory=list)
    reconfigurations_t: list[float] = field(default_factory=list)
    round_s: list[float] = field(default_factory=list)
    migrated_bytes: list[int] = field(default_factory=list)
    buffered_peak: int = 0

    def as_json(self) -> dict[str, Any]:
        return {"throughput_t": self.t, "throughput": self.throughput, "locality_t": self.t,
                "locality": self.locality, "reconfigurations_t": self.reconfigurations_t,
                "round_s": self.round_s, "migrated_bytes": self.migrated_bytes,
                "buffered_peak": self.buffered_peak}


def _index(iid: str) -> int:
    return int(iid.rsplit("[", 1)[1].rstrip("]"))


def run_timeline(policy: str, a: np.ndarray, b: np.ndarray, n: int, padding: int,
                 bw_bps: float, seconds: float, period_s: float, window: int = 1000,
                 stats_memory_bytes: int = 1 << 16, seed: int = 0,
                 store: Path | None = None) -> SimTimeline:
    """Replay the key pairs ``(a, b)`` (cycled) for ``seconds`` of simulated time."""
    if policy not in POLICIES:
        raise ValueError(f"policy: expected one of {POLICIES}, got {policy!r}")
    flow = Dataflow([OpSpec("S", n), OpSpec("A", n, 0), OpSpec("B", n, 1)],
                    [("S", "A"), ("A", "B")])
    with tempfile.TemporaryDirectory(prefix="sb-timeline-") as tmp:
        cl = LocalCluster(flow, Path(store or tmp), MetisPlanner(flow, servers=n, seed=seed),
                          seed=seed, checkpoint_every=1 << 30,
                          stats_memory_bytes=stats_memory_bytes)
        out = SimTimeline(policy)
        sent: list[Message] = []
        send = cl.transport.send

        def observe(msg: Message) -> None:
            if msg.kind in (Kind.DATA, Kind.MIGRATE) and msg.src != "input":
                sent.append(msg)
            send(msg)

        cl.transport.send = observe  # type: ignore[method-assign]
        now, tid, next_round = 0.0, 0, period_s
        rounds, started = 0, None
        while now < seconds:
            if cl.manager.idle and now >= next_round and policy != "hash" \
                    and (policy == "online" or rounds == 0):
                cl.manager.start_round()
                started = now
                next_round = now + period_s
            sent.clear()
            was, done_at = cl.rounds_done, None
            for i in range(window):
                k = tid % a.size
                cl.feed(tid, (int(a[k]), int(b[k])))
                tid += 1
                for _ in range(3):
                    cl.step()
                out.buffered_peak = max(out.buffered_peak, cl.buffered())
                if done_at is None and cl.rounds_done > was:
                    done_at = (i + 1) / window
            cl.drain()
            if done_at is None and cl.rounds_done > was:
                done_at = 1.0
            sa, ab = np.zeros((n, n)), np.zeros((n, n))
            mig = 0
            for m in sent:
                if m.kind == Kind.MIGRATE:
                    mig += len(wire.dumps(m))
                elif m.dst.startswith("A["):
                    sa[_index(m.src), _index(m.dst)] += 1
                elif m.dst.startswith("B["):
                    ab[_index(m.src), _index(m.dst)] += 1
            thr = chain_throughput(sa / sa.sum(), ab / ab.sum(), padding, bw_bps,
                                   network=maxmin_network, sa_padding_bytes=0)
            dur = window / thr.throughput_tps + mig * 8.0 / bw_bps
            if done_at is not None:
                rounds += 1
                t_done = now + done_at * dur
                out.reconfigurations_t.append(t_done)
                if started is not None:
                    out.round_s.append(t_done - started)
            now += dur
            out.t.append(now)
            out.throughput.append(window / dur)
            out.locality.append(float(np.trace(ab) / ab.sum()))
            if mig:
                out.migrated_bytes.append(mig)
    return out
