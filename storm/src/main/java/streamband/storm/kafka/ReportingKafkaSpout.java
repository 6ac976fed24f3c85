package streamband.storm.kafka;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.apache.storm.kafka.spout.KafkaSpout;
import org.apache.storm.kafka.spout.KafkaSpoutConfig;
import org.apache.storm.spout.SpoutOutputCollector;
import org.apache.storm.task.TopologyContext;

/**
 * storm-kafka-client's {@link KafkaSpout}, plus a gauge {@code streamband-source} that the
 * flow reporter reads every second (in its own thread, so also while back-pressure keeps the
 * spout from polling): per topic-partition this task emits from, the log's end offset (asked
 * of the broker through the Admin API), the next offset to emit, and the source's backlog
 * behind the spout, {@code lag} = end - next records and {@code lag_bytes} = lag times the
 * mean bytes (key + value) of the records it emitted.
 *
 * <p>Storm's own {@code kafkaOffset} gauges measure lag from the committed offset, which
 * at-most-once mode commits at poll time without updating what they read; records polled and
 * still waiting in the spout are backlog too. So the lag here is counted from what was emitted.
 */
public class ReportingKafkaSpout extends KafkaSpout<String, byte[]> {
    public static final String GAUGE = "streamband-source";
    /** How long one sample waits for the broker (the reporter samples every second). */
    static final long TIMEOUT_MS = 800;
    private static final long serialVersionUID = 1L;
    private final Translator translator;
    private final String bootstrap;
    private transient Admin admin;
    private transient Map<TopicPartition, Long> lastEnd;

    public ReportingKafkaSpout(KafkaSpoutConfig<String, byte[]> config, Translator translator, String bootstrap) {
        super(config);
        this.translator = translator;
        this.bootstrap = bootstrap;
    }

    @Override
    public void open(Map<String, Object> conf, TopologyContext context, SpoutOutputCollector collector) {
        super.open(conf, context, collector);
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG,
            "streamband-lag-" + context.getThisComponentId() + "-" + context.getThisTaskId());
        // a request the broker does not answer within a report ends there, and does not stay
        // out for the client's default minute beside the next ones
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS);
        admin = Admin.create(props);
        lastEnd = new HashMap<>();
        context.registerGauge(GAUGE, this::sample);
    }

    /** The source backlog per "topic/partition": {end, next, lag, lag_bytes, record_bytes}. */
    Map<String, Object> sample() {
        Map<TopicPartition, long[]> pos = translator.positions();
        Map<TopicPartition, OffsetSpec> req = new HashMap<>();
        pos.keySet().forEach(tp -> req.put(tp, OffsetSpec.latest()));
        boolean fresh = true;
        try {
            admin.listOffsets(req, new ListOffsetsOptions().timeoutMs((int) TIMEOUT_MS)).all()
                .get(TIMEOUT_MS, TimeUnit.MILLISECONDS)
                .forEach((tp, info) -> lastEnd.put(tp, info.offset()));
        } catch (Exception e) {
            fresh = false; // a slow or absent broker: the last end offsets known, marked stale
        }
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<TopicPartition, long[]> e : pos.entrySet()) {
            long[] p = e.getValue();
            long end = lastEnd.getOrDefault(e.getKey(), p[0]);
            long lag = Math.max(0, end - p[0]);
            double perRecord = p[1] > 0 ? (double) p[2] / p[1] : 0.0;
            Map<String, Object> m = new TreeMap<>();
            m.put("end", end);
            m.put("next", p[0]);
            m.put("lag", lag);
            m.put("lag_bytes", Math.round(lag * perRecord));
            m.put("record_bytes", Math.round(perRecord));
            if (!fresh) {
                m.put("stale", true);
            }
            out.put(e.getKey().topic() + "/" + e.getKey().partition(), m);
        }
        return out;
    }

    @Override
    public void close() {
        super.close();
        if (admin != null) {
            admin.close(Duration.ofSeconds(1));
        }
    }
}
