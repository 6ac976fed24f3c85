"""A Swift store on the testbed (002 §V-C1): a proxy host (proxy server, memcached),
storage hosts (object, container, account and object replication servers, the
object replicator, an rsync daemon) and a client host, each a Mininet host on the
testbed's star, every server bound to its host's address so that client,
replication and recovery traffic cross the switch and the shaped links.

Each host's servers run as green threads of one process
(:mod:`streamband.swift.node`), so the store starts in seconds. Every process
carries the testbed's clean-up mark (``streamband testbed clean`` stops them).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from streamband.errors import PreconditionError
from streamband.swift import configs
from streamband.swift.layout import (
    ACCOUNT,
    MEMCACHED_PORT,
    PROXY_PORT,
    STATE,
    STORE_DIR,
    Hosts,
    node_files,
)
from streamband.swift.rings import build_rings
from streamband.swift.spec import CLIENT, PROXY, SwiftSpec

TOOLS = {"memcached": "memcached", "rsync": "rsync", "mnexec": "mininet", "tc": "iproute2"}


def check_tools() -> None:
    """Raise :class:`PreconditionError` (one line) unless the store can start here."""
    if os.geteuid() != 0:
        raise PreconditionError("swift: the testbed needs root (network namespaces, "
                                "Open vSwitch)")
    for tool, pkg in TOOLS.items():
        if shutil.which(tool) is None:
            raise PreconditionError(f"swift: {tool} is not installed (apt-get install {pkg})")
    try:
        import swift.obj.replicator  # noqa: F401
        import swift.proxy.server  # noqa: F401
    except ImportError:
        raise PreconditionError(
            "swift: OpenStack Swift is not importable (apt-get install swift swift-proxy "
            "swift-object swift-account swift-container; a venv made from /usr/bin/python3 "
            "with --system-site-packages)") from None


class SwiftCluster:
    """The store's processes on a started set of hosts
    (:class:`~streamband.swift.layout.Hosts`); ``with`` starts/stops."""

    def __init__(self, tb: Hosts, spec: SwiftSpec, base: Path = STORE_DIR,
                 split: bool = False) -> None:
        self.tb = tb
        self.split = split  # one process per server (the baseline of perf/swift_startup)
        self.launches: list[Path] = []
        self.spec = spec
        self.base = base
        self.swift_dir = base / "etc"
        self.storage = spec.storage
        self.procs: dict[str, subprocess.Popen[Any]] = {}
        self.startup_s = float("nan")
        self._ring: Any = None

    # -- addresses --------------------------------------------------------------
    def ip(self, host: str) -> str:
        return self.tb.ip(host)

    @property
    def proxy_url(self) -> str:
        return f"http://{self.ip(PROXY)}:{PROXY_PORT}"

    def device_dir(self, host: str) -> Path:
        return node_files(host, self.base).device

    # -- life cycle ---------------------------------------------------------------
    def start(self, timeout: float = 60.0) -> SwiftCluster:
        t0 = time.monotonic()
        if self.base.exists():
            shutil.rmtree(self.base)
        self.base.mkdir(parents=True)
        STATE.parent.mkdir(parents=True, exist_ok=True)
        build_rings(self.swift_dir, [self.ip(h) for h in self.storage],
                    self.spec.swift.replicas, self.spec.swift.part_power)
        try:
            self._start_proxy()
            for h in self.storage:
                self._start_storage(h)
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - t0
        self._write_state()
        return self

    def _spawn(self, host: str, name: str, cmd: list[str]) -> None:
        log = open(node_files(host, self.base).root / f"{name}.out", "wb")  # noqa: SIM115
        self.procs[f"{host}/{name}"] = self.tb.popen(host, cmd, stdout=log,
                                                     stderr=subprocess.STDOUT)
        log.close()

    def _start_proxy(self) -> None:
        files = node_files(PROXY, self.base)
        launches = configs.write_proxy(files, self.swift_dir, self.ip(PROXY))
        self._spawn(PROXY, "memcached", ["memcached", "-u", "root", "-l", self.ip(PROXY),
                                         "-p", str(MEMCACHED_PORT), "-m", "64", "-t", "1",
                                         "-U", "0"])
        self._nodes(PROXY, launches)

    def _nodes(self, host: str, launches: list[Path]) -> None:
        for path in launches:
            self._spawn(host, path.stem.replace("launch", "node"),
                        [sys.executable, "-m", "streamband.swift.node", str(path)])
        self.launches += launches

    def _start_storage(self, host: str) -> None:
        files = node_files(host, self.base)
        launches = configs.write_storage(files, self.swift_dir, self.ip(host), self.spec.swift,
                                         self.split)
        self._spawn(host, "rsyncd", ["rsync", "--daemon", "--no-detach",
                                     f"--config={files.conf('rsyncd')}"])
        self._nodes(host, launches)

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        waiting = list(self.launches)
        while waiting:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    host, what = name.split("/")
                    out = node_files(host, self.base).root / f"{what}.out"
                    tail = out.read_text(errors="replace").strip().splitlines()[-1:] \
                        if out.exists() else []
                    raise PreconditionError(
                        f"swift: {what} on {host} exited ({p.returncode}): "
                        f"{tail[0] if tail else 'no output'}")
            waiting = [p for p in waiting if not p.with_suffix(".ready").exists()]
            if time.monotonic() > deadline:
                names = ", ".join(f"{p.parent.name}/{p.stem}" for p in waiting)
                raise PreconditionError(f"swift: not ready after {timeout:.0f} s: {names}")
            time.sleep(0.05)

    def stop(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
        for p in self.procs.values():
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass
        self.procs.clear()
        STATE.unlink(missing_ok=True)
        if self.base.exists():
            shutil.rmtree(self.base, ignore_errors=True)
        with contextlib.suppress(OSError):  # the store's directory, once empty
            self.base.parent.rmdir()

    def __enter__(self) -> SwiftCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def set_storage_links(self, mbps: float) -> None:
        """Re-rate every storage link (both ends' HTB root class); the population
        is written at the edge rate, then the links go back to the spec's rate."""
        from streamband.swift.tc import tc_batch

        for h in self.storage:
            node = self.tb.node(h)
            for dev, pid in ((node.intfList()[0].name, node.pid),
                             (self.tb.switch_port(h), None)):
                tc_batch([f"class change dev {dev} parent 5:0 classid 5:1 htb "
                          f"rate {mbps * 1e6:.0f}bit burst 15k"], pid)

    # -- what it is ---------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "proxy": self.proxy_url,
            "account": ACCOUNT,
            "hosts": {h: self.ip(h) for h in (CLIENT, PROXY, *self.storage)},
            "storage": self.storage,
            "replicas": self.spec.swift.replicas,
            "startup_s": self.startup_s,
            "processes": {n: p.pid for n, p in self.procs.items()},
            "dir": str(self.base),
        }

    def _write_state(self) -> None:
        tmp = STATE.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state(), indent=1))
        tmp.replace(STATE)

    def node_pids(self) -> dict[str, int]:
        """The pid of every process of the store (memcached, rsyncd, node), by name.
        ``tb.popen`` starts them under ``mnexec``, which execs in place."""
        return {n: p.pid for n, p in self.procs.items()}

    def usage(self) -> dict[str, float]:
        """Memory (resident MB) and CPU time (s) of the store's processes and their
        children (rsync clients of the replicators included)."""
        roots = set(self.node_pids().values())
        kids: dict[int, list[int]] = {}
        stats: dict[int, list[str]] = {}
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                f = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(d.name)] = f
            kids.setdefault(int(f[1]), []).append(int(d.name))
        todo, seen = list(roots), set()
        while todo:
            p = todo.pop()
            if p in seen or p not in stats:
                continue
            seen.add(p)
            todo += kids.get(p, [])
        tick = os.sysconf("SC_CLK_TCK")
        page = os.sysconf("SC_PAGE_SIZE")
        # user + system time, own and of waited-for children (the rsync clients)
        cpu = sum(sum(int(x) for x in stats[p][11:15]) / tick for p in seen)
        rss = 0
        for p in seen:
            try:
                rss += int(Path(f"/proc/{p}/statm").read_text().split()[1]) * page
            except OSError:
                pass
        return {"processes": len(seen), "rss_mb": rss / 1e6, "cpu_s": cpu}

    # -- where objects live -------------------------------------------------------------
    @property
    def ring(self) -> Any:
        if self._ring is None:
            from swift.common.ring import Ring

            self._ring = Ring(str(self.swift_dir), ring_name="object")
        return self._ring

    def replicas(self, name: str) -> list[tuple[str, Path]]:
        """``(storage host, hash directory)`` of each replica of object ``name`` in
        the bench container (002's data space)."""
        from swift.common.utils import hash_path

        part, nodes = self.ring.get_nodes(ACCOUNT, self.spec.swift.container, name)
        digest = hash_path(ACCOUNT, self.spec.swift.container, name)
        by_ip = {self.ip(h): h for h in self.storage}
        out = []
        for n in nodes:
            host = by_ip[n["ip"]]
            out.append((host, self.device_dir(host) / "objects" / str(part) / digest[-3:]
                        / digest))
        return out

