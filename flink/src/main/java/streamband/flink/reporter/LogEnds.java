package streamband.flink.reporter;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;

/**
 * The log end offsets of Kafka partitions ({@code "topic/partition"}), asked of the broker
 * through Kafka's Admin API, as the Storm spout's {@code streamband-source} gauge asks them.
 * A Kafka source's {@code pendingRecords} is the consumer's {@code records-lag}, updated when
 * it fetches; a source that back-pressure holds fetches nothing, so that gauge keeps the lag of
 * its last fetch (0 for a source that had caught up) while its topic grows. The end offsets here
 * are asked for every report, whatever the source does.
 *
 * <p>{@link #ends} never waits for the broker: it sends the next request (unless the last one is
 * still out) and returns what the broker answered so far, one report old. The reporter's one
 * thread also reports every task's metrics, so a slow broker costs those figures nothing.
 *
 * <p>The only class of the reporter that names Kafka's: without kafka-clients in the plug-in's
 * directory it fails to load, and the reporter goes on without it.
 */
final class LogEnds implements AutoCloseable {
    /** How long a request may stay out, over several reports (marked stale meanwhile): Kafka's
     * client closes the connection on a request's timeout, and on a busy machine sub-second
     * timeouts turned into reconnects that fed the load. */
    static final int REQUEST_TIMEOUT_MS = 5_000;

    private final Admin admin;
    private final Map<String, Long> last = new ConcurrentHashMap<>();
    /** the partitions whose last request failed or has not been answered */
    private final Set<String> stale = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean out = new AtomicBoolean();

    LogEnds(String bootstrap, String clientId) {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, clientId);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, REQUEST_TIMEOUT_MS);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 2 * REQUEST_TIMEOUT_MS);
        admin = Admin.create(props);
    }

    /** Each partition's end offset as the broker last gave it (absent: never), and in
     * {@code staleOut} the partitions whose newest request failed or is still out. */
    Map<String, Long> ends(Set<String> partitions, Set<String> staleOut) {
        if (out.compareAndSet(false, true)) {
            request(partitions);
        } else {
            stale.addAll(partitions); // the last request is still out: what we have is older
        }
        Map<String, Long> ends = new HashMap<>();
        for (String tp : partitions) {
            Long end = last.get(tp);
            if (end != null) {
                ends.put(tp, end);
                if (stale.contains(tp)) {
                    staleOut.add(tp);
                }
            }
        }
        return ends;
    }

    private void request(Set<String> partitions) {
        Map<TopicPartition, OffsetSpec> req = new HashMap<>();
        for (String tp : partitions) {
            int i = tp.lastIndexOf('/');
            req.put(new TopicPartition(tp.substring(0, i), Integer.parseInt(tp.substring(i + 1))),
                OffsetSpec.latest());
        }
        try {
            ListOffsetsResult res = admin.listOffsets(req, new ListOffsetsOptions().timeoutMs(2 * REQUEST_TIMEOUT_MS));
            List<KafkaFuture<?>> each = new ArrayList<>();
            for (TopicPartition tp : req.keySet()) {
                String key = tp.topic() + "/" + tp.partition();
                // per partition: a topic the broker does not know yet fails alone
                each.add(res.partitionResult(tp).whenComplete((info, err) -> {
                    if (err == null) {
                        last.put(key, info.offset());
                        stale.remove(key);
                    } else {
                        stale.add(key);
                    }
                }));
            }
            KafkaFuture.allOf(each.toArray(new KafkaFuture<?>[0])).whenComplete((v, err) -> out.set(false));
        } catch (RuntimeException e) {
            stale.addAll(partitions);
            out.set(false);
        }
    }

    @Override
    public void close() {
        admin.close(Duration.ofSeconds(1));
    }
}
