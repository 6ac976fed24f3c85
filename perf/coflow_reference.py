"""Per-coflow CCTs of a revision's coflow engine, kept as the reference the faster
engines are compared with (every coflow's CCT within 1e-9 relative).

Run it on a checkout of the revision to freeze (its own ``make install``)::

    .venv/bin/python perf/coflow_reference.py OUT.json [--prefix N] [--policies a,b]
                                              [--topology T]

It writes, per run label (:data:`RUNS`: every registered scheduler, and
``stream-oracle (1 s timer)``), the CCT of every coflow (s, in trace order) of the
FB2010 trace (or its first N coflows) on the 150-port 1 Gbit/s (2^30 bit/s) big switch
(``--topology fat_tree:k=8``: that fabric, 1 Gbit/s links, the trace's racks spread
over its hosts), with its number of events, the revision and the command. Labels
already in OUT.json are kept, and written again only if asked for.

The files in ``perf/data/``:

- ``coflow_frozen_*.json``: the engine of ba76f65 (the per-group engine with lazy
  per-level fills), every run label, on the whole trace on the big switch and on
  prefixes of it on the big switch and the fat-trees k = 8 and 16: the references an
  engine that replaces it must match (every CCT within 1e-9 relative);
- ``coflow_reference_full.json``, ``coflow_reference_prefix60.json``,
  ``coflow_cct_prefix{100,200}.json``: older engines (see each file's ``revision``
  and ``revisions``), kept for history; ``stream`` there is the 1 s timer's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from streamband.shared import FB2010_TRACE, shared_dir
from streamband.sim.coflow.run import simulate
from streamband.sim.coflow.trace import read_trace
from streamband.sim.coflow.workloads import from_trace

TRACE = shared_dir().joinpath(*FB2010_TRACE)  # $STREAMBAND_SHARED, else ../shared
#: label -> (registry name, options)
RUNS: dict[str, tuple[str, dict]] = {
    "fs": ("fs", {}),
    "fs-static": ("fs-static", {}),
    "baraat": ("baraat", {}),
    "aalo": ("aalo", {}),
    "varys": ("varys", {}),
    "stream": ("stream", {}),
    "stream-oracle": ("stream-oracle", {}),
    "stream-oracle (1 s timer)": ("stream-oracle", {"starve_s": 1.0}),
}


def main(argv: list[str]) -> None:
    out = Path(argv[0])
    prefix = None
    labels = tuple(RUNS)
    topology = "big_switch"
    rest = argv[1:]
    while rest:
        opt, val, *rest = rest
        if opt == "--prefix":
            prefix = int(val)
        elif opt == "--policies":
            labels = tuple(val.split(","))
        elif opt == "--topology":
            topology = val
        else:
            raise SystemExit(f"unknown option {opt}")
    bad = [x for x in labels if x not in RUNS]
    if bad:
        raise SystemExit(f"unknown label {bad[0]!r}: expected among {', '.join(RUNS)}")
    tr = read_trace(TRACE)
    if prefix is not None:
        tr = tr.head(prefix)
    wl = from_trace(tr)
    rev = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                         cwd=Path(__file__).parent).stdout.strip()
    doc = json.loads(out.read_text()) if out.is_file() else {}
    doc.setdefault("revision", rev)
    doc.update({"trace": TRACE.name, "coflows": int(wl.n_coflows), "topology": topology,
                "link_gbps": 1.0})
    doc.setdefault("command", "perf/coflow_reference.py " + " ".join(argv))
    for key in ("cct", "events", "wall_s"):
        doc.setdefault(key, {})
    for label in labels:
        name, opts = RUNS[label]
        t0 = time.perf_counter()
        r = simulate(wl, name, topology, 1.0, **opts)
        doc["cct"][label] = [float(x) for x in r.result.cct]
        if rev != doc["revision"]:  # a label frozen again at another revision
            doc.setdefault("revisions", {})[label] = rev
        doc["events"][label] = int(r.result.events)
        doc["wall_s"][label] = time.perf_counter() - t0
        print(f"{label}: {r.result.events} events, {doc['wall_s'][label]:.1f} s", flush=True)
        out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
