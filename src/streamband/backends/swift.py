"""Swift as a backend: the process behind ``streamband swift up``, which holds the
testbed and the store on it (the namespaces live as long as the host shells do) until
SIGTERM. Paper 002's runs themselves are :mod:`streamband.experiments.paper002`."""

from __future__ import annotations

import json
import signal
import sys
import threading

from streamband.swift.layout import STATE, SWIFT_DIR
from streamband.swift.session import Session
from streamband.swift.spec import load
from streamband.testbed.network import started


def main(argv: list[str] | None = None) -> None:
    args = argv or sys.argv[1:]
    spec = load(args[0])
    populate = len(args) < 2 or args[1] != "--no-populate"
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with Session(spec, SWIFT_DIR / "session", started, populate=populate) as s:
        assert s.cluster is not None
        state = {**s.cluster.state(), **s.timings, "ready": True,
                 "populated": spec.swift.objects if populate else 0}
        tmp = STATE.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=1))
        tmp.replace(STATE)
        stop.wait()


if __name__ == "__main__":
    main()
