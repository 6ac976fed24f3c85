"""What the testbed started, so that clean-up (:mod:`streamband.testbed.clean`) can find
it after any crash.

- Every process the testbed starts (Mininet host shells and what runs in them, the
  controller, harness workers, iperf3) carries the project's mark
  (:func:`streamband.procs.marked_env`).
- Every bridge carries ``external_ids:streamband=1`` and a ``sbs`` name; every
  node and interface name starts with ``sb`` (``sbh3-eth0``, ``sbs1-eth3``).
- :data:`STATE` holds the state of the testbed that is up (JSON), beside the machine's
  ``tcp_allowed_congestion_control`` as it was before the testbed widened it.
"""

from __future__ import annotations

import json
from typing import Any

from streamband.procs import RUN_DIR

STATE = RUN_DIR / "testbed.json"
OVS_STARTED = RUN_DIR / "ovs-started"
ALLOWED_CC_BEFORE = RUN_DIR / "allowed-cc-before"
HOST_PREFIX, SWITCH_PREFIX = "sbh", "sbs"


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
