"""Exponentially spaced queue thresholds (004 §III-D "Setting threshold", after Aalo)."""

from __future__ import annotations

import numpy as np

from streamband.sim.coflow.trace import MIB

FIRST_THRESHOLD = 10 * MIB
MULTIPLIER = 10.0


def thresholds(k: int, first: float = FIRST_THRESHOLD, mult: float = MULTIPLIER) -> np.ndarray:
    """Demotion thresholds tau_0..tau_{K-2} (bytes); the last queue has none (inf)."""
    if not 1 <= k <= 16:
        raise ValueError(f"queues: expected 1..16, got {k}")
    return np.append(first * mult ** np.arange(k - 1), np.inf)
