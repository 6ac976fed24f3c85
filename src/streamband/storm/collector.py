"""The manager's end of the application profiler (000 §V-A2): receives the workers'
and benchmark tasks' datagrams and keeps the latest of each, written as one JSON
snapshot (atomically, every ``--every`` seconds) that the manager's profiler reads.

``python -m streamband.storm.collector --listen HOST:PORT --out FILE``
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import time
from pathlib import Path
from typing import Any


def key(rec: dict[str, Any]) -> str:
    """One slot per reporting thing: a worker (flow reports) or a task (spout, sink)."""
    if rec.get("type") == "flow":
        return f"{rec.get('topology')}|{rec.get('host')}:{rec.get('port')}"
    return f"{rec.get('topology')}|{rec.get('component')}:{rec.get('task')}"


def serve(listen: str, out: Path, every: float = 0.25) -> None:
    host, _, port = listen.rpartition(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((host, int(port)))
    sock.settimeout(every)
    latest: dict[str, dict[str, dict[str, Any]]] = {"flow": {}, "spout": {}, "sink": {}}
    received = 0
    last_write = 0.0
    tmp = out.with_suffix(".tmp")
    while True:
        try:
            data, _ = sock.recvfrom(65536)
            rec = json.loads(data)
            rec["recv"] = time.time()
            latest.setdefault(str(rec.get("type")), {})[key(rec)] = rec
            received += 1
        except (TimeoutError, json.JSONDecodeError, UnicodeDecodeError):
            pass
        now = time.monotonic()
        if now - last_write >= every:
            tmp.write_text(json.dumps({"time": time.time(), "received": received, **latest}))
            os.replace(tmp, out)
            last_write = now


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--listen", required=True)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--every", type=float, default=0.25)
    a = ap.parse_args(argv)
    serve(a.listen, a.out, a.every)


if __name__ == "__main__":
    main()
