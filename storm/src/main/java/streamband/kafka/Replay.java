package streamband.kafka;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The paced replay producer: writes each benchmark's source into its topic at the spec's
 * arrival rate (records per second) and record size, each record stamped with its event time
 * (the time it was due: start + i / rate, as Kafka's record timestamp), for a given time.
 *
 * <p>{@code Replay BOOTSTRAP SECONDS CONF.json TOPIC=KIND:RATE:BYTES ...}; KIND is what a
 * record holds: {@code event} (key: a random route of {@code bench.routes}; value: BYTES of
 * payload; Trucking IoT's trucks and traffic), {@code tweet} (value: a tweet's text of {@code
 * Records.Tweets}, a zero byte, then payload up to BYTES; Trending Topics) or {@code id} (key:
 * the record's number; value: BYTES of payload; 001's fork-join). CONF holds the {@code
 * bench.*} settings the topology gets; with {@code bench.kafka.compression} the records are
 * compressed in Kafka (their payloads made to compress), so that the consumers' fetches take a
 * fraction of the bytes their tuples carry on. SECONDS 0: until killed.
 *
 * <p>Prints one JSON line a second, {@code {"t": s, "topics": {T: {"due", "sent", "acked",
 * "failed", "bytes"}}}} (records due by the pace, handed to the producer, acknowledged by the
 * broker, failed; value bytes acknowledged), and a last one with {@code "done": true}.
 */
public final class Replay {
    /** Setting: the producer's {@code compression.type} ({@code none}, the default, or e.g. {@code
     * lz4}); compressed, the records' payloads are ones that compress. */
    public static final String COMPRESSION = "bench.kafka.compression";

    private Replay() {
    }

    /** One topic's source: its records, its pace and its counters. */
    static final class Source {
        final String topic;
        final String kind;
        final double rate;
        final int bytes;
        final Random rnd;
        final byte[] pad;
        final int routes;
        final Records.Tweets tweets;
        long sent;
        final AtomicLong acked = new AtomicLong();
        final AtomicLong failed = new AtomicLong();
        final AtomicLong ackedBytes = new AtomicLong();

        Source(String spec, Map<String, Object> conf, long seed, long start, boolean compressed) {
            int eq = spec.indexOf('=');
            String[] p = spec.substring(eq + 1).split(":");
            if (eq <= 0 || p.length != 3) {
                throw new IllegalArgumentException("expected TOPIC=KIND:RATE:BYTES, got " + spec);
            }
            topic = spec.substring(0, eq);
            kind = p[0];
            rate = Double.parseDouble(p[1]);
            bytes = Integer.parseInt(p[2]);
            if (!List.of("event", "tweet", "id").contains(kind) || rate <= 0 || bytes < 0) {
                throw new IllegalArgumentException("expected KIND event|tweet|id, RATE > 0, BYTES >= 0, got " + spec);
            }
            rnd = new Random(seed);
            pad = compressed ? Records.compressible(bytes, seed) : Records.payload(bytes, seed);
            routes = (int) Records.num(conf, "bench.routes", 50);
            tweets = kind.equals("tweet") ? new Records.Tweets(conf, seed, start) : null;
        }

        ProducerRecord<String, byte[]> record(long ts) {
            switch (kind) {
                case "event":
                    return new ProducerRecord<>(topic, null, ts, Integer.toString(rnd.nextInt(routes)), pad);
                case "id":
                    return new ProducerRecord<>(topic, null, ts, Long.toString(sent), pad);
                default:
                    byte[] text = tweets.next(ts).getBytes(StandardCharsets.UTF_8);
                    byte[] v = new byte[Math.max(text.length + 1, bytes)];
                    System.arraycopy(text, 0, v, 0, text.length);
                    System.arraycopy(pad, 0, v, text.length + 1, v.length - text.length - 1);
                    return new ProducerRecord<>(topic, null, ts, null, v);
            }
        }
    }

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: Replay BOOTSTRAP SECONDS CONF.json TOPIC=KIND:RATE:BYTES ...");
            System.exit(2);
        }
        double seconds = Double.parseDouble(args[1]);
        Map<String, Object> conf = args[2].isEmpty() ? new HashMap<>()
            : new ObjectMapper().readValue(new File(args[2]), Map.class);
        long start = System.currentTimeMillis();
        String compression = String.valueOf(conf.getOrDefault(COMPRESSION, "none"));
        List<Source> sources = new ArrayList<>();
        for (int i = 3; i < args.length; i++) {
            sources.add(new Source(args[i], conf, 1000L + i, start, !compression.equals("none")));
        }
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        props.put(ProducerConfig.BATCH_SIZE_CONFIG, Integer.toString(256 << 10));
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "streamband-replay");
        props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
        ObjectMapper json = new ObjectMapper();
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(props)) {
            long t0 = System.nanoTime();
            // stamped from when the pace starts: the producer's set-up is no part of a record's latency
            long epoch = System.currentTimeMillis();
            long nextReport = t0 + 1_000_000_000L;
            while (true) {
                long now = System.nanoTime();
                double elapsed = (now - t0) / 1e9;
                boolean over = seconds > 0 && elapsed >= seconds;
                double until = over ? seconds : elapsed;
                for (Source s : sources) {
                    long due = (long) Math.floor(s.rate * until);
                    while (s.sent < due) {
                        long ts = epoch + (long) (1000.0 * s.sent / s.rate);
                        ProducerRecord<String, byte[]> r = s.record(ts);
                        int size = r.value().length;
                        producer.send(r, (meta, err) -> {
                            if (err == null) {
                                s.acked.incrementAndGet();
                                s.ackedBytes.addAndGet(size);
                            } else {
                                s.failed.incrementAndGet();
                            }
                        });
                        s.sent++;
                    }
                }
                if (over) {
                    break;
                }
                if (now >= nextReport) {
                    System.out.println(json.writeValueAsString(report(sources, elapsed, false)));
                    System.out.flush();
                    nextReport += 1_000_000_000L;
                }
                Thread.sleep(1);
            }
            producer.flush();
            double took = (System.nanoTime() - t0) / 1e9;
            System.out.println(json.writeValueAsString(report(sources, seconds > 0 ? Math.min(took, seconds) : took, true)));
        }
    }

    static Map<String, Object> report(List<Source> sources, double elapsed, boolean done) {
        Map<String, Object> topics = new LinkedHashMap<>();
        for (Source s : sources) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("due", (long) Math.floor(s.rate * elapsed));
            m.put("sent", s.sent);
            m.put("acked", s.acked.get());
            m.put("failed", s.failed.get());
            m.put("bytes", s.ackedBytes.get());
            topics.put(s.topic, m);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("t", Math.round(elapsed * 1000) / 1000.0);
        out.put("topics", topics);
        if (done) {
            out.put("done", true);
        }
        return out;
    }
}
