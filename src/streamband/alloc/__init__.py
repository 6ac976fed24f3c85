"""Allocation policies: pure functions ``AllocProblem -> rates`` (bit/s per flow) or
``-> Decision`` (rates and/or strict-priority classes).

``maxmin`` is the TCP model (max-min fair with demands), ``appaware`` is 000
Algorithm 1 with the backfill pass of 000 §VI-C, ``weighted`` is the weight-based
allocation of 001 §III-D, ``appfair`` is 000 §VII's fairness between applications
(:mod:`.appfair`, with ``hierarchical``), :mod:`.priority` the strict-priority sharing
its classes mean. Every policy, with its kind, is in :mod:`.registry`.
"""

from __future__ import annotations

from streamband.alloc.appaware import appaware, solve_downlink, solve_uplink
from streamband.alloc.base import AllocProblem, FlowState, Policy
from streamband.alloc.maxmin import maxmin, maxmin_rates
from streamband.alloc.registry import POLICIES, PolicyEntry, get_policy, policy_entry
from streamband.alloc.weighted import sweep_pair, sweep_search, weighted

__all__ = [
    "POLICIES",
    "AllocProblem",
    "FlowState",
    "Policy",
    "PolicyEntry",
    "appaware",
    "get_policy",
    "maxmin",
    "maxmin_rates",
    "policy_entry",
    "solve_downlink",
    "solve_uplink",
    "sweep_pair",
    "sweep_search",
    "weighted",
]
