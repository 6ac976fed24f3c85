"""The one registry of allocation policies: name -> what the policy is and how it runs.

Kinds, in the order a run meets them:

- ``per-step``: the network's own sharing, no manager. ``tcp`` is max-min fair among
  backlogged flows recomputed every simulator step (the TCP model); on a real
  backend it is plain TCP, nothing enforced.
- ``static``: fixed caps for the whole run (the probes of ``sweep``); needs caps, so
  a spec cannot name it.
- ``search``: an offline search over static allocations, then the best one for the
  whole run (``sweep``, 001 §III-D).
- ``loop``: a pure function ``AllocProblem -> rates`` (or a
  :class:`~streamband.alloc.base.Decision`) run by the manager loop every Δt (000 Fig. 4);
  what it decides (``decides``) is enforced as caps (meters), strict-priority classes
  (egress queues), or both. A policy deciding both steps faster than Δt and
  regroups its classes every Δt (:meth:`PolicyEntry.periods`).

To add a policy: write it in ``alloc/`` as a function of an
:class:`~streamband.alloc.base.AllocProblem` and add one line to :data:`POLICIES`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from streamband.alloc.appaware import appaware
from streamband.alloc.appfair import appaware_store, appfair, hierarchical
from streamband.alloc.base import AllocProblem, Policy
from streamband.alloc.maxmin import maxmin
from streamband.alloc.weighted import weighted
from streamband.errors import SpecError, nearest

PolicyKind = Literal["per-step", "static", "search", "loop"]
Decides = Literal["rates", "classes", "rates+classes"]


def uncapped(problem: AllocProblem) -> np.ndarray:
    """No cap on any flow (``np.inf``): the loop runs, the network shares as TCP does."""
    return np.full(problem.n_flows, np.inf)


@dataclass(frozen=True)
class PolicyEntry:
    """A registered policy: its kind, its function (``loop`` and ``per-step``) and what
    it decides (``rates`` enforced as caps; ``classes`` enforced as priorities; both).
    A policy deciding classes shares between applications: it needs a spec with
    ``apps``."""

    name: str
    kind: PolicyKind
    fn: Policy | None
    summary: str
    decides: Decides = "rates"

    @property
    def classes(self) -> bool:
        """Whether the policy decides strict-priority classes."""
        return "classes" in self.decides

    def periods(self, dt: float, split_s: float) -> tuple[float, float | None]:
        """(the manager loop's step, :attr:`~streamband.alloc.base.AllocProblem.class_dt`)
        for a run with Δt = ``dt``. A policy deciding rates and classes
        (``hierarchical``) runs on two periods in one loop: it steps every ``split_s``
        (rates re-made from the last step's flow state) and regroups its classes every
        Δt; every other policy steps every Δt (``class_dt`` None: its classes, if any,
        at every step)."""
        if self.decides == "rates+classes" and split_s < dt:
            return split_s, dt
        return dt, None


POLICIES: dict[str, PolicyEntry] = {e.name: e for e in (
    PolicyEntry("tcp", "per-step", maxmin, "TCP: max-min fair sharing among backlogged flows"),
    PolicyEntry("static", "static", None, "fixed caps for the whole run (the sweep's probes)"),
    PolicyEntry("sweep", "search", None, "001 §III-D: brute-force search over static caps "
                "between the bottlenecked flows (Δb = step_frac · b)"),
    PolicyEntry("maxmin", "loop", maxmin, "max-min fairness enforced by the manager loop"),
    PolicyEntry("appaware", "loop", appaware, "000 Algorithm 1: problems (3) and (4), "
                "internal-link scaling, backfill (§VI-C)"),
    PolicyEntry("appaware-store", "loop", appaware_store, "000 Algorithm 1 for receivers "
                "that keep waiting tuples in their own store: problem (4) in event time "
                "into joins, eq. (3) on other downlinks whose receivers keep up"),
    PolicyEntry("weighted", "loop", weighted, "001 §III-D: rates proportional to tuple sizes"),
    PolicyEntry("observe", "loop", uncapped, "the manager loop observes and logs but caps "
                "nothing (plain TCP; a control: a bench's checks must fail for it)"),
    PolicyEntry("appfair", "loop", appfair, "000 §VII App-Fair: applications grouped by "
                "eq. (5), groups as strict-priority classes (lowest throughput first)",
                "classes"),
    PolicyEntry("hierarchical", "loop", hierarchical, "App-Fair's classes between "
                "applications, App-aware (000 Alg. 1) meters inside each one's share",
                "rates+classes"),
)}


def policy_entry(name: str) -> PolicyEntry:
    """The registered policy ``name``.

    Raises
    ------
    SpecError
        If no policy has that name (naming the nearest one).
    """
    try:
        return POLICIES[name]
    except KeyError:
        raise SpecError(f"policy: unknown policy {name!r}, expected one of "
                        f"{', '.join(POLICIES)}{nearest(name, POLICIES)}") from None


def get_policy(name: str) -> Policy:
    """The allocation function of the policy ``name`` (a ``loop`` or ``per-step`` one)."""
    entry = policy_entry(name)
    if entry.fn is None:
        raise SpecError(f"policy {name!r} is of kind {entry.kind!r}: it has no per-interval "
                        f"allocation function")
    return entry.fn
