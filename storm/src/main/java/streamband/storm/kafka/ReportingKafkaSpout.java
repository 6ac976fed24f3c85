package streamband.storm.kafka;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.KafkaFuture;
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
    static final long WAIT_MS = 800;
    /** How long a request may stay out, over several samples: Kafka's client closes the
     * connection on a request's timeout, and on a busy machine sub-second timeouts turned into
     * reconnects that fed the load. */
    static final int REQUEST_TIMEOUT_MS = 5_000;
    private static final long serialVersionUID = 1L;
    private final Translator translator;
    private final String bootstrap;
    private transient Admin admin;
    private transient Map<TopicPartition, Long> lastEnd;
    /** the request still out, asked again only once it is answered or failed */
    private transient KafkaFuture<Map<TopicPartition, ListOffsetsResultInfo>> pending;

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
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, REQUEST_TIMEOUT_MS);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 2 * REQUEST_TIMEOUT_MS);
        admin = Admin.create(props);
        lastEnd = new HashMap<>();
        context.registerGauge(GAUGE, this::sample);
    }

    /** The source backlog per "topic/partition": {end, next, lag, lag_bytes, record_bytes}. */
    Map<String, Object> sample() {
        Map<TopicPartition, long[]> pos = translator.positions();
        boolean fresh = ask(pos.keySet());
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

    /** Asks the broker for the end offsets of {@code tps} (unless the last request is still
     * out) and waits up to {@link #WAIT_MS} for the answer; true when {@code lastEnd} took one
     * in this sample, false when it keeps the last offsets known (a slow or absent broker). */
    private boolean ask(Set<TopicPartition> tps) {
        if (pending == null) {
            Map<TopicPartition, OffsetSpec> req = new HashMap<>();
            tps.forEach(tp -> req.put(tp, OffsetSpec.latest()));
            pending = admin.listOffsets(req).all();
        }
        try {
            pending.get(WAIT_MS, TimeUnit.MILLISECONDS).forEach((tp, info) -> lastEnd.put(tp, info.offset()));
            pending = null;
            return true;
        } catch (TimeoutException e) {
            return false; // still out: the next sample waits for it again
        } catch (Exception e) {
            pending = null; // failed: the next sample asks again
            return false;
        }
    }

    @Override
    public void close() {
        super.close();
        if (admin != null) {
            admin.close(Duration.ofSeconds(1));
        }
    }
}
