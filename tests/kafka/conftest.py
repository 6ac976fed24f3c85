"""Kafka tests run a real broker (KRaft, one JVM) on loopback, on ports of their own;
each test that starts one checks that its clean-up leaves nothing."""

from __future__ import annotations

import pytest

from streamband.kafka import broker as kb

PORT, CONTROLLER_PORT = 19092, 19093


def spec() -> kb.BrokerSpec:
    return kb.BrokerSpec(port=PORT, controller_port=CONTROLLER_PORT)


def assert_gone() -> None:
    assert kb.CLEANUP.processes() == []
    assert kb.CLEANUP.leftovers() == []
    assert not kb.answers(spec(), timeout=0.5)


@pytest.fixture(scope="module")
def broker():
    """A broker on 127.0.0.1:19092 for the module's tests; stopped and checked gone."""
    b = kb.Broker(spec()).start()
    print(f"Kafka up in {b.started_s:.1f} s")
    try:
        yield b
    finally:
        b.stop()
        assert_gone()
