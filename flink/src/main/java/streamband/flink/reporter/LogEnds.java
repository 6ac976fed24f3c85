package streamband.flink.reporter;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;

/**
 * The log end offsets of Kafka partitions ({@code "topic/partition"}), asked of the broker
 * through Kafka's Admin API, as the Storm spout's {@code streamband-source} gauge asks them.
 * A Kafka source's {@code pendingRecords} is the consumer's {@code records-lag}, updated when
 * it fetches; a source that back-pressure holds fetches nothing, so that gauge keeps the lag of
 * its last fetch (0 for a source that had caught up) while its topic grows. The end offsets here
 * are read every report, whatever the source does.
 *
 * <p>The only class of the reporter that names Kafka's: without kafka-clients in the plug-in's
 * directory it fails to load, and the reporter goes on without it.
 */
final class LogEnds implements AutoCloseable {
    /** How long one report waits for the broker (the report interval is 1 s). */
    static final long TIMEOUT_MS = 800;

    private final Admin admin;
    private final Map<String, Long> last = new HashMap<>();

    LogEnds(String bootstrap, String clientId) {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, clientId);
        admin = Admin.create(props);
    }

    /** Each partition's end offset; on a slow or absent broker the last ones known, and
     * {@code fresh} false. */
    synchronized Map<String, Long> ends(Set<String> partitions, boolean[] fresh) {
        Map<TopicPartition, OffsetSpec> req = new HashMap<>();
        for (String tp : partitions) {
            int i = tp.lastIndexOf('/');
            req.put(new TopicPartition(tp.substring(0, i), Integer.parseInt(tp.substring(i + 1))),
                OffsetSpec.latest());
        }
        fresh[0] = true;
        try {
            admin.listOffsets(req).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS)
                .forEach((tp, info) -> last.put(tp.topic() + "/" + tp.partition(), info.offset()));
        } catch (Exception e) {
            fresh[0] = false;
        }
        Map<String, Long> out = new HashMap<>();
        for (String tp : partitions) {
            Long end = last.get(tp);
            if (end != null) {
                out.put(tp, end);
            }
        }
        return out;
    }

    @Override
    public void close() {
        admin.close(Duration.ofSeconds(1));
    }
}
