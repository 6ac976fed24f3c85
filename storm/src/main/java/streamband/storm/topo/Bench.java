package streamband.storm.topo;

import java.util.HashMap;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.TreeMap;
import org.apache.storm.Config;
import org.apache.storm.StormSubmitter;
import org.apache.storm.generated.StormTopology;
import org.apache.storm.tuple.Tuple;
import org.apache.storm.utils.Utils;
import streamband.kafka.Records;
import streamband.storm.Udp;

/**
 * What the benchmark topologies share: their settings (a YAML/JSON file, keys
 * {@code bench.*} for the workload, any Storm key for the topology), submission, and the
 * once-a-second reports of spouts (emitted, acked, failed) and sinks (throughput and
 * event-time latency) to the manager's collector.
 */
public final class Bench {
    private Bench() {
    }

    /** {@code CLASS NAME [CONF.yaml]}: builds with {@code build} and submits. */
    public static void submit(String[] args, java.util.function.Function<Map<String, Object>, StormTopology> build)
        throws Exception {
        if (args.length < 1) {
            System.err.println("usage: CLASS NAME [CONF.yaml]");
            System.exit(2);
        }
        Config conf = new Config();
        conf.setNumAckers(1);
        conf.put(Config.TOPOLOGY_MESSAGE_TIMEOUT_SECS, 120);
        if (args.length > 1) {
            conf.putAll(Utils.findAndReadConfigFile(args[1], true));
        }
        conf.put("bench.name", args[0]);
        StormTopology topo = build.apply(conf);
        StormSubmitter.submitTopology(args[0], conf, topo);
    }

    public static double num(Map<String, Object> conf, String key, double dflt) {
        return Records.num(conf, key, dflt);
    }

    public static int parallel(Map<String, Object> conf, String component) {
        return (int) num(conf, "bench.parallelism." + component, 1);
    }

    /** A payload of {@code n} bytes (not all zeros, so no layer can compress it away). */
    public static byte[] payload(int n, long seed) {
        return Records.payload(n, seed);
    }

    /**
     * Aligns an input on event time (field 1 of a tuple, ms): holds tuples, oldest first,
     * until the watermark of the other input, the oldest of its tasks' latest event times,
     * has reached theirs.
     */
    public static final class Aligner {
        private final int tasks;
        private final Map<Integer, Long> latest = new HashMap<>();
        private final PriorityQueue<Tuple> waiting =
            new PriorityQueue<>((a, b) -> Long.compare(a.getLong(1), b.getLong(1)));

        /** {@code tasks}: how many tasks send the input whose watermark releases tuples. */
        public Aligner(int tasks) {
            this.tasks = tasks;
        }

        /** Task {@code task} of the watermark's input has reached event time {@code ts}. */
        public void mark(int task, long ts) {
            latest.merge(task, ts, Math::max);
        }

        public void hold(Tuple t) {
            waiting.add(t);
        }

        /** The oldest held tuple at or before the watermark, or null. */
        public Tuple next() {
            if (waiting.isEmpty() || latest.size() < tasks) {
                return null;
            }
            long wm = Long.MAX_VALUE;
            for (long ts : latest.values()) {
                wm = Math.min(wm, ts);
            }
            return waiting.peek().getLong(1) <= wm ? waiting.poll() : null;
        }
    }

    /** A component's conf with a tick tuple every second (a sink reports while nothing arrives). */
    public static Map<String, Object> everySecond() {
        Map<String, Object> c = new HashMap<>();
        c.put(Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS, 1);
        return c;
    }

    /** Paces a spout to {@code rate} tuples per second (token bucket, burst of 1 s). */
    public static final class Pace {
        private final double rate;
        private double tokens;
        private long last = System.nanoTime();

        public Pace(double rate) {
            this.rate = rate;
        }

        public boolean take() {
            long now = System.nanoTime();
            tokens = Math.min(rate, tokens + rate * (now - last) / 1e9);
            last = now;
            if (tokens >= 1.0) {
                tokens -= 1.0;
                return true;
            }
            return false;
        }
    }

    /** Cumulative counters of one task, sent once a second as one datagram. */
    /** Buckets of the sinks' latency histogram: 1.25^i ms, up to about 12 minutes. */
    public static final int LATENCY_BUCKETS = 64;

    public static final class Reporter {
        private final Udp udp;
        private final Map<String, Object> base = new TreeMap<>();
        private final Map<String, Double> values = new HashMap<>();
        private long next = System.currentTimeMillis() + 1000;

        public Reporter(Map<String, Object> conf, String type, String topologyId, String component, int task) {
            this.udp = Udp.fromConf(conf);
            base.put("type", type);
            base.put("topology", topologyId);
            base.put("component", component);
            base.put("task", task);
        }

        public void add(String key, double v) {
            values.merge(key, v, Double::sum);
        }

        public void max(String key, double v) {
            values.merge(key, v, Math::max);
        }

        public void set(String key, double v) {
            values.put(key, v);
        }

        /**
         * Counts {@code n} event-time latencies of {@code ms} milliseconds: cumulative counts
         * per bucket {@code lat_bNN}, bucket i holding [1.25^(i-1), 1.25^i) ms (bucket 0:
         * under 1 ms, the last: everything above), so a reader takes percentiles of any window.
         */
        public void latency(double ms, double n) {
            int i = ms < 1.0 ? 0 : Math.min(LATENCY_BUCKETS - 1, 1 + (int) Math.floor(Math.log(ms) / Math.log(1.25)));
            add(String.format("lat_b%02d", i), n);
            add("count", n);
            add("latency_sum_ms", ms * n);
            max("latency_max_ms", ms);
        }

        /** Sends if a second has passed since the last report. */
        public void tick() {
            long now = System.currentTimeMillis();
            if (udp == null || now < next) {
                return;
            }
            next = now + 1000;
            Map<String, Object> rec = new TreeMap<>(base);
            rec.putAll(values);
            rec.put("t", now / 1000.0);
            udp.send(rec);
        }
    }
}
