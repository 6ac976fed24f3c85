"""The failure generator of 002 §V-C3: "uniformly at random chooses a data node, in
which it deletes a specific number of files within a defined period of time",
repeated at the failure rate.

A deleted replica is gone from the node's device (its object directory removed)
and its suffix hash is invalidated, as Swift's object auditor does when it
quarantines a damaged object; the replicators of the surviving peers then find
the difference and push the replica back (002 §V-A: recovery by rsync).
"""

from __future__ import annotations

import json
import random
import shutil
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from streamband.swift.cluster import SwiftCluster
from streamband.swift.workload import object_name


@dataclass(frozen=True)
class Loss:
    """One deleted replica: object ``name`` on storage host ``host`` at ``path``."""

    name: str
    host: str
    path: str


@dataclass
class FailureEvent:
    """What one injection deleted, ``t`` seconds into the run."""

    t: float
    host: str
    losses: list[Loss]
    bytes: int


def restored(path: str | Path) -> bool:
    """Whether the replica at ``path`` (an object's hash directory) has data."""
    try:
        return any(p.suffix == ".data" for p in Path(path).iterdir())
    except OSError:
        return False


def replicas_on(cluster: SwiftCluster, objects: int) -> dict[str, list[Loss]]:
    """Every replica of the populated space, by storage host."""
    out: dict[str, list[Loss]] = {h: [] for h in cluster.storage}
    for i in range(objects):
        name = object_name(i)
        for host, path in cluster.replicas(name):
            out[host].append(Loss(name, host, str(path)))
    return out


def delete_replicas(losses: list[Loss]) -> int:
    """Delete these replicas from their devices; returns how many existed."""
    from swift.obj.diskfile import invalidate_hash

    n = 0
    for loss in losses:
        path = Path(loss.path)
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
            n += 1
        if path.parent.is_dir():
            invalidate_hash(str(path.parent))
    return n


class FailureGenerator:
    """Deletes ``share`` of a random node's replicas every ``every_s`` seconds of a
    run (from ``start_s`` until ``stop_s``), logging each event as a JSON line."""

    def __init__(self, cluster: SwiftCluster, objects: int, object_bytes: int,
                 share: float, every_s: float, start_s: float, stop_s: float | None,
                 seed: int, log: Path) -> None:
        self.cluster = cluster
        self.by_host = replicas_on(cluster, objects)
        self.by_name: dict[str, list[Loss]] = {}
        for losses in self.by_host.values():
            for x in losses:
                self.by_name.setdefault(x.name, []).append(x)
        self.object_bytes = object_bytes
        self.share, self.every_s = share, every_s
        self.start_s, self.stop_s = start_s, stop_s
        self.rng = random.Random(seed)
        self.log = log
        self.events: list[FailureEvent] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def inject(self, t: float, host: str | None = None, share: float | None = None
               ) -> FailureEvent:
        """Delete ``share`` of ``host``'s replicas now (random host when None). Only
        replicas of objects that have all their replicas are chosen, so no object
        ever loses more than one (recovery stays possible, integrity has one
        meaning: objects with a replica missing)."""
        host = host or self.rng.choice(self.cluster.storage)
        pool = self.by_host[host]
        k = max(1, round((share or self.share) * len(pool)))
        whole = [x for x in pool if all(restored(y.path) for y in self.by_name[x.name])]
        losses = self.rng.sample(whole, min(k, len(whole)))
        deleted = delete_replicas(losses)
        ev = FailureEvent(t, host, losses, deleted * self.object_bytes)
        self.events.append(ev)
        with open(self.log, "a") as f:
            f.write(json.dumps({"t": t, "host": host, "replicas": len(losses),
                                "deleted": deleted, "bytes": ev.bytes,
                                "losses": [asdict(x) for x in losses]}) + "\n")
        return ev

    def start(self, t0: float, duration_s: float) -> None:
        """Inject on schedule in a thread; ``t0`` is the run's time zero (wall clock)."""
        stop_at = min(self.stop_s or duration_s, duration_s)

        def loop() -> None:
            t = self.start_s
            while t < stop_at:
                if self._stop.wait(max(0.0, t0 + t - time.time())):
                    return
                self.inject(round(time.time() - t0, 3))
                t += self.every_s

        self._thread = threading.Thread(target=loop, name="failures", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
