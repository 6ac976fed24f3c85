"""``fs``: per-flow max-min fair sharing (004 §IV-B "Per-Flow Fair-Sharing"), the
work-conserving water-filling a TCP-like rate limiter converges to."""

from __future__ import annotations

from streamband.sim.coflow.engine import Scheduler


class FairSharing(Scheduler):
    """One queue, max-min fair across all active flows."""

    name = "fs"
