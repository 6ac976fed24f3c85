"""Allocation policies (ARCHITECTURE: alloc/): pure functions ``AllocProblem -> rates``.

``maxmin`` is the TCP model (max-min fair with demands), ``appaware`` is 000
Algorithm 1 with the backfill pass of 000 §VI-C, ``weighted`` is the weight-based
allocation of 001 §III-D.
"""

from __future__ import annotations

from streamband.alloc.appaware import appaware, solve_downlink, solve_uplink
from streamband.alloc.base import AllocProblem, FlowState, Policy
from streamband.alloc.maxmin import maxmin, maxmin_rates
from streamband.alloc.weighted import sweep_pair, sweep_search, weighted

POLICIES: dict[str, Policy] = {
    "maxmin": maxmin,
    "appaware": appaware,
    "weighted": weighted,
}


def get_policy(name: str) -> Policy:
    """The policy registered as ``name``."""
    try:
        return POLICIES[name]
    except KeyError:
        raise ValueError(
            f"policy: unknown policy {name!r}, expected one of {', '.join(sorted(POLICIES))}"
        ) from None


__all__ = [
    "POLICIES",
    "AllocProblem",
    "FlowState",
    "Policy",
    "appaware",
    "get_policy",
    "maxmin",
    "maxmin_rates",
    "solve_downlink",
    "solve_uplink",
    "sweep_pair",
    "sweep_search",
    "weighted",
]
