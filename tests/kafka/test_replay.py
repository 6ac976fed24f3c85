"""The paced replay producer against a real broker: each topic gets exactly its rate times
the time, on pace every second, each record stamped with when it was due; a consumer group
that read part of a topic back shows the rest as its lag, in records and bytes."""

from __future__ import annotations

import pytest

from streamband.errors import SpecError
from streamband.kafka import replay as kr

SECONDS = 8.0
A = kr.Stream("fast", "event", 200.0, 512)
B = kr.Stream("slow", "id", 50.0, 2048)


def test_replay_rate_timestamps_and_lag(broker):
    reports: list[str] = []
    rp = kr.Replay(broker, [A, B], seconds=SECONDS).start()
    last = rp.wait(reports.append)
    assert last.get("done") and len(reports) >= SECONDS - 1
    assert reports[-1].startswith("replay 8/8 s: fast 1600/1600")
    for s in (A, B):
        c = last["topics"][s.topic]
        assert c["due"] == c["sent"] == c["acked"] == int(s.rate * SECONDS)
        assert c["failed"] == 0 and c["bytes"] == c["acked"] * s.bytes
    ends = kr.offsets(broker, [A.topic, B.topic])
    assert ends[f"{A.topic}/0"]["end"] == 1600 and ends[f"{B.topic}/0"]["end"] == 400
    # event time: record i was due at start + i / rate, so consecutive records are 1/rate apart
    got = kr.read(broker, "reader", A.topic, 500)
    assert got["read"] == 500 and got["bytes"] == 500 * A.bytes
    assert got["min_gap_ms"] == got["max_gap_ms"] == 1000 / A.rate
    assert got["last_ts"] - got["first_ts"] == 499 * 1000 / A.rate
    lag = kr.consumer_lag(broker, ["reader"])["reader"][f"{A.topic}/0"]
    assert lag["committed"] == 500 and lag["lag"] == 1100
    # bytes on disk per record: the value plus its key and Kafka's record and batch headers
    assert 1100 * A.bytes <= lag["lag_bytes"] <= 1100 * (A.bytes + 100)


def test_replay_paces_every_second(broker):
    """Each second's report: the records due by the pace were all handed over, and the
    broker had acknowledged every record due by the report before (a full report period
    to answer, whatever else the machine runs)."""
    rp = kr.Replay(broker, [kr.Stream("paced", "tweet", 400.0, 256)], seconds=5.0,
                   conf={"bench.words": [["storm", 0.5], ["kafka", 0.5]]}).start()
    seen = []
    rp.wait(lambda line: seen.append(dict(rp.last)))
    prev_due = 0.0
    for rec in seen[:-1]:
        c = rec["topics"]["paced"]
        assert abs(c["due"] - 400.0 * rec["t"]) <= 1
        assert c["sent"] >= c["due"] - 1 and c["acked"] >= prev_due
        prev_due = c["due"]
    got = kr.read(broker, "tweets", "paced", 2000)
    assert got["read"] == 2000 and got["bytes"] >= 2000 * 256


def test_bad_stream_is_refused():
    with pytest.raises(SpecError, match="kind: expected one of event, tweet, id"):
        kr.Stream("t", "video", 1.0, 1).arg()
    with pytest.raises(SpecError, match="rate > 0"):
        kr.Stream("t", "event", 0.0, 1).arg()
