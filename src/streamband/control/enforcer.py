"""The enforcer of 000 §V-B1 seen from the manager: push one rate per flow to the
controller, which binds each flow to a meter. Every push renews the flows' lease
(3 Δt), so the controller falls back to plain TCP if the manager dies."""

from __future__ import annotations

from typing import Any

import numpy as np

from streamband.control.api_client import ControllerClient


class MeterEnforcer:
    """``flows[i]`` is flow i's key (``FlowKey`` fields as a dict) or None for a flow
    the network does not carry (internal to a host); ``np.inf`` uncaps a flow but
    keeps its counting rule, so link statistics still see it."""

    def __init__(self, client: ControllerClient, flows: list[dict[str, Any] | None],
                 dt: float, dpids: list[int | None] | None = None,
                 min_rate_bps: float = 64e3) -> None:
        self.client = client
        self.flows = flows
        self.lease_s = 3.0 * dt
        self.dpids = dpids or [None] * len(flows)
        self.min_rate_bps = min_rate_bps
        self.last: dict[str, Any] = {}

    def enforce(self, rates_bps: np.ndarray) -> None:
        meters = []
        for key, rate, dpid in zip(self.flows, rates_bps, self.dpids, strict=True):
            if key is None:
                continue
            r = None if not np.isfinite(rate) else max(float(rate), self.min_rate_bps)
            m: dict[str, Any] = {"flow": key, "rate_bps": r}
            if dpid is not None:
                m["dpid"] = dpid
            meters.append(m)
        self.last = self.client.put_meters(meters, self.lease_s, replace=True)


class CountingEnforcer(MeterEnforcer):
    """Plain TCP (no meters), but the flows' counting rules stay installed."""

    def enforce(self, rates_bps: np.ndarray) -> None:
        super().enforce(np.full(len(self.flows), np.inf))
