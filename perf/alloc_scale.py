"""How long one allocation takes, for ``appaware`` (000 Algorithm 1 + the backfill of
§VI-C) and ``maxmin`` (the TCP model), at three sizes:

(a) the papers' apps: the allocation problems the manager loop solves for 001's
    fork-join and 000's Trending Topics and Trucking IoT, captured from simulator runs
    (000 §VI-D reports 6 ms for its optimizer); goal <= 1 ms;
(b) 100,000 flows between random hosts of fat_tree(48) (27,648 hosts); goal <= 50 ms;
(c) 1,000,000 flows between random hosts of fat_tree(64) (65,536 hosts); goal <= 1 s.

The policies run in the compiled kernel (``rust/alloc_core``). The baseline, run here on
the same problems, interleaved with the kernel, is the numpy implementation
(``appaware_numpy``, ``maxmin_rates_numpy``); the script checks the kernel's rates equal
the baseline's to the last bit on every problem and exits 1 if one differs. Times are
medians of repeated calls: wall clock (what the goals are about) and, beside it, the
calling thread's CPU time, which other jobs on a shared machine disturb less. Peak memory:
the peak resident set during one call above the resident set before it (Linux
``/proc/self/clear_refs``). Fat-tree flows are routed by the vectorised ECMP of
``model.fabric`` (set-up, not timed); flow states are random 5-metric tuples
(000 §IV-A1) with about half a link's worth of demand per flow.

Run: ``.venv/bin/python perf/alloc_scale.py [--quick]`` (``--quick``: (c) at 200,000
flows, fewer repetitions).
"""

from __future__ import annotations

import ctypes
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from streamband.alloc import appaware, maxmin
from streamband.alloc.appaware import appaware_numpy
from streamband.alloc.base import AllocProblem, FlowState
from streamband.alloc.common import bottlenecked_links, entries
from streamband.alloc.maxmin import maxmin_rates_numpy
from streamband.model.fabric import FatTreeFabric

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_alloc_cases import paper_problems  # noqa: E402  (the tests' captured problems)

Alloc = Callable[[AllocProblem], np.ndarray]


def maxmin_numpy(p: AllocProblem) -> np.ndarray:
    return maxmin_rates_numpy(p.routing, p.capacity, p.demand_bps())


POLICIES: tuple[tuple[str, Alloc, Alloc], ...] = (
    ("appaware", appaware, appaware_numpy),
    ("maxmin", maxmin, maxmin_numpy),
)


def fat_tree_problems(k: int, n_flows: int, n_states: int, rng: np.random.Generator,
                      link_bps: float = 1e9) -> list[AllocProblem]:
    """``n_flows`` flows between random distinct hosts of fat_tree(k), ECMP-routed; one
    routing matrix, ``n_states`` random flow states on it."""
    fab = FatTreeFabric(k, link_bps)
    topo = fab.topology
    assert topo is not None
    h = fab.n_hosts
    src = rng.integers(h, size=n_flows)
    dst = (src + 1 + rng.integers(h - 1, size=n_flows)) % h
    table = fab.paths(src, dst, np.arange(n_flows))
    on = table < fab.n_links  # drop the padding link
    indptr = np.concatenate(([0], np.cumsum(on.sum(axis=1)))).astype(np.int32)
    indices = table[on].astype(np.int32)
    r = sp.csr_matrix((np.ones(len(indices)), indices, indptr), shape=(n_flows, fab.n_links))
    cap, kinds = topo.capacities, topo.kinds
    scale = link_bps / 8 / 2  # bytes; Δt = 1 s

    def metric() -> np.ndarray:
        return rng.uniform(0, scale, n_flows) * (rng.random(n_flows) < 0.8)

    return [AllocProblem(r, cap, kinds, FlowState(*(metric() for _ in range(5))), 1.0)
            for _ in range(n_states)]


# -- measuring -------------------------------------------------------------------------


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def peak_mib(f: Alloc, p: AllocProblem) -> float:
    """Peak resident memory during ``f(p)`` above the resident set before it, MiB (freed
    heap memory is handed back first, so that reusing it counts)."""
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as fh:  # resets VmHWM to VmRSS (Linux >= 4.0)
        fh.write("5")
    before = _status_kib("VmRSS")
    f(p)
    return (_status_kib("VmHWM") - before) / 1024


@dataclass
class Row:
    size: str
    policy: str
    goal_s: float
    kernel_s: float  # wall, median
    kernel_spread: tuple[float, float]  # wall, min and max
    kernel_cpu_s: float  # this thread's CPU time, median
    numpy_s: float
    numpy_cpu_s: float
    kernel_mib: float
    numpy_mib: float
    equal: bool

    @property
    def ok(self) -> bool:
        return self.kernel_s <= self.goal_s


def measure(size: str, goal_s: float, probs: list[AllocProblem], reps: int,
            progress: Progress) -> list[Row]:
    """Median wall and CPU time of kernel and baseline over ``reps`` x ``probs`` calls
    (interleaved, so both see the same load), peak memory on the first problem,
    exactness on all."""
    rows = []
    task = progress.add_task(size, total=len(POLICIES) * reps * len(probs))
    for name, fast, base in POLICIES:
        tk, ck, tb, cb = [], [], [], []
        equal = True
        for _ in range(reps):
            for p in probs:
                xk, wall, cpu = timed(fast, p)
                tk.append(wall)
                ck.append(cpu)
                xb, wall, cpu = timed(base, p)
                tb.append(wall)
                cb.append(cpu)
                equal &= bool(np.array_equal(xk, xb))
                progress.advance(task)
        big = probs[0]
        med = lambda v: float(np.median(v))  # noqa: E731
        rows.append(Row(size, name, goal_s, med(tk), (min(tk), max(tk)), med(ck), med(tb),
                        med(cb), peak_mib(fast, big), peak_mib(base, big), equal))
    return rows


def timed(f: Alloc, p: AllocProblem) -> tuple[np.ndarray, float, float]:
    """``f(p)``, its wall time and this thread's CPU time (s)."""
    t0, c0 = time.perf_counter(), time.thread_time()
    x = f(p)
    return x, time.perf_counter() - t0, time.thread_time() - c0


def describe(label: str, probs: list[AllocProblem], console: Console) -> None:
    p = probs[0]
    b = bottlenecked_links(entries(p.routing), p.capacity, p.demand_bps(), None)
    console.print(f"{label}: {len(probs)} problems, {p.n_flows:,} flows, "
                  f"{p.routing.nnz:,} flow-link entries, {len(b):,} links, "
                  f"{int(b.sum()):,} bottlenecked (first problem)")


def main() -> int:
    quick = "--quick" in sys.argv
    console = Console(width=220)
    rng = np.random.default_rng(0)
    load0 = os.getloadavg()
    sizes: list[tuple[str, float, list[AllocProblem], int]] = []

    t0 = time.perf_counter()
    apps = list(paper_problems(30.0 if quick else 120.0))
    counts = sorted({p.n_flows for p in apps})
    label = f"(a) the papers' apps, {counts[0]}-{counts[-1]} flows"
    console.print(f"{label}: {len(apps)} captured problems "
                  f"({time.perf_counter() - t0:.1f} s)")
    sizes.append((label, 1e-3, apps, 3 if quick else 10))
    for k, n, goal, reps in ((48, 100_000, 0.05, 3 if quick else 5),
                             (64, 200_000 if quick else 1_000_000, 1.0, 2 if quick else 3)):
        t0 = time.perf_counter()
        probs = fat_tree_problems(k, n, 3, rng)
        label = f"({'b' if k == 48 else 'c'}) fat_tree({k}), {n:,} flows"
        console.print(f"{label}: built and routed in {time.perf_counter() - t0:.1f} s (not timed)")
        describe(label, probs, console)
        sizes.append((label, goal, probs, reps))

    rows: list[Row] = []
    with Progress(console=console, transient=True) as progress:
        for label, goal, probs, reps in sizes:
            rows += measure(label, goal, probs, reps, progress)
    load1 = os.getloadavg()

    table = Table(title="one allocation: compiled kernel vs numpy baseline, medians "
                  "(wall; CPU = this thread's CPU time)")
    for col in ("size", "policy", "kernel ms", "min-max ms", "kernel CPU ms", "goal ms",
                "goal", "numpy ms", "numpy CPU ms", "numpy / kernel", "peak MiB kernel",
                "peak MiB numpy", "equal to the bit"):
        table.add_column(col, justify="left" if col in ("size", "policy") else "right")
    for r in rows:
        lo, hi = r.kernel_spread
        table.add_row(r.size, r.policy, f"{r.kernel_s * 1e3:.3f}",
                      f"{lo * 1e3:.3f}-{hi * 1e3:.3f}", f"{r.kernel_cpu_s * 1e3:.3f}",
                      f"{r.goal_s * 1e3:g}", "ok" if r.ok else "OVER",
                      f"{r.numpy_s * 1e3:.3f}", f"{r.numpy_cpu_s * 1e3:.3f}",
                      f"x{r.numpy_s / r.kernel_s:,.1f}", f"{r.kernel_mib:.1f}",
                      f"{r.numpy_mib:.1f}", "yes" if r.equal else "NO")
    console.print(table)
    console.print(f"load average (1/5/15 min) at start {load0[0]:.2f}/{load0[1]:.2f}/"
                  f"{load0[2]:.2f}, at end {load1[0]:.2f}/{load1[1]:.2f}/{load1[2]:.2f} "
                  f"on {os.cpu_count()} cores")
    unequal = [f"{r.size} {r.policy}" for r in rows if not r.equal]
    if unequal:
        console.print(f"kernel differs from the numpy baseline: {', '.join(unequal)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
