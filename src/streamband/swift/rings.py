"""The store's rings (account, container, object), built in this process with
Swift's own :class:`swift.common.ring.RingBuilder`: one device per storage host,
one zone per host, so the replicas of a partition sit on distinct hosts."""

from __future__ import annotations

from pathlib import Path

from streamband.swift.layout import (
    ACCOUNT_PORT,
    CONTAINER_PORT,
    DEVICE,
    OBJECT_PORT,
    REPLICATION_PORT,
)

#: ring name -> (client port, replication port)
RINGS = {
    "account": (ACCOUNT_PORT, ACCOUNT_PORT),
    "container": (CONTAINER_PORT, CONTAINER_PORT),
    "object": (OBJECT_PORT, REPLICATION_PORT),
}


def build_rings(swift_dir: Path, ips: list[str], replicas: int, part_power: int) -> list[Path]:
    """Write ``account|container|object.ring.gz`` for devices at ``ips``; returns them."""
    from swift.common.ring import RingBuilder

    swift_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for name, (port, repl_port) in RINGS.items():
        builder = RingBuilder(part_power, replicas, 0)
        for i, ip in enumerate(ips):
            builder.add_dev({"id": i, "region": 1, "zone": i + 1, "ip": ip, "port": port,
                             "replication_ip": ip, "replication_port": repl_port,
                             "device": DEVICE, "weight": 100.0})
        builder.rebalance(seed=1)
        path = swift_dir / f"{name}.ring.gz"
        builder.get_ring().save(str(path))
        out.append(path)
    return out
