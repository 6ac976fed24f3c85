"""`streamband manage` as a service, with no cluster behind it (Nimbus and the controller
unreachable on loopback), under hostile input: datagrams on its profiler port that are
not reports, and requests its API must refuse. Every malformed datagram is counted in
``streamband_rejected_samples_total{reason}`` and the receiver keeps running: a valid
report sent after them is kept for the profiler. The API answers 4xx, never 500. The
service is stopped at the end, and its ports are free again."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import yaml

from streamband.loop.reports import app_totals
from streamband.manage.stage import wait_for
from streamband.procs import stop

TOKEN = "manage-token"
FLOW = {"type": "flow", "topology": "t-1", "host": "10.0.0.2", "port": 6700,
        "clients": {"10.0.0.3:6701": {"sent": 10, "pending": 0}}}
SINK = {"type": "sink", "topology": "t-1", "component": "D", "task": 4, "count": 0}


def _port(kind: int) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running(work: Path, **top: object) -> Iterator[tuple[httpx.Client, dict, Path]]:
    """The service on loopback ports of its own (token set), Δt 0.5 s, the config's
    top-level keys ``top`` added; stopped and its ports checked free at the end."""
    tcp = lambda: f"127.0.0.1:{_port(socket.SOCK_STREAM)}"  # noqa: E731
    cfg = {"storm": {"nimbus": tcp(), "profiler": f"127.0.0.1:{_port(socket.SOCK_DGRAM)}"},
           "controller": {"api": tcp(), "token_env": None},
           "network": {"switches": [{"name": "s1", "dpid": 1}],
                       "hosts": [{"ip": "10.0.0.2", "switch": "s1", "port": "p2",
                                  "link_mbps": 20},
                                 {"ip": "10.0.0.3", "switch": "s1", "port": "p3",
                                  "link_mbps": 20}]},
           "topologies": [{"name": "fj", "policy": "appaware"}],
           "manager": {"dt_s": 0.5, "state_dir": str(work / "state"), "listen": tcp()},
           **top}
    path = work / "cluster.yaml"
    path.write_text(yaml.safe_dump(cfg))
    env = {k: v for k, v in os.environ.items() if k != "STREAMBAND_TESTBED"}
    log = work / "manage.log"  # a file, not a pipe nobody reads while the service runs
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "streamband.cli", "manage",
                                 "--config", str(path)], stdout=out, stderr=subprocess.STDOUT,
                                env={**env, "STREAMBAND_MANAGE_TOKEN": TOKEN},
                                start_new_session=True)
    api = httpx.Client(base_url=f"http://{cfg['manager']['listen']}", timeout=10,
                       headers={"authorization": f"Bearer {TOKEN}"})
    try:
        wait_for(lambda: proc.poll() is not None or api.get("/api/v1/status").is_success,
                 120, "the service answers")
        assert proc.poll() is None, log.read_text()[-2000:]
        yield api, cfg, work / "state"
    finally:
        api.close()
        stop(proc, 30)
    for addr, kind in ((cfg["manager"]["listen"], socket.SOCK_STREAM),
                       (cfg["storm"]["profiler"], socket.SOCK_DGRAM)):
        with socket.socket(socket.AF_INET, kind) as s:  # free: nothing left holding it
            if kind == socket.SOCK_STREAM:
                # connections the server closed wait in TIME_WAIT on its port (the kernel's,
                # no process's); a listener still there fails the bind all the same
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", int(addr.rpartition(":")[2])))


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory):
    """The service (meters, the default), for this module's tests."""
    with running(tmp_path_factory.mktemp("manage-inputs")) as svc:
        yield svc


def rejected(api: httpx.Client) -> dict[str, float]:
    text = api.get("/metrics").text
    return {m.group(1): float(m.group(2)) for m in re.finditer(
        r'^streamband_rejected_samples_total\{reason="([^"]+)"\} (\S+)$', text, re.M)}


def report(**over: object) -> bytes:
    return json.dumps({**FLOW, "t": time.time(), **over}).encode()


#: each datagram and the reason it is counted under (before: the first eight kinds
#: killed the receiver thread, and a string "inf" clock was kept)
DATAGRAMS = [
    (b"not json", "malformed"),
    (b"\xff\xfe{}", "malformed"),
    (b"", "malformed"),
    (b'{"type": "flow", "topology": "t", "t": ' + b"1" * 5000 + b"}", "malformed"),
    (b"[" * 30_000 + b"]" * 30_000, "malformed"),  # within a datagram's 64 KiB
    (report(clients={"x": json.loads("{\"a\": " * 40 + "1" + "}" * 40)}), "malformed"),
    (report(t="abc"), "malformed"),
    (report(t=[1.0]), "malformed"),
    (report(t=None), "malformed"),
    (report(t="inf"), "malformed"),
    (report(t=True), "malformed"),
    (json.dumps([FLOW]).encode(), "malformed"),
    (b'"flow"', "malformed"),
    (report(type={"a": 1}), "malformed"),
    (json.dumps({"type": "flow", "t": 1.0}).encode(), "malformed"),
    # numbers all fine, shapes the profilers cannot walk (report_format): a worker's port
    # as a string, its clients as a list, a store that is no map
    (report(port="x"), "malformed"),
    (report(clients=["10.0.0.3:6701"]), "malformed"),
    (report(stores={"2": "x"}), "malformed"),
    (report(t=10**400), "absurd"),
    (report(clients={"x": {"sent": 10**400}}), "absurd"),
    (report(t=1e300), "absurd"),
    (report(t=time.time() + 10 * 86_400), "absurd"),
    (report(clients={"x": {"sent": 1e30}}), "absurd"),
    (report(clients={"x": {"sent": -5}}), "negative"),
    (report(transfer_queue=-1), "negative"),
    (b'{"type": "flow", "topology": "t", "t": NaN}', "not_finite"),
    (b'{"type": "flow", "topology": "t", "t": 1.0, "q": Infinity}', "not_finite"),
    (b'{"type": "flow", "topology": "t", "t": 1.0, "q": -Infinity}', "not_finite"),
]


def test_profiler_port_counts_garbage_and_keeps_running(service):
    api, cfg, state = service
    host, _, port = cfg["storm"]["profiler"].rpartition(":")
    want: dict[str, float] = {}
    for _, why in DATAGRAMS:
        want[why] = want.get(why, 0.0) + 1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for data, _ in DATAGRAMS:
            s.sendto(data, (host, int(port)))
        wait_for(lambda: rejected(api) == want, 60, f"the rejections counted: {want}")
        # the receiver still runs: valid reports sent now are kept for the profiler
        now = time.time()
        for i, count in enumerate((100, 250)):
            s.sendto(json.dumps({**SINK, "t": now + i, "count": count}).encode(),
                     (host, int(port)))
        s.sendto(report(t=now), (host, int(port)))
        snap = wait_for(lambda: (d := json.loads((state / "profile.json").read_text()))[
            "received"] >= 3 and d, 60, "the valid reports in the profiler's snapshot")
    assert app_totals(snap, "t-1")["sink.count"] == 250
    assert list(snap["flow"].values())[0]["clients"]["10.0.0.3:6701"]["sent"] == 10
    assert rejected(api) == want  # the valid ones were not counted as garbage
    alerts = api.get("/api/v1/status").json()["alerts"]
    assert any(a["kind"] == "garbage metrics" for a in alerts), alerts


API_CASES = [
    ("PUT", "/api/v1/topologies/fj/policy", b'{"policy": NaN}', 422),
    ("PUT", "/api/v1/topologies/fj/policy", b'{"policy": Infinity}', 422),
    ("PUT", "/api/v1/topologies/fj/policy", b'{"policy": 5}', 422),
    ("PUT", "/api/v1/topologies/fj/policy", b'{"policy": "sweep"}', 422),
    ("PUT", "/api/v1/topologies/fj/policy", b'{"policy": "appawre"}', 422),
    ("PUT", "/api/v1/topologies/fj/policy", b'{"policy": "tcp", "x": NaN}', 200),
    ("PUT", "/api/v1/topologies/fj/policy", b"[" * 100_000, 400),
    ("PUT", "/api/v1/topologies/nope/policy", b'{"policy": "tcp"}', 404),
    ("GET", "/api/v1/status?points=nan", None, 422),
    ("GET", "/api/v1/status?points=" + "9" * 40, None, 200),
    ("GET", "/api/v1/allocations?limit=-5", None, 200),
    ("GET", "/api/v1/allocations?topology=%00%ff", None, 200),
]


@pytest.mark.parametrize(("method", "path", "body", "code"), API_CASES,
                         ids=[f"{c[0]} {c[1][8:30]} {i}" for i, c in enumerate(API_CASES)])
def test_api_answers_4xx_never_500(service, method, path, body, code):
    api, _, _ = service
    r = api.request(method, path, content=body, headers={"content-type": "application/json"})
    assert r.status_code == code, (r.status_code, r.text[:300])
    assert api.get("/api/v1/status").status_code == 200


@pytest.mark.parametrize("header", [b"Bearer t\xf6ken", "Bearer manage-tök".encode(),
                                    TOKEN.encode(), b"Bearer " + TOKEN.encode() + b"\x85",
                                    None], ids=lambda h: repr(h)[:24])
def test_api_bad_authorization_is_401(service, header):
    api, _, _ = service
    for path in ("/api/v1/status", "/metrics"):
        r = httpx.get(str(api.base_url.join(path)), timeout=10,
                      headers={} if header is None else {"authorization": header})
        assert r.status_code == 401, (path, r.status_code, r.text[:200])
    assert api.get("/api/v1/status").status_code == 200


def enforcement(api: httpx.Client) -> tuple[str, list[str], list[object]]:
    """What the service says of its enforcement: the status's ``enforce``, the
    ``streamband_enforcement_info`` series of /metrics, the status's rate classes."""
    st = api.get("/api/v1/status").json()
    info = re.findall(r'^streamband_enforcement_info\{enforce="([^"]+)"\} 1\.0$',
                      api.get("/metrics").text, re.M)
    return st["enforce"], info, st["rates"]


def test_enforcement_is_shown(service, tmp_path):
    """The status and /metrics name the enforcement in use: meters by default, the
    shaper when the config says so (no rate classes pushed: no controller answers)."""
    assert enforcement(service[0]) == ("meter", ["meter"], [])
    with running(tmp_path, enforce="shaper") as (api, _, _):
        assert enforcement(api) == ("shaper", ["shaper"], [])
