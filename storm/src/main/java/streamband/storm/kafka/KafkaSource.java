package streamband.storm.kafka;

import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.storm.Config;
import org.apache.storm.kafka.spout.FirstPollOffsetStrategy;
import org.apache.storm.kafka.spout.KafkaSpoutConfig;
import org.apache.storm.kafka.spout.KafkaSpoutConfig.ProcessingGuarantee;

/**
 * A benchmark source read from Kafka: one {@link ReportingKafkaSpout} per topic. Settings
 * (topology conf): {@code streamband.kafka.bootstrap} (host:port, required), {@code
 * streamband.kafka.guarantee} ({@code at-most-once}, the default: offsets committed at poll,
 * tuples not tracked, no ackers; or {@code at-least-once}: every tuple anchored and acked,
 * failed ones replayed from Kafka), {@code streamband.kafka.group} (the consumer group; default
 * {@code streamband-NAME}, the topology's name), {@code bench.topic.COMPONENT} (the topic of the
 * spout COMPONENT; default: the benchmark's, which the replay producer writes). A new group starts at each topic's first record.
 */
public final class KafkaSource {
    public static final String BOOTSTRAP = "streamband.kafka.bootstrap";
    public static final String GUARANTEE = "streamband.kafka.guarantee";
    public static final String GROUP = "streamband.kafka.group";

    private KafkaSource() {
    }

    public static boolean atLeastOnce(Map<String, Object> conf) {
        String g = String.valueOf(conf.getOrDefault(GUARANTEE, "at-most-once"));
        if (!g.equals("at-most-once") && !g.equals("at-least-once")) {
            throw new IllegalArgumentException(GUARANTEE + ": expected at-most-once or at-least-once, got " + g);
        }
        return g.equals("at-least-once");
    }

    /** Whether the topology reads its sources from Kafka ({@code bench.source: kafka}). */
    public static boolean enabled(Map<String, Object> conf) {
        return "kafka".equals(conf.get("bench.source"));
    }

    /** Acking off for at-most-once: no acker executors (the spouts' tuples are not tracked). */
    public static void configure(Map<String, Object> conf) {
        if (!atLeastOnce(conf)) {
            conf.put(Config.TOPOLOGY_ACKER_EXECUTORS, 0);
        }
    }

    /** The spout {@code component}, reading its topic ({@code bench.topic.COMPONENT}, default
     * {@code topic}) and emitting what {@code kind} holds. */
    public static ReportingKafkaSpout spout(Map<String, Object> conf, String component, String topic,
                                            Translator.Kind kind) {
        Object bootstrap = conf.get(BOOTSTRAP);
        if (bootstrap == null) {
            throw new IllegalArgumentException(BOOTSTRAP + ": expected the broker's host:port for bench.source kafka");
        }
        String name = String.valueOf(conf.getOrDefault("bench.topic." + component, topic));
        String group = String.valueOf(conf.getOrDefault(GROUP, "streamband-" + conf.get("bench.name")));
        Translator translator = new Translator(kind);
        KafkaSpoutConfig<String, byte[]> c = new KafkaSpoutConfig.Builder<String, byte[]>(bootstrap.toString(), name)
            .setProp(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class)
            .setProp(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class)
            .setProp(ConsumerConfig.GROUP_ID_CONFIG, group)
            .setRecordTranslator(translator)
            .setFirstPollOffsetStrategy(FirstPollOffsetStrategy.UNCOMMITTED_EARLIEST)
            .setProcessingGuarantee(atLeastOnce(conf) ? ProcessingGuarantee.AT_LEAST_ONCE : ProcessingGuarantee.AT_MOST_ONCE)
            .build();
        return new ReportingKafkaSpout(c, translator, bootstrap.toString());
    }
}
