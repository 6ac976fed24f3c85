"""Experiment specs: YAML validated on load (pydantic), before anything starts.

A spec names an application DAG (:class:`streamband.model.app.App`) or several
(``apps``: each its own DAG, placement and sources, sharing one network, 000 §VII), the
networks and bandwidths to sweep (:class:`NetworkSweep`, a
:class:`~streamband.model.network.NetworkSpec` plus the sweep), the placements and the
policies. A bad spec stops with one line
naming the file, the field and what was expected (:class:`streamband.errors.SpecError`).
``docs/spec.md`` lists every field with its unit and default (generated from these
models by ``python -m streamband.experiments.schema``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from streamband.errors import SpecError, nearest, one_line
from streamband.model.app import App
from streamband.model.apps import SEP, app_of, merge
from streamband.model.network import MAX_LINK_MBPS, NetworkSpec
from streamband.model.numbers import Numbers
from streamband.model.source import load_yaml
from streamband.model.topology import Topology


class _Strict(Numbers):
    model_config = ConfigDict(extra="forbid")


class NetworkSweep(NetworkSpec):
    """A network and the bandwidths swept on it.

    ``throttle: host``: the host links get each swept bandwidth (000 §VI-A1, edge
    bottleneck) and the internal links ``internal_mbps`` (default: the same);
    ``throttle: internal``: the internal links get the swept bandwidth and the host
    links ``link_mbps`` (default 1000, 000's multi-hop setting).
    """

    name: str = Field(min_length=1, description="the network's name in tables and plots")
    bandwidth_mbps: list[float] = Field(
        min_length=1, description="the bandwidths swept, Mbit/s (10^6 bit/s)")
    throttle: Literal["host", "internal"] = Field(
        "host", description="which links get the swept bandwidth")

    @model_validator(mode="after")
    def _sweep(self) -> NetworkSweep:
        for i, bw in enumerate(self.bandwidth_mbps):
            if not 0 < bw <= MAX_LINK_MBPS:
                raise ValueError(f"bandwidth_mbps[{i}]: expected a positive, finite capacity "
                                 f"of at most {MAX_LINK_MBPS:g} Mbit/s, got {bw:g}")
        swept = "link_mbps" if self.throttle == "host" else "internal_mbps"
        if swept in self.model_fields_set:
            raise ValueError(f"{swept}: set by bandwidth_mbps when throttle is "
                             f"{self.throttle!r}; expected it left out")
        return self

    def at(self, bandwidth_mbps: float) -> Topology:
        """The topology with the swept links at ``bandwidth_mbps``."""
        key = "link_mbps" if self.throttle == "host" else "internal_mbps"
        net = NetworkSpec.model_validate(
            {**self.model_dump(exclude={"name", "bandwidth_mbps", "throttle"}),
             key: bandwidth_mbps})
        return net.build(self.name)


class PlacementSpec(_Strict):
    """Where the instances run: ``round_robin`` (000 §II-A4), ``random`` (``seed``),
    ``explicit`` (``map`` of instance ``op[i]`` or operator name to host),
    ``tuple_size_rule`` (001 §III-C) or ``joint`` (placement chosen with the allocation)."""

    strategy: Literal["round_robin", "random", "explicit", "tuple_size_rule", "joint"]
    map: dict[str, str] | None = Field(None, description="explicit: instance or operator -> host")
    seed: int = Field(0, description="random: the seed")

    @model_validator(mode="after")
    def _map(self) -> PlacementSpec:
        if self.strategy == "explicit" and not self.map:
            raise ValueError("an explicit placement needs map: {instance or operator: host}")
        if self.strategy != "explicit" and self.map:
            raise ValueError(f"map: only an explicit placement has a map, got strategy "
                             f"{self.strategy!r}")
        return self


class SimSpec(_Strict):
    """The simulated run and the manager loop's periods, seconds."""

    duration_s: float = Field(300.0, gt=0, le=86_400, allow_inf_nan=False,
                              description="length of each run, s")
    step_s: float = Field(0.1, gt=0, allow_inf_nan=False, description="simulation step, s")
    interval_s: float = Field(5.0, gt=0, allow_inf_nan=False,
                              description="Δt between allocations (000 Alg. 1), s")
    sample_s: float = Field(1.0, gt=0, allow_inf_nan=False,
                            description="5-metric tuple sampling period, s")
    warmup_s: float = Field(10.0, ge=0, allow_inf_nan=False,
                            description="excluded from throughput and latency, s")
    buffer_tuples: float | None = Field(None, gt=0, le=1e12, allow_inf_nan=False,
                                        description="bound of every queue, tuples; none: unbounded")
    backpressure: tuple[float, float] | None = Field(
        None, description="(high, low) watermarks in tuples: Storm 1.x topology-wide "
        "backpressure; none: off")

    @model_validator(mode="after")
    def _periods(self) -> SimSpec:
        if self.warmup_s >= self.duration_s:
            raise ValueError(f"warmup_s: expected less than duration_s ({self.duration_s:g} s), "
                             f"got {self.warmup_s:g}")
        if self.step_s > self.sample_s:
            raise ValueError(f"step_s: expected at most sample_s ({self.sample_s:g} s), "
                             f"got {self.step_s:g}")
        if self.sample_s > self.interval_s:
            raise ValueError(f"sample_s: expected at most interval_s ({self.interval_s:g} s), "
                             f"got {self.sample_s:g}")
        if self.interval_s >= self.duration_s - self.warmup_s:
            raise ValueError(f"interval_s: expected less than the measured span "
                             f"(duration_s - warmup_s = {self.duration_s - self.warmup_s:g} s), "
                             f"got {self.interval_s:g}")
        if self.duration_s / self.step_s > 10_000_000:
            raise ValueError(f"step_s: {self.duration_s / self.step_s:.3g} steps; expected at "
                             f"most 10^7 (duration_s / step_s)")
        if self.backpressure is not None:
            high, low = self.backpressure
            if not 0 <= low < high <= 1e12:
                raise ValueError(f"backpressure: expected (high, low) with 0 <= low < high "
                                 f"<= 1e12 tuples, got ({high:g}, {low:g})")
        return self


class SweepSpec(_Strict):
    """001 §III-D's brute-force search: Δb = step_frac · b between bottlenecked flows."""

    step_frac: float = Field(0.025, gt=0, lt=0.5, description="Δb as a share of b")
    duration_s: float = Field(60.0, gt=0, le=86_400, allow_inf_nan=False,
                              description="length of each probe run, s")


class AppFairSpec(_Strict):
    """App-Fair's parameters (000 §VII) for ``appfair`` and ``hierarchical``.

    Its Δt is ``sim.interval_s``; ``hierarchical``'s rates are re-made every
    ``split_s``."""

    alpha: float = Field(0.5, gt=0, le=1, allow_inf_nan=False,
                         description="α of eq. (5): the weight of the average throughput up "
                         "to t against the last Δt's, in (0, 1]")
    groups: int = Field(8, ge=1, le=8, description="m: at most this many groups, one "
                        "strict-priority class each (000's testbed: 8)")
    similar: float = Field(0.0, ge=0, lt=1, allow_inf_nan=False,
                           description="applications whose scores differ by at most this "
                           "share of the largest are similar and share a group")
    starve: float = Field(0.05, ge=0, lt=1, allow_inf_nan=False,
                          description="starvation rule: an application below this share of "
                          "the mean application's throughput over the last Δt moves to the "
                          "highest group")
    split_s: float = Field(1.0, gt=0, le=600, allow_inf_nan=False,
                           description="hierarchical: the manager loop's step, s: App-aware "
                           "re-splits each metered application's share every split_s from "
                           "the last step's flow state, while App-Fair regroups the classes "
                           "every Δt (sim.interval_s); at or above Δt, one period")

    def params(self) -> dict[str, float]:
        """The policy's parameters (:func:`~streamband.alloc.appfair.params_of`); the
        loop's step ``split_s`` is the loop's, not the policy's."""
        return self.model_dump(exclude={"split_s"})


class ExperimentSpec(_Strict):
    """One experiment: one application or several, networks x bandwidths x placements x policies."""

    experiment: str = Field(min_length=1, description="the experiment's name")
    app: App | None = Field(None, description="the application (or give apps)")
    apps: list[App] | None = Field(
        None, min_length=2, description="several applications sharing the network (000 "
        "§VII), each its own DAG and sources; their operators are APP/OP in placements, "
        "tables and plots")
    networks: list[NetworkSweep] = Field(min_length=1)
    placements: dict[str, PlacementSpec] = Field(min_length=1)
    policies: list[str] = Field(min_length=1, description="policy names of the registry "
                                "(streamband.alloc.registry)")
    sim: SimSpec = SimSpec()
    sweep: SweepSpec = SweepSpec()
    appfair: AppFairSpec = Field(AppFairSpec(), description="App-Fair's parameters")
    #: the file it was read from (``""``: built in code), named by later errors
    _source: str = PrivateAttr("")

    @property
    def source(self) -> str:
        """The file the spec was read from (``""`` when it was built in code)."""
        return self._source

    def from_source(self, source: str) -> ExperimentSpec:
        """This spec, marked as read from ``source``."""
        self._source = source
        return self

    @model_validator(mode="after")
    def _apps(self) -> ExperimentSpec:
        if self.apps is None:
            if self.app is None:
                raise ValueError("app: expected an application (app) or several (apps)")
            return self
        names = [a.name for a in self.apps]
        for i, n in enumerate(names):
            if SEP in n:
                raise ValueError(f"apps[{i}].name: {n!r} contains {SEP!r}, which separates "
                                 f"an application's name from its operators'")
        if len(set(names)) != len(names):
            raise ValueError(f"apps: names must be distinct, got {names}")
        if self.app is not None:
            raise ValueError("app: give either app or apps, not both")
        for pname, p in self.placements.items():
            for key in p.map or {}:
                if app_of(key) not in names:
                    raise ValueError(
                        f"placements.{pname}.map: unknown app {app_of(key) or key!r} in "
                        f"{key!r}, expected APP{SEP}OPERATOR with APP one of "
                        f"{', '.join(names)}{nearest(app_of(key) or key, names)}")
        object.__setattr__(self, "app", merge(self.apps))  # derived: not marked as set
        return self

    @property
    def app_names(self) -> list[str]:
        """The applications sharing the network (one name for a one-app spec)."""
        assert self.app is not None
        return [a.name for a in self.apps] if self.apps else [self.app.name]

    @model_validator(mode="after")
    def _policies(self) -> ExperimentSpec:
        from streamband.alloc.registry import POLICIES

        for i, p in enumerate(self.policies):
            if p not in POLICIES:
                raise ValueError(f"policies[{i}]: unknown policy {p!r}, expected one of "
                                 f"{', '.join(POLICIES)}{nearest(p, POLICIES)}")
            if POLICIES[p].kind == "static":
                raise ValueError(f"policies[{i}]: {p!r} needs fixed caps (the sweep's probes "
                                 f"use it); expected tcp, sweep or a manager-loop policy")
            if POLICIES[p].classes and not self.apps:
                raise ValueError(f"policies[{i}]: {p!r} shares between applications; "
                                 f"expected a spec with apps (two or more)")
        if len(set(self.policies)) != len(self.policies):
            raise ValueError("policies: each policy at most once")
        names = [n.name for n in self.networks]
        if len(set(names)) != len(names):
            raise ValueError(f"networks: names must be distinct, got {names}")
        return self


def parse_spec(data: object, source: str = "") -> ExperimentSpec:
    """Validate a spec dict.

    Raises
    ------
    SpecError
        One line: ``source: field: what was expected (got ...)``.
    """
    if not isinstance(data, dict):
        raise SpecError(f"{source or 'spec'}: expected a YAML mapping at the top level, "
                        f"got {type(data).__name__}")
    try:
        return ExperimentSpec.model_validate(data).from_source(source)
    except ValidationError as err:
        raise SpecError(one_line(err, source, ExperimentSpec)) from None


def builtin_spec(name: str) -> Path:
    """Path of a spec shipped with the package (``paper-001``, ``paper-000-tt``, ...)."""
    return Path(__file__).parent / "specs" / f"{name}.yaml"


def builtin_names() -> list[str]:
    """The names of the shipped specs."""
    return sorted(p.stem for p in (Path(__file__).parent / "specs").glob("*.yaml"))


def load_spec(path: Path | str) -> ExperimentSpec:
    """Load and validate a spec: a YAML file, or the name of a shipped spec.

    Raises
    ------
    SpecError
    """
    p, shipped = Path(path), builtin_names()
    if not os.path.lexists(p) and str(path) in shipped:
        p = builtin_spec(str(path))
    elif not os.path.lexists(p):  # a link to nowhere, or a loop, has its own line below
        raise SpecError(f"{path}: no such file, expected a spec file or one of the shipped "
                        f"specs ({', '.join(shipped)}){nearest(str(path), shipped)}")
    return parse_spec(load_yaml(p), str(path))
