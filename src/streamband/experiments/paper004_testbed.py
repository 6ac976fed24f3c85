"""Paper 004 on real TCP (``streamband bench paper-004 --backend testbed``): Stream's
receiver-driven priorities carried by the testbed's strict-priority classes, against
plain TCP, on a scaled-down FB2010 workload (004 §IV-A, "Testbed Experiment").

004's testbed: 8 servers on one 1 GbE switch with strict priority classified by DSCP;
6 run senders, one runs the receivers (many-to-one), the 8th sends iperf background
traffic at 50 % of the link; Stream's average CCT is 1.3x (scenario one) and 1.27x
(two) below TCP fair sharing's, mice coflows' 1.7x and 1.87x, the 95th percentile's
1.58x and 1.72x (Fig. 5).

Here (:class:`Setting`): the star testbed with 8 hosts (``w1``..``w6`` senders,
``w7`` the receivers' host, ``w8`` background) on ``link_mbps`` links; background: a
UDP iperf3 flow at ``background`` x the link from ``w8`` to ``w7``, listed in the
reserved leaf of the receiver's port (:data:`~streamband.sdn.priority.RESERVED`,
assured ``RESERVE_MARGIN`` x its rate, served ahead of the eight strict classes) in
every mode but tcp-fifo, so the coflows share the rest (a constant 50 % taken off, as
004's steady background) and Stream has all 8 classes for its 8 queues, as 004's
testbed ("This set of experiments is conducted using 8 priority queues"). The workload: the
first ``coflows`` coflows of FB2010 in trace order, each a coflow of one receiver
(all its reducers on ``w7``) and one flow per distinct sender host (mapper rack mod
6), its bytes split evenly over them; each coflow's bytes capped at ``cap_mib`` MiB
(the trace's 1 TiB coflow would otherwise be the whole run), then scaled by
``size_scale`` (testbed bytes per trace byte); arrivals scaled by ``time_scale``.
Stream's thresholds (10 MiB x 10^k, ``queues`` of them) and eq. (3)'s MiB are scaled by
``size_scale`` alike, so the receivers decide as on the unscaled sizes (with the 1 GiB
cap no coflow passes the fourth threshold: queues 4..7 stay empty).

Modes (:mod:`streamband.testbed.coflow`): ``stream`` (receivers decide, senders mark
DSCP, queue q in class q), ``stream-rto`` (the same, the senders' retransmission timer
bounded as 004's sender's starvation timer: ``TCP_RTO_MIN_US`` 10 ms,
``TCP_RTO_MAX_MS`` 1 s), ``tcp`` (no marking: every coflow byte in the default class
7, plain TCP sharing among the coflows in one leaf) and ``tcp-fifo`` (the port without
classes, as Mininet shapes it: one HTB class with its default 1000-packet leaf, which
the switch's send buffer stops at about 92 packets, the background UDP in the same
queue; plain TCP as the testbed is without any priority machinery). Buffer
(:meth:`Setting.leaf_pkts`): Stream's eight classes hold :data:`PORT_PKTS` = 84
packets in all, the send buffer's 92 less the background's reserved 8, as 004's
switch's queues share its one 2 MB memory (§IV-A) and tcp-fifo's queue holds about 92:
split over the queues a coflow under the cap can reach (20 each in 0..3, 1 in the
never used 4..7); tcp's one leaf keeps 8 x 8 = 64 (a deeper one measured slower,
``docs/findings.md``). ``tcp``
isolates the marking (same port, same background's reserve); ``tcp-rto`` is tcp with
stream-rto's bounds (what they do without Stream); ``tcp-fifo`` is the port without
priority machinery. ``--policy M1,M2`` runs only the modes listed. The simulator runs
the same workload (trace sizes, the coflow share of the link scaled by ``1 / size_scale``: the same
times) on a big switch with fs and stream, for the factor the fluid model predicts.

Each run also records, to find where time goes: the port's bytes every 0.1 s, so
the link capacity left unused while a coflow was open (``link``), every
flow's ``TCP_INFO`` at its end (RTO expiries, time in RTO recovery, retransmitted
bytes, time limited by the send buffer: :func:`~streamband.testbed.coflow.tcp_stats`),
and the background's UDP datagrams sent and received (``background``: the share the
coflows took from it, which only tcp-fifo's shared queue allows).

Why tcp-fifo is the hard baseline: in its one shared queue TCP keeps the queue full and
the constant-rate UDP background loses datagrams at the tail, so tcp-fifo's coflows take
part of the background's rate, which no other mode allows (figures in
``docs/findings.md``).

Checks that can fail: every run carried every byte of every flow; in stream runs the
receivers' decisions reached the switch (coflow bytes in at least two classes, the
demoted ones below class 0) and in tcp runs no coflow byte was marked; each Stream
variant's median average CCT beats each baseline's.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from rich.console import Console

from streamband.errors import OptionError, PreconditionError
from streamband.experiments.base import Check, Comparison, Options, Outcome, distance, show
from streamband.report.html import Report, write_json
from streamband.sdn.priority import CLASSES, LEAF_LIMIT_PKTS, RESERVED, SEND_BUFFER_PKTS
from streamband.sim.coflow.run import GBIT, simulate
from streamband.sim.coflow.schedulers.thresholds import thresholds
from streamband.sim.coflow.trace import MIB, Coflow, Trace
from streamband.sim.coflow.workloads import CATEGORIES, Workload, from_trace
from streamband.testbed.coflow import START_S, launch, tos_of

TITLE = "paper 004 (Stream) on real TCP: the testbed's strict-priority classes vs TCP"
#: 004 Fig. 5, scenario one (117 coflows, 2160 flows): TCP's figure over Stream's
PAPER: dict[str, tuple[float, str]] = {
    "avg": (1.3, "§IV-A: 'Stream achieves better performance by 1.3x and 1.27x on average "
                 "in the first and second scenario'"),
    "mice": (1.7, "§IV-A: 'Stream reduces the average CCT of mice coflows by up to 1.7x "
                  "and 1.87x respectively'"),
    "p95": (1.58, "§IV-A: 'better performance by up 1.58x and 1.72x at 95th percentile'"),
}
#: tcp: the port's classes as under stream, nothing marked (every coflow byte in class 7,
#: one leaf of TCP_LEAF_PKTS); tcp-fifo: the port as Mininet shapes it without classes
#: (one HTB class, its default 1000-packet leaf; the background shares it), plain TCP;
#: stream-rto, tcp-rto: stream, tcp with the senders' RTO bounded (Setting.rto_min_us,
#: rto_max_ms)
MODES = ("tcp", "tcp-rto", "tcp-fifo", "stream", "stream-rto")
BASELINES = ("tcp", "tcp-rto", "tcp-fifo")
#: the baselines Stream is checked against: they give the coflows the same capacity as
#: Stream's modes (the background's reserved leaf); tcp-fifo's coflows also take part of
#: the background's rate (issue 36), so it is reported beside that share, not checked
CHECKED_BASELINES = ("tcp", "tcp-rto")
STREAMS = ("stream", "stream-rto")
BG_CLASS = RESERVED  # the background's leaf: ahead of the eight strict classes
CLASS_BASE = 0  # Stream's queue q is class q
RESERVE_PKTS = LEAF_LIMIT_PKTS  # the background's reserved leaf
#: packets Stream's eight classes of the receiver's port may hold together: the
#: switch's send buffer less the reserve's (:data:`SEND_BUFFER_PKTS`), as tcp-fifo's one
#: queue holds ~92 with the background in it
PORT_PKTS = SEND_BUFFER_PKTS - RESERVE_PKTS
#: tcp's one leaf (class 7): 8 x 8 packets, as 77 (the rest of PORT_PKTS) made tcp slower
#: (``docs/findings.md``)
TCP_LEAF_PKTS = CLASSES * LEAF_LIMIT_PKTS
RESERVE_MARGIN = 1.1  # the reserve over the background's rate (UDP/IP headers, jitter)
SAMPLE_S = 0.1  # the port's byte counter, read this often during a run
#: the figures compared per mode: average CCT, mice's (category I), the others', p95
FIELDS = {"avg": "avg_cct_s", "mice": "mice_avg_cct_s", "large": "large_avg_cct_s",
          "p95": "p95_cct_s"}
LEASE_S = 3.0
RENEW_S = 1.0
PORT = 7100


@dataclass(frozen=True)
class Setting:
    """The scaled-down workload and the testbed run (units in the names)."""

    coflows: int = 40
    senders: int = 6
    link_mbps: float = 20.0
    background: float = 0.5
    cap_mib: float = 1024.0
    size_scale: float = 1 / 100
    time_scale: float = 0.25
    queues: int = 8
    alpha: float = 0.5
    starve_s: float = 0.2
    rto_min_us: int = 10_000
    rto_max_ms: int = 1000
    max_run_s: float = 240.0
    modes: tuple[str, ...] = MODES

    @property
    def coflow_bps(self) -> float:
        """What the coflows share on the receiver's link: the link less background."""
        return self.link_mbps * 1e6 * (1 - self.background)

    @property
    def hosts(self) -> int:
        return self.senders + 2

    @property
    def reachable(self) -> int:
        """Stream's queues a coflow can reach: the first, and one more per threshold
        below the cap (10 MiB x 10^k in trace bytes, 004 §III-D "exponentially-spaced
        threshold"; with the 1 GiB cap queues 0..3), at most ``queues``."""
        tau = thresholds(self.queues)
        return min(self.queues, 1 + int(np.sum(tau[np.isfinite(tau)] < self.cap_mib * MIB)))

    def leaf_pkts(self, mode: str) -> list[int]:
        """Each class's pfifo length on the receiver's port in ``mode`` (not tcp-fifo):
        stream splits :data:`PORT_PKTS` evenly over the :attr:`reachable` classes (the
        others 1 packet: never used), as 004's switch's queues share its one 2 MB
        buffer (§IV-A), so the class being served holds 20 packets, not 8; tcp keeps
        :data:`TCP_LEAF_PKTS` in class 7, where every coflow byte goes."""
        if mode in ("tcp", "tcp-rto"):
            return [1] * (CLASSES - 1) + [TCP_LEAF_PKTS]
        r = self.reachable
        each = (PORT_PKTS - (CLASSES - r)) // r
        return [each] * r + [1] * (CLASSES - r)

    def shape(self, mode: str) -> dict[str, Any]:
        """The receiver's port's tree in ``mode`` (``PUT /v1/classes`` ``shapes``):
        the background's reserve and the leaves of :meth:`leaf_pkts`."""
        return {"leaf_pkts": self.leaf_pkts(mode), "reserve_pkts": RESERVE_PKTS,
                "reserve_bps": self.link_mbps * 1e6 * max(self.background, 0.01)
                * RESERVE_MARGIN}

    def check(self) -> None:
        """Raise OptionError (one line) for a setting that cannot run."""
        if not 1 <= self.coflows <= 526:
            raise OptionError(f"coflows: expected 1..526 (FB2010), got {self.coflows}")
        if not 1 <= self.senders <= 16:
            raise OptionError(f"senders: expected 1..16 hosts, got {self.senders}")
        if not 0 <= self.background < 1:
            raise OptionError(f"background: expected a fraction 0..<1, got {self.background}")
        if not 2 <= self.queues <= CLASSES:
            raise OptionError(f"queues: expected 2..{CLASSES}, got {self.queues}")
        check_modes(self.modes)
        if not 10 <= self.max_run_s <= 3600:
            raise OptionError(f"--seconds: expected 10..3600 s per run, got {self.max_run_s:g}")


def check_modes(modes: tuple[str, ...] | list[str]) -> None:
    """``modes`` if they are modes of :data:`MODES` and hold a Stream mode and a checked
    baseline (:data:`CHECKED_BASELINES`): a run without both has nothing to compare.

    Raises
    ------
    OptionError
        Naming what is missing.
    """
    given = ",".join(modes)
    if not modes or set(modes) - set(MODES):
        raise OptionError(f"--policy: expected modes among {', '.join(MODES)} (comma "
                          f"separated), got {given!r}")
    if not set(modes) & set(STREAMS) or not set(modes) & set(CHECKED_BASELINES):
        raise OptionError(f"--policy: expected a Stream mode ({', '.join(STREAMS)}) and a "
                          f"baseline it is checked against ({', '.join(CHECKED_BASELINES)}), "
                          f"got {given!r}")


def scaled_trace(trace: Trace, st: Setting) -> Trace:
    """The first ``st.coflows`` coflows of ``trace`` on ``st.senders + 1`` ports: the
    mappers' racks folded onto the sender hosts (rack mod senders, each host once),
    every reducer on the receivers' host (port ``senders``), the coflow's bytes capped
    at ``cap_mib`` MiB (trace units), arrivals from the first one times ``time_scale``."""
    sub = trace.coflows[:st.coflows]
    t_first = sub[0].arrival_s if sub else 0.0
    out = []
    for c in sub:
        maps = tuple(sorted({m % st.senders for m in c.mappers}))
        size = min(c.size_bytes, st.cap_mib * MIB)
        out.append(Coflow(c.id, (c.arrival_s - t_first) * st.time_scale, maps, (st.senders,),
                          (size,)))
    return Trace(st.senders + 1, tuple(out))


def workload(trace: Trace, st: Setting) -> Workload:
    """The scaled trace as the simulator's workload (trace bytes)."""
    return from_trace(scaled_trace(trace, st))


def plan(wl: Workload, st: Setting, mode: str, t0: float, ips: dict[str, str],
         port: int) -> dict[str, Any]:
    """What the receiver and senders run (:mod:`streamband.testbed.coflow`) in bench
    ``mode``: every flow's sender host, bytes (``size_scale`` x the trace's, at least
    1) and start; the -rto modes run the agents' mode with the RTO bounds."""
    tau = thresholds(st.queues) * st.size_scale
    arrival = wl.coflow_arrival
    rto = mode.endswith("-rto")
    return {
        "mode": "tcp" if mode.startswith("tcp") else "stream", "t0": t0,
        "rto_min_us": st.rto_min_us if rto else None,
        "rto_max_ms": st.rto_max_ms if rto else None,
        "port": port, "receiver_ip": ips[f"w{st.senders + 1}"],
        "queues": st.queues, "tau": [None if not math.isfinite(t) else float(t) for t in tau],
        "alpha": st.alpha, "unit": MIB * st.size_scale, "starve_s": st.starve_s,
        "lease_s": LEASE_S, "class_base": CLASS_BASE, "deadline_s": st.max_run_s,
        "coflows": [{"id": int(i), "arrival": float(a)} for i, a in
                    zip(wl.coflow_id, arrival, strict=True)],
        "flows": [{"coflow": int(c), "sender": f"w{int(s) + 1}",
                   "bytes": max(1, round(float(b) * st.size_scale)),
                   "start": float(arrival[c])}
                  for c, s, b in zip(wl.coflow, wl.src, wl.size, strict=True)],
    }


def summarize(cct: np.ndarray, cats: np.ndarray) -> dict[str, Any]:
    """Average, 95th percentile, mice (category I), the others' ("large") and
    per-category average CCT."""
    by = {name: (float(cct[cats == i].mean()) if (cats == i).any() else None)
          for i, name in enumerate(CATEGORIES)}
    return {"avg_cct_s": float(cct.mean()), "p95_cct_s": float(np.percentile(cct, 95)),
            "mice_avg_cct_s": by["I"],
            "large_avg_cct_s": float(cct[cats > 0].mean()) if (cats > 0).any() else None,
            "avg_cct_by_category": by}


def simulated(wl: Workload, st: Setting) -> dict[str, dict[str, Any]]:
    """fs and stream on ``wl`` on a big switch whose ports carry the coflows' share of
    the testbed link scaled to trace bytes (so the times are the testbed's)."""
    gbps = st.coflow_bps / st.size_scale / GBIT
    out = {}
    for policy, opts in (("fs", {}), ("stream", {"starve_s": st.starve_s})):
        run = simulate(wl, policy, "big_switch", gbps, queues=st.queues, **opts)
        out[policy] = {**summarize(run.result.cct, wl.categories()),
                       "cct_s": [float(v) for v in run.result.cct]}
    return out


# -- the testbed runs ---------------------------------------------------------------------
def run_testbed(wl: Workload, st: Setting, repeat: int, out: Path,
                console: Console) -> list[dict[str, Any]]:
    """``repeat`` x :data:`MODES` on one testbed (the order alternates by repeat); each
    run's CCTs, class bytes on the receiver's port, the receiver's decisions, the
    link capacity left unused and the flows' TCP counters (:func:`one_run`)."""
    from streamband.model.testbed import load_spec
    from streamband.sdn.client import ControllerClient
    from streamband.testbed.network import Testbed

    spec = load_spec(f"star:hosts={st.hosts},link_mbps={st.link_mbps:g}")
    rows: list[dict[str, Any]] = []
    with Testbed(spec, log_dir=out / "logs") as tb:
        client = ControllerClient(spec.api)
        client.wait_ready(1)
        rx, bg = f"w{st.senders + 1}", f"w{st.hosts}"
        port = tb.switch_port(rx)
        ips = {h: tb.ip(h) for h in tb.topo.hosts}
        # the port's classes, under a lease; the background's flow in the reserved leaf
        bgflow = {"src_ip": ips[bg], "dst_ip": ips[rx], "proto": "udp"}
        classes = [{"flow": bgflow, "cls": BG_CLASS, "port": port}]
        client.put_classes(classes, lease_s=LEASE_S, shapes={port: st.shape("stream")})
        if st.background > 0:
            tb.popen(rx, ["iperf3", "-s", "-p", "5301"], stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
            time.sleep(0.5)
            tb.popen(bg, ["iperf3", "-c", ips[rx], "-p", "5301", "-u", "-t", "86400", "-b",
                          f"{st.link_mbps * st.background:g}M"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stop = threading.Event()
        renewer = threading.Thread(target=_renew, args=(ControllerClient(spec.api), stop),
                                   daemon=True)  # its own HTTP client: its own thread
        renewer.start()
        try:
            n = 0
            for r in range(repeat):
                for mode in (st.modes if r % 2 == 0 else st.modes[::-1]):
                    if mode == "tcp-fifo":
                        client.delete_classes(port)  # one HTB class, as Mininet left it
                    else:  # the leaves of this mode (reshaped in place)
                        client.put_classes(classes, lease_s=LEASE_S,
                                           shapes={port: st.shape(mode)})
                    p = plan(wl, st, mode, 0.0, ips, PORT + n)
                    row = one_run(tb, client, port, rx, p, out / f"run{n:02d}-{mode}",
                                  wl.categories(), st.link_mbps * 1e6,
                                  bg if st.background > 0 else None)
                    if mode == "tcp-fifo":
                        client.put_classes(classes, lease_s=LEASE_S,
                                           shapes={port: st.shape("stream")})
                    row["mode"], row["repeat"] = mode, r
                    rows.append(row)
                    write_json(out / "runs.partial.json", rows)  # kept if a later run fails
                    n += 1
                    console.print(f"  repeat {r} {mode}: avg CCT {row['avg_cct_s']:.2f} s, "
                                  f"complete {row['complete']}, class MB "
                                  f"{[round(b / 1e6, 1) for b in row['class_bytes']]}, "
                                  f"{row['wall_s']:.0f} s, link unused while a coflow was "
                                  f"open {row['link']['idle_link_s']:.1f} s of "
                                  f"{row['link']['open_s']:.1f}, coflows "
                                  f"{row['link']['coflow_mbps']:.2f} Mbit/s, RTOs "
                                  f"{row['tcp']['total_rto']}, background lost "
                                  f"{_lost_pct(row)}", highlight=False)
        finally:
            stop.set()
            renewer.join(5)
    return rows


def _lost_pct(row: dict[str, Any]) -> str:
    """The background's datagram loss in a run, as a percentage (or "-")."""
    bgl = row.get("background")
    return "-" if not bgl else f"{100 * bgl['lost_frac']:.1f} %"


def _renew(client: Any, stop: threading.Event) -> None:
    """Renew the classes' lease while the bench lives (a crash lets them expire)."""
    while not stop.wait(RENEW_S):
        try:
            client.renew(LEASE_S)
        except Exception:  # noqa: BLE001 - the controller is going down with the testbed
            return


def one_run(tb: Any, client: Any, port: str, rx: str, p: dict[str, Any], base: Path,
            cats: np.ndarray, link_bps: float | None = None,
            bg: str | None = None) -> dict[str, Any]:
    """One plan on the testbed (receiver on ``rx``, ``port`` its switch port): every
    agent started and ready before t0 (:func:`~streamband.testbed.coflow.launch`);
    CCTs summarized with the coflows' categories ``cats``; a coflow not done by the
    deadline counts the deadline. With ``link_bps``: ``link``, how the link was used
    while a coflow was open (:func:`link_use`, from the port's byte counter read
    every :data:`SAMPLE_S`). ``tcp``: the flows' ``TCP_INFO`` counters summed, per
    flow in ``tcp_flows``. With ``bg`` (the background's host, sending UDP to ``rx``):
    ``background``, its datagrams sent and received during the run and the fraction
    lost (:func:`_udp_datagrams`): what the coflows took from it."""
    res = base.with_suffix(".json")
    res.unlink(missing_ok=True)
    sync = base.with_suffix(".sync")
    p = dict(p, sync=str(sync))
    stop = threading.Event()
    samples: list[tuple[float, int]] = []
    sampler = threading.Thread(target=_sample, args=(port, samples, stop), daemon=True)
    with base.with_suffix(".log").open("w") as log:
        before = _class_bytes(client, port)
        udp0 = _udp_datagrams(tb, bg, rx) if bg else None
        try:
            rxp, sps = launch(tb.popen, p, rx, res, log)
        except RuntimeError as err:
            raise PreconditionError(str(err)) from None
        sampler.start()
        try:
            rxp.wait(timeout=START_S + p["deadline_s"] + 10)
        except subprocess.TimeoutExpired:
            rxp.terminate()  # it writes what it has
            rxp.wait(10)
        for s in sps:
            try:
                s.wait(timeout=5)
            except subprocess.TimeoutExpired:
                s.kill()
                s.wait(5)
        stop.set()
        sampler.join(5)
        after = _class_bytes(client, port)
        udp1 = _udp_datagrams(tb, bg, rx) if bg else None
    got = json.loads(res.read_text())
    t0 = float((sync / "go").read_text())
    flows_tcp: dict[str, dict[str, int]] = {}
    for f in sync.glob("*.tcp.json"):
        flows_tcp.update(json.loads(f.read_text()))
    tcp = {k: sum(v.get(k, 0) for v in flows_tcp.values())
           for k in ("total_rto", "total_rto_time_ms", "total_retrans", "bytes_retrans",
                     "sndbuf_limited_us", "busy_us")}
    tcp["flows"] = len(flows_tcp)
    cct = np.array([np.nan if v is None else v for v in got["cct_s"]])
    done = np.isfinite(cct)
    seen = [v - f["start"] for v, f in zip(got["flow_seen_s"], p["flows"], strict=True)
            if v is not None]
    row = {"mode": p["mode"], "complete": bool(got["complete"]),
           "start_lag_s": {"median": statistics.median(seen), "max": max(seen)} if seen else None,
           "coflows_done": int(done.sum()), "errors": got["errors"],
           "cct_s": got["cct_s"], "decisions": got["queues"], "tcp": tcp,
           "tcp_flows": flows_tcp,
           "link": None if link_bps is None else link_use(
               [(t - t0, b) for t, b in samples], p, got["cct_s"], link_bps),
           "class_bytes": [a - b for a, b in zip(after, before, strict=True)],
           "background": None if udp0 is None or udp1 is None else _lost(udp0, udp1),
           "wall_s": float(np.nanmax(np.array([np.nan if v is None else v
                                               for v in got["flow_end_s"]], float),
                                     initial=0.0))}
    row.update(summarize(np.where(done, cct, p["deadline_s"]), cats))
    return row


def _udp_datagrams(tb: Any, src: str, dst: str) -> tuple[int, int]:
    """UDP datagrams ``src`` has sent and ``dst`` has received so far (``Udp:
    OutDatagrams`` and ``InDatagrams`` of ``/proc/net/snmp`` in each host's
    namespace; only the background's iperf3 sends UDP between them)."""
    def udp(host: str, field: str) -> int:
        text = tb.popen(host, ["cat", "/proc/net/snmp"], stdout=subprocess.PIPE,
                        text=True).communicate(timeout=10)[0]
        head, vals = [ln.split() for ln in text.splitlines() if ln.startswith("Udp:")][:2]
        return int(vals[head.index(field)])

    return udp(src, "OutDatagrams"), udp(dst, "InDatagrams")


def _lost(before: tuple[int, int], after: tuple[int, int]) -> dict[str, float]:
    """The background's datagrams sent and received between two readings of
    :func:`_udp_datagrams`, and the fraction lost on the way."""
    sent, got = after[0] - before[0], after[1] - before[1]
    return {"sent": sent, "received": got, "lost_frac": 1 - got / sent if sent else 0.0}


def _sample(port: str, out: list[tuple[float, int]], stop: threading.Event) -> None:
    """Append (wall time, bytes ``port`` sent) every :data:`SAMPLE_S` until ``stop``
    (the switch-side veth's counter, in this namespace)."""
    path = Path(f"/sys/class/net/{port}/statistics/tx_bytes")
    while not stop.is_set():
        try:
            out.append((time.time(), int(path.read_text())))
        except (OSError, ValueError):
            return
        stop.wait(SAMPLE_S)


def link_use(samples: list[tuple[float, int]], p: dict[str, Any],
             cct: list[float | None], link_bps: float) -> dict[str, float]:
    """How the port's link was used while some coflow was open (arrived, not done):
    over the intervals between ``samples`` (t from t0, bytes the port sent, the
    background's included) whose middle lies inside an open coflow's [arrival,
    arrival + CCT]: ``open_s`` their length; ``idle_link_s`` the capacity left unused
    in seconds of the whole link, the sum of ``dt`` x (1 - bytes x 8 / (dt x
    link_bps)), each term at least 0; ``port_mbps`` the port's mean rate in them;
    ``coflow_mbps`` the coflows' bytes (payload) over ``open_s``."""
    spans = [(c["arrival"], c["arrival"] + (v if v is not None else p["deadline_s"]))
             for c, v in zip(p["coflows"], cct, strict=True)]
    idle = open_s = sent = 0.0
    for (t1, b1), (t2, b2) in zip(samples, samples[1:], strict=False):
        dt = t2 - t1
        mid = (t1 + t2) / 2
        if dt > 0 and any(a <= mid <= e for a, e in spans):
            open_s += dt
            sent += b2 - b1
            idle += dt * max(0.0, 1 - (b2 - b1) * 8 / (dt * link_bps))
    coflow = sum(f["bytes"] for f in p["flows"])
    return {"open_s": open_s, "idle_link_s": idle,
            "port_mbps": sent * 8 / open_s / 1e6 if open_s else 0.0,
            "coflow_mbps": coflow * 8 / open_s / 1e6 if open_s else 0.0}


def _class_bytes(client: Any, port: str) -> list[int]:
    """Bytes each class of ``port`` sent so far (and its reserved leaf, a 9th entry);
    zeros when the port has no classes (tcp-fifo)."""
    from streamband.sdn.client import ControllerError

    try:
        out = client.class_bytes(port)
    except ControllerError as err:
        if "404" not in str(err):
            raise
        return [0] * (CLASSES + 1)
    return out + [0] * (CLASSES + 1 - len(out))


# -- comparison ----------------------------------------------------------------------------
def _med(v: list[float]) -> dict[str, float]:
    return {"median": statistics.median(v), "min": min(v), "max": max(v)}


def factors(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per repeat, each baseline's figure over each Stream variant's (avg, mice, large,
    p95), keyed ``BASELINE/STREAM/avg`` ...; median and spread; every mode's average
    CCT, mice, large and p95 (median and spread over repeats)."""
    by: dict[int, dict[str, dict]] = {}
    for r in rows:
        by.setdefault(r["repeat"], {})[r["mode"]] = r
    out: dict[str, Any] = {}
    for base in BASELINES:
        for stream in STREAMS:
            for key, field in FIELDS.items():
                v = [d[base][field] / d[stream][field] for d in by.values()
                     if base in d and stream in d and d[base][field] and d[stream][field]]
                out[f"{base}/{stream}/{key}"] = _med(v) | {"each": v} if v else None
    for mode in MODES:
        for field in FIELDS.values():
            v = [r[field] for r in rows if r["mode"] == mode and r[field] is not None]
            out[f"{mode}_{field}"] = _med(v) if v else None
    return out


def compare(res: dict[str, Any]) -> Comparison:
    """TCP/Stream factors on the testbed (median, spread) beside 004's and the
    simulator's on the same workload; the checks."""
    f, sim, rows = res["factors"], res["sim"], res["runs"]
    table = []
    for stream in STREAMS:
        for base in BASELINES:
            for key, field in FIELDS.items():
                m = f.get(f"{base}/{stream}/{key}")
                if m is None:
                    continue
                s_fs, s_st = sim["fs"].get(field), sim["stream"].get(field)
                simf = s_fs / s_st if s_fs and s_st else None
                ref, where = PAPER.get(key, (None, ""))
                delta, off = distance(m["median"], ref) if ref else (None, False)
                table.append([f"{base} / {stream}: {key}", round(m["median"], 3),
                              round(m["min"], 3), round(m["max"], 3),
                              None if simf is None else round(simf, 3), ref,
                              None if delta is None else round(delta, 3),
                              "yes" if off else "", where])
    notes: list[str] = []
    checks = [Check("every run carried every byte of every flow",
                    f"{sum(r['complete'] for r in rows)} of {len(rows)} runs complete",
                    all(r["complete"] for r in rows))]
    st_runs = [r for r in rows if r["mode"] in STREAMS]
    tcp_runs = [r for r in rows if r["mode"] in ("tcp", "tcp-rto")]
    q = res["spec"]["queues"]
    spread = [sum(1 for b in r["class_bytes"][CLASS_BASE:CLASS_BASE + q]
                  if b > 0.01 * _coflow_bytes(r)) for r in st_runs]
    below = [sum(r["class_bytes"][CLASS_BASE + 1:CLASS_BASE + q]) / max(1, _coflow_bytes(r))
             for r in st_runs]
    if st_runs:
        checks.append(Check(f"stream: the receivers' decisions reached the switch (coflow "
                            f"bytes in >= 2 classes, > 1 % below class {CLASS_BASE})",
                            f"classes with > 1 % per run {spread}, share below class "
                            f"{CLASS_BASE} {[round(b, 3) for b in below]}",
                            all(s >= 2 for s in spread) and all(b > 0.01 for b in below)))
    unmarked = [r["class_bytes"][CLASSES - 1] / max(1, _coflow_bytes(r)) for r in tcp_runs]
    if tcp_runs:
        checks.append(Check("tcp, tcp-rto: no coflow byte marked (>= 99 % in the default "
                            "class 7)", f"{[round(u, 4) for u in unmarked]}",
                            all(u >= 0.99 for u in unmarked)))
    for stream in STREAMS:
        if f.get(f"{stream}_avg_cct_s") is None:
            continue
        a_st = f[f"{stream}_avg_cct_s"]["median"]
        for base in CHECKED_BASELINES:
            if f.get(f"{base}_avg_cct_s") is None:
                continue
            a_tcp = f[f"{base}_avg_cct_s"]["median"]
            checks.append(Check(f"{stream}'s median average CCT beats {base}'s (004: 1.3x)",
                                f"{base} {a_tcp:.2f} s, {stream} {a_st:.2f} s: "
                                f"x{a_tcp / a_st:.2f}", a_st < a_tcp))
    fifo = [r for r in rows if r["mode"] == "tcp-fifo" and r.get("background")]
    if fifo:
        took = statistics.median(r["background"]["lost_frac"] for r in fifo)
        notes.append(f"tcp-fifo is reported, not checked: in its one shared queue its coflows "
                     f"took {100 * took:.1f} % of the background's datagrams (median over "
                     "runs), capacity no other mode gives them (issue 36)")
    header = ["baseline / Stream", "testbed median", "min", "max", "simulator fs / stream",
              "paper", "median - paper", "2x off", "paper's source"]
    legend = {"baseline / Stream": "tcp: the port's classes, nothing marked (every coflow "
              f"in one leaf of {TCP_LEAF_PKTS} packets); tcp-rto: tcp, the senders' RTO "
              "bounded (10 ms .. 1 s); tcp-fifo: the port without classes "
              "(Mininet's one HTB class and 1000-packet leaf, the background in it); "
              "stream-rto: stream, the senders' RTO bounded (10 ms .. 1 s); avg: average "
              "CCT; mice: category I (< 100 MiB in trace bytes) average; large: the other "
              "categories' average; p95: 95th percentile CCT",
              "testbed median": "median over repeats of the baseline's figure / Stream's in "
              f"the same repeat ({res['spec']['repeat']} repeats); min, max: their spread",
              "simulator fs / stream": "the fluid simulator on the same scaled workload"}
    for mode in MODES:
        rs = [r for r in rows if r["mode"] == mode]
        if rs:
            late = [r["start_lag_s"]["max"] for r in rs if r["start_lag_s"]]
            idle = [r["link"]["idle_link_s"] for r in rs if r.get("link")]
            gput = [r["link"]["coflow_mbps"] for r in rs if r.get("link")]
            lost = [r["background"]["lost_frac"] for r in rs if r.get("background")]
            notes.append(
                f"{mode}: last flow done at {statistics.median(r['wall_s'] for r in rs):.1f} s "
                f"(median over runs; {sum(res['spec']['coflow_mb']):.1f} MB at the coflows' "
                f"{res['spec']['coflow_mbps']:g} Mbit/s take "
                f"{sum(res['spec']['coflow_mb']) * 8 / res['spec']['coflow_mbps']:.1f} s); "
                f"latest first bytes of a flow {statistics.median(late) if late else 0:.2f} s "
                "after its arrival (median over runs): SYN and first-window losses; link "
                "unused while a coflow was open "
                f"{statistics.median(idle) if idle else float('nan'):.1f} s, the coflows' "
                f"goodput then {statistics.median(gput) if gput else float('nan'):.2f} "
                "Mbit/s; the background lost "
                f"{100 * statistics.median(lost) if lost else float('nan'):.1f} % of its "
                "datagrams (what the coflows took from it); RTO expiries "
                f"{statistics.median(r['tcp']['total_rto'] for r in rs):.0f}, time in RTO "
                f"recovery {statistics.median(r['tcp']['total_rto_time_ms'] for r in rs) / 1e3:.1f}"
                " flow-s (medians over runs)")
    return Comparison(header, table, checks, title="Stream vs TCP on the testbed, beside "
                      "004 Fig. 5 and the simulator", legend=legend, notes=notes)


def _coflow_bytes(row: dict[str, Any]) -> int:
    """Bytes of the coflows' classes on the receiver's port in one run."""
    return int(sum(b for c, b in enumerate(row["class_bytes"]) if c != BG_CLASS))


# -- the bench ------------------------------------------------------------------------------
def setting(opts: Options) -> Setting:
    """The setting for ``opts``; bad options stop here, before anything starts."""
    if opts.full_trace:
        raise OptionError("--full-trace: applies to --backend sim (the testbed runs a "
                          "scaled-down prefix)")
    st = Setting() if opts.seconds is None else replace(Setting(), max_run_s=opts.seconds)
    if opts.policy is not None:  # the modes to run, comma separated
        st = replace(st, modes=tuple(m.strip() for m in opts.policy.split(",")))
    st.check()
    return st


def run(out: Path, opts: Options, console: Console) -> Outcome:
    """Run the simulator and ``--repeat`` x (tcp, stream) on the testbed; print and
    write the factors beside 004's, with checks."""
    from streamband.shared import FB2010_TRACE, shared_file
    from streamband.sim.coflow.trace import read_trace
    from streamband.testbed.registry import read_state

    st = setting(opts)
    if os.geteuid() != 0:
        raise PreconditionError("--backend testbed: needs root (network namespaces, "
                                "Open vSwitch)")
    up = read_state()
    if up and up.get("pid") and Path(f"/proc/{up['pid']}").exists():
        raise PreconditionError(f"a testbed is already up (pid {up['pid']}); run "
                                "`streamband testbed down`")

    wl = workload(read_trace(shared_file(*FB2010_TRACE)), st)
    console.print(f"workload: {wl.n_coflows} coflows, {wl.n_flows} flows, "
                  f"{wl.size.sum() * st.size_scale / 1e6:.1f} MB on the testbed", highlight=False)
    sim = simulated(wl, st)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = run_testbed(wl, st, opts.repeat, out, console)
    res = {"spec": {**asdict(st), "hosts": st.hosts, "coflow_mbps": st.coflow_bps / 1e6,
                    "bg_class": BG_CLASS, "class_base": CLASS_BASE, "lease_s": LEASE_S,
                    "repeat": opts.repeat, "trace": "/".join(FB2010_TRACE),
                    "tos_of_queue": [tos_of(CLASS_BASE + q) for q in range(st.queues)],
                    "flows": int(wl.n_flows), "coflow_mb": [
                        float(b) * st.size_scale / 1e6 for b in wl.coflow_bytes()],
                    "categories": [CATEGORIES[i] for i in wl.categories()]},
           "paper": PAPER, "sim": sim, "runs": rows, "factors": factors(rows)}
    return publish(out, res, console)


def publish(out: Path, res: dict[str, Any], console: Console) -> Outcome:
    """Compare, print, write ``results.json`` and ``report.html``."""
    cmp = compare(res)
    res["comparison"] = cmp.as_json()
    show(cmp, console)
    write_json(out / "results.json", res)
    sp = res["spec"]
    rep = Report(TITLE, out)
    rep.para(f"Star testbed, {sp['hosts']} hosts on {sp['link_mbps']:g} Mbit/s links: "
             f"{sp['senders']} senders, one receivers' host, one background host (UDP at "
             f"{sp['background']:.0%} of the link in a reserved leaf ahead of the classes, "
             "in the one queue in tcp-fifo). Workload: the "
             f"first {sp['coflows']} FB2010 coflows, {sp['flows']} flows, each coflow capped "
             f"at {sp['cap_mib']:g} MiB, sizes x{sp['size_scale']:g}, arrivals "
             f"x{sp['time_scale']:g}; Stream with {sp['queues']} queues (classes "
             f"{CLASS_BASE}..{CLASS_BASE + sp['queues'] - 1}), alpha {sp['alpha']}, "
             f"thresholds 10 MiB x 10^k scaled alike, starvation timer {sp['starve_s']} s; "
             f"stream-rto's senders: RTO {sp['rto_min_us'] / 1e3:g} ms .. "
             f"{sp['rto_max_ms'] / 1e3:g} s; {sp['repeat']} repeat(s) of each mode.")
    rep.heading(cmp.title)
    rep.table(cmp.header, cmp.rows, legend=cmp.legend)
    for note in cmp.notes:
        rep.para(note)
    rep.heading("Runs")
    rep.table(["repeat", "mode", "avg CCT s", "p95 s", "mice avg s", "large avg s",
               *[f"cat {c}" for c in CATEGORIES], "coflows done", "class MB 0..7, bg",
               "first bytes late s", "link unused s", "coflow Mbit/s", "port Mbit/s", "RTOs",
               "RTO recovery flow-s",
               "retransmitted MB", "sndbuf-limited flow-s"],
              [[r["repeat"], r["mode"], r["avg_cct_s"], r["p95_cct_s"], r["mice_avg_cct_s"],
                r["large_avg_cct_s"],
                *[r["avg_cct_by_category"][c] for c in CATEGORIES], r["coflows_done"],
                " ".join(f"{b / 1e6:.1f}" for b in r["class_bytes"]),
                None if r["start_lag_s"] is None else
                f"{r['start_lag_s']['median']:.3f} / {r['start_lag_s']['max']:.3f}",
                *([r["link"][k] for k in ("idle_link_s", "coflow_mbps", "port_mbps")]
                  if r.get("link") else [None] * 3), r["tcp"]["total_rto"],
                r["tcp"]["total_rto_time_ms"] / 1e3, r["tcp"]["bytes_retrans"] / 1e6,
                r["tcp"]["sndbuf_limited_us"] / 1e6]
               for r in res["runs"]],
              legend={"class MB 0..7, bg": "bytes each class carried on the receivers' port, "
                      "then the background's reserved leaf (stream: queue q in class q; "
                      "tcp: class 7)",
                      "link unused s": "link capacity left unused while a coflow was open, "
                      "in seconds of the whole link",
                      "coflow Mbit/s": "the coflows' bytes over the time a coflow was open; "
                      "port Mbit/s: all the port sent then (background included)",
                      "RTOs": "the flows' RTO expiries (TCP_INFO total_rto, summed)",
                      "first bytes late s": "median / max over flows of when the flow's "
                      "first bytes reached the receiver less its arrival (handshake, SYN "
                      "losses)"})
    rep.table(["simulator", "avg CCT s", "p95 s", "mice avg s",
               *[f"cat {c}" for c in CATEGORIES]],
              [[k, v["avg_cct_s"], v["p95_cct_s"], v["mice_avg_cct_s"],
                *[v["avg_cct_by_category"][c] for c in CATEGORIES]]
               for k, v in res["sim"].items()])
    _figure(rep, res)
    rep.heading("Checks")
    rep.table(["check", "measured", "ok"], [[c.what, c.measured, c.ok] for c in cmp.checks])
    path = rep.write()
    console.print(f"results: {out / 'results.json'}\nreport:  {path}")
    return Outcome(res["runs"], cmp, out / "results.json", path)


def _figure(rep: Report, res: dict[str, Any]) -> None:
    fig, ax = plt.subplots(figsize=(6, 3.4))
    for mode, color in (("tcp", "tab:blue"), ("tcp-fifo", "tab:green"),
                        ("stream", "tab:orange"), ("stream-rto", "tab:red")):
        for i, r in enumerate(x for x in res["runs"] if x["mode"] == mode):
            v = np.sort([np.nan if c is None else c for c in r["cct_s"]])
            ax.plot(np.arange(1, len(v) + 1), v, color=color, alpha=0.6,
                    label=f"testbed {mode}" if i == 0 else None)
    for pol, style in (("fs", "b--"), ("stream", "r--")):
        v = np.sort(res["sim"][pol]["cct_s"])
        ax.plot(np.arange(1, len(v) + 1), v, style, label=f"simulator {pol}")
    ax.set_yscale("log")
    ax.set_xlabel("coflows, by CCT")
    ax.set_ylabel("CCT (s)")
    ax.legend(fontsize=8)
    rep.figure(fig, "cct_sorted", "every coflow's CCT, sorted: each testbed run and the "
                                  "simulator on the same workload")
