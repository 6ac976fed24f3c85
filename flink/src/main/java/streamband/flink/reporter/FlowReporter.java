package streamband.flink.reporter;

import java.io.IOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Meter;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricConfig;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.Scheduled;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The application profiler of 000 §IV-A1 inside every Flink process: a metrics reporter that,
 * every report interval, sends one UDP datagram per job running in this TaskManager to the
 * manager's collector, outside Flink's data path.
 *
 * <p>A report ({@code "type": "flow", "engine": "flink"}) holds, per task of the job here
 * ({@code "VERTEX:SUBTASK"}): Flink's own task metrics ({@code numBytesOut}, {@code
 * numRecordsOut}, {@code numRecordsIn}, {@code numBytesInRemote}, {@code outPoolUsage}, {@code
 * inPoolUsage}, {@code backPressuredTimeMsPerSecond}, {@code busyTimeMsPerSecond}, {@code
 * outputQueueLength}, {@code inputQueueLength}), and, since Flink counts no bytes per channel,
 * the channels themselves, read from the network stack's objects behind those gauges:
 *
 * <ul>
 *   <li>{@code out}: per produced partition (its data set, the producer's subtask) and per
 *       subpartition (one per consuming subtask) the bytes written by the task, the bytes
 *       handed to Netty and the buffers queued (the difference waits for the consumer's
 *       credit: the sender backlog);
 *   <li>{@code in}: per input gate (its data set) and per channel the producer's subtask and
 *       subpartitions, the producer TaskManager's data address (remote channels: the one TCP
 *       connection they share), the buffers and bytes received and not yet processed (the
 *       receiver backlog) and the sender backlog the producer announced with its last buffer.
 * </ul>
 *
 * <p>Where a job's own operators say where their records wait, it adds them: operator gauges
 * named {@code streamband-store} (a join's own store) and {@code streamband-source} (a source's
 * backlog in Kafka), per task, as the Storm reporter does; and any source's standard {@code
 * pendingRecords} gauge (FLIP-33: the Kafka source's records not yet fetched), summed per task.
 * With {@code .kafka: BOOTSTRAP} (the broker a job's Kafka sources read from), also {@code
 * kafka}: per topic/partition a source task emits from, the log's end offset (asked of the
 * broker without waiting for it, {@link LogEnds}: the answer to the last report's request),
 * the next offset to emit (its {@code currentOffset} gauge + 1) and the {@code lag} between
 * them, which back-pressure does not freeze as it freezes {@code pendingRecords}.
 *
 * <p>Configured in the Flink configuration, no change to any job: {@code
 * metrics.reporter.streamband.factory.class: streamband.flink.reporter.FlowReporterFactory},
 * {@code .interval: 1 SECONDS}, {@code .manager: HOST:PORT}; optionally {@code .host} and
 * {@code .port} (this TaskManager's data address, to name it in reports; else the metric
 * scope's host and port -1).
 */
public class FlowReporter implements MetricReporter, Scheduled {
    /** The task metrics reported as they are (counters, meters' counts, gauges). */
    static final List<String> TASK_METRICS = List.of(
        "numBytesOut", "numRecordsOut", "numRecordsIn", "numBytesInRemote", "numBytesInLocal",
        "numBuffersOut", "outPoolUsage", "inPoolUsage", "backPressuredTimeMsPerSecond",
        "busyTimeMsPerSecond", "idleTimeMsPerSecond", "outputQueueLength", "inputQueueLength",
        "outputQueueSize", "inputQueueSize");

    /** A source operator's records not yet fetched (FLIP-33; the Kafka source's end offsets less
     * its positions), reported per task as {@code pendingRecords}. */
    static final String PENDING = "pendingRecords";

    /** The Kafka source's gauge of the offset of the record it emitted last, per partition
     * (group variables {@code <topic>} and {@code <partition>}; -1 before the first). */
    static final String CURRENT_OFFSET = "currentOffset";

    /** One task's metrics: what {@link #notifyOfAddedMetric} was given. */
    static final class Task {
        final String job;
        final String vertex;
        final int subtask;
        final String name;
        final Map<String, Metric> metrics = new ConcurrentHashMap<>();
        final Map<String, Gauge<?>> own = new ConcurrentHashMap<>();
        /** "topic/partition" -> the Kafka source's currentOffset gauge */
        final Map<String, Gauge<?>> offsets = new ConcurrentHashMap<>();
        volatile Object partitions; // ResultPartition[] behind outputQueueLength
        volatile Object gates; // SingleInputGate[] behind inputQueueLength

        Task(String job, String vertex, int subtask, String name) {
            this.job = job;
            this.vertex = vertex;
            this.subtask = subtask;
            this.name = name;
        }
    }

    private final Map<String, Task> tasks = new ConcurrentHashMap<>();
    private final ObjectMapper json = new ObjectMapper();
    private DatagramSocket socket;
    private InetSocketAddress target;
    private String host;
    private int port;
    private String tm;
    private String kafka = "";
    private volatile LogEnds ends;
    private volatile boolean closed;
    /** Kafka's client is not in the plug-in's directory: never tried again */
    private boolean noKafka;
    /** reports to skip before the next try to reach the broker */
    private int backoff;

    @Override
    public void open(MetricConfig config) {
        // a value of config.yaml arrives as the YAML's type (Properties.getProperty skips non-strings)
        String manager = setting(config, "manager", "");
        host = setting(config, "host", "");
        port = Integer.parseInt(setting(config, "port", "-1"));
        tm = setting(config, "tm", "");
        kafka = setting(config, "kafka", "");
        int i = manager.lastIndexOf(':');
        if (i <= 0) {
            return; // no collector: the reporter stays silent
        }
        try {
            target = new InetSocketAddress(manager.substring(0, i), Integer.parseInt(manager.substring(i + 1)));
            socket = new DatagramSocket();
        } catch (IOException | RuntimeException e) {
            socket = null;
        }
    }

    static String setting(MetricConfig config, String key, String dflt) {
        Object v = config.get(key);
        return v == null ? dflt : v.toString();
    }

    @Override
    public void close() {
        if (socket != null) {
            socket.close();
        }
        synchronized (this) {
            closed = true;
            if (ends != null) {
                ends.close();
            }
        }
    }

    @Override
    public void notifyOfAddedMetric(Metric metric, String name, MetricGroup group) {
        Map<String, String> v = group.getAllVariables();
        String job = v.get("<job_id>");
        String vertex = v.get("<task_id>");
        String subtask = v.get("<subtask_index>");
        if (job == null || vertex == null || subtask == null) {
            if (host.isEmpty() && v.get("<host>") != null) {
                host = v.get("<host>");
            }
            if (tm.isEmpty() && v.get("<tm_id>") != null) {
                tm = v.get("<tm_id>");
            }
            return;
        }
        String key = job + "|" + vertex + ":" + subtask;
        Task t = tasks.computeIfAbsent(key, k -> new Task(job, vertex, Integer.parseInt(subtask), v.get("<task_name>")));
        if (v.containsKey("<operator_id>")) {
            if (metric instanceof Gauge && (name.startsWith("streamband-") || name.equals(PENDING))) {
                t.own.put(v.get("<operator_name>") + "|" + name, (Gauge<?>) metric);
            } else if (metric instanceof Gauge && name.equals(CURRENT_OFFSET)
                && v.get("<topic>") != null && v.get("<partition>") != null) {
                t.offsets.put(v.get("<topic>") + "/" + v.get("<partition>"), (Gauge<?>) metric);
            }
            return;
        }
        if (TASK_METRICS.contains(name)) {
            t.metrics.put(name, metric);
        }
        // the network stack's objects behind Flink's queue-length gauges: the task's result
        // partitions and input gates
        if (name.equals("outputQueueLength")) {
            t.partitions = Peek.field(metric, "resultPartitions");
        } else if (name.equals("inputQueueLength")) {
            t.gates = Peek.field(metric, "inputGates");
        }
    }

    @Override
    public void notifyOfRemovedMetric(Metric metric, String name, MetricGroup group) {
        Map<String, String> v = group.getAllVariables();
        if (v.containsKey("<job_id>") && v.containsKey("<task_id>") && !v.containsKey("<operator_id>")
            && name.equals("numRecordsIn")) {
            tasks.remove(v.get("<job_id>") + "|" + v.get("<task_id>") + ":" + v.get("<subtask_index>"));
        }
    }

    @Override
    public void report() {
        if (socket == null) {
            return;
        }
        Map<String, Map<String, Long>> next = new TreeMap<>();
        Set<String> partitions = new TreeSet<>();
        for (Map.Entry<String, Task> e : tasks.entrySet()) {
            Map<String, Long> pos = positions(e.getValue());
            if (!pos.isEmpty()) {
                next.put(e.getKey(), pos);
                partitions.addAll(pos.keySet());
            }
        }
        Set<String> stale = new TreeSet<>();
        Map<String, Long> end = partitions.isEmpty() ? Map.of() : brokerEnds(partitions, stale);
        Map<String, Map<String, Object>> byJob = new TreeMap<>();
        for (Map.Entry<String, Task> e : tasks.entrySet()) {
            Task t = e.getValue();
            Map<String, Object> rec = task(t);
            Map<String, Object> lags = lags(next.getOrDefault(e.getKey(), Map.of()), end, stale);
            if (!lags.isEmpty()) {
                rec.put("kafka", lags);
            }
            byJob.computeIfAbsent(t.job, j -> new TreeMap<>()).put(t.vertex + ":" + t.subtask, rec);
        }
        double now = System.currentTimeMillis() / 1000.0;
        for (Map.Entry<String, Map<String, Object>> e : byJob.entrySet()) {
            Map<String, Object> rec = new TreeMap<>();
            rec.put("type", "flow");
            rec.put("engine", "flink");
            rec.put("topology", e.getKey());
            rec.put("host", host);
            rec.put("port", port);
            rec.put("tm", tm);
            rec.put("t", now);
            rec.put("tasks", e.getValue());
            send(rec);
        }
    }

    private void send(Map<String, Object> rec) {
        try {
            byte[] b = json.writeValueAsString(rec).getBytes(StandardCharsets.UTF_8);
            socket.send(new DatagramPacket(b, b.length, target));
        } catch (IOException | RuntimeException e) {
            // a lost report is a missing sample, never an error of the job
        }
    }

    /** The partitions' end offsets as the broker last gave them (empty without {@code .kafka},
     * without Kafka's client in the plug-in's directory, or while the client cannot be made),
     * the stale ones added to {@code stale}; never an error of the report. */
    private synchronized Map<String, Long> brokerEnds(Set<String> partitions, Set<String> stale) {
        if (closed || noKafka || kafka.isEmpty()) {
            return Map.of();
        }
        try {
            if (ends == null) {
                if (backoff > 0) {
                    backoff--;
                    return Map.of();
                }
                ends = new LogEnds(kafka, "streamband-reporter-" + (tm.isEmpty() ? host : tm));
            }
            return ends.ends(partitions, stale);
        } catch (LinkageError e) {
            noKafka = true;
        } catch (RuntimeException e) {
            // e.g. a broker address that does not resolve yet: try again in a while
            backoff = BROKER_BACKOFF;
            if (ends != null) {
                ends.close();
                ends = null;
            }
        }
        return Map.of();
    }

    /** Reports to wait before making Kafka's client again after it failed. */
    static final int BROKER_BACKOFF = 10;

    /** Per "topic/partition" a source task emits from, the next offset it emits: its
     * currentOffset + 1 (none before it emitted a record). */
    static Map<String, Long> positions(Task t) {
        Map<String, Long> out = new TreeMap<>();
        t.offsets.forEach((tp, g) -> {
            Object v = safe(g);
            if (v instanceof Number && ((Number) v).longValue() >= 0) {
                out.put(tp, ((Number) v).longValue() + 1);
            }
        });
        return out;
    }

    /** Per partition {end, next, lag = end - next}, where the end is known; stale (true) where
     * the broker's newest answer failed or is still out, and the end is an older one. */
    static Map<String, Object> lags(Map<String, Long> next, Map<String, Long> end, Set<String> stale) {
        Map<String, Object> out = new TreeMap<>();
        next.forEach((tp, n) -> {
            Long e = end.get(tp);
            if (e == null) {
                return;
            }
            Map<String, Object> m = new TreeMap<>();
            m.put("end", e);
            m.put("next", n);
            m.put("lag", Math.max(0, e - n));
            if (stale.contains(tp)) {
                m.put("stale", true);
            }
            out.put(tp, m);
        });
        return out;
    }

    /** One task's part of a report. */
    Map<String, Object> task(Task t) {
        Map<String, Object> out = new TreeMap<>();
        out.put("name", t.name);
        out.put("vertex", t.vertex);
        out.put("subtask", t.subtask);
        t.metrics.forEach((name, m) -> {
            Object v = value(m);
            if (v != null) {
                out.put(name, v);
            }
        });
        List<Object> outs = Channels.partitions(t.partitions);
        if (!outs.isEmpty()) {
            out.put("out", outs);
        }
        List<Object> ins = Channels.gates(t.gates);
        if (!ins.isEmpty()) {
            out.put("in", ins);
        }
        Map<String, Object> stores = new TreeMap<>();
        Map<String, Object> sources = new TreeMap<>();
        long pending = -1;
        for (Map.Entry<String, Gauge<?>> e : t.own.entrySet()) {
            String k = e.getKey();
            Object v = safe(e.getValue());
            if (v == null) {
                continue;
            }
            if (k.endsWith("|" + PENDING)) {
                if (v instanceof Number && ((Number) v).longValue() >= 0) {
                    pending = Math.max(pending, 0) + ((Number) v).longValue();
                }
            } else {
                (k.endsWith("streamband-source") ? sources : stores).put(k.substring(0, k.indexOf('|')), v);
            }
        }
        if (pending >= 0) {
            out.put(PENDING, pending);
        }
        if (!stores.isEmpty()) {
            out.put("stores", stores);
        }
        if (!sources.isEmpty()) {
            out.put("sources", sources);
        }
        return out;
    }

    /** A metric's number (a meter: its count), or null. */
    static Object value(Metric m) {
        if (m instanceof Counter) {
            return ((Counter) m).getCount();
        }
        if (m instanceof Meter) {
            return ((Meter) m).getCount();
        }
        if (m instanceof Gauge) {
            Object v = safe((Gauge<?>) m);
            if (v instanceof Number) {
                double d = ((Number) v).doubleValue();
                return Double.isFinite(d) && d >= 0 ? v : null;
            }
        }
        return null;
    }

    /** A gauge's value; a gauge that fails is a missing sample, never the reporter's end. */
    static Object safe(Gauge<?> g) {
        try {
            return g.getValue();
        } catch (RuntimeException e) {
            return null;
        }
    }
}
