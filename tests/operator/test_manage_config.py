"""`streamband manage`'s inputs and its parts that need no cluster: the config (one line
naming the field, exit 2, nothing started), the state directory a restart resumes from,
the profiler endpoint's rejection of garbage, and the flow mapper."""

from __future__ import annotations

import json
import math
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import get_args

import numpy as np
import pytest
import yaml

from streamband.errors import SpecError
from streamband.loop.engine import FlowMapping, flow_name
from streamband.loop.guard import HarmGuard
from streamband.loop.openflow import ENFORCE, MeterEnforcer, ShaperEnforcer
from streamband.loop.reports import ProfileReceiver, app_totals
from streamband.manage.config import ClusterConfig, Network, load_config
from streamband.manage.service import Service, saved_paths
from streamband.manage.state import State
from streamband.storm.flows import map_flows

GOOD = {
    "storm": {"nimbus": "127.0.0.1:6627", "profiler": "127.0.0.1:17071"},
    "controller": {"api": "127.0.0.1:8181"},
    "network": {
        "switches": [{"name": "s1", "dpid": 1}, {"name": "s2", "dpid": 2}],
        "hosts": [{"ip": "10.0.0.2", "switch": "s1", "port": "p2", "link_mbps": 20},
                  {"ip": "10.0.0.3", "switch": "s1", "port": "p3", "link_mbps": 20},
                  {"ip": "10.0.0.4", "switch": "s2", "port": "p4", "link_mbps": 20}],
        "trunks": [{"a": "s1", "b": "s2", "a_port": "t1", "b_port": "t2", "mbps": 10}]},
    "topologies": [{"name": "fj", "policy": "appaware", "tuple_bytes": {"A->B": 8192}}],
    "manager": {"dt_s": 1, "state_dir": "STATE", "listen": "127.0.0.1:18480"},
}


def write(tmp_path: Path, **change: object) -> Path:
    cfg = json.loads(json.dumps(GOOD))
    cfg["manager"]["state_dir"] = str(tmp_path / "state")
    for dotted, value in change.items():
        *path, last = dotted.split("__")
        node = cfg
        for p in path:
            node = node[int(p)] if isinstance(node, list) else node[p]
        if value is None:
            del node[last]
        else:
            node[last] = value
    f = tmp_path / "cluster.yaml"
    f.write_text(yaml.safe_dump(cfg))
    return f


def manage(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streamband.cli", "manage", *args],
                          capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.parametrize("change, expect", [
    ({"storm__nimbs": "x"}, "unknown key, expected one of nimbus, profiler, "
     "placement_every_s, did you mean 'nimbus'?"),
    ({"topologies__0__policy": "appawre"}, "unknown policy 'appawre'"),
    ({"topologies__0__policy": "sweep"}, "'sweep' is of kind 'search'"),
    ({"network__hosts__1__switch": "s9"}, "network.hosts.1.switch: unknown switch 's9'"),
    ({"manager__dt_s": 0}, "manager.dt_s: Input should be greater than or equal to 0.2"),
    ({"manager__full_frac": 1.5}, "manager.full_frac: Input should be less than or equal to 1"),
    ({"controller__api": "localhost"}, "controller.api: expected HOST:PORT"),
    ({"topologies__0__tuple_bytes": {"AB": 1}}, "expected 'SRC->DST'"),
    ({"storm": None}, "expected a storm: or a flink: section (or both)"),
    ({"flink": {"rest": "127.0.0.1", "profiler": "127.0.0.1:17072"}},
     "flink.rest: expected HOST:PORT for Flink's REST API"),
    ({"flink": {"rest": "jm:8081", "profiler": "jm:7071"}},
     "flink.profiler: 'jm' is not an IPv4 address"),
    ({"flink": {"rest": "jm:8081", "profiler": "127.0.0.1:1", "placement_every_s": 0}},
     "flink.placement_every_s: Input should be greater than 0"),
    ({"flink": {"rest": "jm:8081", "profiler": "127.0.0.1:1", "nimbus": "x:1"}},
     "flink.nimbus: unknown key"),
    ({"topologies__0__engine": "spark"}, "topologies.0.engine: Input should be 'storm' or "
     "'flink'"),
    ({"topologies__0__engine": "flink"}, "topologies.0.engine: 'fj' runs on flink, but the "
     "config has no flink: section"),
])
def test_bad_config_is_one_line(tmp_path, change, expect):
    with pytest.raises(SpecError) as err:
        load_config(write(tmp_path, **change))
    assert "\n" not in str(err.value) and expect in str(err.value)
    assert str(err.value).startswith(str(tmp_path / "cluster.yaml"))


def test_check_and_token_rule(tmp_path):
    f = write(tmp_path)
    r = manage("--config", str(f), "--check")
    assert r.returncode == 0 and "1 topologies, 3 hosts, 2 switches" in r.stdout
    r = manage("--config", str(write(tmp_path, storm__nimbs="x")), "--check")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 \
        and "did you mean 'nimbus'?" in r.stderr
    off = write(tmp_path, manager__listen="10.255.255.2:8480")
    env = {k: v for k, v in __import__("os").environ.items() if k != "STREAMBAND_MANAGE_TOKEN"}
    r = manage("--config", str(off), "--check", env=env)
    assert r.returncode == 2 and "off loopback the API needs a token" in r.stderr
    r = manage("--config", str(tmp_path / "nope.yaml"))
    assert r.returncode == 2 and r.stderr.strip() == \
        f"error: --config: {tmp_path / 'nope.yaml'}: no such file"


def test_flink_section(tmp_path):
    """A flink: section beside storm: or alone; a topology's engine is its own, else storm,
    or flink when the config has no storm: section; both engines' profilers may share one
    address (one receiver), and two that cannot both be bound are one line, exit 2."""
    flink = {"rest": "10.0.0.1:8081", "profiler": "127.0.0.1:17072"}
    only = load_config(write(tmp_path, storm=None, flink=flink))
    assert only.storm is None and only.flink.placement_every_s == 5.0
    assert only.engine_of(only.topologies[0]) == "flink"
    both = load_config(write(tmp_path, flink=flink, topologies=[
        {"name": "fj"}, {"name": "wc", "engine": "flink"}, {"name": "tt", "engine": "storm"}]))
    assert [both.engine_of(t) for t in both.topologies] == ["storm", "flink", "storm"]
    shared = write(tmp_path, flink={**flink, "profiler": GOOD["storm"]["profiler"]},
                   topologies=[{"name": "fj"}, {"name": "wc", "engine": "flink"}])
    r = manage("--config", str(shared), "--check")
    assert r.returncode == 0 and "2 topologies" in r.stdout, r.stderr
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        u.bind(("127.0.0.1", 0))
        busy = u.getsockname()[1]
        r = manage("--config", str(write(tmp_path, flink={**flink, "profiler":
                                                          f"127.0.0.1:{busy}"})), "--check")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f"flink.profiler: cannot listen on 127.0.0.1:{busy} (UDP)" in r.stderr


def test_busy_port_starts_nothing(tmp_path):
    """The dashboard's port taken: one line, exit 2, no state written, profiler port free."""
    with socket.socket() as busy, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        u.bind(("127.0.0.1", 0))
        udp = u.getsockname()[1]
        u.close()
        f = write(tmp_path, manager__listen=f"127.0.0.1:{busy.getsockname()[1]}",
                  storm__profiler=f"127.0.0.1:{udp}")
        r = manage("--config", str(f))
    assert r.returncode == 2 and "cannot listen on" in r.stderr, r.stderr
    assert not (tmp_path / "state").exists()


def test_cluster_backend_is_a_service(tmp_path):
    r = subprocess.run([sys.executable, "-m", "streamband.cli", "run", "paper-001", "--backend",
                        "cluster", "--out", str(tmp_path / "o")], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "streamband manage --config" in r.stderr


def test_guard_on_by_default(tmp_path):
    """Do no harm is on unless the config turns it off, for the policies that cap."""
    on = Service(load_config(write(tmp_path)))
    assert isinstance(on._guard("appaware"), HarmGuard) and on._guard("tcp") is None
    off = Service(load_config(write(tmp_path, manager__guard=False)))
    assert off._guard("appaware") is None


def test_state_resumes(tmp_path):
    st = State(tmp_path / "s", keep=100)
    st.set_policy("fj", "maxmin")
    keys = [{"src_ip": "a", "dst_ip": "b", "proto": "tcp", "dst_port": 1}]
    st.set_safe("fj", keys, np.array([5e6]))
    for i in range(1100):
        st.record("fj", "maxmin", "policy", ["f"], np.array([np.inf if i % 2 else 1e6]), 0.1, 2.0)
    st.set_leases([("fj", keys[0], 5e6)], time.time() + 3)
    st.close()
    again = State(tmp_path / "s", keep=100)
    assert again.started() == 1 and again.started() == 2
    assert again.policies() == {"fj": "maxmin"}
    when, k, rates = again.safe()["fj"]
    assert k == keys and rates == [5e6] and time.time() - when < 60
    assert again.count() == 100 + 100  # trimmed to `keep` at the 1000th record
    last = again.allocations("fj", 2)
    assert [r["rates_bps"] for r in last] == [[None], [1e6]]
    assert again.leases()[0]["rate_bps"] == 5e6


def test_profiler_endpoint_rejects_garbage(tmp_path):
    rx = ProfileReceiver("127.0.0.1:0", tmp_path / "profile.json")
    good = {"type": "flow", "topology": "t-1", "host": "10.0.0.2", "port": 6700, "t": 1.0,
            "clients": {"10.0.0.3:6701": {"sent": 10, "pending": 0}}, "transfer_queue": 0,
            "receive": {"B:3": 2}}
    bad = [b"not json", json.dumps({"type": "flow"}).encode(),
           # a type named like the snapshot's clock would replace it with a dict
           json.dumps({"type": "time", "topology": "t-1"}).encode()]
    for v, why in ((math.nan, "not_finite"), (-5, "negative"), (1e30, "absurd")):
        g = json.loads(json.dumps(good))
        g["clients"]["10.0.0.3:6701"]["pending"] = v
        bad.append(json.dumps(g).encode())
        assert rx.take(bad[-1]) == why
    assert [rx.take(b) for b in bad[:3]] == ["malformed"] * 3
    assert rx.take(json.dumps(good).encode()) is None
    snap = rx.write()
    assert list(snap["flow"].values())[0]["clients"]["10.0.0.3:6701"]["pending"] == 0
    assert dict(rx.rejected) == {"not_finite": 1, "negative": 1, "absurd": 1, "malformed": 3}
    assert isinstance(snap["time"], float)
    assert json.loads((tmp_path / "profile.json").read_text())["received"] == 1
    rx.stop()


def test_task_counters_survive_a_worker_restart(tmp_path):
    """A sink's worker killed and launched again reports from zero: the topology's totals
    go on from where they were (and a stale datagram changes nothing)."""
    rx = ProfileReceiver("127.0.0.1:0", tmp_path / "profile.json")

    def sink(t: float, count: int, pending: int = 0, mx: float = 5.0) -> bytes:
        return json.dumps({"type": "sink", "topology": "t-1", "component": "D", "task": 4,
                           "t": t, "count": count, "latency_sum_ms": 10.0 * count,
                           "latency_max_ms": mx, "pending": pending}).encode()

    for t, n in ((1.0, 100), (2.0, 300)):
        assert rx.take(sink(t, n)) is None
    assert app_totals(rx.write(), "t-1")["sink.count"] == 300
    rx.take(sink(1.5, 200))  # overtaken: ignored
    assert app_totals(rx.write(), "t-1")["sink.count"] == 300
    rx.take(sink(3.0, 20, pending=7, mx=2.0))  # the restarted task's first report
    rx.take(sink(4.0, 50, pending=9, mx=3.0))
    tot = app_totals(rx.write(), "t-1")
    assert (tot["sink.count"], tot["sink.latency_sum_ms"]) == (350, 3500)
    assert tot["sink.pending"] == 9 and tot["sink.latency_max_ms"] == 5.0
    assert rx.carry.restarts == 1
    rx.forget("t-1")
    rx.take(sink(5.0, 10))
    assert app_totals(rx.write(), "t-1")["sink.count"] == 10
    rx.stop()


def test_flow_mapper(tmp_path):
    """Worker pairs -> network flows: pairs sharing a match are one flow, pairs inside
    a host carry nothing, pairs to an unlisted host are reported, routes follow trunks."""
    net = Network.from_config(load_config(write(tmp_path)).network)
    ex = [{"component": c, "task_start": t, "task_end": t, "host": h, "port": p}
          for c, t, h, p in (("A", 1, "10.0.0.2", 6700), ("A", 2, "10.0.0.2", 6701),
                             ("B", 3, "10.0.0.4", 6700), ("C", 4, "10.0.0.2", 6700),
                             ("C", 5, "10.0.0.9", 6700), ("__acker", 6, "10.0.0.3", 6700))]
    m = map_flows({"executors": ex}, [("A", "B"), ("A", "C"), ("__acker", "A")], net.topo,
                  {"A->B": 8192})
    assert m.names == ["10.0.0.2->10.0.0.4:6700"]
    assert [len(x) for x in m.members] == [2]  # A[0] and A[1] share the match
    assert m.unrouted == ["10.0.0.2:6700->10.0.0.9:6700", "10.0.0.2:6701->10.0.0.9:6700"]
    assert [net.names[lk] for lk in m.paths[0]] == ["10.0.0.2->s1", "s1->s2", "s2->10.0.0.4"]
    assert m.routing.toarray().sum() == 3 and m.bytes_hint == [8192.0, 8192.0]


def test_bad_yaml_names_the_line(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("storm: [\n")
    with pytest.raises(SpecError, match=r"c.yaml: line \d+"):
        load_config(f)


def test_readme_example_is_valid(tmp_path):
    """The README's cluster.yaml, every field explained, is a config that loads."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = readme.split("`cluster.yaml`, every field")[1].split("```yaml\n", 1)[1]
    f = tmp_path / "cluster.yaml"
    f.write_text(block.split("```", 1)[0])
    cfg = load_config(f)
    assert cfg.topologies[0].policy == "appaware" and cfg.manager.dt_s == 5
    assert cfg.network.hosts[0].port == "eth2"
    assert [cfg.engine_of(t) for t in cfg.topologies] == ["storm", "flink"]
    assert cfg.flink is not None and cfg.flink.profiler == cfg.storm.profiler


def test_flink_job_by_name():
    """A name Flink lists more than once (a job canceled, submitted again): the running
    one is managed, the newest of those; with none running, the newest, gone."""
    from streamband.flink.engine import FlinkEngine
    from streamband.loop.engine import Job

    listing = [{"jid": "a", "name": "wc", "state": "CANCELED", "start-time": 3},
               {"jid": "b", "name": "wc", "state": "RUNNING", "start-time": 1},
               {"jid": "c", "name": "wc", "state": "RUNNING", "start-time": 2},
               {"jid": "d", "name": "tt", "state": "FAILED", "start-time": 1},
               {"jid": "e", "name": "tt", "state": "FINISHED", "start-time": 5}]
    assert FlinkEngine._jobs(listing) == {"wc": Job("c", "RUNNING"),
                                          "tt": Job("e", "finished", True)}


# -- enforce: meter | shaper --------------------------------------------------------------
@pytest.mark.parametrize("change, expect", [
    ({"enforce": "shapr"}, "enforce: Input should be 'meter' or 'shaper', did you mean "
     "'shaper'? (got 'shapr')"),
    ({"enforce": "police"}, "enforce: Input should be 'meter' or 'shaper' (got 'police')"),
    ({"enforce": True}, "enforce: Input should be 'meter' or 'shaper'"),
    # the controller names a port by its interface: one name, one port
    ({"enforce": "shaper", "network__hosts__2__port": "p2"}, "network.hosts.2.port: port "
     "'p2' of s2 is also network.hosts.0.port of s1; with enforce: shaper the controller "
     "runs tc on ports by interface name"),
    ({"enforce": "shaper", "network__trunks__0__b_port": "p3"}, "network.trunks.0.b_port: "
     "port 'p3' of s2 is also network.hosts.1.port of s1"),
])
def test_bad_enforce_is_one_line(tmp_path, change, expect):
    with pytest.raises(SpecError) as err:
        load_config(write(tmp_path, **change))
    assert "\n" not in str(err.value) and expect in str(err.value), str(err.value)
    assert str(err.value).startswith(str(tmp_path / "cluster.yaml"))


def test_enforce_default_and_check(tmp_path):
    """Meters unless the config says shaper; a port name on two switches is fine for
    meters (they go by dpid); ``--check`` says which enforcement runs; the config's
    choices are the benches' (``--enforce``)."""
    assert get_args(ClusterConfig.model_fields["enforce"].annotation) == ENFORCE
    assert load_config(write(tmp_path)).enforce == "meter"
    assert load_config(write(tmp_path, network__hosts__2__port="p2")).enforce == "meter"
    r = manage("--config", str(write(tmp_path)), "--check")
    assert r.returncode == 0 and "enforced by meters (OpenFlow meters" in r.stdout, r.stderr
    r = manage("--config", str(write(tmp_path, enforce="shaper")), "--check")
    assert r.returncode == 0 and "enforced by the shaper (HTB classes" in r.stdout, r.stderr
    r = manage("--config", str(write(tmp_path, enforce="shapr")), "--check")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 \
        and "enforce: Input should be 'meter' or 'shaper', did you mean 'shaper'?" in r.stderr


def shaper_mapping(tmp_path: Path, **change: object) -> tuple[Service, FlowMapping]:
    """A service of GOOD's network (s1: 10.0.0.2, .3; s2: .4; a 10 Mbit/s trunk) and the
    flows of A (.2) -> B (.4), A -> C (.3) and D (.4) -> E (.2)."""
    service = Service(load_config(write(tmp_path, **change)))
    ex = [{"component": c, "task_start": t, "task_end": t, "host": h, "port": p}
          for c, t, h, p in (("A", 1, "10.0.0.2", 6700), ("B", 2, "10.0.0.4", 6700),
                             ("C", 3, "10.0.0.3", 6701), ("D", 4, "10.0.0.4", 6702),
                             ("E", 5, "10.0.0.2", 6703))]
    m = map_flows({"executors": ex}, [("A", "B"), ("A", "C"), ("D", "E")], service.net.topo,
                  {})
    assert m.names == ["10.0.0.2->10.0.0.4:6700", "10.0.0.2->10.0.0.3:6701",
                       "10.0.0.4->10.0.0.2:6703"]
    return service, m


def test_shaper_rate_items_name_the_egress_ports(tmp_path):
    """With ``enforce: shaper`` the step's one batch puts each capped flow's class on the
    switch egress ports of its path (the trunk's port out of its sender's switch, the
    port to its receiver; never the sender's own uplink), at the link's rate from the
    config (the controller cannot read it off a port the testbed did not shape), and
    counts every flow on its sender's switch with an uncapped meter; an uncapped flow
    is listed only where a capped one is. A resumed allocation's flows get the same ports
    from the routing the state keeps."""
    service, m = shaper_mapping(tmp_path, enforce="shaper")
    enf = service.aim(m.keys, m.paths)
    assert isinstance(enf, ShaperEnforcer) and enf.dpids == [1, 1, 2]
    assert enf.ports == [["t1", "p4"], ["p3"], ["t2", "p2"]]
    items = enf.rate_items(np.array([3e6, 2e6, np.inf]))
    assert [(flow_name(i["flow"]), i["port"], i["rate_bps"], i["link_rate_bps"])
            for i in items] == [
        ("10.0.0.2->10.0.0.4:6700", "t1", 3e6, 10e6),
        ("10.0.0.2->10.0.0.4:6700", "p4", 3e6, 20e6),
        ("10.0.0.2->10.0.0.3:6701", "p3", 2e6, 20e6)]
    assert [x["rate_bps"] for x in enf.meters(np.full(3, np.inf))] == [None] * 3
    items = enf.rate_items(np.array([np.inf, 2e6, 1e6]))
    assert [(flow_name(i["flow"]), i["port"], i["rate_bps"]) for i in items] == [
        ("10.0.0.2->10.0.0.3:6701", "p3", 2e6),
        ("10.0.0.4->10.0.0.2:6703", "t2", 1e6), ("10.0.0.4->10.0.0.2:6703", "p2", 1e6)]
    st = State(tmp_path / "s", keep=100)
    st.set_routing("fj", "fj-1", {}, m.keys, m.paths)
    routes = saved_paths(st.routing()["fj"], [m.keys[2], m.keys[0],
                                              {"src_ip": "10.0.0.9", "dst_ip": "10.0.0.2"}])
    st.close()
    assert service.aim([m.keys[2], m.keys[0], m.keys[1]], routes).ports == [
        ["t2", "p2"], ["t1", "p4"], []]


def test_meter_service_meters_on_the_senders_switch(tmp_path):
    """With the default (meters) the same batch is one meter per flow on its sender's
    switch, and no rate classes."""
    service, m = shaper_mapping(tmp_path)
    enf = service.aim(m.keys, m.paths)
    assert type(enf) is MeterEnforcer and enf.dpids == [1, 1, 2]
    assert [x["rate_bps"] for x in enf.meters(np.array([3e6, np.inf, 1e6]))] == \
        [3e6, None, 1e6]
