"""The process behind ``streamband testbed up``: it holds the Mininet net (its
namespaces live as long as the host shells do) until SIGTERM."""

from __future__ import annotations

import signal
import sys
import threading

from streamband.model.testbed import load_spec
from streamband.testbed.network import Testbed


def main(argv: list[str] | None = None) -> None:
    spec = load_spec((argv or sys.argv[1:])[0])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with Testbed(spec):
        stop.wait()


if __name__ == "__main__":
    main()
