"""The identity of one network flow as the enforcer sees it: an IP pair plus the
transport ports (000 §V-B1 binds one meter to the rule matching one flow)."""

from __future__ import annotations

import ipaddress

from pydantic import Field, field_validator

from streamband.model.numbers import Numbers


def ipv4(value: str) -> str:
    """``value`` if it is an IPv4 address, in its usual form (a ValueError otherwise)."""
    try:
        return str(ipaddress.IPv4Address(value))
    except ValueError:
        raise ValueError(f"expected an IPv4 address, got {str(value)[:60]!r}") from None


class FlowKey(Numbers):
    """IPv4 source/destination, transport protocol and ports (0 = any port)."""

    src_ip: str
    dst_ip: str
    proto: str = Field("tcp", pattern="^(tcp|udp)$")
    src_port: int = Field(0, ge=0, le=65535)
    dst_port: int = Field(0, ge=0, le=65535)

    @field_validator("src_ip", "dst_ip")
    @classmethod
    def _ipv4(cls, v: str) -> str:
        return ipv4(v)

    def key(self) -> tuple[str, str, str, int, int]:
        return (self.src_ip, self.dst_ip, self.proto, self.src_port, self.dst_port)

    def label(self) -> str:
        return f"{self.proto}:{self.src_ip}:{self.src_port}->{self.dst_ip}:{self.dst_port}"
