package streamband.storm.kafka;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.storm.kafka.spout.RecordTranslator;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Values;

/**
 * A replayed record ({@code streamband.kafka.Replay}) as the tuple the benchmark's spout
 * emitted when it generated its source itself, with the record's event time as {@code ts};
 * and, per topic-partition, how far this spout task has emitted (the next offset) and the mean
 * bytes of the records it emitted, read by {@link ReportingKafkaSpout}'s lag gauge.
 */
public final class Translator implements RecordTranslator<String, byte[]> {
    /** What a record holds (the producer's KIND). */
    public enum Kind {
        /** key: route; value: payload: (route, ts, data). */
        EVENT("route", "ts", "data"),
        /** value: text, a zero byte, payload: (tweet, ts, pad). */
        TWEET("tweet", "ts", "pad"),
        /** key: id; value: payload: (id, ts, data). */
        ID("id", "ts", "data");

        final Fields fields;

        Kind(String... names) {
            fields = new Fields(names);
        }
    }

    /** How far one partition has been emitted: written by the executor, read by the reporter. */
    static final class Position {
        volatile long next;
        volatile long records;
        volatile long bytes;
    }

    private static final long serialVersionUID = 1L;
    private final Kind kind;
    private final ConcurrentHashMap<TopicPartition, Position> emitted = new ConcurrentHashMap<>();

    public Translator(Kind kind) {
        this.kind = kind;
    }

    @Override
    public List<Object> apply(ConsumerRecord<String, byte[]> r) {
        Position p = emitted.computeIfAbsent(new TopicPartition(r.topic(), r.partition()), k -> new Position());
        p.next = Math.max(p.next, r.offset() + 1);
        p.records++;
        p.bytes += Math.max(r.serializedKeySize(), 0) + Math.max(r.serializedValueSize(), 0);
        byte[] v = r.value() == null ? new byte[0] : r.value();
        switch (kind) {
            case EVENT:
                return new Values(Integer.parseInt(r.key()), r.timestamp(), v);
            case ID:
                return new Values(Long.parseLong(r.key()), r.timestamp(), v);
            default:
                int zero = 0;
                while (zero < v.length && v[zero] != 0) {
                    zero++;
                }
                String text = new String(v, 0, zero, StandardCharsets.UTF_8);
                return new Values(text, r.timestamp(), Arrays.copyOfRange(v, Math.min(zero + 1, v.length), v.length));
        }
    }

    @Override
    public Fields getFieldsFor(String stream) {
        return kind.fields;
    }

    /** Per partition this task emitted from: the next offset and mean record bytes. */
    Map<TopicPartition, long[]> positions() {
        Map<TopicPartition, long[]> out = new TreeMap<>((a, b) ->
            a.topic().equals(b.topic()) ? Integer.compare(a.partition(), b.partition()) : a.topic().compareTo(b.topic()));
        emitted.forEach((tp, p) -> out.put(tp, new long[] {p.next, p.records, p.bytes}));
        return out;
    }
}
