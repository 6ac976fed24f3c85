"""What the backends that run a real engine on the testbed share (Storm, Flink, and the
testbed harness for the first two): the case's testbed and the Kafka broker on its
master, the policies they can run, each window's allocation log, the flow rates sampled
at every step of the manager loop, and the row's columns every window has."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from streamband.alloc.registry import PolicyEntry, policy_entry
from streamband.backends.base import MASTER_MBPS, Case
from streamband.errors import SpecError
from streamband.kafka.broker import Broker, BrokerSpec
from streamband.model.testbed import TestbedSpec
from streamband.sdn.client import ControllerClient
from streamband.testbed.network import Testbed

if TYPE_CHECKING:
    import scipy.sparse as sp

    from streamband.model.spec import ExperimentSpec
    from streamband.model.topology import Topology


def check_loop_policies(spec: ExperimentSpec, engine: str) -> None:
    """SpecError unless every policy of ``spec`` is tcp or a manager loop's (what a real
    network enforces step by step)."""
    for p in spec.policies:
        if policy_entry(p).kind not in ("per-step", "loop"):
            raise SpecError(f"policies: {p!r} is of kind {policy_entry(p).kind!r}; {engine} "
                            "runs tcp and the manager loop's policies")


def check_star(case: Case, who: str) -> None:
    """SpecError unless ``case`` runs on a star, whose master host carries the broker off
    the links under test; ``who`` names what needs it."""
    if case.network.topology != "star":
        raise SpecError(f"networks.{case.network.name}: {who} on a star's master host, off "
                        f"the links under test; got topology {case.network.topology!r}")


def case_testbed(case: Case, control: dict[str, Any], master: bool = False,
                 fast_master: bool = False) -> TestbedSpec:
    """The testbed of ``case``'s network at its bandwidth (the host links or the
    internal links, as the network throttles); ``master``: a master host on a star,
    ``fast_master``: its link at :data:`MASTER_MBPS`."""
    net = case.network
    swept = "link_mbps" if net.throttle == "host" else "internal_mbps"
    fields = net.model_dump(exclude={"name", "bandwidth_mbps", "throttle"}, exclude_unset=True)
    extra: dict[str, Any] = {"master": master} if master else {}
    if fast_master:
        extra["master_mbps"] = MASTER_MBPS
    return TestbedSpec.model_validate({**fields, "topology": net.topology,
                                       swept: case.bandwidth_mbps, **extra, **control})


def start_testbed(spec: TestbedSpec, out: Path) -> Testbed:
    """``spec``'s testbed started (logs in ``out/testbed``), its controller answering."""
    out.mkdir(parents=True, exist_ok=True)
    tb = Testbed(spec, log_dir=out / "testbed")
    tb.start()
    ControllerClient(spec.api).wait_ready(1)
    return tb


def master_broker(tb: Testbed, host: str = "master") -> Broker:
    """A Kafka broker started inside ``host``'s namespace, serving on the testbed's
    services' network (:meth:`~streamband.testbed.network.Testbed.service_ip`), so that
    the sources' fetches cross none of the links under test (issue 33)."""
    m = tb.state()["hosts"][host]
    for h in tb.topo.hosts:  # every host's sources and consumers reach it there
        tb.service_ip(h)
    return Broker(BrokerSpec(host=tb.service_ip(host), prefix=[
        "nsenter", f"--net=/proc/{m['pid']}/ns/net"])).start()


def window_tag(case: Case, policy: str) -> str:
    """The name of ``policy``'s window on ``case`` in its logs."""
    return f"{case.network.name}-{case.bandwidth_mbps:g}-{case.placement}-{policy}"


def window_log(out: Path, tag: str, count: int) -> Path:
    """The allocation log of a window: one per repetition (``-rN``)."""
    n = 1
    while (out / f"{tag}-{count}-r{n}.alloc.jsonl").exists():
        n += 1
    return out / f"{tag}-{count}-r{n}.alloc.jsonl"


class Samples:
    """The flow rates the controller measured at every step of a window (its
    :meth:`on_step` is the loop's ``on_step``), and the window's progress over
    ``seconds``."""

    def __init__(self, seconds: float, progress: Callable[[float], None] | None) -> None:
        self.seconds, self.progress = seconds, progress
        self.t0 = time.monotonic()
        self.rows: list[tuple[float, np.ndarray]] = []

    def on_step(self, linkstats: Any) -> None:
        self.rows.append((time.monotonic() - self.t0, linkstats.flow_rates.copy()))
        if self.progress:
            self.progress(min(1.0, (time.monotonic() - self.t0) / self.seconds))

    def times(self) -> np.ndarray:
        return np.array([t for t, _ in self.rows])

    def mbps(self, n_flows: int) -> np.ndarray:
        """(samples, ``n_flows``) each flow's rate, Mbit/s."""
        return np.array([x / 1e6 for _, x in self.rows]).reshape(len(self.rows), n_flows)


def measured_links(topo: Topology, routing: sp.spmatrix | sp.sparray,
                   used_bps: np.ndarray | None, reference: list[int] | None
                   ) -> tuple[np.ndarray | None, list[int]]:
    """Each link's utilisation and the links a window is measured on: ``reference``
    (the tcp window's, 000 §VI-C), else the links the window's flows cross that ran at
    least 0.9 full."""
    util = used_bps / topo.capacities if used_bps is not None else None
    if reference:
        return util, reference
    if util is None:
        return None, []
    return util, [lk for lk in range(len(topo.links)) if routing[:, lk].nnz and util[lk] >= 0.9]


def window_columns(spec: ExperimentSpec, case: Case, policy: str, backend: str,
                   entry: PolicyEntry, r: dict[str, Any], util: np.ndarray | None,
                   links: list[int]) -> dict[str, Any]:
    """The columns of every real engine's window row: what ran where, the measured
    links' utilisation and the manager loop's record ``r`` (its flows, their network
    keys and the meters the controller had installed for them at the end, rate null:
    counted, not capped; the rate classes, under the shaper)."""
    return {
        "experiment": spec.experiment, "app": spec.app.name, "placement": case.placement,
        "network": case.network.name, "bandwidth_mbps": case.bandwidth_mbps,
        "policy": policy, "backend": backend,
        "link_utilization": (float(np.mean(util[links])) if links and util is not None
                             else None),
        "optimizer_ms": r.get("optimizer_ms") if entry.kind == "loop" else None,
        "allocations": r["allocations"], "loop_errors": r["loop_errors"],
        "flow_keys": r.get("keys"),
        "meters": [{"flow": m["flow"], "rate_bps": m["rate_bps"]} for m in r.get("meters", [])],
        "rates": [{"flow": m["flow"], "port": m["port"], "rate_bps": m["rate_bps"]}
                  for m in r.get("rates", [])],
    }
