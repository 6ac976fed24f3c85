"""A store ready for experiments: the hosts (a testbed the caller's ``hosts`` starts),
the store on them, the object space populated, and the processes an experiment starts on
the client host (workload, dispersion monitor), all cleaned up on exit."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streamband.errors import PreconditionError
from streamband.model.testbed import TestbedSpec
from streamband.swift.cluster import SwiftCluster
from streamband.swift.integrity import DispersionConfig
from streamband.swift.layout import Hosts
from streamband.swift.spec import CLIENT, SwiftSpec
from streamband.swift.workload import WorkloadConfig

#: starts the hosts of a testbed spec, logging to a directory (``Testbed(spec,
#: log_dir=...).start()`` on the testbed)
StartHosts = Callable[[TestbedSpec, Path], Hosts]


class Session:
    """``with Session(spec, out, hosts) as s:`` a populated store on the hosts that
    ``hosts(spec.testbed, log_dir)`` starts; ``s.cluster``, ``s.tb``."""

    def __init__(self, spec: SwiftSpec, out: Path, hosts: StartHosts, console: Any = None,
                 populate: bool = True) -> None:
        self.spec = spec
        self.hosts = hosts
        self.do_populate = populate
        self.out = out
        self.console = console
        self.tb: Hosts | None = None
        self.cluster: SwiftCluster | None = None
        self.timings: dict[str, float] = {}

    def _say(self, text: str) -> None:
        if self.console is not None:
            self.console.print(text)

    def __enter__(self) -> Session:
        self.out.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        (self.out / "testbed").mkdir(exist_ok=True)
        try:
            self.tb = self.hosts(self.spec.testbed, self.out / "testbed")
        except PreconditionError as exc:
            raise PreconditionError(f"testbed: {exc}") from None
        try:
            self.timings["testbed_s"] = time.monotonic() - t0
            self.cluster = SwiftCluster(self.tb, self.spec).start()
            self.timings["swift_startup_s"] = self.cluster.startup_s
            self._say(f"store up: {self.spec.swift.storage_hosts} storage hosts, "
                      f"start-up {self.cluster.startup_s:.1f} s")
            if self.do_populate:
                t1 = time.monotonic()
                self.populate()
                self.timings["populate_s"] = time.monotonic() - t1
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None
        if self.tb is not None:
            self.tb.stop()
            self.tb = None

    # -- processes on the client host --------------------------------------------------
    def client_proc(self, module: str, conf: Path, log: Path) -> subprocess.Popen[Any]:
        assert self.tb is not None
        out = open(log, "wb")  # noqa: SIM115
        try:
            return self.tb.popen(CLIENT, [sys.executable, "-m", module, str(conf)],
                                 stdout=out, stderr=subprocess.STDOUT)
        finally:
            out.close()

    def workload(self, name: str, mode: str, duration_s: float = 0.0, t0: float = 0.0,
                 schedule: list[tuple[float, float]] | None = None,
                 threads: int | None = None) -> tuple[subprocess.Popen[Any], Path]:
        """Start the workload process; returns it and its JSON-lines log."""
        assert self.cluster is not None
        sw, wl = self.spec.swift, self.spec.workload
        log = self.out / f"{name}.ops.jsonl"
        log.unlink(missing_ok=True)
        cfg = WorkloadConfig(
            proxy=self.cluster.proxy_url, container=sw.container, objects=sw.objects,
            object_bytes=sw.object_bytes, out=str(log), mode=mode,
            threads=threads or wl.threads, read_share=wl.read_share,
            schedule=schedule or list(wl.schedule), duration_s=duration_s,
            timeout_s=wl.timeout_s, seed=wl.seed, t0=t0)
        conf = cfg.write(self.out / f"{name}.workload.json")
        return self.client_proc("streamband.swift.workload", conf,
                                self.out / f"{name}.workload.out"), log

    def dispersion(self, name: str, duration_s: float, t0: float, interval_s: float = 3.0,
                   sample: int | None = None) -> tuple[subprocess.Popen[Any], Path]:
        """Start the dispersion monitor; returns it and its JSON-lines log."""
        assert self.cluster is not None
        sw = self.spec.swift
        log = self.out / f"{name}.integrity.jsonl"
        log.unlink(missing_ok=True)
        cfg = DispersionConfig(str(self.cluster.swift_dir), sw.container, sw.objects,
                               sample or max(20, sw.objects // 15), interval_s, duration_s,
                               str(log), t0=t0)
        conf = cfg.write(self.out / f"{name}.integrity-conf.json")
        return self.client_proc("streamband.swift.integrity", conf,
                                self.out / f"{name}.integrity.out"), log

    def populate(self) -> None:
        """Write every object once, at the edge rate (the storage links go back to
        their rate afterwards)."""
        assert self.cluster is not None
        self.cluster.set_storage_links(self.spec.testbed.edge_mbps)
        try:
            proc, log = self.workload("populate", "populate", threads=8)
            out, _ = proc.communicate(timeout=600)
            if proc.returncode:
                raise PreconditionError(f"swift: populating failed ({proc.returncode})")
            recs = [json.loads(x) for x in log.read_text().splitlines() if '"op"' in x]
            bad = sum(r["st"] // 100 != 2 for r in recs)
            if bad or len(recs) != self.spec.swift.objects:
                raise PreconditionError(f"swift: populating wrote {len(recs) - bad} of "
                                        f"{self.spec.swift.objects} objects")
        finally:
            self.cluster.set_storage_links(self.spec.testbed.link_mbps)
        self._say(f"populated {self.spec.swift.objects} objects of "
                  f"{self.spec.swift.object_kb:g} KB")


def ops_log(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(requests, ticks) of a workload log."""
    ops, ticks = [], []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        (ops if rec["k"] == "op" else ticks).append(rec)
    return ops, ticks
