"""Policy name -> scheduler class (one line per policy)."""

from __future__ import annotations

from streamband.sim.coflow.engine import Scheduler
from streamband.sim.coflow.schedulers.aalo import Aalo
from streamband.sim.coflow.schedulers.baraat import Baraat
from streamband.sim.coflow.schedulers.fs import FairSharing
from streamband.sim.coflow.schedulers.fs_static import StaticFairSharing
from streamband.sim.coflow.schedulers.stream import Stream
from streamband.sim.coflow.schedulers.varys import Varys

POLICIES = ("fs", "fs-static", "stream", "aalo", "baraat", "varys")


def make(policy: str, queues: int = 4) -> Scheduler:
    if policy == "fs":
        return FairSharing()
    if policy == "fs-static":
        return StaticFairSharing()
    if policy == "stream":
        return Stream(queues=queues)
    if policy == "aalo":
        return Aalo(queues=queues)
    if policy == "baraat":
        return Baraat()
    if policy == "varys":
        return Varys()
    raise ValueError(f"policy: expected one of {', '.join(POLICIES)}, got {policy!r}")
