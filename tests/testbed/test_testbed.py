"""Real testbed runs: up/down/clean through the CLI, multi-path forwarding, meters,
statistics, leases and the harness."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streamband.cli.testbed import app
from streamband.model.flows import FlowMap
from streamband.model.spec import load_spec as load_experiment
from streamband.model.testbed import load_spec
from streamband.procs import clean, leftovers, marked_processes
from streamband.sdn.client import ControllerClient
from streamband.testbed import ovs
from streamband.testbed.clean import project_interfaces
from streamband.testbed.harness.dag import Dag
from streamband.testbed.harness.run import run_dag
from streamband.testbed.network import ALLOWED_CC, Testbed
from streamband.testbed.registry import read_state

from .conftest import expires, listening

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the testbed needs root")
DEFAULT_CC = Path("/proc/sys/net/ipv4/tcp_congestion_control")
SMALL = "star:hosts=2,link_mbps=20,api=127.0.0.1:8191,openflow=127.0.0.1:6663"
METER_BPS = 5e6
#: a drop band polices TCP somewhat off the rate: goodput within these shares of it
METERED = (0.8, 1.15)


def test_up_status_down_via_cli(cleanup):
    r = CliRunner().invoke(app, ["up", SMALL])
    assert r.exit_code == 0, r.output
    st = read_state()
    assert st and st["ready"] and set(st["hosts"]) == {"w1", "w2"}
    assert "sbs1" in ovs.project_bridges()
    r = CliRunner().invoke(app, ["status"])
    assert r.output.startswith("up")
    r = CliRunner().invoke(app, ["up", SMALL])
    assert r.exit_code == 2 and "already up" in r.output
    r = CliRunner().invoke(app, ["down"])
    assert r.exit_code == 0
    assert leftovers() == []


def test_clean_after_kill_9(cleanup):
    """Clean-up after a crash removes what the testbed started and gives the machine back
    its allowed congestion controls (the testbed widened them for the hosts' algorithm)."""
    before = ALLOWED_CC.read_text()
    default = DEFAULT_CC.read_text().strip()
    other = "reno" if default != "reno" else "cubic"
    try:
        ALLOWED_CC.write_text(default)  # so that the hosts' `other` must widen the list
        r = CliRunner().invoke(app, ["up", f"{SMALL},congestion_control={other}"])
        assert r.exit_code == 0, r.output
        assert set(ALLOWED_CC.read_text().split()) == {default, other}
        st = read_state()
        assert st is not None
        for pid in (st["pid"], st["controller_pid"]):
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)
        assert leftovers()  # bridges, veths, host shells survive the crash
        r = CliRunner().invoke(app, ["clean"])
        assert r.exit_code == 0, r.output
        assert leftovers() == [] and marked_processes() == []
        assert ALLOWED_CC.read_text().split() == [default]
    finally:
        clean()  # restores the list the testbed kept, if a check above failed first
        ALLOWED_CC.write_text(before)


def test_bad_spec_starts_nothing(cleanup):
    r = CliRunner().invoke(app, ["up", "star:link_mbps=0"])
    assert r.exit_code == 2 and r.output.count("\n") == 1
    assert leftovers() == []


def test_fat_tree_paths_forward(cleanup):
    spec = load_spec("fat_tree:k=4,link_mbps=100,api=127.0.0.1:8191,openflow=127.0.0.1:6663")
    with Testbed(spec) as tb:
        ControllerClient(spec.api).wait_ready(len(tb.topo.switches))
        a, b, c = tb.topo.hosts[0], tb.topo.hosts[-1], tb.topo.hosts[5]
        for src, dst in ((a, b), (b, c), (c, a)):
            out = tb.node(src).cmd(f"ping -c 2 -W 2 {tb.ip(dst)}")
            assert " 0% packet loss" in out, out


def metered_iperf(tb: Testbed, client: ControllerClient, lease_s: float) -> None:
    """An iperf3 server on w2 and a 5 Mbit/s meter on w1 -> w2:5201."""
    client.wait_ready(1)
    tb.popen("w2", ["iperf3", "-s", "-p", "5201"], stdout=subprocess.DEVNULL)
    listening(tb, "w2", 5201)
    flow = {"src_ip": tb.ip("w1"), "dst_ip": tb.ip("w2"), "dst_port": 5201}
    assert client.put_meters([{"flow": flow, "rate_bps": METER_BPS}], lease_s=lease_s)[
        "installed"] == 1


def test_meters_stats_and_lease(cleanup):
    spec = load_spec(SMALL)
    with Testbed(spec) as tb:
        client = ControllerClient(spec.api)
        metered_iperf(tb, client, lease_s=20.0)
        res = json.loads(tb.node("w1").cmd(f"iperf3 -c {tb.ip('w2')} -p 5201 -t 3 -J"))
        goodput = res["end"]["sum_received"]["bits_per_second"]
        assert METERED[0] * METER_BPS < goodput < METERED[1] * METER_BPS
        ports = {p["name"]: p for p in client.ports(fresh=True)}
        assert ports[tb.switch_port("w2")]["tx_bytes"] > res["end"]["sum_received"]["bytes"]
        (m,) = client.flows(fresh=True)
        assert m["bytes"] > 0.9 * res["end"]["sum_received"]["bytes"]
        assert client.renew(1.0) == 1  # the manager's last renewal, then silence
        # the lease as the controller holds it, read back: gone within it and one check
        expires(client.meters, max(m["lease_left_s"] for m in client.meters()))
        res = json.loads(tb.node("w1").cmd(f"iperf3 -c {tb.ip('w2')} -p 5201 -t 2 -J"))
        # fail-open: plain TCP, past what the meter let through (not a rate an idle
        # machine's userspace datapath reaches)
        assert res["end"]["sum_received"]["bits_per_second"] > METERED[1] * METER_BPS


def test_services_network_crosses_no_link_under_test(cleanup):
    """A broker's traffic (issue 33) over the services' network: hosts reach each other
    there, none of it passes a switch port (no meter, no shaped link sees it), and the
    bridge and its veths go with the testbed."""
    spec = load_spec(SMALL)
    with Testbed(spec) as tb:
        client = ControllerClient(spec.api)
        a, b = tb.service_ip("w1"), tb.service_ip("w2")
        assert a != b and tb.service_ip("w1") == a  # connected once
        tb.node("w2").cmd("iperf3 -s -p 5202 -D")
        listening(tb, "w2", 5202)
        before = {p["name"]: p["tx_bytes"] for p in client.ports(fresh=True)}
        res = json.loads(tb.node("w1").cmd(f"iperf3 -c {b} -p 5202 -n 8M -J"))
        assert res["end"]["sum_sent"]["bytes"] >= 8 * 2**20
        sent = res["end"]["sum_received"]["bytes"]
        after = {p["name"]: p["tx_bytes"] for p in client.ports(fresh=True)}
        # the switch forwarded less than a hundredth of it (ARP, LLDP: nothing of it)
        assert sum(after[n] - before.get(n, 0) for n in after) < sent / 100
    assert [i for i in project_interfaces() if i.startswith("sbm")] == []


def test_controller_crash_and_restart_keep_the_network_usable(cleanup):
    spec = load_spec(SMALL)
    with Testbed(spec) as tb:
        client = ControllerClient(spec.api)
        metered_iperf(tb, client, lease_s=120.0)
        assert tb.controller is not None
        tb.controller.kill()  # the controller crashes (secure fail mode: rules stay)
        tb.controller.wait(10)

        def goodput() -> float:
            out = tb.node("w1").cmd(f"iperf3 -c {tb.ip('w2')} -p 5201 -t 2 -J")
            return json.loads(out)["end"]["sum_received"]["bits_per_second"]

        assert "0% packet loss" in tb.node("w1").cmd(f"ping -c 2 -W 1 {tb.ip('w2')}")
        assert 0.7 * METER_BPS < goodput() < METERED[1] * METER_BPS  # forwarding, metered
        tb.restart_controller()
        client = ControllerClient(spec.api)
        client.wait_ready(1)
        assert client.meters() == []  # no lease for the old meter: it is gone
        assert goodput() > METERED[1] * METER_BPS  # plain TCP: past what the meter allowed


def test_api_rejects_bad_requests(cleanup):
    spec = load_spec(SMALL)
    with Testbed(spec):
        client = ControllerClient(spec.api)
        client.wait_ready(1)
        r = client.http.put("/v1/meters", json={"meters": [{"flow": {"src_ip": "x"}}]})
        assert r.status_code == 422
        r = client.http.put("/v1/meters", json={"meters": [], "lease_s": -1})
        assert r.status_code == 422
        assert "/v1/meters" in client.http.get("/openapi.json").json()["paths"]


def test_fork_join_harness_reports(cleanup, tmp_path):
    spec = load_spec(SMALL)
    with Testbed(spec) as tb:
        exp = load_experiment("paper-001")  # the simulator's fork-join, placed as TP2
        app = exp.app.model_copy(deep=True)
        app.operators[0].rate_tps = 300
        where = {"S1": "w1", "S2": "w2"}
        placement = {f"{op}[0]": where[h] for op, h in exp.placements["TP2"].map.items()}
        dag = Dag.from_flowmap(FlowMap(app, tb.topo, placement))
        dag.seconds, dag.warmup_s = 5, 2
        res = run_dag(tb, dag, tmp_path / "run")
        assert res["throughput_tps"] > 50
        assert set(res["edges"]) == {"0", "1", "2", "3"}
        assert res["edges"]["0"]["sent"] > 0 and "lr" in res["edges"]["0"]
        assert (tmp_path / "run" / "stats-w2.json").exists()


def test_hosts_run_the_congestion_control_asked_for(cleanup):
    """A namespace may only choose an algorithm of ``tcp_allowed_congestion_control``; on
    this machine kind (default bbr, allowed "reno bbr") the hosts kept bbr when asked for
    cubic. A new socket in each host now uses the spec's algorithm, and the machine's list
    is as it was once the testbed is down."""
    before = ALLOWED_CC.read_text()
    probe = ("python3 -c \"import socket; s = socket.socket(); print(s.getsockopt("
             "socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b'\\0').decode())\"")
    for cc in ("cubic", "reno"):
        spec = load_spec(f"{SMALL},congestion_control={cc}")
        with Testbed(spec) as tb:
            assert [tb.node(h).cmd(probe).strip() for h in ("w1", "w2")] == [cc, cc]
        assert ALLOWED_CC.read_text() == before
