"""``streamband manage`` with ``enforce: shaper`` on the stage: the manager's one batch
per step gives each capped flow of fj an HTB class on the switch egress port of its path
(the port towards its receiver; never its sender's uplink), at the link's rate from the
config, the flows' meters only counting; a cap the policy lifts (switched to tcp) is
gone at the next step, not when its lease runs out; a killed manager's classes go
within their lease (fail-open: the ports share as plain TCP again). The stage's own
manager (meters) is started again at the end."""

from __future__ import annotations

import re
import signal
import time

from streamband.loop.engine import flow_name
from streamband.manage.stage import wait_for
from streamband.sdn.app import Settings as ControllerSettings
from streamband.storm.workloads import fork_join

DT = 2.0  # a lease of 3 Δt = 6 s: a cap lifted at the next step beats it by 2 Δt
LINK_BPS = 20e6  # the stage's links
LEASE_CHECK_S = ControllerSettings().lease_check_s  # how often the controller expires leases
FJ_BYTES = (lambda w, a: w.edge_bytes(a))(*fork_join())  # as the stage's config


def classes(stage, names: set[str]) -> list[dict]:
    """The controller's rate classes of the flows ``names``."""
    return [r for r in stage.controller().rates() if flow_name(r["flow"]) in names]


def test_shaper_classes_on_the_egress_ports(stage, tmp_path):
    tb = stage.tb
    port_of = {tb.ip(h): tb.switch_port(h) for h in tb.topo.hosts}
    cfg = stage.write_config(tmp_path / "shaper.yaml", [
        {"name": "fj", "policy": "appaware", "tuple_bytes": FJ_BYTES}],
        stage.extra["config"].parent / "state", dt=DT, guard=False, enforce="shaper")
    stage.start_manager(cfg)
    try:
        api = stage.api()
        assert stage.status()["enforce"] == "shaper"
        assert re.search(r'^streamband_enforcement_info\{enforce="shaper"\} 1\.0$',
                         api.get("/metrics").text, re.M)
        fj = wait_for(lambda: (t := stage.topology("fj"))["flows"] and t, 60, "fj mapped")
        names = {f["name"] for f in fj["flows"]}
        # 300 tuples/s of 4 + 6 KiB need 24.6 Mbit/s of w1's 20: appaware caps both flows
        got = wait_for(lambda: (c := classes(stage, names)) and len(
            {flow_name(r["flow"]) for r in c if r["rate_bps"] < LINK_BPS}) == len(names)
            and c, 90, "a class per fj flow, each capped")
        # each flow on the switch's port towards its receiver, and only there
        assert sorted((flow_name(r["flow"]), r["port"]) for r in got) == sorted(
            (n, port_of[n.split("->")[1].split(":")[0]]) for n in names), got
        assert all(r["link_rate_bps"] == LINK_BPS for r in got), got
        assert sum(r["rate_bps"] for r in got) <= LINK_BPS * 1.01, got
        # the meters only count (no meter drops what the shaper queues)
        meters = {flow_name(m["flow"]): m["rate_bps"] for m in stage.controller().meters()}
        assert all(n in meters and meters[n] is None for n in names), meters
        # the status shows what the steps push
        pairs = {(flow_name(r["flow"]), r["port"]) for r in got}
        wait_for(lambda: {(flow_name(r["flow"]), r["port"]) for r in stage.status()["rates"]}
                 >= pairs, 10, "the status's rate classes")
        # a lifted cap goes at the next step, well before its lease would run out
        lease = stage.status()["lease_s"]
        assert lease >= 3 * DT
        assert api.put("/api/v1/topologies/fj/policy", json={"policy": "tcp"}).is_success
        t0 = time.monotonic()
        wait_for(lambda: not classes(stage, names), lease, "the classes gone under tcp",
                 every=0.1)
        assert time.monotonic() - t0 < lease, time.monotonic() - t0  # not by expiry
        assert api.put("/api/v1/topologies/fj/policy",
                       json={"policy": "appaware"}).is_success
        wait_for(lambda: len(classes(stage, names)) >= len(names), 90, "capped again")
        # a dead manager fails open: its classes go within their lease
        lease = stage.status()["lease_s"]
        stage.manager.send_signal(signal.SIGKILL)
        stage.manager.wait(15)
        t0 = time.monotonic()
        wait_for(lambda: not stage.controller().rates(), lease + LEASE_CHECK_S + 5,
                 "every rate class gone (fail-open)", every=0.2)
        assert time.monotonic() - t0 <= lease + LEASE_CHECK_S + 1.0
    finally:
        stage.start_manager(stage.extra["config"])
