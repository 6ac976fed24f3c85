"""Flink on loopback addresses: a reporter that reports every second while an unmodified
job (Flink's own streaming WordCount of ``flink-examples-streaming`` 1.20.0) runs, and
``streamband manage`` with a ``flink:`` section that lists the job, its flows and its
reports. That every remote TaskManager pair of WordCount is found in the profiler is
tested on the testbed (tests/flink/test_flink_testbed.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import yaml

from streamband.flink.engine import FlinkEngine
from streamband.flink.flows import placement, tm_pairs
from streamband.flink.home import EXAMPLES_JAR
from streamband.loop.reports import read_snapshot
from streamband.manage.config import Network, load_config
from streamband.manage.stage import wait_for
from streamband.procs import stop

WORDCOUNT = "org.apache.flink.streaming.examples.wordcount.WordCount"


def _words(d: Path, files: int = 4, lines: int = 20000, name: str = "part") -> None:
    rnd = np.random.default_rng(1)
    vocab = np.array([f"w{i}" for i in range(5000)])
    d.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        (d / f"{name}{f}.txt").write_text("\n".join(
            " ".join(line) for line in rnd.choice(vocab, (lines, 12))))


def test_reporter_every_second(loopback, tmp_path: Path):
    """Each TaskManager's reports of a job arrive once a second: over 10 s, one report
    per second per TaskManager (their own clocks' stamps, 1 s apart within 0.1 s)."""
    cluster, snapshot = loopback
    jar = cluster.home / "examples" / EXAMPLES_JAR
    (tmp_path / "in").mkdir()  # nothing to read, watched: the job runs until canceled
    job = cluster.submit(jar, WORDCOUNT, ["--input", str(tmp_path / "in"), "--output",
                                          str(tmp_path / "out"),
                                          "--discovery-interval", "5s"], parallelism=2)
    try:
        cluster.wait_running(job)
        stamps: dict[str, list[float]] = {}
        deadline = time.monotonic() + 12
        while time.monotonic() < deadline:
            for rec in read_snapshot(snapshot).get("flow", {}).values():
                if rec.get("topology") == job:
                    seen = stamps.setdefault(rec["tm"], [])
                    if not seen or seen[-1] != rec["t"]:
                        seen.append(rec["t"])
            time.sleep(0.1)
        assert set(stamps) == {"w1", "w2"}
        for tm, ts in stamps.items():
            gaps = np.diff(ts)
            print(tm, f"{len(ts)} reports, gaps mean {gaps.mean():.3f} s, "
                  f"min {gaps.min():.3f}, max {gaps.max():.3f}")
            assert len(ts) >= 9
            assert abs(gaps.mean() - 1.0) < 0.1
    finally:
        cluster.cancel(job)


def _free(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_manage_flink_job(flink_cluster, browser, tmp_path: Path):
    """``streamband manage`` with a ``flink:`` section: WordCount (parallelism 2 over the two
    TaskManagers) is listed as a Flink job with both remote TaskManager pairs as flows,
    matched by the producer's address and data port and routed on the config's network;
    every TaskManager's reports reach the service once a second; the engine's profiler
    reads the bytes each flow carried from the service's snapshot; ``/metrics`` and the
    dashboard (in Chromium) name the job with its engine; canceled, the job's flows are
    dropped. No controller answers (its
    meters need a switch, which only the testbed has): the service says so and goes on."""
    cluster, spec = flink_cluster, flink_cluster.spec
    rest = f"{spec.master.ip}:{spec.rest_port}"
    hosts = sorted({tm.host.ip for tm in spec.taskmanagers})
    cfg = {"flink": {"rest": rest, "profiler": spec.collector, "placement_every_s": 1},
           "controller": {"api": f"127.0.0.1:{_free()}", "token_env": None},
           "network": {"switches": [{"name": "s1", "dpid": 1}],
                       "hosts": [{"ip": ip, "switch": "s1", "port": f"p{i}", "link_mbps": 20}
                                 for i, ip in enumerate(hosts)]},
           "topologies": [{"name": "WordCount", "policy": "appaware",
                           "tuple_bytes": {"file-input->counter": 32}}],
           "manager": {"dt_s": 1, "state_dir": str(tmp_path / "state"),
                       "listen": f"127.0.0.1:{_free()}"}}
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(cfg))
    env = {k: v for k, v in os.environ.items() if k != "STREAMBAND_TESTBED"}
    with (tmp_path / "manage.log").open("w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "streamband.cli", "manage", "--config",
                                 str(tmp_path / "cluster.yaml")], stdout=log,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
    api = httpx.Client(base_url=f"http://{cfg['manager']['listen']}", timeout=10)
    job = None
    try:
        t0 = time.monotonic()
        _words(tmp_path / "in")
        job = cluster.submit(cluster.home / "examples" / EXAMPLES_JAR, WORDCOUNT,
                             ["--input", str(tmp_path / "in"), "--output",
                              str(tmp_path / "out"), "--discovery-interval", "2s"],
                             parallelism=2)  # while the service starts
        cluster.wait_running(job)
        print(f"WordCount running {time.monotonic() - t0:.1f} s after the service's start")
        wait_for(lambda: proc.poll() is not None or api.get("/api/v1/status").is_success, 60,
                 "the service answers")
        assert proc.poll() is None, (tmp_path / "manage.log").read_text()[-2000:]
        wc = lambda: api.get("/api/v1/status").json()["topologies"][0]  # noqa: E731
        t0 = time.monotonic()
        t = wait_for(lambda: (t := wc())["flows"] and t, 30, "the job's flows mapped")
        print(f"flows mapped {time.monotonic() - t0:.1f} s after the service answered")
        assert (t["id"], t["status"], t["engine"]) == (job, "RUNNING", "flink")
        pairs = [p for p in tm_pairs(placement(cluster.rest, job)) if p.remote]
        want = {f"{p.src.host}:{p.src.data_port}->{p.dst.host}": p for p in pairs}
        assert len(want) == 2 and sorted(f["name"] for f in t["flows"]) == sorted(want)
        for f in t["flows"]:
            p = want[f["name"]]
            assert f["key"] == {"src_ip": p.src.host, "dst_ip": p.dst.host, "proto": "tcp",
                                "src_port": p.src.data_port}
            assert f["pairs"] == [f"file-input->counter@{p.src.id}->{p.dst.id}"]
            assert f["path"] == [f"{p.src.host}->s1", f"s1->{p.dst.host}"]
        # the engine's profiler over the service's snapshot (written every Δt)
        engine = FlinkEngine(rest, 1.0)
        sig_place = engine.placement(job)
        assert sig_place is not None
        mapping = engine.flows(job, sig_place[1], Network.from_config(
            load_config(tmp_path / "cluster.yaml").network).topo, {})
        assert mapping.names == [f["name"] for f in t["flows"]]
        prof = engine.profiler(tmp_path / "state" / "profile.json", job, mapping, dict)
        _words(tmp_path / "in", 2, 5000, name="more")  # more to read (found within 2 s)
        # meanwhile every TaskManager's reports, as the service has them: one a second each
        stamps: dict[str, list[float]] = {}
        sent = np.zeros(mapping.n)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 6.5 or (time.monotonic() - t0 < 15
                                              and not np.all(sent > 0)):
            for r in wc()["reporters"]:
                seen = stamps.setdefault(r["tm"], [])
                if not seen or seen[-1] != r["t"]:
                    seen.append(r["t"])
            if time.monotonic() - t0 >= prof.inner.samples:  # a flow state a second
                sent += prof.flow_state().sent
            time.sleep(0.2)
        assert np.all(sent > 0), (sent, prof.inner.last)
        assert set(stamps) == {"w1", "w2"}, stamps
        for tm, ts in stamps.items():
            gaps = np.diff(ts)
            print(tm, f"{len(ts)} reports in {time.monotonic() - t0:.1f} s, gaps "
                  f"{gaps.min():.3f}-{gaps.max():.3f} s")
            assert len(ts) >= 6 and abs(gaps.mean() - 1.0) < 0.1
        metrics = api.get("/metrics").text
        assert 'streamband_topology_info{engine="flink",topology="WordCount"} 1.0' in metrics \
            or 'streamband_topology_info{topology="WordCount",engine="flink"} 1.0' in metrics
        t0 = time.monotonic()
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"http://{cfg['manager']['listen']}/")
        page.wait_for_selector("#topo-WordCount table.flows tbody tr", timeout=20_000)
        assert page.inner_text("#engine-WordCount") == "Flink job"
        rows = page.locator("#topo-WordCount table.flows tbody tr")
        assert sorted(rows.nth(i).locator("td").first.inner_text()
                      for i in range(rows.count())) == sorted(want)
        assert "TaskManager pairs" in page.inner_text("#topo-WordCount table.flows thead")
        assert "reports from 2 TaskManagers" in page.inner_text("#topo-WordCount .reports")
        assert not errors, errors
        print(f"the dashboard checked in {time.monotonic() - t0:.1f} s")
        st = api.get("/api/v1/status").json()
        assert any(a["kind"] == "controller unreachable" for a in st["alerts"])
        assert any("placement read: 2 flows (2 TaskManager pairs)" in e["message"]
                   for e in st["events"]), st["events"]
        t0 = time.monotonic()
        cluster.cancel(job)
        t = wait_for(lambda: not (t := wc())["flows"] and t, 20, "the job's flows dropped")
        print(f"canceled: flows dropped {time.monotonic() - t0:.1f} s after the command")
        job = None
        assert t["status"] == "canceled" and t["id"] is None
        assert any("job WordCount is gone from Flink's REST API" in e["message"]
                   for e in api.get("/api/v1/status").json()["events"])
    finally:
        api.close()
        stop(proc, 30)
        if job is not None:
            cluster.cancel(job)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:  # the service let it go
        s.bind((spec.master.ip, spec.collector_port))
