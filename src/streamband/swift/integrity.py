"""Data integrity of the store, two ways.

- :class:`DispersionMonitor` (002 §V-C3, "we customized the swift-dispersion tool
  in order to populate and monitor the integrity of the whole data space"): a fixed
  random sample of the object space; every ``interval_s`` it HEADs every replica of
  every sampled object directly on its object server (through the network, like
  swift-dispersion-report) and reports the share of sampled objects with all
  replicas. Runs on the client host: ``python -m streamband.swift.integrity CONF``.
- :class:`RecoveryTracker`: the replicas the failure generator deleted, looked up
  on the devices: how many bytes are still missing, hence the recovery speed in
  MB/s (002 §III-B's system-centric metric) and when recovery completed.
"""

from __future__ import annotations

import json
import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from streamband.swift.client import direct_head
from streamband.swift.failures import Loss, restored
from streamband.swift.layout import ACCOUNT, DEVICE, OBJECT_PORT
from streamband.swift.workload import object_name


class RecoveryTracker:
    """Lost replicas until they are back. ``poll`` every control interval."""

    def __init__(self, object_bytes: int) -> None:
        self.object_bytes = object_bytes
        self.lost: dict[tuple[str, str], Loss] = {}
        self.series: list[tuple[float, int]] = []  # (t, replicas missing)
        self.lock = threading.Lock()
        self.last_loss_t = 0.0

    def add(self, t: float, losses: list[Loss]) -> None:
        with self.lock:
            for x in losses:
                self.lost[(x.host, x.name)] = x
            self.last_loss_t = t

    def poll(self, t: float) -> int:
        """Drop what is back; record and return the replicas still missing."""
        with self.lock:
            back = [k for k, x in self.lost.items() if restored(x.path)]
            for k in back:
                del self.lost[k]
            n = len(self.lost)
            self.series.append((t, n))
            return n

    @property
    def missing_bytes(self) -> int:
        with self.lock:
            return len(self.lost) * self.object_bytes

    def speed_mbs(self, since: float, added_bytes: float = 0.0) -> float:
        """Recovery speed (MB/s) between ``since`` and the last poll: bytes restored
        over the time (``added_bytes`` lost in between are counted as restored work
        still to do, so they do not hide restores)."""
        pts = [(t, n) for t, n in self.series if t >= since]
        if len(pts) < 2 or pts[-1][0] <= pts[0][0]:
            return 0.0
        restored_b = (pts[0][1] - pts[-1][1]) * self.object_bytes + added_bytes
        return max(0.0, restored_b) / (pts[-1][0] - pts[0][0]) / 1e6


@dataclass
class DispersionConfig:
    """What one monitor process samples (written as JSON by the driver)."""

    swift_dir: str
    container: str
    objects: int
    sample: int
    interval_s: float
    duration_s: float
    out: str
    t0: float = 0.0
    seed: int = 3
    threads: int = 4

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps(asdict(self)))
        return path


class DispersionMonitor:
    """The sampled integrity of the object space (share of objects whose replicas
    are all present), as swift-dispersion-report measures it."""

    def __init__(self, cfg: DispersionConfig) -> None:
        from swift.common.ring import Ring

        self.cfg = cfg
        ring = Ring(cfg.swift_dir, ring_name="object")
        rng = random.Random(cfg.seed)
        names = [object_name(i) for i in rng.sample(range(cfg.objects),
                                                    min(cfg.sample, cfg.objects))]
        self.targets: list[tuple[str, int, list[str]]] = []
        for name in names:
            part, nodes = ring.get_nodes(ACCOUNT, cfg.container, name)
            self.targets.append((name, part, [n["ip"] for n in nodes]))

    def sweep(self, pool: ThreadPoolExecutor) -> dict[str, Any]:
        """HEAD every replica of the sample once."""

        def check(target: tuple[str, int, list[str]]) -> int:
            name, part, ips = target
            return sum(direct_head(ip, OBJECT_PORT, DEVICE, part, ACCOUNT,
                                   self.cfg.container, name) // 100 == 2 for ip in ips)

        found = list(pool.map(check, self.targets))
        full = sum(f == len(t[2]) for f, t in zip(found, self.targets, strict=True))
        return {"sampled": len(self.targets), "complete": full,
                "replicas_found": sum(found),
                "replicas": sum(len(t[2]) for t in self.targets),
                "integrity": full / max(1, len(self.targets))}

    def run(self) -> None:
        t0 = self.cfg.t0 or time.time()
        end = t0 + self.cfg.duration_s
        with open(self.cfg.out, "a", buffering=1) as f, \
                ThreadPoolExecutor(self.cfg.threads) as pool:
            nxt = max(t0, time.time())
            while nxt < end:
                time.sleep(max(0.0, nxt - time.time()))
                start = time.time()
                rec = self.sweep(pool)
                rec["t"] = round(start - t0, 3)
                rec["sweep_s"] = round(time.time() - start, 3)
                f.write(json.dumps(rec) + "\n")
                nxt += self.cfg.interval_s


def main(argv: list[str] | None = None) -> None:
    cfg = DispersionConfig(**json.loads(Path((argv or sys.argv[1:])[0]).read_text()))
    DispersionMonitor(cfg).run()


if __name__ == "__main__":
    main()
