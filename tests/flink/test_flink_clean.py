"""Flink's part of ``streamband testbed clean`` after ``kill -9`` of what started a cluster
(on loopback)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from streamband.flink import cluster as fc
from streamband.procs import terminate

from .conftest import BASE_PORT, assert_gone

_START = """
import sys, time
from pathlib import Path
from streamband.flink import cluster as fc
spec = fc.loopback_spec(Path(sys.argv[1]), 1, base_port=int(sys.argv[2]))
fc.FlinkCluster(spec).start()
print("up", flush=True)
time.sleep(3600)
"""


def test_clean_after_kill9(tmp_path: Path):
    """The process that started a cluster dies by ``kill -9``: Flink's clean-up entry
    finds the JobManager and TaskManager JVMs (by the home on their command line) and the
    state file; once they are stopped and the state removed, nothing of Flink's is left."""
    work = tmp_path / "cluster"
    starter = subprocess.Popen([sys.executable, "-c", _START, str(work), str(BASE_PORT + 500)],
                               stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert starter.stdout is not None
        assert starter.stdout.readline().strip() == "up"
        os.kill(starter.pid, signal.SIGKILL)
        starter.wait()
        pids = fc.CLEANUP.processes()
        mine = fc.tagged_processes(str(work.resolve()))
        assert len(mine) == 2 and set(mine) <= set(pids)
        assert fc.CLEANUP.leftovers() == []  # the JVMs are alive: the state is not stale
        assert terminate(pids, 5.0) == []
        assert fc.CLEANUP.leftovers() == [f"flink state {fc.STATE}"]
        assert fc.CLEANUP.clean() == [f"flink state {fc.STATE}"]
        assert_gone(work)
    finally:
        for p in fc.tagged_processes(str(work.resolve())):
            os.kill(p, signal.SIGKILL)
