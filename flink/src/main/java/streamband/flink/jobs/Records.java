package streamband.flink.jobs;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * The replay producer's records ({@code streamband.kafka.Replay}) as the jobs' tuples, the
 * record's Kafka timestamp (its event time) as {@code ts}: the formats the Storm side's
 * {@code Translator} reads.
 */
final class Records {
    private Records() {
    }

    /** (id or route, ts, payload). */
    static final TypeInformation<Tuple3<Long, Long, byte[]>> KEYED =
        Types.TUPLE(Types.LONG, Types.LONG, Types.PRIMITIVE_ARRAY(Types.BYTE));
    /** (text, ts, payload). */
    static final TypeInformation<Tuple3<String, Long, byte[]>> TEXT =
        Types.TUPLE(Types.STRING, Types.LONG, Types.PRIMITIVE_ARRAY(Types.BYTE));

    /** {@code id} (key: the record's number) and {@code event} (key: a route) records. */
    static final class Keyed implements KafkaRecordDeserializationSchema<Tuple3<Long, Long, byte[]>> {
        private static final long serialVersionUID = 1L;

        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> r, Collector<Tuple3<Long, Long, byte[]>> out) {
            long key = Long.parseLong(new String(r.key(), StandardCharsets.UTF_8));
            out.collect(Tuple3.of(key, r.timestamp(), r.value() == null ? new byte[0] : r.value()));
        }

        @Override
        public TypeInformation<Tuple3<Long, Long, byte[]>> getProducedType() {
            return KEYED;
        }
    }

    /** {@code tweet} records: the text, a zero byte, the payload. */
    static final class Tweet implements KafkaRecordDeserializationSchema<Tuple3<String, Long, byte[]>> {
        private static final long serialVersionUID = 1L;

        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> r, Collector<Tuple3<String, Long, byte[]>> out) {
            byte[] v = r.value() == null ? new byte[0] : r.value();
            int zero = 0;
            while (zero < v.length && v[zero] != 0) {
                zero++;
            }
            out.collect(Tuple3.of(new String(v, 0, zero, StandardCharsets.UTF_8), r.timestamp(),
                Arrays.copyOfRange(v, Math.min(zero + 1, v.length), v.length)));
        }

        @Override
        public TypeInformation<Tuple3<String, Long, byte[]>> getProducedType() {
            return TEXT;
        }
    }
}
