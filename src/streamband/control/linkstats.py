"""The link statistics collector of 000 §V-B2 seen from the manager: each link's
used capacity from the switch port counters and its allocatable capacity
(000 §IV-A2): the capacity minus the traffic of flows the application does not
own (cross traffic), i.e. ``C - max(0, used - sum of the application's flows)``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from streamband.control.api_client import ControllerClient


@dataclass(frozen=True)
class PortRef:
    """Where a link is counted: a switch port and the direction (``rx``: the link
    enters the switch there, ``tx``: it leaves)."""

    dpid: int
    port: str
    direction: str


class ControllerLinkStats:
    """Allocatable capacities from the controller's 1-s port and flow counters."""

    def __init__(self, client: ControllerClient, capacity_bps: np.ndarray,
                 ports: list[PortRef], routing: sp.csr_matrix,
                 flows: list[dict[str, Any] | None], floor_frac: float = 0.05) -> None:
        self.client = client
        self.capacity = np.asarray(capacity_bps, float)
        self.refs = ports
        self.routing = routing
        self.keys = [None if f is None else _key(f) for f in flows]
        self.floor_frac = floor_frac
        self.used = np.zeros(len(self.capacity))
        self.app = np.zeros(len(self.capacity))

    def used_bps(self) -> np.ndarray:
        """Each link's rate over the last poll, bit/s (L2 bytes)."""
        by_name = {(p["dpid"], p["name"]): p for p in self.client.ports()}
        used = np.zeros(len(self.refs))
        for i, ref in enumerate(self.refs):
            p = by_name.get((ref.dpid, ref.port))
            if p is not None:
                used[i] = p["rx_bps"] if ref.direction == "rx" else p["tx_bps"]
        return used

    def flow_bps(self) -> np.ndarray:
        """Each application flow's rate over the last poll (0 when not counted)."""
        rates = {_key(m["flow"]): m["bps"] for m in self.client.flows()}
        return np.array([rates.get(k, 0.0) if k is not None else 0.0 for k in self.keys])

    def allocatable(self) -> np.ndarray:
        self.used = self.used_bps()
        self.app = self.routing.T @ self.flow_bps()
        cross = np.maximum(self.used - self.app, 0.0)
        return np.maximum(self.capacity - cross, self.floor_frac * self.capacity)


def _key(f: dict[str, Any]) -> tuple[Any, ...]:
    return (f["src_ip"], f["dst_ip"], f.get("proto", "tcp"), f.get("src_port", 0),
            f.get("dst_port", 0))
