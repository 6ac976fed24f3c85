"""What the project started, so that clean-up can find it after any crash.

- Every process the testbed starts (Mininet host shells and what runs in them,
  the controller, harness workers, iperf3) carries ``STREAMBAND_TESTBED`` in its
  environment: :mod:`streamband.testbed.clean` kills by that mark, after ``kill -9``
  of anything.
- Every bridge carries ``external_ids:streamband=1`` and a ``sbs`` name; every
  node and interface name starts with ``sb`` (``sbh3-eth0``, ``sbs1-eth3``).
- Every Storm JVM (daemon, worker, log writer) runs from the ``storm.home`` the project
  built (``-Dstorm.home=``, its ``.complete`` file), marked or not.
- ``RUN_DIR`` holds the state of the testbed that is up (JSON), a lock, and the machine's
  ``tcp_allowed_congestion_control`` as it was before the testbed widened it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

RUN_DIR = Path(os.environ.get("STREAMBAND_RUN_DIR", "/run/streamband"))
STATE = RUN_DIR / "testbed.json"
OVS_STARTED = RUN_DIR / "ovs-started"
ALLOWED_CC_BEFORE = RUN_DIR / "allowed-cc-before"
MARK = "STREAMBAND_TESTBED"
HOST_PREFIX, SWITCH_PREFIX = "sbh", "sbs"


def marked_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a child process the project owns."""
    env = dict(os.environ)
    env[MARK] = str(os.getpid())
    env.update(extra or {})
    return env


def write_state(state: dict[str, Any]) -> None:
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    tmp = STATE.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1))
    tmp.replace(STATE)


def read_state() -> dict[str, Any] | None:
    try:
        return json.loads(STATE.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
