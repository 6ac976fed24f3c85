"""The one interface every allocation policy implements.

A policy is a pure function ``AllocProblem -> rates`` (bit/s per flow) or
``AllocProblem -> Decision`` (rates and/or strict-priority classes, and the state it
carries to the next step). It sees the flows' links (the routing matrix R of 000
eq. 1a), the links' allocatable capacities C (000 §IV-A2), each flow's state over the
last interval (the 5-metric tuple of 000 §IV-A1), the interval Δt, and, when several
applications share the network (000 §VII), each flow's application, the policy's
parameters and what it remembered from the last step. It never sees a backend.

Contract for every policy:
- rates: one finite, non-negative rate per flow crossing at least one link, and
  R·x <= C (within 1e-6 relative) on every link; flows crossing no link (internal
  flows) get ``np.inf``: nothing to enforce;
- classes: one class per flow, 0 (served first) .. 7, strict priority between
  classes and max-min fair sharing inside one (000 §VII c; 004's queues likewise).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from streamband.errors import InputError

UPLINK, DOWNLINK, INTERNAL = 0, 1, 2
#: the largest value a report or a flow state may carry (bytes, messages); beyond it
#: the sample is garbage (1 PB: no interval of any real link moves that much)
ABSURD = 1e15


class GarbageState(InputError):
    """A flow state the policy must not see (a non-finite, negative or absurd value);
    :attr:`reason` is ``not_finite``, ``negative`` or ``absurd``."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"flow state: {reason.replace('_', ' ')} values, expected finite "
                         f"counts in [0, {ABSURD:g}]")
        self.reason = reason


def _check_counts(a: np.ndarray) -> None:
    """Raises :class:`GarbageState` unless every value is a finite count in [0, ABSURD]."""
    if not np.all(np.isfinite(a)):
        raise GarbageState("not_finite")
    if np.any(a < 0):
        raise GarbageState("negative")
    if np.any(a > ABSURD):
        raise GarbageState("absurd")


@dataclass
class FlowState:
    """000 §IV-A1, Fig. 5: per flow, in bytes, over the interval (t, t + Δt).

    ``ls0``/``ls1``: sender backlog L^s_f(t) and L^s_f(t+Δt);
    ``lr0``/``lr1``: receiver backlog L^r_f(t) and L^r_f(t+Δt);
    ``sent``: V_f(t, t+Δt), bytes the flow transferred in the interval;
    ``rho_event``: where the flow feeds a join that aligns its inputs on event time in a
    store of its own, the bytes it carries per second of its input's event time (NaN for
    the other flows; None: no flow does), the pace at which that join consumes it;
    ``event_s``: the event time (s) the join has received of the flow's sending tasks.
    """

    ls0: np.ndarray
    ls1: np.ndarray
    lr0: np.ndarray
    lr1: np.ndarray
    sent: np.ndarray
    rho_event: np.ndarray | None = None
    event_s: np.ndarray | None = None

    @classmethod
    def zeros(cls, n: int) -> FlowState:
        z = np.zeros(n)
        return cls(z.copy(), z.copy(), z.copy(), z.copy(), z.copy())

    def __len__(self) -> int:
        return len(self.sent)

    def check(self) -> FlowState:
        """This state, if every field is a finite count within reason.

        Raises
        ------
        GarbageState
            Naming the first kind of garbage found.
        """
        for name in ("ls0", "ls1", "lr0", "lr1", "sent"):
            _check_counts(np.asarray(getattr(self, name), float))
        for opt in (self.rho_event, self.event_s):  # NaN: no join behind the flow
            if opt is not None:
                a = np.asarray(opt, float)
                _check_counts(a[~np.isnan(a)])
        return self


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
    apps: np.ndarray | None = None  # (F,) application index of each flow (000 §VII)
    params: Mapping[str, float] = field(default_factory=dict)  # e.g. App-Fair's alpha
    memory: Mapping[str, Any] = field(default_factory=dict)  # the last Decision's memory
    #: Δt of the strict-priority classes (000 §VII: 10 s) when the loop steps faster
    #: (``dt`` < ``class_dt``): a policy deciding classes regroups once per ``class_dt``
    #: and holds its classes between, while its rates are re-made every step. None: the
    #: classes are remade at every step (``class_dt`` = ``dt``)
    class_dt: float | None = None

    @property
    def n_flows(self) -> int:
        return self.routing.shape[0]

    def demand_bps(self) -> np.ndarray:
        """Rate each flow needs in the next interval: the numerator of 000 eq. (3),
        (V + 2 L^s(t+Δt) - L^s(t)) bytes, spread over Δt, in bit/s."""
        s = self.state
        need = np.maximum(s.sent + 2.0 * s.ls1 - s.ls0, 0.0)
        return 8.0 * need / self.dt


#: the number of strict-priority classes an egress port has (000 §VII c: m = 8)
CLASSES = 8


@dataclass
class Decision:
    """What a policy decides for the next Δt.

    ``rates``: caps in bit/s per flow (``np.inf``: uncapped), enforced as meters;
    ``classes``: strict-priority class per flow (0 served first), enforced as egress
    queues; either may be None (not decided). ``memory``: what the policy carries to
    its next step (the manager hands it back as :attr:`AllocProblem.memory`).
    """

    rates: np.ndarray | None = None
    classes: np.ndarray | None = None
    memory: dict[str, Any] = field(default_factory=dict)


def as_decision(out: np.ndarray | Decision) -> Decision:
    """A policy's result as a :class:`Decision` (an array is rates)."""
    return out if isinstance(out, Decision) else Decision(rates=np.asarray(out, float))


Policy = Callable[[AllocProblem], "np.ndarray | Decision"]
