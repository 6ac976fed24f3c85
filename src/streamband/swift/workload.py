"""The YCSB-like client of 002 §V-C2, run on the client host.

- ``target``: requests are generated at the target rate of the schedule (steps,
  002 Fig. 7), evenly spaced, into a queue served by ``threads`` client threads; a
  request that finds no free thread waits in the queue and counts as late
  (002: "if the rate cannot be met by the system, requests are queued for later
  execution"). Reads (GET) with probability ``read_share``, else overwrites (PUT),
  of a uniformly chosen object of the populated space.
- ``closed``: best effort, every thread issues requests back to back (the
  training sweep measures throughput against bandwidth this way, 002 §III-A).
- ``populate``: write every object once (002: "populated using randomly generated
  files with predefined sizes").

``python -m streamband.swift.workload CONFIG.json``; one JSON line per request
(``op``) and per second (``tick``: queue length, threads busy, issued, done) to ``out``, times in
seconds from ``t0`` (the run's common time zero, wall clock).
"""

from __future__ import annotations

import json
import os
import queue
import random
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from streamband.swift.client import Connection, SwiftError

LATE_S = 0.05  # a request that waited longer than this for a thread is late


def object_name(i: int) -> str:
    return f"obj-{i:06d}"


def step_rate(schedule: list[tuple[float, float]], t: float) -> float:
    """The rate of the last step of ``schedule`` (``[start_s, op/s]``) begun by ``t``."""
    rate = schedule[0][1]
    for s, r in schedule:
        if t >= s:
            rate = r
    return rate


@dataclass
class WorkloadConfig:
    """What one workload process does (written as JSON by the driver)."""

    proxy: str
    container: str
    objects: int
    object_bytes: int
    out: str
    mode: str = "target"  # target | closed | populate
    threads: int = 16
    read_share: float = 0.8
    schedule: list[tuple[float, float]] = field(default_factory=lambda: [(0.0, 10.0)])
    duration_s: float = 60.0
    timeout_s: float = 20.0
    seed: int = 1
    t0: float = 0.0  # wall-clock time zero; 0 = when the process starts

    def target(self, t: float) -> float:
        return step_rate(self.schedule, t)

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps(asdict(self)))
        return path


class Recorder:
    """The JSON-lines log shared by the threads."""

    def __init__(self, path: str, t0: float) -> None:
        self.f = open(path, "a", buffering=1 << 16)  # noqa: SIM115
        self.t0 = t0
        self.lock = threading.Lock()
        self.done = 0
        self.errors = 0
        self.busy = 0  # threads inside a request now

    def op(self, sched: float, start: float, end: float, kind: str, status: int) -> None:
        rec = {"k": "op", "s": round(sched - self.t0, 4), "b": round(start - self.t0, 4),
               "e": round(end - self.t0, 4), "op": kind, "st": status}
        with self.lock:
            self.done += 1
            self.errors += status // 100 != 2
            self.f.write(json.dumps(rec) + "\n")

    def tick(self, **kw: Any) -> None:
        with self.lock:
            rec = {"k": "tick", "t": round(time.time() - self.t0, 3), "done": self.done,
                   "errors": self.errors, "busy": self.busy, **kw}
            self.f.write(json.dumps(rec) + "\n")
            self.f.flush()

    def close(self) -> None:
        with self.lock:
            self.f.close()


def _one(conn: Connection, cfg: WorkloadConfig, rng: random.Random, body: bytes) -> str:
    """One YCSB operation; returns its kind and raises SwiftError on a wire error."""
    name = object_name(rng.randrange(cfg.objects))
    if rng.random() < cfg.read_share:
        status, _ = conn.get(cfg.container, name)
        return f"r{status}"
    return f"w{conn.put(cfg.container, name, body)}"


def _worker(cfg: WorkloadConfig, rec: Recorder, jobs: queue.Queue[float | None] | None,
            stop: threading.Event, seed: int) -> None:
    rng = random.Random(seed)
    body = os.urandom(cfg.object_bytes)
    conn = Connection(cfg.proxy, cfg.timeout_s)
    conn.auth()
    while not stop.is_set():
        if jobs is None:
            sched = time.time()
        else:
            item = jobs.get()
            if item is None:
                break
            sched = item
        start = time.time()
        with rec.lock:
            rec.busy += 1
        try:
            res = _one(conn, cfg, rng, body)
            kind, status = res[0], int(res[1:])
        except SwiftError:
            kind, status = "x", 0
        with rec.lock:
            rec.busy -= 1
        rec.op(sched, start, time.time(), kind, status)
    conn.close()


def _populate(cfg: WorkloadConfig, rec: Recorder) -> None:
    todo: queue.Queue[int | None] = queue.Queue()
    for i in range(cfg.objects):
        todo.put(i)

    def put_all(seed: int) -> None:
        body = os.urandom(cfg.object_bytes)
        conn = Connection(cfg.proxy, cfg.timeout_s)
        conn.auth()
        while True:
            try:
                i = todo.get_nowait()
            except queue.Empty:
                break
            t = time.time()
            for _ in range(5):  # a populated space has every object
                try:
                    status = conn.put(cfg.container, object_name(i), body)
                except SwiftError:
                    status = 0
                if status // 100 == 2:
                    break
                time.sleep(0.5)
            rec.op(t, t, time.time(), "w", status)
        conn.close()

    conn = Connection(cfg.proxy, cfg.timeout_s)
    conn.auth()
    conn.put_container(cfg.container)
    conn.close()
    threads = [threading.Thread(target=put_all, args=(i,)) for i in range(cfg.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def run(cfg: WorkloadConfig) -> dict[str, int]:
    """Run ``cfg`` to its end; returns the counts."""
    t0 = cfg.t0 or time.time()
    while time.time() < t0:
        time.sleep(min(0.05, t0 - time.time()))
    rec = Recorder(cfg.out, t0)
    try:
        if cfg.mode == "populate":
            _populate(cfg, rec)
            return {"done": rec.done, "errors": rec.errors}
        stop = threading.Event()
        jobs: queue.Queue[float | None] | None = (
            queue.Queue() if cfg.mode == "target" else None)
        workers = [threading.Thread(target=_worker, args=(cfg, rec, jobs, stop,
                                                          cfg.seed * 1000 + i), daemon=True)
                   for i in range(cfg.threads)]
        for w in workers:
            w.start()
        issued, nxt, tick = 0, t0, t0 + 1.0
        end = t0 + cfg.duration_s
        while True:
            now = time.time()
            if now >= end:
                break
            if jobs is not None and now >= nxt:
                jobs.put(nxt)
                issued += 1
                nxt += 1.0 / cfg.target(nxt - t0)
                continue
            if now >= tick:
                rec.tick(queue=jobs.qsize() if jobs is not None else 0, issued=issued,
                         target=cfg.target(now - t0) if jobs is not None else None)
                tick += 1.0
                continue
            time.sleep(max(0.0, min(nxt if jobs is not None else end, tick, end) - now))
        stop.set()
        backlog = jobs.qsize() if jobs is not None else 0
        rec.tick(queue=backlog, issued=issued, final=True)
        if jobs is not None:
            for _ in workers:
                jobs.put(None)
        for w in workers:
            w.join(cfg.timeout_s + 1)
        return {"done": rec.done, "errors": rec.errors, "issued": issued,
                "unserved": backlog}
    finally:
        rec.close()


def main(argv: list[str] | None = None) -> None:
    data = json.loads(Path((argv or sys.argv[1:])[0]).read_text())
    data["schedule"] = [tuple(s) for s in data["schedule"]]
    counts = run(WorkloadConfig(**data))
    print(json.dumps(counts), flush=True)


if __name__ == "__main__":
    main()
