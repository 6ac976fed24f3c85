"""Flink on loopback addresses: an unmodified job (Flink's own streaming WordCount of
``flink-examples-streaming`` 1.20.0) whose every remote TaskManager pair the profiler
finds, and a reporter that reports every second."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from streamband.flink import cluster as fc
from streamband.flink.flows import placement, tm_pairs, tm_pids
from streamband.flink.home import EXAMPLES_JAR
from streamband.flink.profiler import FlinkProfiler, observed_pairs
from streamband.loop.reports import read_snapshot
from streamband.loop.sockets import tcp_sockets

WORDCOUNT = "org.apache.flink.streaming.examples.wordcount.WordCount"


def _words(d: Path, files: int = 4, lines: int = 20000) -> None:
    rnd = np.random.default_rng(1)
    vocab = [f"w{i}" for i in range(5000)]
    d.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        (d / f"part{f}.txt").write_text("\n".join(
            " ".join(rnd.choice(vocab, 12)) for _ in range(lines)))


def test_wordcount_every_remote_pair_in_profiler(loopback, tmp_path: Path):
    """WordCount (source -> tokenizer -> keyBy -> counter -> sink, parallelism 2 over two
    TaskManagers of one slot each) carries its hash edge both ways between them: the
    REST API's subtask locations give both directed pairs, the reporters' remote input
    channels name both, and the profiler finds each pair's socket and its bytes."""
    cluster, snapshot = loopback
    _words(tmp_path / "in")
    jar = cluster.home / "examples" / EXAMPLES_JAR
    job = cluster.submit(jar, WORDCOUNT, ["--input", str(tmp_path / "in"), "--output",
                                          str(tmp_path / "out"), "--discovery-interval", "2s"],
                         parallelism=2)
    try:
        cluster.wait_running(job)
        place = placement(cluster.rest, job)
        pairs = tm_pairs(place)
        tms = {s["tm"] for v in place["vertices"].values() for s in v["subtasks"]}
        assert tms == {"w1", "w2"}, place  # one slot each: the job spans both
        assert {(p.src.id, p.dst.id) for p in pairs} == {("w1", "w2"), ("w2", "w1")}
        assert all(p.edges == ("file-input->counter",) for p in pairs), pairs
        deadline = time.monotonic() + 60
        want = {(f"{p.src.host}:{p.src.data_port}", p.dst.id) for p in pairs}
        while time.monotonic() < deadline and not want <= observed_pairs(
                read_snapshot(snapshot), job):
            time.sleep(1)
        assert want <= observed_pairs(read_snapshot(snapshot), job)
        names = lambda: tm_pids(fc.tagged_processes(str(cluster.work)))  # noqa: E731
        prof = FlinkProfiler(snapshot, job, pairs, lambda ip, p: tcp_sockets(None, p), names)
        sent = np.zeros(len(pairs))
        for _ in range(5):
            time.sleep(1)
            sent += prof.flow_state().sent
        assert all(s is not None for s in prof.last["socket"]), prof.last
        assert prof.last["channels_found"] == [1.0, 1.0]
        assert np.all(sent > 0), sent
    finally:
        cluster.cancel(job)


def test_reporter_every_second(loopback):
    """Each TaskManager's reports of a job arrive once a second: over 10 s, one report
    per second per TaskManager (their own clocks' stamps, 1 s apart within 0.1 s)."""
    cluster, snapshot = loopback
    jar = cluster.home / "examples" / EXAMPLES_JAR
    job = cluster.submit(jar, WORDCOUNT, ["--input", str(snapshot.parent), "--output",
                                          str(snapshot.parent / "out"),
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
