"""Testbed tests run for real (root, Mininet, OVS userspace, os-ken, iperf3): every
test leaves the machine as it found it (``clean`` in teardown). The waits below follow
from the design (a server listening, a lease plus the controller's lease check), not
from how long things took on an idle machine."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from streamband.procs import clean, leftovers
from streamband.sdn.app import Settings as ControllerSettings

#: how often the controller expires leases: a lease is gone at most this long after it ends
LEASE_CHECK_S = ControllerSettings().lease_check_s


@pytest.fixture
def cleanup():
    clean()
    yield
    clean()
    assert leftovers() == []


def listening(tb: Any, host: str, port: int, timeout: float = 60.0) -> None:
    """Wait until ``host`` listens on TCP ``port`` (a server just started there)."""
    deadline = time.monotonic() + timeout
    while f":{port} " not in tb.node(host).cmd(f"ss -ltnH 'sport = :{port}'") + " ":
        assert time.monotonic() < deadline, f"{host} does not listen on {port} ({timeout} s)"
        time.sleep(0.05)


def expires(read: Callable[[], Any], lease_left: float, every: float = 0.05) -> float:
    """Poll ``read()`` until it is empty; the seconds that took. It must not take longer
    than the lease left, the controller's lease check, this poll's period and the
    longest read (an overloaded machine makes reads slow, and the bound with them)."""
    t0, polls = time.monotonic(), []
    while True:
        t = time.monotonic()
        got = read()
        polls.append(time.monotonic() - t)
        if not got:
            break
        assert time.monotonic() - t0 < lease_left + 60, ("the lease did not expire", got)
        time.sleep(every)
    took = time.monotonic() - t0
    assert took <= lease_left + LEASE_CHECK_S + every + max(polls), (took, lease_left,
                                                                     max(polls))
    return took
