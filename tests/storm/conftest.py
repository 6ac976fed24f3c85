"""Storm tests run for real: a testbed (Mininet + OVS userspace + the controller) with a
master and two worker hosts, and one Storm cluster on it shared by the module's tests;
everything is stopped and checked gone in teardown."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from streamband.model.testbed import load_spec
from streamband.procs import clean, leftovers
from streamband.sdn.client import ControllerClient
from streamband.storm.cluster import StormCluster, tagged_processes, testbed_spec
from streamband.testbed.network import Testbed


@pytest.fixture(scope="module")
def storm_testbed(tmp_path_factory: pytest.TempPathFactory):
    """(testbed, cluster): star of master + w1 + w2 at 20 Mbit/s, Storm up on it."""
    clean()
    out: Path = tmp_path_factory.mktemp("storm")
    spec = load_spec({"topology": "star", "hosts": 2, "master": True, "link_mbps": 20})
    tb = Testbed(spec, log_dir=out)
    cluster = None
    try:
        tb.start()
        ControllerClient(spec.api).wait_ready(1)
        t0 = time.monotonic()
        cluster = StormCluster(testbed_spec(tb.state(), out / "cluster")).start()
        print(f"storm up in {time.monotonic() - t0:.1f} s")
        yield tb, cluster
    finally:
        work = str(cluster.work) if cluster else None
        if cluster:
            cluster.stop()
        tb.stop()
        clean()
        assert leftovers() == []
        if work:
            assert tagged_processes(work) == []
