"""One definition of 003's reconfiguration protocol: the Java instances that run inside
Storm (``streamband.storm.locality.Instance``) against the Python state machine, the
reference. The Python instances of a simulated run (random interleavings, reconfigurations
planned by METIS, a manager restarted twice) record what they receive and what they send;
every instance's inputs are replayed through the Java class, which must send the same
messages, in the same order, with the same sequence numbers, and end in the same state."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from streamband.locality import wire
from streamband.locality.dataflow import Dataflow, OpSpec
from streamband.locality.planner import MetisPlanner
from streamband.locality.reconfig import ManagerPhase
from streamband.locality.routing_table import RoutingTable, hash_route
from streamband.locality.runtime import LocalCluster
from streamband.locality.transport import Kind, Message
from streamband.storm.home import ensure_home, streamband_jar

MEMORY = 1 << 16


@pytest.fixture(scope="module")
def java() -> list[str]:
    home = ensure_home()
    return ["java", "-Xmx256m", "-cp", f"{streamband_jar()}:{home / 'lib'}/*",
            "streamband.storm.locality.Conformance"]


def run_java(cmd: list[str], lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    inp = "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines)
    r = subprocess.run(cmd, input=inp, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return [json.loads(ln) for ln in r.stdout.splitlines() if ln]


def test_hash_fallback_is_the_same_key_by_key(java: list[str]) -> None:
    """BLAKE2b in Java = hashlib's: every key absent from a table lands on the same
    instance in Storm as in the manager's plan (strings of every block length, unicode,
    negative and large integers)."""
    rng = random.Random(5)
    keys: list[Any] = [*range(-300, 300), 2**40 + 7, -(2**62), "", "N14228", "Zürich", "日本",
                       *("x" * n for n in (1, 63, 64, 127, 128, 129, 255, 256, 257, 1000))]
    keys += ["".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789") for _ in range(6))
             for _ in range(300)]
    queries = [[k, op, n] for k in keys for op in ("A", "B") for n in (1, 2, 5, 6, 7)]
    got = run_java(java, [{"hash": queries}])[0]
    want = [hash_route(k, op, n) for k, op, n in queries]
    assert got == want
    assert len(set(want)) == 7  # a real spread, not a constant


def chain() -> Dataflow:
    return Dataflow([OpSpec("S", 2), OpSpec("A", 3, 0), OpSpec("B", 3, 1)],
                    [("S", "A"), ("A", "B")])


def recorded_run(store: Path, seed: int, n: int = 3000, rounds: int = 12, decay: float = 0.0
                 ) -> tuple[LocalCluster, dict[str, list[tuple[str, Message]]]]:
    """A simulated run whose instances record ("in", msg) and ("out", msg) in order."""
    flow = chain()
    cl = LocalCluster(flow, store, MetisPlanner(flow, servers=3, seed=seed), seed=seed,
                      stats_memory_bytes=MEMORY, stats_decay=decay)
    trace: dict[str, list[tuple[str, Message]]] = {i: [] for i in cl.instances}
    send = cl.transport.send

    def recording_send(msg: Message) -> None:
        if msg.src in trace:
            trace[msg.src].append(("out", msg))
        send(msg)

    cl.transport.send = recording_send  # type: ignore[method-assign]
    for iid, inst in cl.instances.items():
        handle = inst.handle

        def recording_handle(msg: Message, iid: str = iid, handle: Any = handle) -> None:
            trace[iid].append(("in", msg))
            handle(msg)

        inst.handle = recording_handle  # type: ignore[method-assign]
    data = random.Random(seed)
    rng = random.Random(seed + 1)
    crashed: set[ManagerPhase] = set()
    for t in range(n):
        a = data.randrange(30)
        b = (a + t // 200) % 30 if data.random() < 0.7 else data.randrange(30)
        cl.feed(t, (a, b, data.randrange(4)))
        if cl.manager.idle and t % (n // rounds) == 0 and t:
            cl.manager.start_round()
        phase = cl.manager.rec.phase
        # one restart that rolls back (③ sent, not all ④) and one that resumes (⑤ sent)
        if phase in (ManagerPhase.PREPARED, ManagerPhase.PROPAGATING) and phase not in crashed \
                and cl.manager.rec.epoch >= 3 and rng.random() < 0.3:
            crashed.add(phase)
            cl.crash_manager()
        for _ in range(rng.randrange(1, 7)):
            cl.step()
    cl.drain()
    assert crashed == {ManagerPhase.PREPARED, ManagerPhase.PROPAGATING}
    return cl, trace


def normal(out: dict[str, Any]) -> dict[str, Any]:
    """SpaceSaving's report order among equal counts is the implementation's own."""
    if out["kind"] == Kind.SEND_METRICS and out["payload"] is not None:
        p = out["payload"]
        out = {**out, "payload": {"keys": sorted(p["keys"]),
                                  "pairs": {s: sorted(v) for s, v in p["pairs"].items()}}}
    return out


@pytest.mark.parametrize("decay", [0.0, 0.5])
def test_java_instances_send_what_the_python_reference_sends(java: list[str], tmp_path: Path,
                                                             decay: float) -> None:
    """003's reset of the statistics, and the opt-in decay (its integer rescaling reached
    after 4 reconfigurations at 1/2)."""
    cl, trace = recorded_run(tmp_path, seed=3, decay=decay)
    assert cl.rounds_done >= 8 and cl.manager.migrated_keys > 0
    assert cl.manager.rec.rolled_back  # an ABORT reached every instance
    flow = chain()
    lines: list[dict[str, Any]] = []
    want: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for iid, events in trace.items():
        lines.append({"iid": iid, "flow": flow.to_json(), "memory_bytes": MEMORY, "decay": decay,
                      "tables": {op: RoutingTable(op, 3).to_json() for op in ("A", "B")}})
        k = -1
        want[iid] = []
        for what, msg in events:
            if what == "in":
                k += 1
                lines.append(wire.to_json(msg))
            else:
                want[iid].append((k, normal(wire.to_json(msg))))
        lines.append({"end": True})
    got = run_java(java, lines)
    # split the output per instance: each instance ends with its "final" line
    per: list[list[dict[str, Any]]] = [[]]
    for g in got:
        per[-1].append(g)
        if "final" in g:
            per.append([])
    assert len(per) - 1 == len(trace)
    kinds: dict[str, int] = {}
    for (iid, w), out in zip(want.items(), per, strict=False):
        assert not any("error" in g for g in out), (iid, [g for g in out if "error" in g])
        sent = [(g["in"], normal(g["out"])) for g in out if "out" in g]
        assert len(sent) == len(w), iid
        for a, b in zip(sent, w, strict=True):
            assert a == b, f"{iid}: Java sent {a}, Python {b}"
            kinds[a[1]["kind"]] = kinds.get(a[1]["kind"], 0) + 1
        fin = out[-1]["final"]
        ref = cl.instances[iid].rec
        assert fin["phase"] == ref.phase.value and fin["applied"] == ref.applied
        assert {k: v for k, v in fin["state"]} == ref.state
        assert fin["buffer"] == [t for t, _ in ref.buffer]
    # every kind an instance sends was compared, states really moved
    assert set(kinds) == {"DATA", "SEND_METRICS", "ACK_RECONF", "PROPAGATE", "MIGRATE", "DONE"}
    assert kinds["MIGRATE"] > 10
