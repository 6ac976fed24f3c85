"""Experiment specs: YAML validated on load (pydantic); a bad spec stops with one
line naming the field and what was expected, before anything starts."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from streamband.model.app import App
from streamband.model.topology import Topology, TopologyError, fat_tree, leaf_spine, star, two_tier


class SpecError(ValueError):
    """A spec that cannot run; ``str(err)`` is the one line to show."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NetworkSpec(_Strict):
    """A network and the bandwidths swept on it.

    ``throttle="host"``: every host link gets the swept bandwidth (000 §VI-A1, edge
    bottleneck); ``throttle="internal"``: host links keep ``host_bandwidth_mbps`` and
    the internal links get the swept bandwidth (multi-hop bottleneck).
    """

    name: str = Field(min_length=1)
    topology: Literal["star", "two_tier", "fat_tree", "leaf_spine"]
    hosts: list[str] | int | None = None
    bandwidth_mbps: list[float] = Field(min_length=1)
    throttle: Literal["host", "internal"] = "host"
    host_bandwidth_mbps: float = Field(1000.0, gt=0)
    racks: int = Field(4, ge=1)
    hosts_per_rack: int = Field(2, ge=1)
    cores: int = Field(2, ge=1)
    k: int = Field(4, ge=2)
    leaves: int = Field(2, ge=1)
    spines: int = Field(2, ge=1)
    hosts_per_leaf: int = Field(2, ge=1)

    @model_validator(mode="after")
    def _positive(self) -> NetworkSpec:
        for i, bw in enumerate(self.bandwidth_mbps):
            if not bw > 0:
                raise ValueError(
                    f"bandwidth_mbps[{i}]: expected a positive capacity in Mbit/s, got {bw}"
                )
        return self

    def build(self, bandwidth_mbps: float) -> Topology:
        bw = bandwidth_mbps * 1e6
        host_bw = bw if self.throttle == "host" else self.host_bandwidth_mbps * 1e6
        inner = bw if self.throttle == "internal" else self.host_bandwidth_mbps * 1e6
        try:
            if self.topology == "star":
                return star(self.hosts if self.hosts is not None else 8, host_bw, self.name)
            if self.topology == "two_tier":
                names = self.hosts if isinstance(self.hosts, list) else None
                return two_tier(self.racks, self.hosts_per_rack, self.cores, host_bw, inner,
                                names, self.name)
            if self.topology == "fat_tree":
                topo = fat_tree(self.k, host_bw)
                return topo if self.throttle == "host" else topo.with_capacity("internal", inner)
            topo = leaf_spine(self.leaves, self.spines, self.hosts_per_leaf, host_bw, inner)
            return topo
        except TopologyError as err:
            raise SpecError(f"network {self.name}: {err}") from None


class PlacementSpec(_Strict):
    strategy: Literal["round_robin", "random", "explicit", "tuple_size_rule", "joint"]
    map: dict[str, str] | None = None
    seed: int = 0

    @model_validator(mode="after")
    def _map(self) -> PlacementSpec:
        if self.strategy == "explicit" and not self.map:
            raise ValueError("an explicit placement needs map: {instance or operator: host}")
        return self


class SimSpec(_Strict):
    duration_s: float = Field(300.0, gt=0)
    step_s: float = Field(0.1, gt=0)
    interval_s: float = Field(5.0, gt=0)
    sample_s: float = Field(1.0, gt=0)
    warmup_s: float = Field(10.0, ge=0)
    buffer_tuples: float | None = Field(None, gt=0)
    backpressure: tuple[float, float] | None = None


class SweepSpec(_Strict):
    """001 §III-D's brute-force search: Δb = step_frac · b between bottlenecked flows."""

    step_frac: float = Field(0.025, gt=0, lt=0.5)
    duration_s: float = Field(60.0, gt=0)


class ExperimentSpec(_Strict):
    experiment: str = Field(min_length=1)
    app: App
    networks: list[NetworkSpec] = Field(min_length=1)
    placements: dict[str, PlacementSpec] = Field(min_length=1)
    policies: list[str] = Field(min_length=1)
    sim: SimSpec = SimSpec()
    sweep: SweepSpec = SweepSpec()
    paper: dict[str, float] = Field(default_factory=dict, description="the paper's figures")

    @model_validator(mode="after")
    def _policies(self) -> ExperimentSpec:
        from streamband.alloc import POLICIES

        known = ["tcp", "sweep", *POLICIES]
        for i, p in enumerate(self.policies):
            if p not in known:
                raise ValueError(f"policies[{i}]: unknown policy {p!r}, expected one of {known}")
        return self


def _one_line(err: ValidationError, source: str) -> str:
    e = err.errors()[0]
    loc = ".".join(str(p) for p in e["loc"])
    msg = e["msg"].removeprefix("Value error, ")
    got = e.get("input")
    shown = "" if isinstance(got, dict | list) or got is None else f" (got {got!r})"
    where = f"{source}: " if source else ""
    return f"{where}{loc + ': ' if loc else ''}{msg}{shown}"


def parse_spec(data: object, source: str = "") -> ExperimentSpec:
    """Validate a spec dict; raises SpecError with one line on bad input."""
    try:
        return ExperimentSpec.model_validate(data)
    except ValidationError as err:
        raise SpecError(_one_line(err, source)) from None


def load_spec(path: Path) -> ExperimentSpec:
    """Load and validate a YAML spec file."""
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise SpecError(f"{path}: cannot read the spec ({err.strerror})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark else ""
        raise SpecError(f"{path}:{line} not valid YAML, expected a mapping") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a YAML mapping at the top level")
    return parse_spec(data, str(path))


def builtin_spec(name: str) -> Path:
    """Path of a spec shipped with the package (``paper-001``, ``paper-000-tt``, ...)."""
    return Path(__file__).parent / "specs" / f"{name}.yaml"
