"""A testbed spec: which topology of :mod:`streamband.model.topology` to emulate,
its link capacities, the controller and optional iperf3 cross traffic.

``SPEC`` on the command line is either a YAML file or a short form
``KIND[:key=value,...]``, e.g. ``star:workers=8,bw_mbps=20`` or ``fat_tree:k=4``.
Validated on load: a bad spec stops with one line naming the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from streamband.model import topology as mt


class SpecError(ValueError):
    """A spec that cannot be built; the message names the field."""


class CrossTraffic(BaseModel):
    """One iperf3 flow between two hosts that the application does not own."""

    model_config = ConfigDict(extra="forbid")
    src: str
    dst: str
    mbps: float = Field(gt=0)
    udp: bool = True


class TestbedSpec(BaseModel):
    """The emulated network. Capacities in Mbit/s at this edge (bit/s inside)."""

    __test__ = False  # not a pytest class
    model_config = ConfigDict(extra="forbid")
    kind: Literal["star", "two_tier", "fat_tree", "leaf_spine"] = "star"
    # star (000 §VI-A1): workers plus a master host on one switch
    workers: int = Field(8, ge=1, le=64)
    master: bool = True
    bw_mbps: float = Field(20.0, gt=0, le=1000)
    # two_tier (000 Fig. 2c)
    racks: int = Field(4, ge=1, le=16)
    hosts_per_rack: int = Field(2, ge=1, le=16)
    cores: int = Field(2, ge=1, le=8)
    internal_mbps: float | None = Field(None, gt=0, le=1000)
    # fat_tree
    k: int = Field(4, ge=2, le=4)
    # leaf_spine
    leaves: int = Field(2, ge=1, le=8)
    spines: int = Field(2, ge=1, le=4)
    hosts_per_leaf: int = Field(2, ge=1, le=16)
    # control plane
    controller: bool = True  # start `streamband controller` with the testbed
    api: str = "127.0.0.1:8181"
    openflow: str = "127.0.0.1:6653"
    cross_traffic: list[CrossTraffic] = []

    @model_validator(mode="after")
    def _even_k(self) -> TestbedSpec:
        if self.k % 2:
            raise ValueError(f"k: expected an even number, got {self.k}")
        return self

    def topology(self) -> mt.Topology:
        """The model topology: the one source of truth for sim and testbed."""
        bw = self.bw_mbps * 1e6
        if self.kind == "star":
            hosts = [f"w{i + 1}" for i in range(self.workers)]
            return mt.star((["master"] if self.master else []) + hosts, bw)
        if self.kind == "two_tier":
            internal = (self.internal_mbps or self.bw_mbps) * 1e6
            return mt.two_tier(self.racks, self.hosts_per_rack, self.cores, bw, internal)
        if self.kind == "fat_tree":
            return mt.fat_tree(self.k, bw)
        fabric = (self.internal_mbps or self.bw_mbps) * 1e6
        return mt.leaf_spine(self.leaves, self.spines, self.hosts_per_leaf, bw, fabric)


def _scalar(text: str) -> Any:
    return yaml.safe_load(text)


def load_spec(spec: str | Path | dict[str, Any]) -> TestbedSpec:
    """Parse a YAML file, a ``KIND:key=val,...`` string or a dict; raise :class:`SpecError`."""
    data: dict[str, Any]
    if isinstance(spec, dict):
        data = dict(spec)
    elif Path(str(spec)).suffix in (".yaml", ".yml") or Path(str(spec)).is_file():
        path = Path(str(spec))
        try:
            loaded = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise SpecError(f"spec {path}: {exc}") from None
        if not isinstance(loaded, dict):
            raise SpecError(f"spec {path}: expected a mapping at the top level")
        data = loaded.get("testbed", loaded)
    else:
        kind, _, rest = str(spec).partition(":")
        data = {"kind": kind}
        for item in filter(None, rest.split(",")):
            key, eq, val = item.partition("=")
            if not eq:
                raise SpecError(f"spec {spec!r}: expected key=value, got {item!r}")
            data[key.strip()] = _scalar(val.strip())
    try:
        out = TestbedSpec.model_validate(data)
        topo = out.topology()
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "spec"
        raise SpecError(f"spec field {where}: {err['msg']}") from None
    except mt.TopologyError as exc:
        raise SpecError(f"spec: {exc}") from None
    for ct in out.cross_traffic:
        for end in (ct.src, ct.dst):
            if not topo.is_host(end):
                raise SpecError(f"spec field cross_traffic: unknown host {end!r}")
    return out
