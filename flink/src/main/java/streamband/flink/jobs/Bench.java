package streamband.flink.jobs;

import java.io.File;
import java.io.IOException;
import java.io.Serializable;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.operators.SlotSharingGroup;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.RichSinkFunction;

/**
 * What the benchmark jobs share: their settings (a JSON file, the {@code bench.*} keys of the
 * Storm topologies, {@code streamband.*} for the cluster), their Kafka sources with event-time
 * watermarks (the records' Kafka timestamps, the time the replay producer had them due),
 * placement by slot-sharing groups, and the sinks' once-a-second reports of throughput and
 * event-time latency to the manager's collector (the format of the Storm benchmarks').
 */
public final class Bench implements Serializable {
    private static final long serialVersionUID = 1L;
    /** Buckets of the sinks' latency histogram: 1.25^i ms, up to about 12 minutes. */
    public static final int LATENCY_BUCKETS = 64;

    final Map<String, Object> conf;

    Bench(Map<String, Object> conf) {
        this.conf = conf;
    }

    /** {@code CLASS CONF.json}: the settings. */
    @SuppressWarnings("unchecked")
    static Bench load(String[] args) throws IOException {
        if (args.length < 1) {
            System.err.println("usage: CLASS CONF.json");
            System.exit(2);
        }
        return new Bench(new ObjectMapper().readValue(new File(args[0]), HashMap.class));
    }

    double num(String key, double dflt) {
        Object v = conf.get(key);
        return v instanceof Number ? ((Number) v).doubleValue() : v == null ? dflt : Double.parseDouble(v.toString());
    }

    String str(String key, String dflt) {
        Object v = conf.get(key);
        return v == null ? dflt : v.toString();
    }

    int parallel(String component) {
        return (int) num("bench.parallelism." + component, 1);
    }

    String name() {
        return str("bench.name", "bench");
    }

    /** A payload of {@code n} bytes (not all zeros, so no layer can compress it away). */
    static byte[] payload(int n, long seed) {
        byte[] b = new byte[Math.max(n, 0)];
        long x = seed * 0x9E3779B97F4A7C15L + 1;
        for (int i = 0; i < b.length; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            b[i] = (byte) x;
        }
        return b;
    }

    /**
     * Operator {@code component}: its name, uid, parallelism ({@code bench.parallelism.C}) and
     * slot-sharing group of its own. With {@code streamband.groups: true} the group requests the
     * extended resource {@code sbgroup_C}, which only the TaskManagers placed for it offer: that
     * pins the component's subtasks to those TaskManagers (which subtask lands in which of them,
     * Flink decides).
     */
    <T> SingleOutputStreamOperator<T> place(SingleOutputStreamOperator<T> op, String component) {
        return place(op, component, component);
    }

    /** {@link #place} of operator {@code name} (a part of {@code component}'s task). */
    <T> SingleOutputStreamOperator<T> place(SingleOutputStreamOperator<T> op, String component, String name) {
        op.name(name).uid(name).setParallelism(parallel(component)).slotSharingGroup(group(component));
        return op;
    }

    /** {@link #place} for a sink. */
    <T> DataStreamSink<T> place(DataStreamSink<T> sink, String component) {
        sink.name(component).uid(component).setParallelism(parallel(component)).slotSharingGroup(group(component));
        return sink;
    }

    /** The slot-sharing group of {@code component}: of its own name; with {@code
     * streamband.groups}, requesting the extended resource {@code sbgroup_COMPONENT}. */
    SlotSharingGroup group(String component) {
        if (!Boolean.parseBoolean(str("streamband.groups", "false"))) {
            return SlotSharingGroup.newBuilder(component).build();
        }
        return SlotSharingGroup.newBuilder(component).setCpuCores(0.1).setTaskHeapMemoryMB(24)
            .setTaskOffHeapMemoryMB(0).setManagedMemoryMB(0).setExternalResource("sbgroup_" + component, 1.0).build();
    }

    /**
     * The Kafka topic {@code bench.topic.COMPONENT} (default {@code topic}) read from its start
     * by {@code component}, each record's Kafka timestamp its event time, monotonous per
     * partition; with {@code bench.alignment.ms} > 0, Flink's watermark alignment (FLIP-217)
     * pauses a source whose watermark runs that far ahead of the others'.
     */
    <T> SingleOutputStreamOperator<T> kafka(StreamExecutionEnvironment env, String component, String topic,
                                            KafkaRecordDeserializationSchema<T> schema) {
        String t = str("bench.topic." + component, topic);
        KafkaSource<T> src = KafkaSource.<T>builder()
            .setBootstrapServers(str("streamband.kafka.bootstrap", "127.0.0.1:9092"))
            .setTopics(t).setGroupId("streamband-" + name() + "-" + component)
            .setStartingOffsets(OffsetsInitializer.earliest()).setDeserializer(schema)
            .setProperty("partition.discovery.interval.ms", "-1").build();
        WatermarkStrategy<T> wm = WatermarkStrategy.<T>forMonotonousTimestamps();
        double align = num("bench.alignment.ms", 0);
        if (align > 0) {
            wm = wm.withWatermarkAlignment("sources", Duration.ofMillis((long) align), Duration.ofMillis(200));
        }
        return place(env.fromSource(src, wm, component), component, component + "-kafka");
    }

    /** The job's environment: no operator chaining across components (each in a group of its
     * own), watermarks every 200 ms. */
    static StreamExecutionEnvironment env() {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.getConfig().setAutoWatermarkInterval(200);
        return env;
    }

    /**
     * Cumulative counters of one task, sent once a second as one datagram from a thread of its
     * own (a task that receives nothing still reports). {@code type}: {@code sink} or {@code
     * spout}; the job id is the report's {@code topology}.
     */
    public static final class Reporter implements AutoCloseable {
        private final Map<String, Double> values = new HashMap<>();
        private final Map<String, Object> base = new TreeMap<>();
        private final ObjectMapper json = new ObjectMapper();
        private DatagramSocket socket;
        private InetSocketAddress target;
        private ScheduledExecutorService timer;

        public Reporter(Bench b, String type, RuntimeContext ctx, String component) {
            base.put("type", type);
            base.put("topology", ctx.getJobInfo().getJobId().toString());
            base.put("component", component);
            base.put("task", ctx.getTaskInfo().getIndexOfThisSubtask());
            String m = b.str("streamband.manager", "");
            int i = m.lastIndexOf(':');
            if (i <= 0) {
                return;
            }
            try {
                target = new InetSocketAddress(m.substring(0, i), Integer.parseInt(m.substring(i + 1)));
                socket = new DatagramSocket();
            } catch (IOException | RuntimeException e) {
                return;
            }
            timer = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "streamband-bench-reporter");
                t.setDaemon(true);
                return t;
            });
            timer.scheduleAtFixedRate(this::send, 1, 1, TimeUnit.SECONDS);
        }

        public synchronized void add(String key, double v) {
            values.merge(key, v, Double::sum);
        }

        public synchronized void max(String key, double v) {
            values.merge(key, v, Math::max);
        }

        /** {@code n} event-time latencies of {@code ms}: cumulative counts per bucket {@code
         * lat_bNN} (bucket i: [1.25^(i-1), 1.25^i) ms), {@code count}, {@code latency_sum_ms}. */
        public synchronized void latency(double ms, double n) {
            int i = ms < 1.0 ? 0 : Math.min(LATENCY_BUCKETS - 1, 1 + (int) Math.floor(Math.log(ms) / Math.log(1.25)));
            add(String.format("lat_b%02d", i), n);
            add("count", n);
            add("latency_sum_ms", ms * n);
            max("latency_max_ms", ms);
        }

        void send() {
            Map<String, Object> rec = new TreeMap<>(base);
            synchronized (this) {
                rec.putAll(values);
            }
            rec.put("t", System.currentTimeMillis() / 1000.0);
            try {
                byte[] b = json.writeValueAsString(rec).getBytes(StandardCharsets.UTF_8);
                socket.send(new DatagramPacket(b, b.length, target));
            } catch (IOException | RuntimeException e) {
                // a lost report is a missing sample, never an error of the job
            }
        }

        @Override
        public void close() {
            if (timer != null) {
                timer.shutdownNow();
                send();
                socket.close();
            }
        }
    }

    /** A job's sink: what reaches it counted by a reporter of its own (component {@code name}). */
    abstract static class Sink<T> extends RichSinkFunction<T> {
        private static final long serialVersionUID = 1L;
        private final Bench bench;
        private final String name;
        /** The sink's reporter, open while the sink runs. */
        protected transient Reporter rep;

        Sink(Bench bench, String name) {
            this.bench = bench;
            this.name = name;
        }

        @Override
        public void open(OpenContext ctx) {
            rep = new Reporter(bench, "sink", getRuntimeContext(), name);
        }

        @Override
        public void close() {
            if (rep != null) {
                rep.close();
            }
        }
    }
}
