"""A real Swift store on the testbed (one start-up shared by the tests of this
module): clients write and read through the proxy, a failure is injected and
Swift's own replicators bring integrity back to 100 %, the models are fitted on
points measured on this store, the enforcers' leases fail open, and a short run
of the BwMan loop manages the store. Nothing is left running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from streamband.alloc.bwman import Models, Plan, Share, fit
from streamband.loop.bwman import Points
from streamband.procs import clean, leftovers
from streamband.sdn.client import ControllerClient
from streamband.swift import scenario, training
from streamband.swift.adapters import MeterPlanEnforcer, TcPlanEnforcer
from streamband.swift.cluster import SwiftCluster
from streamband.swift.failures import FailureGenerator
from streamband.swift.integrity import DispersionConfig, RecoveryTracker
from streamband.swift.layout import OBJECT_PORT, PROXY_PORT, REPLICATION_PORT, RSYNC_PORT
from streamband.swift.session import Session
from streamband.swift.spec import load
from streamband.swift.tc import class_bytes
from streamband.testbed.network import started

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the testbed needs root")

LINK_MBPS = 8.0
SPEC = {
    "testbed": {"api": "127.0.0.1:8191", "openflow": "127.0.0.1:6663", "link_mbps": LINK_MBPS},
    "swift": {"objects": 120, "part_power": 4},
    "workload": {"duration_s": 24, "schedule": [[0, 8], [12, 10]], "window_s": 4},
    "failures": {"share": 0.2, "every_s": 100, "start_s": 3},
    "training": {"user_mbps": [1.5, 3, 6], "user_seconds": 3, "recovery_mbps": [1, 6],
                 "recovery_share": 0.15},
    "control": {"dt_s": 1, "quota_mbps": LINK_MBPS},
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    clean()
    out = tmp_path_factory.mktemp("swift")
    try:
        with Session(load(SPEC), out, started) as s:
            yield s
    finally:
        clean()
    assert leftovers() == []


def _in(s: Session, host: str, code: str) -> str:
    assert s.tb is not None
    p = s.tb.popen(host, [sys.executable, "-c", code], stdout=subprocess.PIPE,
                   stderr=subprocess.STDOUT)
    return p.communicate(timeout=60)[0].decode()


def test_store_up_on_the_hosts(store):
    c: SwiftCluster = store.cluster
    assert c.startup_s < 60
    alive = {n: os.path.exists(f"/proc/{p}") for n, p in c.node_pids().items()}
    assert all(alive.values()) and len(alive) == 2 + 2 * 3, alive  # memcached, nodes, rsyncd
    # every server listens on its own host's address, reachable across the switch
    probe = ("import socket,sys\n"
             "for a in sys.argv[1:]:\n"
             "    h, p = a.rsplit(':', 1)\n"
             "    socket.create_connection((h, int(p)), 2).close()\n"
             "print('ok')\n")
    targets = [f"{c.ip('proxy')}:{PROXY_PORT}"] + [
        f"{c.ip(h)}:{p}" for h in c.storage for p in (OBJECT_PORT, REPLICATION_PORT,
                                                      RSYNC_PORT)]
    p = store.tb.popen("client", [sys.executable, "-c", probe, *targets],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert p.communicate(timeout=30)[0].decode().strip() == "ok"
    # 3 replicas of every object on 3 distinct hosts
    for i in range(0, 120, 17):
        hosts = [h for h, _ in c.replicas(f"obj-{i:06d}")]
        assert sorted(hosts) == ["s1", "s2", "s3"]
    usage = c.usage()
    assert usage["rss_mb"] > 50 and usage["processes"] >= 8


def test_client_writes_and_reads(store):
    out = _in(store, "client", "from streamband.swift.client import roundtrip; import json; "
              f"print(json.dumps(roundtrip({store.cluster.proxy_url!r}, 'probe', 'x', 123456)))")
    assert json.loads(out.strip().splitlines()[-1]) == {"put": 201, "get": 200, "same": True}
    proc, log = store.workload("rw", "closed", duration_s=3, threads=4)
    assert proc.wait(60) == 0
    ops = [json.loads(x) for x in log.read_text().splitlines() if '"op"' in x]
    kinds = {(o["op"], o["st"]) for o in ops}
    assert ("r", 200) in kinds and ("w", 201) in kinds, kinds
    assert all(o["st"] // 100 == 2 for o in ops)


def _integrity(store) -> float:
    c = store.cluster
    cfg = DispersionConfig(str(c.swift_dir), store.spec.swift.container,
                           store.spec.swift.objects, store.spec.swift.objects, 1.0, 0.5,
                           str(store.out / f"integrity-{time.time():.0f}.jsonl"))
    path = cfg.write(store.out / "integrity-probe.json")
    p = store.client_proc("streamband.swift.integrity", path, store.out / "integrity.out")
    assert p.wait(60) == 0
    return json.loads(open(cfg.out).read().splitlines()[-1])["integrity"]


def test_failure_and_recovery_by_swift_replication(store):
    """Recovery held at a trickle by the tc classes (integrity stays below 100 %),
    then released: Swift's replicators restore every deleted replica."""
    c = store.cluster
    assert _integrity(store) == 1.0
    enf = TcPlanEnforcer(store.tb, c, store.out / "tc-fail", 30.0, LINK_MBPS * 1e6)
    try:
        enf.enforce(Plan(Share(7.9e6, 7.9e6), Share(0.1e6, 0.1e6)))
        gen = FailureGenerator(c, 120, c.spec.swift.object_bytes, 0.2, 1, 0, None, 5,
                               store.out / "fail.jsonl")
        ev = gen.inject(0.0, host="s2")
        assert ev.host == "s2" and len(ev.losses) == 24 and ev.bytes == 24 * 100_000
        tracker = RecoveryTracker(c.spec.swift.object_bytes)
        tracker.add(0.0, ev.losses)
        assert _integrity(store) < 1.0
        assert tracker.poll(1.0) > 12  # a trickle: most still missing
        enf.enforce(None)  # plain sharing again
        t0 = time.monotonic()
        while tracker.poll(time.monotonic()) and time.monotonic() - t0 < 90:
            time.sleep(0.2)
        assert tracker.poll(time.monotonic()) == 0
        assert _integrity(store) == 1.0
    finally:
        enf.close()


def test_models_fitted_on_measured_points(store, record_property):
    """eq. (1) and (2) on this store: throughput and recovery speed grow with the
    bandwidth the tc classes give each service."""
    c = store.cluster
    enf = TcPlanEnforcer(store.tb, c, store.out / "tc-train", 3.0, LINK_MBPS * 1e6)
    try:
        up = training.user_points(store, enf, LINK_MBPS * 1e6)
        rp = training.recovery_points(store, enf, LINK_MBPS * 1e6)
    finally:
        enf.close()
    user, rec = fit("linear", up.bw, up.y), fit("log", rp.bw, rp.y)
    for name, m, pts in (("user", user, up), ("recovery", rec, rp)):
        record_property(f"{name}_model", m.as_dict())
        print(f"{name}: a1 {m.a1:.4g} a2 {m.a2:.4g} R2 {m.r2:.3f} on "
              f"{list(zip(pts.bw, pts.y, strict=True))}")
    assert up.y[-1] > 1.5 * up.y[0], up.y  # 6 vs 1.5 Mbit/s per node
    assert rp.y[-1] > 2.0 * rp.y[0], rp.y  # 6 vs 1 Mbit/s per node
    assert user.a1 > 0 and rec.a1 > 0 and 0 <= user.r2 <= 1


def test_tc_lease_fails_open(store):
    c = store.cluster
    enf = TcPlanEnforcer(store.tb, c, store.out / "tc-lease", 1.0, LINK_MBPS * 1e6)
    try:
        enf.enforce(Plan(Share(5e6, 5e6), Share(3e6, 3e6)))
        shaped = [p for p in enf.ports]
        assert all(set(class_bytes(p)) == {"1", "10", "20", "30"} for p in shaped)
        # a borrowing plan, recovery first in line: rate, ceil and prio as planned
        enf.enforce(Plan(Share(5e6, 8e6), Share(3e6, 8e6), first="recovery"))
        for p in shaped:
            cls = _classes(p)
            assert cls["10"] == ("5Mbit", "8Mbit", "1"), cls
            assert cls["20"] == ("3Mbit", "8Mbit", "0"), cls
        time.sleep(1.6)  # no renewal: the loop "died"
        assert all(set(class_bytes(p)) == {"1"} for p in shaped)
        status = json.loads(enf.status_file.read_text())
        assert status["expired"] == 1 and status["shaped"] == []
    finally:
        enf.close()


def _classes(p) -> dict[str, tuple[str, str, str]]:
    """``tc class show``'s (rate, ceil, prio) per HTB class minor id on ``p``."""
    cmd = ["tc", "class", "show", "dev", p.dev]
    if p.netns_pid is not None:
        cmd = ["mnexec", "-a", str(p.netns_pid), *cmd]
    out = {}
    for line in subprocess.run(cmd, capture_output=True, text=True, check=True
                               ).stdout.splitlines():
        w = line.split()
        if w[:2] == ["class", "htb"] and "rate" in w:
            out[w[2].split(":")[1]] = (w[w.index("rate") + 1], w[w.index("ceil") + 1],
                                       w[w.index("prio") + 1] if "prio" in w else "")
    return out


def test_meter_lease_fails_open(store):
    c = store.cluster
    client = ControllerClient(store.spec.testbed.api)
    enf = MeterPlanEnforcer(client, c, 1.0, LINK_MBPS * 1e6)
    try:
        enf.enforce(Plan(Share(5e6, 5e6), Share(3e6, 3e6)))
        meters = client.meters()
        rec = [m for m in meters if m["flow"]["dst_port"] in (RSYNC_PORT, REPLICATION_PORT)]
        assert len(rec) == 3 * 2 * 2 and {m["rate_bps"] for m in rec} == {1.5e6}
        user = [m for m in meters if OBJECT_PORT in (m["flow"]["dst_port"],
                                                     m["flow"]["src_port"])]
        assert len(user) == 6 and {m["rate_bps"] for m in user} == {5e6}
        # borrowing classes, clients first: meters cannot lend, so the clients keep
        # their ceiling (the link: no cap) and recovery is held to its guarantee
        enf.enforce(Plan(Share(5e6, 8e6), Share(3e6, 8e6)))
        meters = client.meters()
        assert {m["rate_bps"] for m in meters
                if m["flow"]["dst_port"] in (RSYNC_PORT, REPLICATION_PORT)} == {1.5e6}
        assert {m["rate_bps"] for m in meters
                if OBJECT_PORT in (m["flow"]["dst_port"], m["flow"]["src_port"])} == {None}
        time.sleep(1.6)
        assert client.meters() == []
    finally:
        enf.close()
        client.close()


def test_bwman_loop_manages_the_store(store):
    """A short run of 002 §V-F: the loop observes, plans from the models and
    enforces every Δt; the failure is recovered after the clients stop."""
    up = Points("linear", [2.0, 6.0], [8.0, 20.0], ["given", "given"])
    rp = Points("log", [1.0, 6.0], [0.1, 0.5], ["given", "given"])
    models = Models(fit("linear", up.bw, up.y), fit("log", rp.bw, rp.y))
    enf = TcPlanEnforcer(store.tb, store.cluster, store.out / "tc-loop", 3.0, LINK_MBPS * 1e6)
    try:
        res = scenario.run(store, enf, "bwman", models, {"user": up, "recovery": rp},
                           "loop", tail_timeout_s=120)
    finally:
        enf.close()
    assert len(res.windows) == 6 and {w["target"] for w in res.windows} == {8, 10}
    assert res.requests["served"] > 0.7 * res.requests["issued"] > 100
    plans = [s["plan"] for s in res.steps if s["t"] <= 24]
    assert len(plans) >= 20 and all(p is not None for p in plans)
    assert all(p["user_rate_bps"] + p["recovery_rate_bps"] == pytest.approx(LINK_MBPS * 1e6)
               for p in plans)
    # the classes borrow (the default): each may use the whole quota
    assert all(p["user_bps"] == p["recovery_bps"] == pytest.approx(LINK_MBPS * 1e6)
               for p in plans)
    # the failure at 3 s was seen: the loop measured its replicas coming back (Swift's
    # replicator may restore all of them within one 3-s integrity sample, so "missing
    # through a whole interval" need not happen: CI of 5b09247, integrity 1.0 again at 6 s)
    assert any(s["recovery_mbs"] > 0 for s in res.steps if s["t"] > 3.0)
    assert len(res.failures) == 1 and res.recovered_at is not None
    assert res.integrity_final == 1.0
    assert set(res.violations) == {"5%", "10%", "15%"}
