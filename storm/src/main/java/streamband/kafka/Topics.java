package streamband.kafka;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The broker's view of topics and consumer groups, through Kafka's Admin API, as one JSON
 * line on stdout:
 * <ul>
 * <li>{@code Topics BOOTSTRAP create TOPIC[:PARTITIONS] ...}: creates the topics (replication
 * factor 1; an existing one is left as it is); prints {@code {"created": [...]}};
 * <li>{@code Topics BOOTSTRAP offsets [TOPIC ...]}: per topic-partition ("topic/partition")
 * the first and next offset and the log's size on disk, bytes: {@code {"t/0": {"start",
 * "end", "bytes"}}} (every topic but Kafka's own when none is named);
 * <li>{@code Topics BOOTSTRAP lag [GROUP ...]}: per group and topic-partition its committed
 * offset, the log's end, the lag in records (end - committed) and in bytes (the lag times the
 * log's bytes per record on disk, batch headers included): {@code {"G": {"t/0":
 * {"committed", "end", "lag", "lag_bytes"}}}} (every group when none is named);
 * <li>{@code Topics BOOTSTRAP read GROUP TOPIC COUNT}: consumes COUNT records of TOPIC from
 * its start as GROUP and commits; prints {@code {"read", "bytes", "first_ts", "last_ts",
 * "min_gap_ms", "max_gap_ms"}} (value bytes; event times and their gaps, ms).
 * </ul>
 */
public final class Topics {
    private Topics() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: Topics BOOTSTRAP create|offsets|lag [NAME ...]");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "streamband-topics");
        List<String> names = List.of(args).subList(2, args.length);
        Object out;
        try (Admin admin = Admin.create(props)) {
            switch (args[1]) {
                case "create":
                    out = Map.of("created", create(admin, names));
                    break;
                case "offsets":
                    out = offsets(admin, names);
                    break;
                case "lag":
                    out = lag(admin, names);
                    break;
                case "read":
                    out = read(args[0], names.get(0), names.get(1), Long.parseLong(names.get(2)));
                    break;
                default:
                    throw new IllegalArgumentException("expected create, offsets or lag, got " + args[1]);
            }
        }
        System.out.println(new ObjectMapper().writeValueAsString(out));
    }

    static Map<String, Object> read(String bootstrap, String group, String topic, long count) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, (int) Math.min(count, 500));
        long n = 0;
        long bytes = 0;
        long first = -1;
        long last = -1;
        long minGap = Long.MAX_VALUE;
        long maxGap = 0;
        try (KafkaConsumer<byte[], byte[]> c =
                 new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (n < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    if (n == count) {
                        c.seek(new TopicPartition(r.topic(), r.partition()), r.offset());
                        break;
                    }
                    if (last >= 0) {
                        minGap = Math.min(minGap, r.timestamp() - last);
                        maxGap = Math.max(maxGap, r.timestamp() - last);
                    } else {
                        first = r.timestamp();
                    }
                    last = r.timestamp();
                    bytes += r.value() == null ? 0 : r.value().length;
                    n++;
                }
            }
            c.commitSync();
        }
        Map<String, Object> out = new TreeMap<>();
        out.put("read", n);
        out.put("bytes", bytes);
        out.put("first_ts", first);
        out.put("last_ts", last);
        out.put("min_gap_ms", n > 1 ? minGap : 0);
        out.put("max_gap_ms", maxGap);
        return out;
    }

    static List<String> create(Admin admin, List<String> specs) throws InterruptedException, ExecutionException {
        List<NewTopic> topics = new ArrayList<>();
        for (String s : specs) {
            int colon = s.indexOf(':');
            String name = colon < 0 ? s : s.substring(0, colon);
            int parts = colon < 0 ? 1 : Integer.parseInt(s.substring(colon + 1));
            topics.add(new NewTopic(name, parts, (short) 1));
        }
        List<String> created = new ArrayList<>();
        for (Map.Entry<String, org.apache.kafka.common.KafkaFuture<Void>> e : admin.createTopics(topics).values().entrySet()) {
            try {
                e.getValue().get();
                created.add(e.getKey());
            } catch (ExecutionException ex) {
                if (!(ex.getCause() instanceof TopicExistsException)) {
                    throw ex;
                }
            }
        }
        return created;
    }

    static Collection<TopicPartition> partitions(Admin admin, Collection<String> topics)
        throws InterruptedException, ExecutionException {
        List<TopicPartition> out = new ArrayList<>();
        admin.describeTopics(topics).allTopicNames().get().forEach((name, d) ->
            d.partitions().forEach(p -> out.add(new TopicPartition(name, p.partition()))));
        return out;
    }

    static Map<TopicPartition, Long> list(Admin admin, Collection<TopicPartition> tps, OffsetSpec spec)
        throws InterruptedException, ExecutionException {
        Map<TopicPartition, OffsetSpec> req = new HashMap<>();
        tps.forEach(tp -> req.put(tp, spec));
        Map<TopicPartition, Long> out = new HashMap<>();
        admin.listOffsets(req).all().get().forEach((tp, info) -> out.put(tp, info.offset()));
        return out;
    }

    /** Bytes on disk per topic-partition (the one broker's log directories). */
    static Map<TopicPartition, Long> sizes(Admin admin) throws InterruptedException, ExecutionException {
        Map<TopicPartition, Long> out = new HashMap<>();
        for (Map<String, LogDirDescription> dirs : admin.describeLogDirs(List.of(1)).allDescriptions().get().values()) {
            for (LogDirDescription d : dirs.values()) {
                for (Map.Entry<TopicPartition, ReplicaInfo> r : d.replicaInfos().entrySet()) {
                    out.merge(r.getKey(), r.getValue().size(), Long::sum);
                }
            }
        }
        return out;
    }

    static Map<String, Map<String, Object>> offsets(Admin admin, List<String> topics)
        throws InterruptedException, ExecutionException {
        Collection<String> names = topics.isEmpty() ? admin.listTopics().names().get() : topics;
        Collection<TopicPartition> tps = partitions(admin, names);
        Map<TopicPartition, Long> start = list(admin, tps, OffsetSpec.earliest());
        Map<TopicPartition, Long> end = list(admin, tps, OffsetSpec.latest());
        Map<TopicPartition, Long> size = sizes(admin);
        Map<String, Map<String, Object>> out = new TreeMap<>();
        for (TopicPartition tp : tps) {
            Map<String, Object> m = new TreeMap<>();
            m.put("start", start.get(tp));
            m.put("end", end.get(tp));
            m.put("bytes", size.getOrDefault(tp, 0L));
            out.put(tp.topic() + "/" + tp.partition(), m);
        }
        return out;
    }

    @SuppressWarnings("deprecation")
    static Map<String, Map<String, Object>> lag(Admin admin, List<String> groups)
        throws InterruptedException, ExecutionException {
        List<String> ids = new ArrayList<>(groups);
        if (ids.isEmpty()) {
            for (ConsumerGroupListing g : admin.listConsumerGroups().all().get()) {
                ids.add(g.groupId());
            }
        }
        Map<TopicPartition, Long> size = sizes(admin);
        Map<String, Map<String, Object>> out = new TreeMap<>();
        for (String g : ids) {
            Map<TopicPartition, OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(g).partitionsToOffsetAndMetadata().get();
            committed.values().removeIf(v -> v == null);
            Map<TopicPartition, Long> start = list(admin, committed.keySet(), OffsetSpec.earliest());
            Map<TopicPartition, Long> end = list(admin, committed.keySet(), OffsetSpec.latest());
            Map<String, Object> parts = new TreeMap<>();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : committed.entrySet()) {
                TopicPartition tp = e.getKey();
                long c = e.getValue().offset();
                long n = end.get(tp) - start.get(tp);
                long lag = Math.max(0, end.get(tp) - c);
                Map<String, Object> m = new TreeMap<>();
                m.put("committed", c);
                m.put("end", end.get(tp));
                m.put("lag", lag);
                m.put("lag_bytes", n > 0 ? Math.round((double) lag * size.getOrDefault(tp, 0L) / n) : 0L);
                parts.put(tp.topic() + "/" + tp.partition(), m);
            }
            out.put(g, parts);
        }
        return out;
    }
}
