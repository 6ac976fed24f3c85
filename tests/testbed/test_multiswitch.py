"""Multi-switch topologies live (000 Fig. 2's two-tier, a leaf-spine): paths from
the model's router, every host pair reachable, internal links really shaped, and
a meter placed by the controller at the sender's edge switch (000 §V-B1); packets take the
core link :meth:`Testbed.paths` names, which the managers' routing matrices are built from."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

from streamband.loop.openflow import MeterEnforcer
from streamband.model.testbed import load_spec
from streamband.sdn.client import ControllerClient
from streamband.testbed.network import Testbed

from .conftest import listening

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the testbed needs root")
PORTS = "api=127.0.0.1:8191,openflow=127.0.0.1:6663"
INTERNAL_MBPS = 10.0


def _goodput_mbps(tb: Testbed, src: str, dst: str, port: int, seconds: int = 3) -> float:
    out = tb.node(src).cmd(f"iperf3 -c {tb.ip(dst)} -p {port} -t {seconds} -O 1 -J")
    return json.loads(out)["end"]["sum_received"]["bits_per_second"] / 1e6


def _tx_bytes(intf: str) -> int:
    with open(f"/sys/class/net/{intf}/statistics/tx_bytes") as f:
        return int(f.read())


def _all_pairs_ping(tb: Testbed) -> None:
    assert tb.net.pingAll(timeout="1") == 0.0


def _servers(tb: Testbed, host: str, ports: list[int]) -> None:
    for p in ports:
        tb.popen(host, ["iperf3", "-s", "-p", str(p)], stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL)
    for p in ports:
        listening(tb, host, p)


def test_two_tier_paths_shaping_and_edge_meter(cleanup):
    spec = load_spec(f"two_tier:link_mbps=100,internal_mbps={INTERNAL_MBPS:g},{PORTS}")
    with Testbed(spec) as tb:
        client = ControllerClient(spec.api)
        client.wait_ready(len(tb.topo.switches))
        assert len(tb.topo.switches) == 6 and len(tb.topo.hosts) == 8
        _all_pairs_ping(tb)
        a, b, c = tb.topo.hosts[0], tb.topo.hosts[2], tb.topo.hosts[4]  # racks 1, 2, 3
        assert len({tb.edge_dpid(h) for h in (a, b, c)}) == 3
        _servers(tb, b, [5201])
        _servers(tb, c, [5202])
        (path,) = tb.paths([(a, b)])
        refs = tb.link_ports()
        core_links = [lk.id for lk in tb.topo.links if lk.src == tb.topo.host_switch(a)
                      and lk.kind == "internal"]
        before = {lid: _tx_bytes(refs[lid].port) for lid in core_links}
        cross = _goodput_mbps(tb, a, b, 5201)  # rack -> core -> rack: 10 Mbit/s internal
        print(f"\ntwo_tier across racks: {cross:.2f} Mbit/s (internal {INTERNAL_MBPS})")
        assert 0.75 * INTERNAL_MBPS < cross < 1.05 * INTERNAL_MBPS
        # the packets took the core link tb.paths names (the manager's routing), not the other
        sent = {lid: _tx_bytes(refs[lid].port) - before[lid] for lid in core_links}
        print(f"rack uplinks {sent} bytes; path {path}")
        (taken,) = [lid for lid in core_links if lid in path]
        assert sent[taken] > 2e6
        assert all(sent[lid] < 0.05 * sent[taken] for lid in core_links if lid != taken)
        # one metered flow across racks; no dpid: the controller meters at a's switch
        flow = {"src_ip": tb.ip(a), "dst_ip": tb.ip(c), "dst_port": 5202}
        enf = MeterEnforcer(client, [flow], dt=10.0)
        enf.enforce(np.array([4e6]))
        (m,) = client.meters()
        assert m["dpid"] == tb.edge_dpid(a) and m["meter_id"] is not None
        metered = _goodput_mbps(tb, a, c, 5202)
        print(f"two_tier metered at 4 Mbit/s on dpid {m['dpid']}: {metered:.2f} Mbit/s")
        assert 0.8 * 4 < metered < 1.15 * 4
        (f,) = client.flows(fresh=True)
        assert f["bytes"] > 1e6  # the rule at the edge switch counted the flow


def test_leaf_spine_paths_and_shaping(cleanup):
    spec = load_spec("leaf_spine:leaves=2,spines=2,hosts_per_leaf=2,link_mbps=100,"
                     f"internal_mbps={INTERNAL_MBPS:g},{PORTS}")
    with Testbed(spec) as tb:
        ControllerClient(spec.api).wait_ready(len(tb.topo.switches))
        _all_pairs_ping(tb)
        a, b = tb.topo.hosts[0], tb.topo.hosts[-1]
        assert tb.edge_dpid(a) != tb.edge_dpid(b)
        _servers(tb, b, [5201])
        cross = _goodput_mbps(tb, a, b, 5201)
        print(f"\nleaf_spine across leaves: {cross:.2f} Mbit/s (fabric {INTERNAL_MBPS})")
        assert 0.75 * INTERNAL_MBPS < cross < 1.05 * INTERNAL_MBPS
