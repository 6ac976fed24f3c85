"""The application profiler of 000 §V-A2 ("flow buffer"): the 5-metric tuple of
every flow (000 §IV-A1, Fig. 5) over the last interval. ``HarnessProfiler`` reads
the per-host snapshots the traffic harness writes every half second
(:mod:`streamband.testbed.harness`); the Storm profiler comes with issue "Storm"."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from streamband.alloc.base import FlowState


class HarnessProfiler:
    """Flow ``i`` is harness edge ``edge_ids[i]``; ``sent`` is cumulative in the
    snapshots, backlogs are instantaneous (bytes)."""

    def __init__(self, run_dir: Path, edge_ids: list[int]) -> None:
        self.run_dir = Path(run_dir)
        self.edge_ids = edge_ids
        n = len(edge_ids)
        self._sent = np.zeros(n)
        self._ls = np.zeros(n)
        self._lr = np.zeros(n)

    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Cumulative sent bytes, sender backlog, receiver backlog of every flow."""
        sent, ls, lr = self._sent.copy(), self._ls.copy(), self._lr.copy()
        index = {e: i for i, e in enumerate(self.edge_ids)}
        for f in self.run_dir.glob("stats-*.json"):
            try:
                snap = json.loads(f.read_text())
            except (OSError, json.JSONDecodeError):
                continue  # a snapshot being replaced; the next read has it
            for eid, st in snap.get("edges", {}).items():
                i = index.get(int(eid))
                if i is None:
                    continue
                if "sent" in st:
                    sent[i], ls[i] = st["sent"], st["ls"]
                if "lr" in st:
                    lr[i] = st["lr"]
        return sent, ls, lr

    def flow_state(self) -> FlowState:
        sent, ls, lr = self.snapshot()
        state = FlowState(ls0=self._ls, ls1=ls, lr0=self._lr, lr1=lr,
                          sent=np.maximum(sent - self._sent, 0.0))
        self._sent, self._ls, self._lr = sent, ls, lr
        return state
