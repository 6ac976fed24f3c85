"""Kafka-fed Trucking IoT on a loopback Storm cluster, at-least-once: two topics, two Kafka
spouts, the combiner's own store. The flow reports carry, every second, each spout's
backlog in its topic and what waits in the store per input; when the traffic topic stops
(after 10 s of 30), every later truck event waits in the store for traffic's watermark,
and traffic's event-time lag grows with the time it has been silent, until the store's
bound lets the oldest out before its time (``forced``: emitted, not counted). Loss is
counted from Kafka's offsets: produced = seen at the sink + waiting + forced."""

from __future__ import annotations

import json
import statistics
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from streamband.kafka import broker as kb
from streamband.kafka import replay as kr
from streamband.storm.cluster import StormCluster, loopback_spec, tagged_processes, usage

RATE, TRUCK_S, TRAFFIC_S = 200.0, 30.0, 10.0
TRUCK_B, TRAFFIC_B = 1024, 512
#: the combiner's store bound, MiB: about half the truck events that wait for traffic
STORE_MB = 2.0
W1, W2 = "127.0.0.2", "127.0.0.3"


@pytest.fixture(scope="module")
def storm(tmp_path_factory: pytest.TempPathFactory):
    cluster = StormCluster(loopback_spec(tmp_path_factory.mktemp("storm") / "cluster", 2))
    work = str(cluster.work)
    try:
        yield cluster.start()
    finally:
        cluster.stop()
        assert tagged_processes(work) == []


def _reports(snap: dict, topology: str) -> dict[str, dict]:
    return {k: r for k, r in snap.get("flow", {}).items() if r.get("topology") == topology}


def test_reports_carry_lag_and_store(broker: kb.Broker, storm: StormCluster):
    kr.create_topics(broker, {"trucks": 1, "traffic": 1})
    conf = {"bench.source": "kafka", "streamband.kafka.bootstrap": broker.spec.bootstrap,
            "streamband.kafka.guarantee": "at-least-once", "bench.store.max.mb": STORE_MB,
            "streamband.placement": {"trucks": [W1], "traffic": [W1], "combine": [W2],
                                     "score": [W2]}}
    name = storm.submit(storm.jar, "streamband.storm.topo.TruckingIoT", "ti-kafka",
                        conf)["id"]
    storm.wait_running("ti-kafka")
    snapshot = Path(storm.work) / "profile.json"
    deadline = time.monotonic() + 180
    while True:  # the workers are up once both spouts' and the combiner's gauges report
        snap = kr_snapshot(snapshot)
        reps = _reports(snap, name)
        if sum("sources" in r for r in reps.values()) == 2 and any("stores" in r for r in
                                                                   reps.values()):
            break
        assert time.monotonic() < deadline, f"no source and store reports in 180 s: {reps}"
        time.sleep(1)

    trucks = kr.Replay(broker, [kr.Stream("trucks", "event", RATE, TRUCK_B)], TRUCK_S,
                       create=False)
    traffic = kr.Replay(broker, [kr.Stream("traffic", "event", RATE, TRAFFIC_B)], TRAFFIC_S,
                        create=False)
    trucks.start(), traffic.start()
    seen: dict[str, list[dict]] = {}
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for key, rec in _reports(kr_snapshot(snapshot), name).items():
                runs = seen.setdefault(key, [])
                if not runs or runs[-1]["t"] != rec["t"]:
                    runs.append(rec)
            time.sleep(0.25)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        traffic.wait()
        trucks.wait()
        time.sleep(6)  # the last records through the topology and one more report
    finally:
        done.set()
        watcher.join()
    final = kr_snapshot(snapshot)

    # every second: each spout's backlog in its topic, the combiner's store
    spouts = {k: v for k, v in seen.items() if any("sources" in r for r in v)}
    joins = {k: v for k, v in seen.items() if any("stores" in r for r in v)}
    assert len(spouts) == 2 and len(joins) == 1
    # the reporter's timer runs at a fixed rate of 1 s: a late report (a JVM busy beside
    # other work) is followed by an early one, so the gaps' median stays at the period
    for runs in [*spouts.values(), *joins.values()]:
        t = [r["t"] for r in runs]
        assert len(t) >= TRUCK_S and abs(statistics.median(np.diff(t)) - 1.0) < 0.1, t
    for runs in spouts.values():
        for r in runs:
            for tp in next(iter(r["sources"].values())).values():
                assert tp["lag"] == max(0, tp["end"] - tp["next"]) >= 0
    produced = {k: v["end"] for k, v in kr.offsets(broker, ["trucks", "traffic"]).items()}
    assert produced == {"trucks/0": RATE * TRUCK_S, "traffic/0": RATE * TRAFFIC_S}
    last = {}
    for r in _reports(final, name).values():
        for src in r.get("sources", {}).values():
            last.update(src)
    assert {tp: v["end"] for tp, v in last.items()} == produced
    assert all(v["lag"] == 0 for v in last.values())  # loopback: the spouts keep up

    # the store: truck events after traffic's last record wait for its watermark, those
    # past its bound leave before their time, oldest first
    stores = next(next(iter(r["stores"].values())) for r in _reports(final, name).values()
                  if "stores" in r)
    store, forced = stores["inputs"], stores["forced"]
    waiting, behind = store["trucks"]["tuples"], store["traffic"]["lag_ms"]
    # the producers' JVMs start a moment apart: traffic's lag is its silence, 20 s, less
    # that moment; a truck event waits if it happened in that lag, one every 1/RATE
    assert 1000 * (TRUCK_S - TRAFFIC_S - 3) <= behind <= 1000 * (TRUCK_S - TRAFFIC_S + 3)
    assert abs(waiting + forced - behind * RATE / 1000) <= 1
    bound, each = STORE_MB * (1 << 20), TRUCK_B + 12
    assert forced > 0 and bound - each < store["trucks"]["bytes"] <= bound, (forced, store)
    assert store["trucks"]["bytes"] == waiting * each
    assert store["traffic"]["tuples"] == 0 and store["trucks"]["lag_ms"] == 0
    growth = [next(iter(r["stores"].values()))["inputs"]["trucks"]["tuples"]
              for r in next(iter(joins.values()))]
    assert growth[-1] >= max(growth) - 1 and growth[-1] > growth[len(growth) // 2]

    # at-least-once: every produced truck event is at the sink, waiting in the store or
    # let out early, which the sink does not count
    sink = sum(r.get("count", 0) for r in final.get("sink", {}).values()
               if r.get("topology") == name)
    used = [*usage(str(storm.work)), {"role": "kafka", **kb.usage(kb.running()["pid"])}]
    print("rss MB:", {u["role"]: round(u["rss_mb"]) for u in used},
          f"total {sum(u['rss_mb'] for u in used):.0f} MB")
    print(f"store: {waiting} trucks ({store['trucks']['bytes']} B) waiting, {forced} forced, "
          f"traffic {behind} ms behind; sink {sink:.0f} of {produced['trucks/0']:.0f} "
          f"produced; {len(next(iter(joins.values())))} store reports")
    assert produced["trucks/0"] - sink - waiting - forced == 0
    storm.kill("ti-kafka")


def kr_snapshot(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
