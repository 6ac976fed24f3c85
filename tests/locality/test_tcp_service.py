"""The protocol over its real transport: the manager in its own process (the service)
talks TCP to a log server; the instances read their inboxes from it. The manager is
killed with SIGKILL twice mid-reconfiguration (once after ③ went out, once while
propagating); each restarted manager rolls back or resumes, and every key's final
count equals the run without reconfiguration."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from streamband.locality import wire
from streamband.locality.dataflow import Dataflow, OpSpec
from streamband.locality.durable import read_json
from streamband.locality.reconfig import INPUT, Instance
from streamband.locality.routing_table import RoutingTable
from streamband.locality.tcp import LogServer, TcpTransport
from streamband.locality.transport import Endpoint, Kind, Message


def chain() -> Dataflow:
    return Dataflow([OpSpec("S", 2), OpSpec("A", 3, 0), OpSpec("B", 3, 1)],
                    [("S", "A"), ("A", "B")])


def test_wire_round_trip() -> None:
    from streamband.locality.reconfig import Reconf

    r = Reconf(4, {"B": RoutingTable("B", 3, {"x": 2, 7: 0})}, {"A[1]": ["k", 3]},
               {"A[2]": [(1, "t")]})
    for m in (Message(Kind.DATA, "S[0]", "A[1]", 0, 9, (12, ("k", 3, 0))),
              Message(Kind.SEND_RECONF, "manager", "A[0]", 4, 2, r),
              Message(Kind.MIGRATE, "A[0]", "A[1]", 4, 5, {"k": 7, 3: None}),
              Message(Kind.SEND_METRICS, "A[0]", "manager", 4, 3,
                      {"keys": [("k", 5)], "pairs": {"B": [("k", 3, 2)]}}),
              Message(Kind.PROPAGATE, "A[0]", "B[1]", 4, 11)):
        assert wire.loads(wire.dumps(m)) == m


def phase(store: Path) -> tuple[str, int]:
    try:
        d = read_json(store / "manager.json")
    except (OSError, ValueError):
        return "", 0
    return d["phase"], d["epoch"]


def test_manager_process_killed_twice_resumes_or_rolls_back(tmp_path: Path) -> None:
    flow = chain()
    srv = LogServer("127.0.0.1", 0, tmp_path / "hub").start()
    store = tmp_path / "store"
    (tmp_path / "flow.json").write_text(json.dumps(flow.to_json()))
    cmd = [sys.executable, "-m", "streamband.locality.service", "--hub", srv.address,
           "--store", str(store), "--flow", str(tmp_path / "flow.json"), "--servers", "3",
           "--period", "0.2", "--rounds", "10"]
    tables = {op: RoutingTable(op, 3) for op in ("A", "B")}
    insts = {i: Instance(i, flow, TcpTransport(srv.address), tables) for i in flow.instances()}
    feed = Endpoint(INPUT, TcpTransport(srv.address))
    rng = random.Random(1)
    expected: dict[str, Counter] = {"A": Counter(), "B": Counter()}
    proc = subprocess.Popen(cmd, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    kills: dict[str, int] = {}
    t = 0
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None or proc.returncode == -signal.SIGKILL:
            assert time.monotonic() < deadline, "the manager did not finish its rounds"
            if proc.returncode == -signal.SIGKILL:  # restart the killed manager
                proc = subprocess.Popen(cmd)
            for _ in range(5):  # the stream never stops
                a = rng.randrange(40)
                b = (a + t // 300) % 40 if rng.random() < 0.8 else rng.randrange(40)
                feed.send(Kind.DATA, f"S[{t % 2}]", payload=(t, (a, b)))
                expected["A"][a] += 1
                expected["B"][b] += 1
                t += 1
            for inst in insts.values():
                while inst.step():
                    ph, epoch = phase(store)
                    if epoch >= 3 and ph in ("PREPARED", "PROPAGATING") and ph not in kills:
                        proc.send_signal(signal.SIGKILL)
                        proc.wait()
                        kills[ph] = epoch
    finally:
        if proc.poll() is None:
            proc.kill()
    for _ in range(50):  # drain what is still in flight
        if not any(inst.step() for inst in insts.values()):
            break
    for inst in insts.values():
        while inst.step():
            pass
    assert proc.returncode == 0
    assert set(kills) == {"PREPARED", "PROPAGATING"}
    man = read_json(store / "manager.json")
    assert kills["PREPARED"] in man["rolled_back"]  # ③ out, no ⑤: rolled back
    assert kills["PROPAGATING"] not in man["rolled_back"]  # ⑤ out: resumed to the end
    assert man["active"] >= 10 and man["phase"] == "IDLE"
    assert {i.rec.applied for i in insts.values()} == {man["active"]}
    log = [json.loads(x) for x in (store / "rounds.jsonl").read_text().splitlines()]
    assert sum(r.get("event") == "restarted" for r in log) == 2
    assert sum(r.get("moved_keys", 0) for r in log) > 0  # states really moved
    for op in ("A", "B"):
        got: Counter = Counter()
        for inst in insts.values():
            if inst.op == op:
                assert not (set(got) & set(inst.rec.state))  # a key lives once
                got.update(inst.rec.state)
        assert got == expected[op]
    assert all(not inst.rec.buffer for inst in insts.values())
    srv.stop()
