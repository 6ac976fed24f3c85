"""``streamband kafka up | status | down`` on loopback: the broker answers a Kafka request,
status shows it, a second ``up`` is refused, ``down`` stops it, and what ``testbed clean``
would find of it (:data:`streamband.kafka.broker.CLEANUP`) is nothing after ``down`` and
everything before."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from streamband.kafka import broker as kb
from streamband.procs import MARK, terminate

from .conftest import CONTROLLER_PORT, PORT, assert_gone, spec


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streamband.cli", "kafka", *args],
                          capture_output=True, text=True, timeout=300)


def test_up_status_down():
    r = _cli("up", "--port", str(PORT), "--controller-port", str(CONTROLLER_PORT))
    try:
        assert r.returncode == 0, r.stderr
        st = json.loads(_cli("status").stdout)
        assert st["up"] and st["answers"] and st["bootstrap"] == f"127.0.0.1:{PORT}"
        assert 0 < st["rss_mb"] < 1024  # -Xmx384m plus the JVM's own
        assert kb.answers(spec())
        assert kb.CLEANUP.processes() == [st["pid"]]
        assert kb.CLEANUP.leftovers() == [f"kafka state {kb.STATE_DIR}"]
        again = _cli("up", "--port", str(PORT + 10))
        assert again.returncode == 2 and "already up" in again.stderr
    finally:
        down = _cli("down")
    assert down.returncode == 0, down.stderr
    assert json.loads(_cli("status").stdout)["up"] is False
    assert_gone()
    assert _cli("down").returncode == 2


def test_cleanup_finds_an_unmarked_broker():
    """A broker started without the project's mark (its launcher gone) is still found by
    its command line, stopped, and its state removed, as ``testbed clean`` does."""
    env = {k: v for k, v in os.environ.items() if k != MARK}
    r = subprocess.run([sys.executable, "-c", "from streamband.kafka.broker import Broker; "
                        "from tests.kafka.conftest import spec; Broker(spec()).start()"],
                       env=env, capture_output=True, text=True, timeout=300)
    try:
        assert r.returncode == 0, r.stderr
        pids = kb.CLEANUP.processes()
        assert len(pids) == 1 and kb.answers(spec())
    finally:
        terminate(kb.CLEANUP.processes(), grace_s=5.0)
        removed = kb.CLEANUP.clean()
    assert removed == [f"kafka state {kb.STATE_DIR}"]
    assert_gone()
