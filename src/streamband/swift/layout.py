"""Where a store on the testbed lives: its service ports (the two traffic classes
of 002 §III are told apart by them, 002 §V-C4) and its files.

Every storage host serves the same ports on its own address, so a port names a
service on every host:

- user-centric (client) traffic: the object, container and account servers;
- system-centric (recovery) traffic: the object replication server (REPLICATE,
  SSYNC) and the rsync daemon the replicator pushes to (002 §V-A: "replicator
  processes using the rsync Linux utility").
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from streamband.procs import RUN_DIR, Cleanup

OBJECT_PORT, CONTAINER_PORT, ACCOUNT_PORT = 6200, 6201, 6202
REPLICATION_PORT, RSYNC_PORT = 6300, 873
PROXY_PORT, MEMCACHED_PORT = 8080, 11211
USER_PORTS = (OBJECT_PORT, CONTAINER_PORT, ACCOUNT_PORT)
RECOVERY_PORTS = (REPLICATION_PORT, RSYNC_PORT)
DEVICE = "d1"
ACCOUNT, USER, KEY = "AUTH_test", "test:tester", "testing"

SWIFT_DIR = RUN_DIR / "swift"  # everything of the store's (removed by testbed clean)
STORE_DIR = SWIFT_DIR / "store"  # configs, rings, devices, logs of the running store
STATE = SWIFT_DIR / "cluster.json"  # the store that `streamband swift up` started


@dataclass(frozen=True)
class NodeFiles:
    """The files of one host of the store under ``root``."""

    root: Path

    @property
    def devices(self) -> Path:
        return self.root / "devices"

    @property
    def device(self) -> Path:
        return self.devices / DEVICE

    @property
    def log(self) -> Path:
        return self.root / "node.log"

    def conf(self, name: str) -> Path:
        return self.root / f"{name}.conf"


def node_files(host: str, base: Path = STORE_DIR) -> NodeFiles:
    return NodeFiles(base / host)


def _leftovers() -> list[str]:
    return [f"swift store {SWIFT_DIR}"] if SWIFT_DIR.exists() else []


def _clean() -> list[str]:
    gone = _leftovers()
    shutil.rmtree(SWIFT_DIR, ignore_errors=True)
    return gone


#: the Swift store's part of ``streamband testbed clean`` (entry point
#: ``streamband.cleanup``): its files, once its processes (marked) are gone
CLEANUP = Cleanup("swift", leftovers=_leftovers, clean=_clean, order=30)


class Hosts(Protocol):
    """The hosts the store runs on, as the testbed presents them
    (:class:`streamband.testbed.network.Testbed` is one): an address, a process and the
    switch port of each host."""

    def ip(self, host: str) -> str: ...

    def node(self, name: str) -> Any: ...

    def switch_port(self, host: str) -> str: ...

    def popen(self, host: str, cmd: list[str], **kw: Any) -> subprocess.Popen[Any]: ...

    def stop(self) -> None: ...
