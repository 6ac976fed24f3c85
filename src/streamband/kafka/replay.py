"""The benchmarks' sources in Kafka: a paced replay producer and the broker's view of
topics and consumer lag.

:class:`Replay` runs streamband's Java producer (``streamband.kafka.Replay`` in
``storm/``), which writes each stream into its topic at its arrival rate (records/s) and
record size (bytes), each record stamped with its event time (when it was due), and
reports every second. :func:`offsets` and :func:`consumer_lag` ask the broker through
Kafka's Admin API (``streamband.kafka.Topics``): what was produced, and how far each
consumer group is behind, per topic-partition, in records and bytes.

Why Java: Kafka's own ``kafka-clients`` is the best kept client, it is already in the
Kafka home, and the tweets' generator is shared with Trending Topics' spout.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamband.errors import PreconditionError, SpecError
from streamband.kafka.broker import STATE_DIR, Broker
from streamband.kafka.home import client_jar
from streamband.model.app import App
from streamband.procs import marked_env, stop

ProgressFn = Callable[[str], None]
KINDS = ("event", "tweet", "id")


@dataclass(frozen=True)
class Stream:
    """One source replayed into one topic.

    Parameters
    ----------
    topic : str
        The topic (created with one partition if missing).
    kind : str
        What a record holds: ``event`` (key: a route; value: payload; Trucking IoT),
        ``tweet`` (value: a tweet's text, a zero byte, payload; Trending Topics) or
        ``id`` (key: the record's number; value: payload; 001's fork-join).
    rate : float
        Records per second.
    bytes : int
        Bytes of a record's value (a tweet's value is at least its text and a byte).
    """

    topic: str
    kind: str
    rate: float
    bytes: int

    def arg(self) -> str:
        if self.kind not in KINDS:
            raise SpecError(f"stream {self.topic}: kind: expected one of {', '.join(KINDS)}, "
                            f"got {self.kind!r}")
        if not self.rate > 0 or self.bytes < 0 or not self.topic or "=" in self.topic:
            raise SpecError(f"stream {self.topic!r}: expected a topic name without '=', rate > 0 "
                            f"and bytes >= 0, got rate {self.rate} and bytes {self.bytes}")
        return f"{self.topic}={self.kind}:{self.rate:g}:{int(self.bytes)}"


def _edge_bytes(app: App, src: str) -> int:
    return int(next(e.tuple_bytes for e in app.edges if e.src == src))


def streams(app: App) -> list[Stream]:
    """The topics that feed ``app``'s Kafka-fed topology (``storm/``): Trucking IoT's
    ``trucks`` and ``traffic``, Trending Topics' ``tweets``, the fork-join's ``forkjoin``,
    each at its source's rate with its first edge's tuple size.

    Raises
    ------
    SpecError
        If no Kafka-fed topology runs ``app``.
    """
    if app.name == "trucking-iot":
        return [Stream("trucks", "event", app.op("truck").rate_tps or 0.0,
                       _edge_bytes(app, "truck")),
                Stream("traffic", "event", app.op("traffic").rate_tps or 0.0,
                       _edge_bytes(app, "traffic"))]
    if app.name == "trending-topics":
        return [Stream("tweets", "tweet", app.op("spout").rate_tps or 0.0,
                       _edge_bytes(app, "spout"))]
    if app.name == "fork-join":
        return [Stream("forkjoin", "id", app.op("A").rate_tps or 0.0,
                       max(int(e.tuple_bytes) for e in app.edges if e.src == "A"))]
    raise SpecError(f"app {app.name!r}: no Kafka source feeds it; Kafka feeds trucking-iot, "
                    "trending-topics and fork-join")


def _tool(broker: Broker, *args: str, timeout: float = 60.0) -> Any:
    cmd = broker.java("streamband.kafka.Topics", broker.spec.bootstrap, *args, jar=client_jar(),
                      log="topics")
    r = subprocess.run(cmd, capture_output=True, text=True, env=marked_env(), timeout=timeout)
    if r.returncode:
        err = [ln for ln in r.stderr.splitlines() if "Exception" in ln] or \
            r.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise PreconditionError(f"Kafka Topics {' '.join(args)}: {err[-1].strip()[:300]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def create_topics(broker: Broker, topics: dict[str, int]) -> list[str]:
    """Creates ``topics`` (name -> partitions; replication 1); existing ones stay.
    Returns the names created."""
    return _tool(broker, "create", *(f"{t}:{n}" for t, n in topics.items()))["created"]


def offsets(broker: Broker, topics: list[str] | None = None) -> dict[str, dict[str, int]]:
    """Per ``topic/partition`` its first (``start``) and next (``end``) offset and its
    log's size on disk (``bytes``); every topic when ``topics`` is None. ``end - start``
    is what was produced."""
    return _tool(broker, "offsets", *(topics or []))


def read(broker: Broker, group: str, topic: str, count: int) -> dict[str, Any]:
    """Consumes ``count`` records of ``topic`` from its start as consumer group
    ``group`` and commits: ``{"read": n, "bytes": value bytes, "first_ts", "last_ts":
    event times (ms), "min_gap_ms", "max_gap_ms": between consecutive records}``."""
    return _tool(broker, "read", group, topic, str(count))


def consumer_lag(broker: Broker, groups: list[str] | None = None
                 ) -> dict[str, dict[str, dict[str, int]]]:
    """Per consumer group and ``topic/partition``: its ``committed`` offset, the log's
    ``end``, the ``lag`` in records (end - committed) and ``lag_bytes`` (the lag times the
    log's bytes per record on disk, batch headers included); every group when
    ``groups`` is None."""
    return _tool(broker, "lag", *(groups or []))


class Replay:
    """The paced producer of ``streams`` for ``seconds`` (0: until :meth:`stop`).

    Parameters
    ----------
    broker : Broker
        The broker it writes to (and whose host it runs in).
    streams : list of Stream
        One per topic.
    seconds : float
        How long it produces; 0: until stopped.
    conf : dict, optional
        The ``bench.*`` settings the topology gets (``bench.routes``; for tweets
        ``bench.words`` and the bursts' settings).
    heap_mb : int
        The producer JVM's heap, MiB.
    create : bool
        Create the topics first (a JVM of its own, ~3 s here); off when the caller has,
        so that producers started together start their event times together.
    """

    def __init__(self, broker: Broker, streams: list[Stream], seconds: float = 0.0,
                 conf: dict[str, Any] | None = None, heap_mb: int = 192,
                 create: bool = True) -> None:
        if not streams:
            raise SpecError("replay: expected at least one stream")
        if not seconds >= 0:
            raise SpecError(f"replay: seconds: expected >= 0, got {seconds}")
        self.broker, self.streams, self.seconds = broker, streams, seconds
        self.conf, self.heap_mb, self.create = conf or {}, heap_mb, create
        self.proc: subprocess.Popen[str] | None = None
        #: the producer's latest report: {"t": s, "topics": {topic: {due, sent, acked,
        #: failed, bytes}}}, with "done": true at the end
        self.last: dict[str, Any] = {}

    def start(self) -> Replay:
        args = [s.arg() for s in self.streams]
        if self.create:
            create_topics(self.broker, {s.topic: 1 for s in self.streams})
        conf = STATE_DIR / f"replay-{int(time.time() * 1000)}.json"
        conf.write_text(json.dumps(self.conf))
        cmd = self.broker.java("streamband.kafka.Replay", self.broker.spec.bootstrap,
                               f"{self.seconds:g}", str(conf), *args, heap_mb=self.heap_mb,
                               jar=client_jar(), log="replay")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=marked_env(), start_new_session=True)
        return self

    def wait(self, progress: ProgressFn | None = None) -> dict[str, Any]:
        """Reads the producer's reports until it ends (``progress`` gets one line per
        report); returns the last.

        Raises
        ------
        PreconditionError
            If the producer fails.
        """
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.last = json.loads(line)
            except json.JSONDecodeError:
                continue
            if progress:
                progress(self.line())
        err = self.proc.stderr.read() if self.proc.stderr else ""
        if self.proc.wait() and not self.last.get("done"):
            tail = [ln for ln in err.splitlines() if "Exception" in ln] or \
                err.strip().splitlines()[-1:] or ["(no output)"]
            raise PreconditionError(f"Kafka replay exited with {self.proc.returncode}: "
                                    f"{tail[-1].strip()[:300]}")
        return self.last

    def line(self) -> str:
        """The latest report as one progress line."""
        parts = []
        for topic, c in self.last.get("topics", {}).items():
            rate = c["acked"] / self.last["t"] if self.last.get("t") else 0.0
            parts.append(f"{topic} {c['acked']}/{c['due']} ({rate:.1f}/s)")
        total = f"/{self.seconds:g}" if self.seconds else ""
        return f"replay {self.last.get('t', 0.0):.0f}{total} s: " + ", ".join(parts)

    def stop(self) -> None:
        """Stops the producer (what it had handed to Kafka may be lost)."""
        stop(self.proc)

    def __enter__(self) -> Replay:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_replay(broker: Broker, fresh: list[Stream], conf: dict[str, Any]) -> Replay:
    """The paced producer of ``fresh`` until stopped, its reports read in a thread (a
    producer whose reports nobody reads would block on a full pipe)."""
    replay = Replay(broker, fresh, 0.0, conf=conf, create=False).start()
    threading.Thread(target=_drain, args=(replay,), name="replay", daemon=True).start()
    return replay


def _drain(replay: Replay) -> None:
    try:
        replay.wait()
    except PreconditionError:
        pass  # stopped: its last report stays in replay.last


def stop_replay(replay: Replay | None) -> None:
    if replay is not None:
        replay.stop()


def window_figures(r: dict[str, Any], seconds: float, guarantee: str) -> dict[str, Any]:
    """A Kafka-fed window's figures from the engine's view of its sources at the window's
    start and end (``r["sources_start"]``, ``r["sources_end"]``: per ``topic/partition``
    ``end``, ``lag``) and its joins' stores at its end and, if given, its start
    (``r["stores"]``, ``r["stores_start"]``, :func:`~streamband.loop.reports.store_totals`'
    format): per topic its backlog at the start and end (records), its growth rate
    (records/s; > 0: the engine falls behind its source), its arrival rate and what was
    produced; per join input the tuples waiting in the store at the end, and how far the input's
    event time is behind the join's newest input (s, 0 for the input ahead; the largest
    over the join's tasks), at the end and the start; the tuples the stores let out before
    their time in the window (``store_forced``: past a store's bound, not counted as
    throughput); the guarantee."""
    lag0 = _by_topic(r["sources_start"])
    lag1 = _by_topic(r["sources_end"])
    end0, end1 = _by_topic(r["sources_start"], "end"), _by_topic(r["sources_end"], "end")
    return {
        "guarantee": guarantee,
        "source_lag_start": lag0, "source_lag_end": lag1,
        "source_lag_growth_rps": {t: (lag1[t] - lag0.get(t, 0.0)) / seconds for t in lag1},
        "arrival_rps": {t: (end1[t] - end0.get(t, 0.0)) / seconds for t in end1},
        "produced": end1,
        "store_tuples": {k: v["tuples"] for k, v in r["stores"].items()},
        # let out past the store's bound in the window: merged, not counted as throughput
        "store_forced": (r["stores"].get("forced", {}).get("tuples", 0.0)
                         - (r.get("stores_start") or {}).get("forced", {}).get("tuples", 0.0)),
        "store_lag_s_start": _join_lags(r.get("stores_start") or {}),
        "store_lag_s_end": _join_lags(r["stores"]),
    }


def _join_lags(stores: dict[str, dict[str, float]]) -> dict[str, float]:
    """Per join input, how far its event time is behind the join's newest input, s
    (``lag_ms``; ``forced`` is no input)."""
    return {k: v["lag_ms"] / 1e3 for k, v in stores.items() if "lag_ms" in v}


def _by_topic(sources: dict[str, dict[str, float]], key: str = "lag") -> dict[str, float]:
    """``topic/partition`` figures summed per topic, the window's suffix dropped
    (``trucks-7/0`` -> ``trucks``)."""
    out: dict[str, float] = {}
    for tp, v in sources.items():
        topic = tp.rsplit("/", 1)[0].rsplit("-", 1)[0]
        out[topic] = out.get(topic, 0.0) + float(v.get(key, 0.0))
    return out
