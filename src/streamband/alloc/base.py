"""The one interface every allocation policy implements.

A policy is a pure function ``AllocProblem -> rates`` (bit/s per flow). It sees
the flows' links (the routing matrix R of 000 eq. 1a), the links' allocatable
capacities C (000 §IV-A2), each flow's state over the last interval (the 5-metric
tuple of 000 §IV-A1) and the interval Δt. It never sees a backend.

Contract for every policy:
- the result has one finite, non-negative rate per flow crossing at least one
  link, and R·x <= C (within 1e-6 relative) on every link;
- flows crossing no link (internal flows) get ``np.inf``: nothing to enforce.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

UPLINK, DOWNLINK, INTERNAL = 0, 1, 2


@dataclass
class FlowState:
    """000 §IV-A1, Fig. 5: per flow, in bytes, over the interval (t, t + Δt).

    ``ls0``/``ls1``: sender backlog L^s_f(t) and L^s_f(t+Δt);
    ``lr0``/``lr1``: receiver backlog L^r_f(t) and L^r_f(t+Δt);
    ``sent``: V_f(t, t+Δt), bytes the flow transferred in the interval.
    """

    ls0: np.ndarray
    ls1: np.ndarray
    lr0: np.ndarray
    lr1: np.ndarray
    sent: np.ndarray

    @classmethod
    def zeros(cls, n: int) -> FlowState:
        z = np.zeros(n)
        return cls(z.copy(), z.copy(), z.copy(), z.copy(), z.copy())

    def __len__(self) -> int:
        return len(self.sent)


@dataclass
class AllocProblem:
    """Inputs of one allocation (000 Algorithm 1, lines 1-7)."""

    routing: sp.csr_matrix  # F x L, R[f, l] = 1 iff f crosses l
    capacity: np.ndarray  # (L,) allocatable capacity, bit/s
    link_kind: np.ndarray  # (L,) UPLINK / DOWNLINK / INTERNAL
    state: FlowState
    dt: float  # Δt, seconds
    weights: np.ndarray | None = None  # (F,) e.g. tuple sizes (001 §III-D)
    bottlenecked: np.ndarray | None = None  # (L,) bool; None: the policy decides

    @property
    def n_flows(self) -> int:
        return self.routing.shape[0]

    def demand_bps(self) -> np.ndarray:
        """Rate each flow needs in the next interval: the numerator of 000 eq. (3),
        (V + 2 L^s(t+Δt) - L^s(t)) bytes, spread over Δt, in bit/s."""
        s = self.state
        need = np.maximum(s.sent + 2.0 * s.ls1 - s.ls0, 0.0)
        return 8.0 * need / self.dt


Policy = Callable[[AllocProblem], np.ndarray]
