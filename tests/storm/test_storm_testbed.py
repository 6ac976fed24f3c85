"""Storm on the testbed under streamband's manager (000 §V on a real stream engine):
001's fork-join pinned to two worker hosts, a window of plain TCP then one of app-aware
meters on the same running topology; and a topology streamband did not build, profiled
all the same. The throughput either policy gives is measured by ``perf/storm_forkjoin.py``
(repeated, in alternating order, paired gains), not asserted here."""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from pathlib import Path

import pytest

from streamband.loop.reports import read_snapshot, worker_reports
from streamband.procs import processes_where
from streamband.storm.flows import component_pairs, placement
from streamband.storm.managed import ManagedTopology
from streamband.storm.profiler import StormProfiler
from streamband.storm.workloads import fork_join, fork_join_placement

pytestmark = pytest.mark.usefixtures("storm_testbed")
SECONDS = {"tcp": 20.0, "appaware": 30.0}


def test_fork_join_appaware_against_tcp(storm_testbed, tmp_path, request):
    tb, cluster = storm_testbed
    ips = (tb.ip("w1"), tb.ip("w2"))
    # TP1 (001 Fig. 1b): A, B on w1; C, D on w2; A->C (4 KB) and B->D (6 KB) share w1's
    # uplink. At 300 tuples/s, TCP's halves hold B->D near 200 tuples/s while the join
    # could take 244 (20 Mbit/s split 4:6). A and B are separate workers, so only B's
    # large receive queue (minutes to fill) couples them: TCP does not balance itself.
    cluster.submit(cluster.jar, fork_join()[0].main, "fj", {
        "bench.rate": 300, "streamband.placement": fork_join_placement("TP1", ips)})
    request.addfinalizer(lambda: cluster.kill("fj"))
    info = cluster.wait_running("fj")
    where = placement(info)
    assert [w.host for c in "ABCD" for w in where[c]] == [ips[0], ips[0], ips[1], ips[1]]
    assert len({w for ws in where.values() for w in ws}) == 4  # one executor per worker
    # every worker runs with the cluster's heap, which holds a full receive queue of B's
    # 6 KB tuples (32768 of them), so back-pressure, not an OutOfMemoryError, bounds it
    heap = f"-Xmx{cluster.spec.worker_heap_mb}m".encode()
    assert sorted(worker_heaps(info["id"], 4).values()) == [heap] * 4
    mt = ManagedTopology(tb, cluster, info, *fork_join())
    # the meters' matches are the receiving workers' slot ports, as Nimbus placed them
    expected = [{"src_ip": ips[0], "dst_ip": ips[1], "proto": "tcp", "dst_port": where[d][0].port}
                for d in "CD"]
    assert [{k: v for k, v in key.items() if k != "src_port"} for key in mt.keys] == expected
    time.sleep(10)  # warm-up, excluded
    runs = [mt.run(p, SECONDS[p], log=tmp_path / f"{p}.jsonl") for p in ("tcp", "appaware")]
    print([(r["policy"], round(r["throughput_tps"], 1), r["latency_ms"], r["failed"],
            r["report_age_p50_s"]) for r in runs])
    for r in runs:
        seconds = SECONDS[r["policy"]]
        assert r["loop_errors"] == []
        assert r["allocations"] >= seconds - 3
        # every worker reports once a second, and the state uses each sender's newest
        # report, under one 1-s period old while reports are on time: so in the median
        # step, with 0.2 s for a JVM timer that slips
        assert r["profiles"] >= 4 * (seconds - 3)
        assert r["report_age_p50_s"] is not None and r["report_age_p50_s"] < 1.2
        assert r["failed"] == 0 and r["acked"] > 0
    tcp, app = runs
    assert tcp["meters"] == [] or all(m["rate_bps"] is None for m in tcp["meters"])
    # appaware's meters sit on exactly the two flows, and it capped both at the steps that
    # found w1's uplink bottlenecked: on a busy machine the workers can fall behind the
    # spout for a while, and the window's last step may leave both uncapped
    meters = sorted((m["flow"]["dst_port"], m["flow"]["src_ip"], m["flow"]["dst_ip"])
                    for m in app["meters"])
    assert meters == sorted((k["dst_port"], k["src_ip"], k["dst_ip"]) for k in expected)
    steps = [json.loads(line) for line in (tmp_path / "appaware.jsonl").read_text().splitlines()]
    capped = [s["rates_bps"] for s in steps if None not in s["rates_bps"]]
    assert capped and all(s["rates_bps"].count(None) in (0, 2) for s in steps)
    # the join takes B's and C's tuples one for one: B->D's 6 KB against A->C's 4 KB want
    # 12 / 8 Mbit/s of w1's 20 (eq. (3)), where TCP's halves give 10 / 10
    to_c, to_d = (statistics.median(c[i] for c in capped) for i in range(2))
    print(f"appaware's caps, median of {len(capped)} steps: A->C {to_c / 1e6:.2f}, "
          f"B->D {to_d / 1e6:.2f} Mbit/s")
    assert to_d > to_c


def worker_heaps(topology_id: str, workers: int, timeout: float = 60.0) -> dict[int, bytes]:
    """The ``-Xmx`` of each worker JVM of a topology (not its log writer), once the
    supervisors have launched all ``workers`` of them (placement comes first)."""
    worker = b"org.apache.storm.daemon.worker.Worker"
    deadline = time.monotonic() + timeout
    while True:
        pids = processes_where("cmdline", lambda c: worker in c and topology_id.encode() in c
                               and b"org.apache.storm.LogWriter" not in c)
        heaps = {}
        for p in pids:
            try:
                args = Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")
            except OSError:  # exited since the scan
                continue
            heaps[p] = next((a for a in args if a.startswith(b"-Xmx")), b"")
        if len(heaps) >= workers or time.monotonic() > deadline:
            return heaps
        time.sleep(1.0)


WORDCOUNT = """
import java.util.*;
import org.apache.storm.*;
import org.apache.storm.spout.SpoutOutputCollector;
import org.apache.storm.task.*;
import org.apache.storm.topology.*;
import org.apache.storm.topology.base.*;
import org.apache.storm.tuple.*;

public class WordCount {
  public static class Sentences extends BaseRichSpout {
    SpoutOutputCollector out; Random rnd = new Random(); long n;
    String[] s = {"the cow jumped over the moon", "an apple a day keeps the doctor away",
                  "four score and seven years ago", "snow white and the seven dwarfs"};
    public void open(Map<String, Object> c, TopologyContext x, SpoutOutputCollector o) { out = o; }
    public void nextTuple() { Utils.sleep(2); out.emit(new Values(s[rnd.nextInt(s.length)]), n++); }
    public void declareOutputFields(OutputFieldsDeclarer d) { d.declare(new Fields("sentence")); }
  }
  public static class Split extends BaseBasicBolt {
    public void execute(Tuple t, BasicOutputCollector o) {
      for (String w : t.getString(0).split(" ")) o.emit(new Values(w)); }
    public void declareOutputFields(OutputFieldsDeclarer d) { d.declare(new Fields("word")); }
  }
  public static class Count extends BaseBasicBolt {
    Map<String, Integer> counts = new HashMap<>();
    public void execute(Tuple t, BasicOutputCollector o) {
      counts.merge(t.getString(0), 1, Integer::sum); }
    public void declareOutputFields(OutputFieldsDeclarer d) { }
  }
  public static void main(String[] args) throws Exception {
    TopologyBuilder b = new TopologyBuilder();
    b.setSpout("sentences", new Sentences(), 2);
    b.setBolt("split", new Split(), 2).shuffleGrouping("sentences");
    b.setBolt("count", new Count(), 2).fieldsGrouping("split", new Fields("word"));
    Config conf = new Config();
    conf.setNumWorkers(3);
    StormSubmitter.submitTopology(args[0], conf, b.createTopology());
  }
}
""".replace("Utils.sleep", "org.apache.storm.utils.Utils.sleep")


def test_foreign_topology_is_profiled(storm_testbed, tmp_path: Path, request):
    """A plain word count (default scheduler, groupings, no streamband class): the
    profiler reports every worker pair that its fields grouping connects (every split
    task sends words to every count task; Storm's shuffle prefers local tasks, so the
    spout's pairs depend on load and are not all used)."""
    tb, cluster = storm_testbed
    src = tmp_path / "WordCount.java"
    src.write_text(WORDCOUNT)
    cp = f"{cluster.home / 'lib'}/*"
    subprocess.run(["javac", "-cp", cp, "-d", str(tmp_path / "classes"), str(src)], check=True)
    jar = tmp_path / "wordcount.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(tmp_path / "classes"), "."], check=True)
    cluster.submit(jar, "WordCount", "wc")
    request.addfinalizer(lambda: cluster.kill("wc"))
    info = cluster.wait_running("wc")
    pairs = component_pairs(info, [("split", "count")])
    assert len({p.src for p in pairs} | {p.dst for p in pairs}) >= 2
    assert any(p.remote for p in pairs)
    assert _unreported(cluster, info, pairs) == []
    prof = StormProfiler(cluster.work / "profile.json", info["id"], pairs,
                         hint_bytes=[64.0] * len(pairs))
    time.sleep(1.5)
    prof.flow_state()
    assert prof.last is not None and min(prof.last["msgs_total"]) > 0, prof.last


#: TT's padded word tuples in the test below (the spec's 64 B, times a tuple scale of 8)
WORD_BYTES = 512


@pytest.mark.parametrize("topology", ["TrendingTopics", "TruckingIoT"])
def test_benchmark_topology_runs(storm_testbed, topology, request):
    """000's Trending Topics and Trucking IoT, pinned across both hosts: paced sources,
    every tuple acked, the sink measures throughput and event-time latency; TT's words
    carry the spec's bytes (``bench.bytes.word``) on the wire, as the kernel counts them."""
    from streamband.loop.reports import app_totals
    from streamband.storm.profiler import host_reader
    from streamband.storm.words import english_words

    tb, cluster = storm_testbed
    w1, w2 = tb.ip("w1"), tb.ip("w2")
    if topology == "TrendingTopics":
        conf = {"bench.rate": 100, "bench.words": english_words(2000), "bench.k": 20,
                "bench.bytes.word": WORD_BYTES,
                "streamband.placement": {"tweets": [w1], "split": [w1], "count": [w2],
                                         "topk": [w2], "report": [w1]}}
    else:
        conf = {"bench.rate": 100, "streamband.placement": {
            "trucks": [w1], "traffic": [w2], "combine": [w2], "score": [w1]}}
    name = topology.lower()
    submitted = time.monotonic()
    cluster.submit(cluster.jar, f"streamband.storm.topo.{topology}", name, conf)
    request.addfinalizer(lambda: cluster.kill(name))
    info = cluster.wait_running(name)
    deadline = time.monotonic() + 90  # the workers' JVMs start on 2 cores
    while "sink.count" not in app_totals(read_snapshot(cluster.work / "profile.json"),
                                         info["id"]) and time.monotonic() < deadline:
        time.sleep(1)
    time.sleep(5)
    t0 = app_totals(read_snapshot(cluster.work / "profile.json"), info["id"])
    time.sleep(10)
    t1 = app_totals(read_snapshot(cluster.work / "profile.json"), info["id"])
    emitted = t1["spout.emitted"] - t0["spout.emitted"]
    assert 0.7 * 100 * 10 <= emitted <= 1.3 * 100 * 10 * (2 if topology == "TruckingIoT" else 1)
    assert t1.get("spout.failed", 0) == 0 and t1["spout.acked"] > 0
    got = t1["sink.count"] - t0["sink.count"]
    assert got > 0
    latency = (t1["sink.latency_sum_ms"] - t0["sink.latency_sum_ms"]) / got
    # no tuple at the sink is older than the topology (a starved machine queues them)
    assert 0 < latency < (time.monotonic() - submitted) * 1000
    if topology == "TrendingTopics":
        pairs = component_pairs(info, [("split", "count")])
        st = tb.state()
        prof = StormProfiler(cluster.work / "profile.json", info["id"], pairs,
                             sockets=host_reader({h["ip"]: h["pid"]
                                                  for h in st["hosts"].values()}),
                             hint_bytes=[0.0] * len(pairs))
        time.sleep(2)
        prof.flow_state()
        bpm = prof.last["bytes_per_msg"]
        # Storm's header and acker messages on the same connection move the mean a little
        assert all(0.8 * WORD_BYTES <= b <= WORD_BYTES + 200 for b in bpm), bpm



def _unreported(cluster, info, pairs, timeout_s: float = 60.0) -> list:
    """The worker pairs no flow report has shown sending after ``timeout_s`` (the
    reporters send every second; workers take tens of seconds to start on 2 cores)."""
    deadline = time.monotonic() + timeout_s
    missing = pairs
    while missing and time.monotonic() < deadline:
        time.sleep(2)
        reports = worker_reports(read_snapshot(cluster.work / "profile.json"), info["id"])
        missing = [p for p in pairs if reports.get((p.src.host, p.src.port), {}).get(
            "clients", {}).get(f"{p.dst.host}:{p.dst.port}", {}).get("sent", 0) <= 0]
    return missing
