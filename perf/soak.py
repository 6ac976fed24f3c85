"""Soak of ``streamband manage``: the manager as a service beside a running topology
(001's fork-join on the testbed's Storm cluster, as if remote) for a given time,
reporting its memory growth, its allocation latency percentiles and its errors.

The baseline, in the same run: the soak's first window (its first fifth, at least one
minute) against its last window of the same length; the script prints the late/early
ratios of RSS and of the p50/p99 allocation latency (a manager that leaks or slows down
over days shows ratios above 1 that grow with the run's length), and the memory growth
per hour from a least-squares fit over every sample.

Run (root, the testbed lock held): ``.venv/bin/python perf/soak.py --minutes 30``
(the measurement); the tests run :func:`soak` for 2 minutes on their own stage.
Prints a table and writes ``soak.json`` in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from streamband.manage import stage as remote  # noqa: E402

FJ_BYTES = {"A->B": 8192, "A->C": 4096, "B->D": 6144, "C->D": 3072}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def metric_sum(text: str, name: str) -> float:
    """The sum of every sample of ``name`` in a Prometheus exposition."""
    tot = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            tot += float(line.rsplit(" ", 1)[1])
    return tot


def soak(stage: remote.Stage, seconds: float, every: float = 5.0,
         console: Console | None = None) -> dict[str, Any]:
    """Watch the running manager of ``stage`` for ``seconds``; returns the figures."""
    console = console or Console(stderr=True)
    assert stage.manager is not None
    pid = stage.manager.pid
    api = stage.api()
    m0 = api.get("/metrics").text
    t_start = time.time()
    samples: list[tuple[float, float]] = []
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("soak", total=seconds)
        while (el := time.time() - t_start) < seconds:
            samples.append((el, rss_mb(pid)))
            bar.update(task, completed=el)
            time.sleep(min(every, max(0.0, seconds - el)))
    samples.append((time.time() - t_start, rss_mb(pid)))
    m1 = api.get("/metrics").text
    by0, by1 = rejected_by_reason(m0), rejected_by_reason(m1)
    rejected = {why: n - by0.get(why, 0.0) for why, n in by1.items() if n > by0.get(why, 0.0)}
    rows = [r for r in api.get("/api/v1/allocations", params={"limit": 10_000}).json()
            if r["time"] >= t_start]
    rows.sort(key=lambda r: r["time"])
    if not rows:
        raise RuntimeError("no allocation during the soak")
    step = np.array([r["step_ms"] for r in rows])
    opt = np.array([r["optimizer_ms"] for r in rows if r["optimizer_ms"] is not None])
    times = np.array([r["time"] - t_start for r in rows])
    window = max(60.0, seconds / 5) if seconds >= 120 else seconds / 2
    early, late = times < window, times >= seconds - window
    t, mb = np.array(samples).T
    sel_e, sel_l = t <= window, t >= seconds - window
    slope = float(np.polyfit(t, mb, 1)[0]) * 3600 if len(t) > 2 else float("nan")
    decisions: dict[str, int] = {}
    for r in rows:
        decisions[r["decision"]] = decisions.get(r["decision"], 0) + 1
    pct = {q: float(np.percentile(step, q)) for q in (50, 90, 99)}
    return {
        "seconds": seconds, "allocations": len(rows),
        "expected_allocations": int(seconds / stage.status()["dt_s"]) * len(
            {r["topology"] for r in rows}),
        "decisions": decisions,
        "rss_mb_first": float(mb[0]), "rss_mb_last": float(mb[-1]),
        "rss_growth_mb": float(mb[-1] - mb[0]), "rss_growth_mb_per_hour": slope,
        "rss_late_over_early": float(mb[sel_l].mean() / mb[sel_e].mean()),
        "step_ms_p50": pct[50], "step_ms_p90": pct[90], "step_ms_p99": pct[99],
        "step_ms_max": float(step.max()),
        "policy_ms_p50": float(np.percentile(opt, 50)) if len(opt) else None,
        "policy_ms_p99": float(np.percentile(opt, 99)) if len(opt) else None,
        "p50_late_over_early": float(np.percentile(step[late], 50) /
                                     np.percentile(step[early], 50)),
        "p99_late_over_early": float(np.percentile(step[late], 99) /
                                     np.percentile(step[early], 99)),
        "errors": metric_sum(m1, "streamband_errors_total") -
        metric_sum(m0, "streamband_errors_total"),
        "rejected": sum(rejected.values()),
        "rejected_by_reason": rejected,
    }


def rejected_by_reason(text: str) -> dict[str, float]:
    """``streamband_rejected_samples_total`` of a Prometheus exposition, per reason."""
    out: dict[str, float] = {}
    for m in re.finditer(r'^streamband_rejected_samples_total\{reason="([^"]*)"\} (\S+)$',
                         text, re.M):
        out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(2))
    return out


def show(res: dict[str, Any], console: Console) -> None:
    t = Table(title=f"streamband manage, soak of {res['seconds'] / 60:.1f} min")
    t.add_column("figure")
    t.add_column("value", justify="right")
    for k, v in res.items():
        t.add_row(k, f"{v:.3f}" if isinstance(v, float) else str(v))
    console.print(t)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--rate", type=float, default=300.0, help="fork-join tuples/s")
    ap.add_argument("--max-pending", type=int, default=remote.FORK_JOIN_PENDING,
                    help="Storm's topology.max.spout.pending (0: open loop)")
    ap.add_argument("--dt", type=float, default=1.0, help="Δt of the manager, s")
    ap.add_argument("--out", type=Path, default=Path("out/soak"))
    ap.add_argument("--guard", action=argparse.BooleanOptionalAction, default=False,
                    help="do no harm (off: the manager caps every Δt, the heavier case)")
    a = ap.parse_args(argv)
    console = Console()
    a.out.mkdir(parents=True, exist_ok=True)
    with remote.stage(a.out.resolve()) as st:
        console.print("stage up: testbed, Storm, management link")
        st.submit_fork_join("fj", rate=a.rate, timeout_s=30,
                            max_pending=a.max_pending or None)
        cfg = st.write_config(a.out.resolve() / "cluster.yaml", [
            {"name": "fj", "policy": "appaware", "tuple_bytes": FJ_BYTES}],
            a.out.resolve() / "state", dt=a.dt, guard=a.guard)
        st.start_manager(cfg)
        remote.wait_for(lambda: any(s["decision"] in ("policy", "guard")
                                    for s in st.topology("fj")["series"]), 120, "allocating")
        res = soak(st, a.minutes * 60, console=console)
        res["storm"] = st.topology("fj")["totals"]
    (a.out / "soak.json").write_text(json.dumps(res, indent=1))
    show(res, console)
    return 0


if __name__ == "__main__":
    sys.exit(main())
