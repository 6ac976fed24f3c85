"""Per-coflow CCTs of a revision's coflow engine, kept as the reference the faster
engines are compared with (every coflow's CCT within 1e-9 relative).

Run it on a checkout of the revision to freeze (its own ``make install``)::

    .venv/bin/python perf/coflow_reference.py OUT.json [--prefix N] [--policies a,b]

It writes, per policy, the CCT of every coflow (s, in trace order) of the FB2010
trace (or its first N coflows) on the 150-port 1 Gbit/s (2^30 bit/s) big switch,
with the revision and the command. The figures in ``perf/data/`` were made this way
from the engine before the incremental rewrite, except ``aalo`` (``revisions``):
that engine demoted a coflow late when the event planned at its threshold crossing
found its bytes a rounding error short (see ``schedulers/crossing.py``); aalo's
CCTs were frozen again once that was fixed. ``varys`` on the whole trace comes from
a422535, the per-flow loop once it completed flows closer than one ulp of the clock
(before that it never ended on the whole trace).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from streamband.experiments import paper004
from streamband.shared import shared_dir
from streamband.sim.coflow.run import simulate
from streamband.sim.coflow.trace import read_trace
from streamband.sim.coflow.workloads import from_trace

TRACE = shared_dir().joinpath(*paper004.TRACE)  # $STREAMBAND_SHARED, else ../shared
POLICIES = ("fs", "fs-static", "baraat", "aalo", "stream", "varys")


def main(argv: list[str]) -> None:
    out = Path(argv[0])
    prefix = None
    policies = POLICIES
    rest = argv[1:]
    while rest:
        opt, val, *rest = rest
        if opt == "--prefix":
            prefix = int(val)
        elif opt == "--policies":
            policies = tuple(val.split(","))
        else:
            raise SystemExit(f"unknown option {opt}")
    tr = read_trace(TRACE)
    if prefix is not None:
        tr = tr.head(prefix)
    wl = from_trace(tr)
    rev = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                         cwd=Path(__file__).parent).stdout.strip()
    doc = json.loads(out.read_text()) if out.is_file() else {}
    doc.setdefault("revision", rev)
    doc.update({"trace": TRACE.name, "coflows": int(wl.n_coflows),
                "topology": "bigswitch", "link_gbps": 1.0})
    doc.setdefault("command", "perf/coflow_reference.py " + " ".join(argv))
    doc.setdefault("cct", {})
    doc.setdefault("events", {})
    doc.setdefault("wall_s", {})
    for pol in policies:
        t0 = time.perf_counter()
        r = simulate(wl, pol)
        doc["cct"][pol] = [float(x) for x in r.result.cct]
        if rev != doc["revision"]:  # a policy frozen again at another revision
            doc.setdefault("revisions", {})[pol] = rev
        doc["events"][pol] = int(r.result.events)
        doc["wall_s"][pol] = time.perf_counter() - t0
        print(f"{pol}: {r.result.events} events, {doc['wall_s'][pol]:.1f} s", flush=True)
        out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
