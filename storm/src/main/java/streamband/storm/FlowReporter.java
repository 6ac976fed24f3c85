package streamband.storm;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.storm.metrics2.MetricRegistryProvider;
import org.apache.storm.metrics2.reporters.ScheduledStormReporter;
import org.apache.storm.metrics2.reporters.StormReporter;
import org.apache.storm.utils.Utils;

/**
 * The application profiler of 000 §IV-A1 / §V-A2 inside every Storm worker: a metrics v2
 * reporter that, every report period, sends one datagram per worker to the manager's
 * collector with, per destination worker (one TCP connection, one flow), the messages
 * Storm's Netty client has written to the socket (cumulative), the messages still in
 * Netty's buffer (the sender backlog, in messages) and those lost; the worker's transfer
 * queue population (shared by all its destinations); and per executor of this worker the
 * receive-queue population (the receiver backlog, in messages).
 *
 * <p>Where a topology's own tasks say where their tuples wait, it adds them, per
 * "component:task" of this worker: {@code sources}, each Kafka spout's backlog in its topic
 * per "topic/partition" ({@code end}, {@code next} offsets; {@code lag} records, {@code
 * lag_bytes}, {@code record_bytes}: gauge {@code streamband-source} of {@code
 * streamband.storm.kafka.ReportingKafkaSpout}), and {@code stores}, what waits in a join's own
 * store per input ({@code inputs: {INPUT: {tuples, bytes, watermark_ms, lag_ms}}}, {@code
 * forced}: gauge {@code streamband-store} of {@code streamband.storm.topo.JoinStore}).
 *
 * <p>It reads only Storm's own gauges ({@code __send-iconnection-*}, {@code
 * worker-transfer-queue-*}, {@code receive-queue-*}), so it works for any topology once it is
 * listed in the cluster's {@code topology.metrics.reporters} and its jar is on the workers'
 * classpath. The collector address is the reporter's {@code manager} key (or {@code
 * streamband.manager} in the topology conf).
 */
public class FlowReporter implements StormReporter {
    private static final Pattern SEND = Pattern.compile(
        "\\.-1\\.(\\d+)-__send-iconnection-(sent|pending|lostOnSend)-(.+)$");
    private static final Pattern OWN = Pattern.compile(
        "\\.([^.]+)\\.(-?\\d+)\\.(\\d+)-streamband-(source|store)$");
    private static final Pattern QUEUE = Pattern.compile(
        "\\.([^.]+)\\.(-?\\d+)\\.(\\d+)-(receive-queue|worker-transfer-queue)-(population|overflow)$");

    private MetricRegistry registry;
    private Udp udp;
    private String topology;
    private String host;
    private long period;
    private TimeUnit unit;
    private ScheduledExecutorService timer;

    @Override
    public void prepare(MetricRegistry metricsRegistry, Map<String, Object> topoConf,
                        Map<String, Object> reporterConf) {
        this.registry = metricsRegistry;
        Map<String, Object> conf = new HashMap<>(topoConf);
        if (reporterConf.get("manager") != null) {
            conf.put(Udp.MANAGER, reporterConf.get("manager"));
        }
        this.udp = Udp.fromConf(conf);
        this.topology = String.valueOf(topoConf.get("storm.id"));
        try {
            this.host = Utils.hostname();
        } catch (Exception e) {
            this.host = "unknown";
        }
        this.period = ScheduledStormReporter.getReportPeriod(reporterConf);
        this.unit = ScheduledStormReporter.getReportPeriodUnit(reporterConf);
    }

    @Override
    public void prepare(MetricRegistryProvider provider, Map<String, Object> topoConf,
                        Map<String, Object> reporterConf) {
        prepare(provider.getRegistry(), topoConf, reporterConf);
    }

    @Override
    public void start() {
        if (udp == null) {
            return;
        }
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "streamband-flow-reporter");
            t.setDaemon(true);
            return t;
        });
        timer.scheduleAtFixedRate(this::report, period, period, unit);
    }

    @Override
    public void stop() {
        if (timer != null) {
            timer.shutdownNow();
        }
    }

    @Override
    public void close() {
        stop();
        if (udp != null) {
            udp.close();
        }
    }

    /** One sample of every flow this worker sends and every queue it holds. */
    @SuppressWarnings("rawtypes")
    void report() {
        Map<String, Map<String, Object>> clients = new TreeMap<>();
        Map<String, Long> receive = new TreeMap<>();
        Map<String, Object> sources = new TreeMap<>();
        Map<String, Object> stores = new TreeMap<>();
        long transfer = 0;
        int port = -1;
        for (Map.Entry<String, Gauge> e : registry.getGauges().entrySet()) {
            String name = e.getKey();
            Matcher m = SEND.matcher(name);
            if (m.find()) {
                port = Integer.parseInt(m.group(1));
                clients.computeIfAbsent(m.group(3), k -> new TreeMap<>())
                    .put(m.group(2), asLong(e.getValue().getValue()));
                continue;
            }
            m = OWN.matcher(name);
            if (m.find()) {
                port = Integer.parseInt(m.group(3));
                (m.group(4).equals("source") ? sources : stores).put(m.group(1) + ":" + m.group(2), value(e.getValue()));
                continue;
            }
            m = QUEUE.matcher(name);
            if (m.find()) {
                port = Integer.parseInt(m.group(3));
                long v = asLong(e.getValue().getValue());
                if (m.group(4).equals("worker-transfer-queue")) {
                    transfer += v;
                } else {
                    receive.merge(m.group(1) + ":" + m.group(2), v, Long::sum);
                }
            }
        }
        Map<String, Object> rec = new TreeMap<>();
        rec.put("type", "flow");
        rec.put("topology", topology);
        rec.put("host", host);
        rec.put("port", port);
        rec.put("t", System.currentTimeMillis() / 1000.0);
        rec.put("clients", clients);
        rec.put("transfer_queue", transfer);
        rec.put("receive", receive);
        if (!sources.isEmpty()) {
            rec.put("sources", sources);
        }
        if (!stores.isEmpty()) {
            rec.put("stores", stores);
        }
        udp.send(rec);
    }

    /** A gauge's value; a gauge that fails is a missing sample, never the reporter's end. */
    @SuppressWarnings("rawtypes")
    static Object value(Gauge g) {
        try {
            return g.getValue();
        } catch (RuntimeException e) {
            return null;
        }
    }

    static long asLong(Object v) {
        return v instanceof Number ? ((Number) v).longValue() : 0L;
    }
}
