"""A testbed spec: the network spec (:class:`~streamband.model.network.NetworkSpec`,
the one grammar of every network in streamband) plus control-plane fields: the
controller, its API and OpenFlow addresses, and optional iperf3 cross traffic.

``SPEC`` on the command line is a YAML file (a mapping, or a ``testbed:`` mapping
inside an experiment file) or the short form ``KIND[:key=value,...]``, e.g.
``star:hosts=8,link_mbps=20`` or ``fat_tree:k=4,api=127.0.0.1:8191``. Validated on
load: a bad spec stops with one line naming the field and the nearest valid key.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator

from streamband.errors import SpecError, one_line
from streamband.model.network import KINDS, NetworkSpec, parse_network, split_short
from streamband.model.numbers import Numbers
from streamband.model.source import load_yaml

#: what one machine (2 cores) carries as emulated hosts and switches
MAX_HOSTS, MAX_SWITCHES = 64, 32


def address(value: str, what: str) -> str:
    """``value`` if it is HOST:PORT (port 1..65535), else ValueError naming ``what``."""
    host, sep, port = value.rpartition(":")
    if not sep or not host or not re.fullmatch(r"[0-9]{1,5}", port) \
            or not 1 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT for the {what} (port 1..65535), got {value!r}")
    return value


class CrossTraffic(Numbers):
    """One iperf3 flow between two hosts that the application does not own."""

    model_config = ConfigDict(extra="forbid")
    src: str = Field(description="the sending host")
    dst: str = Field(description="the receiving host")
    mbps: float = Field(gt=0, le=10_000, allow_inf_nan=False, description="its rate, Mbit/s")
    udp: bool = Field(True, description="UDP at a fixed rate (else TCP)")


class TestbedSpec(NetworkSpec):
    """The emulated network (a :class:`NetworkSpec`) and its control plane.

    Parameters
    ----------
    controller : bool
        Start ``streamband controller`` with the testbed (default True).
    api : str
        The controller's HTTP API address, HOST:PORT (default 127.0.0.1:8181).
    openflow : str
        The OpenFlow listen address, HOST:PORT (default 127.0.0.1:6653).
    cross_traffic : list of CrossTraffic
        iperf3 flows the application does not own.
    """

    __test__ = False  # not a pytest class
    model_config = ConfigDict(extra="forbid")
    link_mbps: float = Field(20.0, gt=0, le=1000, allow_inf_nan=False,
                             description="host link capacity, Mbit/s")
    internal_mbps: float | None = Field(None, gt=0, le=1000, allow_inf_nan=False,
                                        description="switch-to-switch link capacity, Mbit/s "
                                        "(default: link_mbps)")
    congestion_control: Literal["cubic", "reno", "bbr"] = Field(
        "cubic", description="TCP congestion control in every host (Linux's default, as the "
        "papers ran; a namespace would otherwise inherit this machine's setting)")
    controller: bool = Field(True, description="start streamband controller with the testbed")
    api: str = Field("127.0.0.1:8181", description="the controller's HTTP API, HOST:PORT "
                     "(a bearer token is required off loopback)")
    openflow: str = Field("127.0.0.1:6653", description="the OpenFlow listener, HOST:PORT")
    cross_traffic: list[CrossTraffic] = Field([], description="iperf3 flows the application "
                                              "does not own")

    @field_validator("api")
    @classmethod
    def _api(cls, v: str) -> str:
        return address(v, "controller's HTTP API")

    @field_validator("openflow")
    @classmethod
    def _openflow(cls, v: str) -> str:
        return address(v, "OpenFlow listener")

    @classmethod
    def from_network(cls, net: NetworkSpec, **control: Any) -> TestbedSpec:
        """The testbed that emulates ``net`` (same shape and capacities)."""
        return load_spec({**net.model_dump(exclude_unset=True), "topology": net.topology,
                          "link_mbps": net.link_mbps, "internal_mbps": net.internal_mbps,
                          **control})


def load_spec(spec: str | Path | dict[str, Any]) -> TestbedSpec:
    """Parse a YAML file, a ``KIND[:key=val,...]`` string or a dict.

    Raises
    ------
    SpecError
        One line naming the file or short form, the field and what was expected.
    """
    source = ""
    if isinstance(spec, dict):
        data = dict(spec)
    elif Path(str(spec)).suffix in (".yaml", ".yml") or os.path.lexists(str(spec)):
        source = str(spec)
        loaded = load_yaml(Path(str(spec)), "testbed spec")
        data = loaded.get("testbed", loaded)
        if not isinstance(data, dict):
            raise SpecError(f"{spec}: testbed: expected a mapping")
    else:
        source = repr(str(spec))
        data = split_short(str(spec), source)
    kind = data.get("topology", "star")
    if kind == "big_switch":
        raise SpecError(f"{source or 'spec'}: topology: big_switch is the coflow simulator's "
                        f"fabric; the testbed emulates star, two_tier, fat_tree or leaf_spine")
    if kind not in KINDS:
        parse_network(data, source)  # raises the unknown-kind line, with the nearest kind
    try:
        out = TestbedSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(one_line(exc, source, TestbedSpec)) from None
    topo = out.build()
    if len(topo.hosts) > MAX_HOSTS or len(topo.switches) > MAX_SWITCHES:
        raise SpecError(f"{source or 'spec'}: {len(topo.hosts)} hosts and "
                        f"{len(topo.switches)} switches; the testbed emulates at most "
                        f"{MAX_HOSTS} hosts and {MAX_SWITCHES} switches on one machine")
    for i, ct in enumerate(out.cross_traffic):
        for end in ("src", "dst"):
            if not topo.is_host(getattr(ct, end)):
                raise SpecError(f"{source or 'spec'}: cross_traffic[{i}].{end}: unknown host "
                                f"{getattr(ct, end)!r}, expected one of {', '.join(topo.hosts)}")
    return out
