"""Flink tests run for real: a session cluster from the cached Flink home (loopback
addresses, ports of their own), or on the testbed (root); each test that starts one checks
that its clean-up leaves nothing of Flink's. They never run the project-wide clean-up on
loopback, which would also stop whatever else of the project runs on this machine."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from streamband.flink import cluster as fc
from streamband.procs import marked_env, stop

#: loopback ports: 30000 + Flink's defaults (REST 38081, RPC 36123, TaskManagers 36221...)
BASE_PORT = 30000


def assert_gone(work: Path) -> None:
    assert fc.tagged_processes(str(Path(work).resolve())) == []
    assert fc.CLEANUP.processes() == []
    assert fc.CLEANUP.leftovers() == []


def receiver(spec: fc.ClusterSpec, snapshot: Path) -> subprocess.Popen[bytes]:
    """The profile receiver on the cluster's collector address, writing ``snapshot``,
    tagged with the cluster (stopped with it at the latest)."""
    return subprocess.Popen([sys.executable, "-m", "streamband.loop.reports", "--listen",
                             spec.collector, "--out", str(snapshot), "--every", "0.2"],
                            env=marked_env({fc.TAG: str(Path(spec.work_dir).resolve())}),
                            start_new_session=True)


@pytest.fixture(scope="module")
def flink_cluster(tmp_path_factory: pytest.TempPathFactory):
    """Two TaskManagers on 127.0.0.2-3, one slot each, their reporters sending to
    ``spec.collector`` (whoever the test has listening there); stopped and checked gone."""
    work = tmp_path_factory.mktemp("flink") / "cluster"
    spec = fc.loopback_spec(work, 2, base_port=BASE_PORT)
    cluster = fc.FlinkCluster(spec)
    try:
        t0 = time.monotonic()
        cluster.start()
        print(f"Flink up in {time.monotonic() - t0:.1f} s: {fc.usage(str(cluster.work))}")
        yield cluster
    finally:
        cluster.stop()
        assert_gone(work)


@pytest.fixture
def loopback(flink_cluster: fc.FlinkCluster):
    """(cluster, snapshot): the module's cluster and, for this test, a receiver on its
    collector address writing ``snapshot``."""
    snapshot = flink_cluster.work / "profile.json"
    proc = receiver(flink_cluster.spec, snapshot)
    try:
        yield flink_cluster, snapshot
    finally:
        stop(proc)
