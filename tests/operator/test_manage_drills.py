"""Failure drills with a real topology running (001's fork-join, acking on, a failed
tuple replayed by its spout) under ``streamband manage``: each kills or cuts one thing,
checks the manager and the cluster come back, and reports tuples lost (emitted, neither
acked nor pending: replays are not losses), time to recover, and what was left behind."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from streamband.loop.engine import flow_name
from streamband.loop.manager import LEASE_STEPS, LEASE_WINDOW
from streamband.manage.config import load_config
from streamband.manage.stage import PROFILER_PORT, wait_for
from streamband.sdn.app import Settings as ControllerSettings
from streamband.storm.flows import worker_port
from streamband.storm.workloads import fork_join

DT = 1.0
LINK_BPS = 20e6  # the stage's links
LEASE_CHECK_S = ControllerSettings().lease_check_s  # how often the controller expires leases
FJ_BYTES = (lambda w, a: w.edge_bytes(a))(*fork_join())  # as the stage's config
ROWS: list[dict[str, Any]] = []


@pytest.fixture(scope="module", autouse=True)
def drill_table(stage):
    """Prints the drills' table (and writes drills.json beside the stage's files)."""
    yield
    path = stage.work / "drills.json"
    path.write_text(json.dumps(ROWS, indent=1))
    if os.environ.get("STREAMBAND_DRILL_REPORT"):
        with open(os.environ["STREAMBAND_DRILL_REPORT"], "w") as f:
            json.dump(ROWS, f, indent=1)
    print("\n| drill | tuples lost | failed (replayed) | recovery s | leftovers |")
    for r in ROWS:
        print(f"| {r['drill']} | {r['lost']} | {r['failed']} ({r['replayed']}) | "
              f"{r['recovery_s']:.1f} | {', '.join(r['leftovers']) or 'none'} |")


def fj(stage) -> dict[str, Any]:
    return stage.topology("fj")


def totals(stage) -> dict[str, float]:
    return fj(stage)["totals"]


def open_tuples(t: dict[str, float]) -> float:
    """Emitted tuples neither acked nor pending at the spout (given up on)."""
    return t.get("spout.emitted", 0) - t.get("spout.acked", 0) - t.get("spout.pending", 0)


def sink_rate(stage, seconds: float = 3.0) -> float:
    a = totals(stage).get("sink.count", 0.0)
    time.sleep(seconds)
    return (totals(stage).get("sink.count", 0.0) - a) / seconds


def wire_rate(stage, host: str = "w1", seconds: float = 2.0) -> float:
    """Bits per second ``host`` sent over its link (its switch port's receive counter, as
    the controller reads it): the topology's traffic seen without the manager."""
    port = stage.tb.switch_port(host)

    def rx() -> float:
        return next(float(p["rx_bytes"]) for p in stage.controller().ports(fresh=True)
                    if p["name"] == port)

    a = rx()
    time.sleep(seconds)
    return 8.0 * (rx() - a) / seconds


def flow_names(stage) -> set[str]:
    return {f["name"] for f in fj(stage)["flows"]}


def all_capped(stage) -> bool:
    got = stage.meters()
    return all(got.get(n) for n in flow_names(stage))


def leftovers(stage, storm_before: dict[str, int]) -> list[str]:
    """What a drill left behind: meters of flows the manager does not manage, our drop
    rule, Storm processes beyond the cluster's, a second manager."""
    left = []
    names = flow_names(stage)
    left += [f"stale meter {n}" for n in stage.meters() if n not in names]
    for s in stage.tb.topo.switches:
        out = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "dump-flows",
                              stage.tb.switch_name[s], f"udp,tp_dst={PROFILER_PORT}"],
                             capture_output=True, text=True).stdout
        if "actions=drop" in out:
            left.append(f"drop rule on {s}")
    for role, n in storm_counts(stage).items():
        if n > storm_before.get(role, 0):
            left.append(f"{n - storm_before.get(role, 0)} extra {role}")
    managers = subprocess.run(["pgrep", "-f", "streamband.cli manage"], capture_output=True,
                              text=True).stdout.split()
    if len(managers) > 1:
        left.append(f"{len(managers)} managers")
    return left


def storm_counts(stage) -> dict[str, int]:
    out: dict[str, int] = {}
    for role in ("worker", "supervisor", "log writer", "nimbus", "zookeeper"):
        out[role] = len(stage.storm_processes(role))
    return out


def settle(stage, timeout: float = 45.0) -> dict[str, float]:
    """Wait until every failed tuple was replayed (the topology's message timeout is
    15 s); the spout's totals then. The in-flight tuples need not drain: at 300 tuples/s
    the fork-join asks more of w1's link than it has, so its spout keeps the most it may
    have pending in flight."""
    def done() -> dict[str, float] | None:
        t = totals(stage)
        return t if t.get("spout.failed", 0) == t.get("spout.replayed", 0) else None
    return wait_for(done, timeout, "failed tuples replayed", 1.0)


def record(stage, drill: str, before: dict[str, float], recovery: float,
           storm_before: dict[str, int], **extra: Any) -> dict[str, Any]:
    after = settle(stage)
    row = {"drill": drill, "lost": open_tuples(after) - open_tuples(before),
           "pending_growth": after.get("spout.pending", 0) - before.get("spout.pending", 0),
           "failed": after.get("spout.failed", 0) - before.get("spout.failed", 0),
           "replayed": after.get("spout.replayed", 0) - before.get("spout.replayed", 0),
           "recovery_s": recovery, "leftovers": leftovers(stage, storm_before), **extra}
    ROWS.append(row)
    print(row)
    # acking on: a failed tuple is replayed by its spout, so a drill loses none; and
    # it leaves nothing behind (stale meters, drop rules, extra Storm processes)
    assert row["lost"] == 0 and row["leftovers"] == [], row
    return row


def ensure_manager(stage) -> None:
    if stage.manager is None or stage.manager.poll() is not None:
        stage.start_manager(stage.extra["config"])
    wait_for(lambda: stage.managed("fj"), 60, "the manager manages fj's flows")


def test_kill_manager(stage):
    """kill -9 of the manager: its leases run out within 3 Δt and the flows share as TCP;
    restarted, it resumes from its state directory (policy, history, start count)."""
    ensure_manager(stage)
    api = stage.api()
    assert api.put("/api/v1/topologies/fj/policy", json={"policy": "maxmin"}).status_code == 200
    wait_for(lambda: stage.api().get("/api/v1/allocations?topology=fj&limit=1").json()[0][
        "policy"] == "maxmin", 10, "maxmin allocating")
    starts = stage.status()["starts"]
    history = api.get("/api/v1/allocations", params={"limit": 10_000}).json()
    before, sb = totals(stage), storm_counts(stage)

    def capping() -> set[str] | None:  # the flows capped at one moment, all of fj's
        got = {n for n, r in stage.meters().items() if r}
        return got if got >= flow_names(stage) else None

    capped = wait_for(capping, 30, "maxmin caps fj's flows", 0.2)
    # the lease the manager granted, read back from the controller just before the kill
    left = max(m["lease_left_s"] for m in stage.controller().meters()
               if flow_name(m["flow"]) in capped)
    t0 = time.monotonic()
    os.kill(stage.manager.pid, signal.SIGKILL)
    stage.manager.wait(10)
    polls: list[float] = []

    def gone() -> bool:
        t = time.monotonic()
        got = stage.meters()
        polls.append(time.monotonic() - t)
        return not any(got.get(n) for n in capped)

    wait_for(gone, left + 10, "meters expired", 0.1)
    expired = time.monotonic() - t0
    # the lease left, the controller's lease check (every 0.05 s), this poll's period and
    # the longest poll: a dead manager's caps last no longer than what it was granted
    assert expired <= left + LEASE_CHECK_S + 0.1 + max(polls), (expired, left, max(polls))
    assert wire_rate(stage) > 1e6  # the topology runs on, under plain TCP
    t1, restarted = time.monotonic(), time.time()
    stage.start_manager(stage.extra["config"])

    def policy_caps() -> list[float]:  # the restarted manager's capping decisions (sums)
        rows = api.get("/api/v1/allocations", params={"topology": "fj", "limit": 50}).json()
        return [sum(r["rates_bps"]) for r in rows if r["time"] > restarted
                and r["decision"] == "policy" and None not in r["rates_bps"]]

    caps = wait_for(policy_caps, 30, "the policy capping again", 0.2)
    wait_for(lambda: all_capped(stage), 10, "caps installed", 0.2)
    resumed = time.monotonic() - t1
    # its own flows, counted by rules installed anew, are not taken for cross traffic:
    # a cap of w1's link (both flows cross it) shares all of its 20 Mbit/s
    assert min(caps) >= 0.9 * LINK_BPS, caps
    st = stage.status()
    assert st["starts"] == starts + 1
    assert fj(stage)["policy"] == "maxmin"  # as switched, not the config's appaware
    again = api.get("/api/v1/allocations", params={"limit": 10_000}).json()
    assert {r["id"] for r in history} <= {r["id"] for r in again}
    api.put("/api/v1/topologies/fj/policy", json={"policy": "appaware"})
    # the stream runs on (as after the controller's kill): its rate over a few seconds
    # swings with the workers' queues and replays, so no share of the earlier rate is due
    assert sink_rate(stage) > 0
    record(stage, "kill -9 manager", before, resumed, sb, meters_expired_s=round(expired, 2))


def test_kill_controller(stage):
    """kill -9 of the controller: the switches forward on (secure fail mode keeps their
    rules); restarted, it has no meter, and the manager installs its allocation again."""
    ensure_manager(stage)
    before, sb = totals(stage), storm_counts(stage)
    stage.tb.controller.kill()
    stage.tb.controller.wait(10)
    try:
        time.sleep(1.0)
        assert sink_rate(stage, 4.0) > 0  # forwarding continues without a controller
        wait_for(lambda: any(a["kind"] == "controller unreachable"
                             for a in stage.status()["alerts"]), 10, "the alert")
    finally:
        t1, restarted = time.monotonic(), time.time()
        stage.tb.restart_controller()
    # the restarted controller has no rule: every flow's is the manager's again
    wait_for(lambda: stage.managed("fj", restarted), 30, "the allocation installed again", 0.2)
    recovery = time.monotonic() - t1
    wait_for(lambda: not any(a["kind"] == "controller unreachable"
                             for a in stage.status()["alerts"]), 10, "the alert cleared")
    record(stage, "kill -9 controller", before, recovery, sb)


def test_kill_worker(stage):
    """kill -9 of the worker of D (w2): its supervisor starts it again, Storm replays
    what was lost in it, the manager keeps (or re-maps) the flows."""
    ensure_manager(stage)
    info = stage.cluster.info("fj")
    port = next(e["port"] for e in info["executors"] if e["component"] == "D")
    pid = next(p for p in stage.storm_processes("worker", "w2") if worker_port(p) == port)
    before, sb = totals(stage), storm_counts(stage)
    t0 = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    # the killed sink's last reports may still be arriving: count from its new life only
    wait_for(lambda: any(worker_port(p) == port and p != pid
                         for p in stage.storm_processes("worker", "w2")), 60,
             "D's worker relaunched", 0.2)
    sinks = totals(stage).get("sink.count", 0.0)
    seen: list[float] = []

    def counting() -> bool:  # the restarted sink's counts add to its earlier life's
        seen.append(totals(stage).get("sink.count", 0.0))
        return seen[-1] > sinks + 100

    wait_for(counting, 120, "the sink counts again", 0.5)
    counted = time.time()
    wait_for(lambda: stage.managed("fj", counted), 30, "flows managed")
    recovery = time.monotonic() - t0
    assert min(seen) >= sinks, (sinks, min(seen))
    record(stage, "kill -9 Storm worker (D)", before, recovery, sb)


def test_kill_supervisor(stage):
    """kill -9 of w2's supervisor, started again 5 s later (as a service manager would):
    its workers run on, Nimbus sees it again, the manager keeps managing."""
    ensure_manager(stage)
    pid = stage.storm_processes("supervisor", "w2")[0]
    before, sb = totals(stage), storm_counts(stage)
    t0 = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    try:
        time.sleep(5)
        assert sink_rate(stage, 2.0) > 0  # its workers run on without it
    finally:
        stage.restart_supervisor("w2")
    wait_for(lambda: stage.tb.ip("w2") in {s["host"] for s in
                                           stage.cluster.admin("list")["supervisors"]}, 90,
             "Nimbus sees w2's supervisor")
    back = time.time()
    wait_for(lambda: stage.managed("fj", back) and sink_rate(stage, 2.0) > 0, 60,
             "managed and flowing")
    recovery = time.monotonic() - t0
    record(stage, "kill -9 Storm supervisor (w2), restarted after 5 s", before, recovery, sb)


def test_link_down_and_up(stage):
    """w2's link down for 5 s: tuples wait (none lost, the message timeout is 15 s); the
    flows recover when it is up again."""
    ensure_manager(stage)
    before, sb = totals(stage), storm_counts(stage)
    rate = sink_rate(stage)
    stage.link("w2", False)
    try:
        time.sleep(5)
    finally:
        stage.link("w2", True)
    t1 = time.monotonic()
    wait_for(lambda: sink_rate(stage, 1.0) > 0.5 * rate, 60, "throughput back", 0.0)
    recovery = time.monotonic() - t1
    record(stage, "w2's link down 5 s, then up", before, recovery, sb)


def test_profiler_silent(stage):
    """The workers' reports dropped for 6 Δt: the manager holds the last safe allocation,
    fails open once the silence passes 3 Δt, and allocates again when reports return."""
    ensure_manager(stage)
    api = stage.api()
    cfg = load_config(stage.extra["config"]).manager
    # the service's rule (manage.service): stale after max(2 s, Δt) of silence, failed
    # open once the silence passes the hold (hold_intervals Δt, at least one Δt more)
    open_after = max(max(2.0, cfg.dt_s) + cfg.dt_s, cfg.hold_intervals * cfg.dt_s)
    before, sb = totals(stage), storm_counts(stage)
    t0 = time.time()
    stage.silence_profiler(True)
    silenced = time.time()  # no report arrives after this
    try:
        wait_for(lambda: stage.meters() and not any(stage.meters().get(n)
                                                   for n in flow_names(stage)),
                 open_after + 60, "failed open", 0.2)
        opened = time.time() - t0
        time.sleep(6 * DT - opened if opened < 6 * DT else 0)
    finally:
        stage.silence_profiler(False)
    t1, back = time.monotonic(), time.time()

    def allocating() -> bool:  # the policy's, not the first interval's hold after the gap
        last = api.get("/api/v1/allocations?topology=fj&limit=1").json()[0]
        return last["decision"] == "policy" and last["time"] > back

    wait_for(allocating, 20, "the policy allocating again", 0.2)
    recovery = time.monotonic() - t1
    log = [r for r in api.get("/api/v1/allocations", params={"topology": "fj",
                                                            "limit": 200}).json()
           if r["time"] >= t0 - 3][::-1]
    kinds = [r["decision"] for r in log]
    assert "hold" in kinds and "fail-open" in kinds, kinds
    # the gap's first hold (a hold before the silence, e.g. a policy output rejected, is
    # not the gap's and holds an older allocation)
    gap = next(i for i, r in enumerate(log) if r["decision"] == "hold" and r["time"] >= t0)
    last_safe = next(r["rates_bps"] for r in reversed(log[:gap]) if r["decision"] == "policy")
    assert all(r["rates_bps"] == last_safe for r in log[gap:] if r["decision"] == "hold"
               and r["time"] < log[kinds.index("fail-open")]["time"])
    assert all(v is None for r in log if r["decision"] == "fail-open" for v in r["rates_bps"])
    i_open = kinds.index("fail-open")
    first_open = log[i_open]["time"]
    # the step before it still held, so the silence then was at most open_after: the
    # first fail-open comes at most one step gap (as the loaded machine made it) later
    step_gap = first_open - log[i_open - 1]["time"]
    assert first_open - silenced <= open_after + step_gap, (first_open - silenced,
                                                            open_after, step_gap)
    last_open = len(kinds) - 1 - kinds[::-1].index("fail-open")
    after = kinds[last_open + 1:]
    # reports back: the first interval spans the gap and holds, then the policy decides
    assert after[0] == "hold" and after[-1] == "policy", after
    record(stage, "profiler silent 6 Δt", before, recovery, sb,
           fail_open_after_s=round(first_open - t0, 2))


GARBAGE = """
import json, socket, sys, time
target, topo, host, port, dst = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
h, p = target.rsplit(":", 1)
end, n = time.time() + 3, 0
while time.time() < end:
    for v in (float("nan"), -5.0, 1e30):
        rec = {"type": "flow", "topology": topo, "host": host, "port": port, "t": time.time(),
               "clients": {dst: {"sent": v, "pending": v}}, "transfer_queue": v, "receive": {}}
        s.sendto(json.dumps(rec).encode(), (h, int(p)))
    n += 1
    time.sleep(0.05)
print(n)  # datagrams sent of each reason
"""


def rejected(stage) -> dict[str, float]:
    out = {}
    for line in stage.api().get("/metrics").text.splitlines():
        if line.startswith("streamband_rejected_samples_total{"):
            reason = line.split('reason="')[1].split('"')[0]
            out[reason] = float(line.rsplit(" ", 1)[1])
    return out


def test_garbage_metrics(stage):
    """Reports with NaN, negative and absurdly large values, sent as w1's worker of B:
    rejected and counted, never enforced; allocations go on from the real reports."""
    ensure_manager(stage)
    info = stage.cluster.info("fj")
    ports = {e["component"]: e["port"] for e in info["executors"]}
    w1, w2 = stage.tb.ip("w1"), stage.tb.ip("w2")
    before, sb = totals(stage), storm_counts(stage)
    r0 = rejected(stage)
    pid = stage.tb.state()["hosts"]["w1"]["pid"]
    sender = subprocess.Popen(["nsenter", f"--net=/proc/{pid}/ns/net", sys.executable, "-c",
                               GARBAGE, f"{stage.master_ip}:{PROFILER_PORT}", info["id"], w1,
                               str(ports["B"]), f"{w2}:{ports['D']}"],
                              stdout=subprocess.PIPE, text=True)
    seen: list[float | None] = []
    while sender.poll() is None:
        seen += list(stage.meters().values())
        time.sleep(0.2)
    sent = int(sender.communicate()[0])
    assert sender.returncode == 0
    assert seen and all(v is None or 64e3 <= v <= 20e6 for v in seen), seen
    # the service counts what its receiver rejected at each step: two steps on, every
    # datagram that arrived is counted (UDP through a busy switch may lose some)
    steps = stage.status()["steps"]
    wait_for(lambda: stage.status()["steps"] >= steps + 2, 30, "two steps", 0.2)
    r1 = rejected(stage)
    for reason in ("not_finite", "negative", "absurd"):
        assert 0 < r1.get(reason, 0) - r0.get(reason, 0) <= sent, (reason, sent, r0, r1)
    recent = stage.api().get("/api/v1/allocations?topology=fj&limit=5").json()
    assert recent[0]["decision"] == "policy"
    record(stage, "garbage metrics (NaN, negative, 1e30) for 3 s", before, 0.0, sb,
           rejected={k: r1.get(k, 0) - r0.get(k, 0) for k in r1})


def test_late_steps_keep_caps(stage, tmp_path):
    """Steps later than 3 Δt (the manager stalled, as a starved CPU would stall it): the
    lease of every push is 3 x the longest of the last LEASE_WINDOW gaps between steps
    (at least Δt), so after the first late step no cap in place when a stall begins
    lapses during it, in a stall that comes fewer than LEASE_WINDOW steps later. (A window
    of 3 gaps let the caps lapse in a third stall when status polls let a third on-time
    step slip in, [4, 0, 13, 0].) Whether a step caps at all is the policy's call (beside
    a CPU-bound process the fork-join did not always fill the link), so a stall that
    begins with no cap in place checks nothing, and the drill stalls until three have."""
    stall = (LEASE_STEPS + 1) * DT  # later than the lease of a step on time
    cfg = stage.write_config(tmp_path / "late.yaml", [
        {"name": "fj", "policy": "appaware", "tuple_bytes": FJ_BYTES}],
        stage.extra["config"].parent / "state", dt=DT, guard=False, hold_intervals=10)
    stage.start_manager(cfg)
    try:
        wait_for(lambda: stage.managed("fj"), 60, "the manager manages fj's flows")
        names = flow_names(stage)
        lapsed: list[int | None] = []  # per stall: samples with a cap gone (None: no cap)
        stopped_at, now_at = [], [0]

        def stepped(s: int) -> bool:
            now_at[0] = stage.status()["steps"]
            return now_at[0] > s

        while sum(n is not None for n in lapsed[1:]) < 3 and len(lapsed) < 12:
            # stopped right after a step: since the last stall a few steps ran on time,
            # fewer than LEASE_WINDOW, so the last push's lease still counts its gap
            steps = stage.status()["steps"]
            wait_for(lambda s=steps: stepped(s), 30, "a step", every=0.05)
            os.kill(stage.manager.pid, signal.SIGSTOP)
            stopped_at.append(now_at[0])
            t_end, seen = time.monotonic() + stall, []
            while time.monotonic() < t_end:
                seen.append(stage.meters())
                time.sleep(0.2)
            os.kill(stage.manager.pid, signal.SIGCONT)
            # the caps the last push left; with the manager stopped only expiry moves them
            held = [n for n in names if seen[0].get(n)]
            lapsed.append(sum(not all(got.get(n) for n in held) for got in seen)
                          if held else None)
            wait_for(lambda s=steps: stage.status()["steps"] >= s + 2, 30, "the late step",
                     every=0.05)
        lease = stage.status()["lease_s"]
    finally:
        if stage.manager is not None and stage.manager.poll() is None:
            os.kill(stage.manager.pid, signal.SIGCONT)
        stage.start_manager(stage.extra["config"])
    assert lease >= LEASE_STEPS * stall, lease  # the stall's gap stretched the lease
    # the premise: each stall came within LEASE_WINDOW steps of the late step before it
    assert all(b - a < LEASE_WINDOW for a, b in itertools.pairwise(stopped_at)), stopped_at
    # the first stall came before any late step; three later ones began with caps
    checked = [n for n in lapsed[1:] if n is not None]
    assert len(checked) >= 3 and not any(checked), lapsed
