"""Testbed tests run for real (root, Mininet, OVS userspace, os-ken, iperf3): every
test leaves the machine as it found it (``clean`` in teardown)."""

from __future__ import annotations

import pytest

from streamband.procs import clean, leftovers


@pytest.fixture
def cleanup():
    clean()
    yield
    clean()
    assert leftovers() == []
