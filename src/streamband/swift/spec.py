"""The specs of a Swift store on the testbed and of a BwMan experiment on it (002 §V-C).

One YAML file, four sections, validated on load (a bad spec stops with one line
naming the field, before anything starts):

- ``testbed``: the star the store runs on (:class:`SwiftTestbedSpec`): ``hosts``
  is how many hosts the testbed has, ``link_mbps`` the rate of each storage host's
  link (the node's bandwidth, 002's quota), ``edge_mbps`` the proxy's and client's;
- ``swift``: the store (:class:`ClusterSpec`): storage hosts, replicas, ring size,
  the object population, the replicator;
- ``workload``: the YCSB-like client (:class:`WorkloadSpec`, 002 §V-C2);
- ``failures``: the failure generator (:class:`FailureSpec`, 002 §V-C3);
- ``control``: the BwMan loop and its policy (:class:`ControlSpec`, 002 §IV).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, model_validator

from streamband.errors import SpecError, nearest
from streamband.model.numbers import Numbers
from streamband.model.source import load_yaml
from streamband.model.testbed import TestbedSpec
from streamband.model.topology import Topology
from streamband.swift.workload import step_rate

#: the roles of the testbed's hosts: one client, one proxy, storage hosts s1..sN
CLIENT, PROXY = "client", "proxy"
#: at most this many storage hosts (002's 1 proxy : 8 storage)
MAX_STORAGE = 8
#: a schedule relative to the reference asks at most this multiple of it
MAX_REFERENCE = 2.0


def storage_names(n: int) -> list[str]:
    return [f"s{i + 1}" for i in range(n)]


class SwiftTestbedSpec(TestbedSpec):
    """A star of ``hosts`` hosts: the client and the proxy on ``edge_mbps`` links,
    the storage hosts on ``link_mbps`` links (each node's bandwidth, the shaped
    bottleneck)."""

    hosts: int = Field(5, ge=3, le=64, description="how many hosts the testbed has "
                       "(client, proxy and the storage hosts)")
    link_mbps: float = Field(16.0, gt=0, le=1000, allow_inf_nan=False,
                             description="each storage host's link, Mbit/s (its quota)")
    edge_mbps: float = Field(200.0, gt=0, le=1000, allow_inf_nan=False,
                             description="the client's and the proxy's links, Mbit/s")
    storage_hosts: int = Field(3, ge=1, description="set from swift.storage_hosts")

    @model_validator(mode="after")
    def _star(self) -> SwiftTestbedSpec:
        if self.topology != "star":
            raise ValueError(f"topology: the store runs on a star, got {self.topology!r}")
        return self

    def build(self, name: str | None = None) -> Topology:
        """client, proxy and s1..sN on one switch ``sw``."""
        topo = Topology(name or "swift-star")
        topo.add_switch("sw")
        for h in (CLIENT, PROXY):
            topo.add_host(h)
            topo.connect_host(h, "sw", self.edge_mbps * 1e6)
        for h in storage_names(self.storage_hosts):
            topo.add_host(h)
            topo.connect_host(h, "sw", self.link_mbps * 1e6)
        return topo


class _Strict(Numbers):
    model_config = ConfigDict(extra="forbid")


class ClusterSpec(_Strict):
    """The store: one proxy (with memcached), ``storage_hosts`` storage hosts each
    running object, container and account servers, an object replication server and
    the object replicator, ``replicas`` replicas, one zone per host."""

    storage_hosts: int = Field(3, ge=3, le=MAX_STORAGE)
    replicas: int = Field(3, ge=2, le=MAX_STORAGE)
    part_power: int = Field(5, ge=2, le=16)
    objects: int = Field(600, ge=1, le=100_000)
    object_kb: float = Field(100.0, gt=0, le=10_000)
    container: str = Field("bench", min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    sync_method: Literal["rsync", "ssync"] = "rsync"
    replicator_interval_s: float = Field(2.0, gt=0, le=600)
    replicator_concurrency: int = Field(2, ge=1, le=64)

    @model_validator(mode="after")
    def _replicas(self) -> ClusterSpec:
        if self.replicas > self.storage_hosts:
            raise ValueError(f"replicas: expected at most storage_hosts "
                             f"({self.storage_hosts}), got {self.replicas}")
        return self

    @property
    def object_bytes(self) -> int:
        return int(self.object_kb * 1000)


class WorkloadSpec(_Strict):
    """002 §V-C2: ``threads`` clients, ``read_share`` reads (the rest overwrites),
    requests issued at the target rate of ``schedule`` (``[start_s, rate]`` steps,
    002 Fig. 7: 80 -> 90 -> 100 op/s) into a queue; a request not served on time
    waits there and counts as late. Throughput is counted per ``window_s``.

    ``targets``: the unit of the schedule's rates: ``ops`` (absolute op/s) or
    ``reference`` (fractions of the store's reference throughput, measured by the
    training sweep with clients capped at ``reference_user_share`` of the quota,
    recovery's share being the rest; :func:`streamband.swift.training.reference`).
    """

    threads: int = Field(16, ge=1, le=256)
    read_share: float = Field(0.8, ge=0, le=1)
    duration_s: float = Field(180.0, gt=0, le=86_400)
    schedule: list[tuple[float, float]] = Field(
        default_factory=lambda: [(0.0, 16.0), (60.0, 18.0), (120.0, 20.0)], min_length=1)
    window_s: float = Field(5.0, gt=0, le=600)
    timeout_s: float = Field(20.0, gt=0, le=600)
    seed: int = 1
    targets: Literal["ops", "reference"] = "ops"
    reference_user_share: float = Field(0.5, gt=0, lt=1)

    @model_validator(mode="after")
    def _schedule(self) -> WorkloadSpec:
        starts = [s for s, _ in self.schedule]
        if starts[0] != 0:
            raise ValueError(f"schedule[0]: the first step starts at 0 s, got {starts[0]:g}")
        unit = "op/s" if self.targets == "ops" else "fraction of the reference"
        for i, (s, r) in enumerate(self.schedule):
            if r <= 0:
                raise ValueError(f"schedule[{i}]: expected a positive rate in {unit}, "
                                 f"got {r:g}")
            if self.targets == "reference" and r > MAX_REFERENCE:
                raise ValueError(f"schedule[{i}]: expected a {unit} (at most "
                                 f"{MAX_REFERENCE:g}), got {r:g}")
            if i and s <= starts[i - 1]:
                raise ValueError(f"schedule[{i}]: expected steps in increasing time, "
                                 f"got {s:g} after {starts[i - 1]:g}")
        if self.window_s * 2 > self.duration_s:
            raise ValueError(f"window_s: expected at most half of duration_s "
                             f"({self.duration_s:g}), got {self.window_s:g}")
        return self

    def target(self, t: float) -> float:
        """The target rate (the SLO, op/s) at ``t`` seconds into the run."""
        if self.targets != "ops":
            raise ValueError("workload: targets relative to the reference, resolve them "
                             "first (WorkloadSpec.resolved)")
        return step_rate(self.schedule, t)

    def resolved(self, reference_ops: float) -> WorkloadSpec:
        """The same workload with absolute targets: a ``reference`` schedule's
        fractions times ``reference_ops`` (an ``ops`` schedule unchanged)."""
        if self.targets == "ops":
            return self
        return self.model_copy(update={
            "targets": "ops",
            "schedule": [(s, r * reference_ops) for s, r in self.schedule]})

    @property
    def peak(self) -> float:
        return max(r for _, r in self.schedule)


class FailureSpec(_Strict):
    """002 §V-C3: every ``every_s`` from ``start_s`` to ``stop_s``, a storage host
    chosen uniformly at random loses ``share`` of its objects (files deleted)."""

    share: float = Field(0.15, gt=0, le=1)
    every_s: float = Field(30.0, gt=0)
    start_s: float = Field(10.0, ge=0)
    stop_s: float | None = Field(None, gt=0)
    seed: int = 7


class TrainingSpec(_Strict):
    """The sweep that trains the models before the loop starts (002 §III: off-line):
    per-node user bandwidth caps for eq. (1), recovery caps for eq. (2)."""

    user_mbps: list[float] = Field(default_factory=lambda: [2.0, 3.0, 4.0, 5.0, 6.0],
                                   min_length=2)
    user_seconds: float = Field(12.0, gt=0, le=600)
    recovery_mbps: list[float] = Field(default_factory=lambda: [1.0, 2.0, 4.0, 8.0, 12.0],
                                       min_length=2)
    recovery_share: float = Field(0.2, gt=0, le=1)

    @model_validator(mode="after")
    def _positive(self) -> TrainingSpec:
        for name in ("user_mbps", "recovery_mbps"):
            for i, v in enumerate(getattr(self, name)):
                if v <= 0:
                    raise ValueError(f"{name}[{i}]: expected a positive rate in Mbit/s, "
                                     f"got {v:g}")
        return self


POLICY_NAMES = ("bwman", "none", "static")
TRADEOFFS = ("user-first", "system-first")


class ControlSpec(_Strict):
    """The BwMan loop (002 §IV): every ``dt_s`` Monitor -> Analyze -> Plan -> Execute.

    ``policy``: ``bwman`` (the models' plan), ``none`` (no management: plain sharing)
    or ``static`` (a fixed split, ``static_user_share`` of the quota to clients);
    ``tradeoff``: who is served first when the quota cannot cover both (002 §IV-B);
    ``enforcer``: ``tc`` (HTB classes per service port on the storage hosts'
    interfaces, 002 §V-C4) or ``meters`` (OpenFlow meters set by the controller);
    ``quota_mbps``: each storage node's bandwidth (None: its link rate);
    ``borrow``: the plan's rates are guarantees and a class may use what the other
    leaves, the side the trade-off serves first first in line (HTB ceil = quota);
    false: 002's hard token buckets (ceil = rate). Meters cannot lend: there the
    class second in line is held to its guarantee.
    """

    policy: str = "bwman"
    tradeoff: str = "user-first"
    enforcer: Literal["tc", "meters"] = "tc"
    dt_s: float = Field(2.0, gt=0, le=60)
    quota_mbps: float | None = Field(None, gt=0)
    margin: float = Field(0.15, ge=0, le=2)
    recovery_floor_mbps: float = Field(0.5, ge=0)
    user_floor_mbps: float = Field(0.5, ge=0)
    catchup_s: float = Field(10.0, gt=0)
    static_user_share: float = Field(0.5, gt=0, lt=1)
    refit_error: float = Field(0.25, gt=0)
    lease_dt: float = Field(3.0, ge=1)
    borrow: bool = True

    @model_validator(mode="after")
    def _names(self) -> ControlSpec:
        if self.policy not in POLICY_NAMES:
            raise ValueError(f"policy: unknown policy {self.policy!r}, expected one of "
                             f"{', '.join(POLICY_NAMES)}{nearest(self.policy, POLICY_NAMES)}")
        if self.tradeoff not in TRADEOFFS:
            raise ValueError(f"tradeoff: unknown trade-off {self.tradeoff!r}, expected one of "
                             f"{', '.join(TRADEOFFS)}{nearest(self.tradeoff, TRADEOFFS)}")
        return self


class SwiftSpec(_Strict):
    """Everything one store and one BwMan experiment on it need."""

    testbed: SwiftTestbedSpec = Field(default_factory=SwiftTestbedSpec)
    swift: ClusterSpec = Field(default_factory=ClusterSpec)
    workload: WorkloadSpec = Field(default_factory=WorkloadSpec)
    failures: FailureSpec = Field(default_factory=FailureSpec)
    training: TrainingSpec = Field(default_factory=TrainingSpec)
    control: ControlSpec = Field(default_factory=ControlSpec)

    @model_validator(mode="after")
    def _fits(self) -> SwiftSpec:
        need = self.swift.storage_hosts + 2
        if need > self.testbed.hosts:
            raise ValueError(
                f"swift.storage_hosts: {self.swift.storage_hosts} storage hosts + proxy + "
                f"client need {need} hosts, the testbed has {self.testbed.hosts} "
                f"(testbed.hosts)")
        self.testbed.storage_hosts = self.swift.storage_hosts
        quota = self.quota_mbps
        if quota > self.testbed.link_mbps:
            raise ValueError(f"control.quota_mbps: expected at most the storage link rate "
                             f"testbed.link_mbps ({self.testbed.link_mbps:g}), got {quota:g}")
        if self.workload.targets == "reference":
            ref = self.reference_mbps
            sweep = self.training.user_mbps
            if not min(sweep) <= ref <= max(sweep):
                raise ValueError(
                    f"control.quota_mbps: the SLO's reference bandwidth {ref:g} Mbit/s "
                    f"(workload.reference_user_share {self.workload.reference_user_share:g}"
                    f" of the quota {quota:g}) is outside the training sweep "
                    f"training.user_mbps {min(sweep):g}..{max(sweep):g}, where it is "
                    f"measured")
            return self
        floor = slo_floor_mbps(self)
        if quota < floor:
            raise ValueError(
                f"control.quota_mbps: the SLO's peak {self.workload.peak:g} op/s of "
                f"{self.swift.object_kb:g} KB objects needs at least {floor:.2f} Mbit/s per "
                f"storage node, the quota is {quota:g}")
        return self

    @property
    def quota_mbps(self) -> float:
        return self.control.quota_mbps or self.testbed.link_mbps

    @property
    def reference_mbps(self) -> float:
        """The clients' bandwidth per node at which the reference throughput is
        measured (``workload.reference_user_share`` of the quota)."""
        return self.workload.reference_user_share * self.quota_mbps

    @property
    def storage(self) -> list[str]:
        return storage_names(self.swift.storage_hosts)


def slo_floor_mbps(spec: SwiftSpec) -> float:
    """The least bandwidth a storage node needs to carry the SLO's peak rate, from
    the payload alone (no model): reads leave one replica (spread over the nodes),
    writes reach every replica. Busier direction of a node's link, Mbit/s."""
    sw, wl = spec.swift, spec.workload
    bits = 8.0 * sw.object_bytes * wl.peak / 1e6
    out = bits * wl.read_share / sw.storage_hosts
    into = bits * (1.0 - wl.read_share) * sw.replicas / sw.storage_hosts
    return max(out, into)


def _one_line(err: ValidationError, source: str) -> str:
    e = err.errors()[0]
    where = ".".join(str(x) for x in e["loc"]) or "spec"
    msg = e["msg"].removeprefix("Value error, ")
    if e["type"] == "extra_forbidden":
        msg = "unknown field" + nearest(str(e["loc"][-1]), _fields(e["loc"][:-1]))
    if e["loc"] and msg.startswith(f"{e['loc'][-1]}: "):
        where = where.rsplit(".", 1)[0] if "." in where else where
    return f"{source}: {where}: {msg}"


def _fields(loc: tuple[Any, ...]) -> list[str]:
    model: Any = SwiftSpec
    for part in loc:
        f = model.model_fields.get(str(part))
        if f is None or not isinstance(f.annotation, type):
            return []
        model = f.annotation
    return list(model.model_fields)


def load(spec: str | Path | dict[str, Any] | None = None,
         overrides: dict[str, dict[str, Any]] | None = None) -> SwiftSpec:
    """Parse a YAML file or a dict (None: the defaults), apply ``overrides``
    (section -> field -> value) and validate; raise :class:`SpecError` with one line."""
    source = "spec"
    data: dict[str, Any] = {}
    if isinstance(spec, dict):
        data = {k: dict(v) if isinstance(v, dict) else v for k, v in spec.items()}
    elif spec is not None:
        source = str(spec)
        data = load_yaml(Path(spec), "Swift spec")
    for section, fields in (overrides or {}).items():
        cur = data.setdefault(section, {})
        if not isinstance(cur, dict):
            raise SpecError(f"{source}: {section}: expected a mapping")
        cur.update(fields)
    try:
        return SwiftSpec.model_validate(data)
    except ValidationError as err:
        raise SpecError(_one_line(err, source)) from None
