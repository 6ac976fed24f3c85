package streamband.flink.jobs;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.streaming.api.functions.sink.DiscardingSink;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * 001's fork-join (Fig. 1a) read from Kafka: A reads the ids of topic {@code forkjoin} ({@code
 * bench.topic.A}) and sends {@code bench.bytes.AB} (8 KB) tuples to B and {@code bench.bytes.AC}
 * (4 KB) to C (keyed by id, as Storm's fields grouping); B and C send {@code bench.bytes.BD} (6
 * KB) and {@code bench.bytes.CD} (3 KB) tuples to D, which joins them 1:1 by id (keyed state)
 * and reports each join's event-time latency. What waits in D for its match is the operator
 * gauge {@code streamband-store}.
 */
public final class ForkJoin {
    private ForkJoin() {
    }

    static final OutputTag<Tuple3<Long, Long, byte[]>> TO_C = new OutputTag<>("c", Records.KEYED);

    public static void main(String[] args) throws Exception {
        Bench b = Bench.load(args);
        StreamExecutionEnvironment env = Bench.env();
        SingleOutputStreamOperator<Tuple3<Long, Long, byte[]>> a =
            b.place(b.kafka(env, "A", "forkjoin", new Records.Keyed())
                .process(new Fork((int) b.num("bench.bytes.AB", 8192), (int) b.num("bench.bytes.AC", 4096)))
                .returns(Records.KEYED), "A");
        // the source and the fork are one task (one group, chained): A
        SingleOutputStreamOperator<Tuple3<Long, Long, byte[]>> bb =
            b.place(a.keyBy(t -> t.f0, Types.LONG).process(new Relay((int) b.num("bench.bytes.BD", 6144)))
                .returns(Records.KEYED), "B");
        SingleOutputStreamOperator<Tuple3<Long, Long, byte[]>> cc =
            b.place(a.getSideOutput(TO_C).keyBy(t -> t.f0, Types.LONG)
                .process(new Relay((int) b.num("bench.bytes.CD", 3072))).returns(Records.KEYED), "C");
        SingleOutputStreamOperator<Long> d = b.place(bb.connect(cc).keyBy(t -> t.f0, t -> t.f0, Types.LONG)
            .process(new Join(b)).returns(Types.LONG), "D");
        d.addSink(new DiscardingSink<>()).name("D-end").uid("D-end").setParallelism(d.getParallelism())
            .slotSharingGroup(b.group("D"));
        env.execute(b.name());
    }

    /** A: each record to B (main output) and C (side output), each with its payload. */
    static final class Fork extends ProcessFunction<Tuple3<Long, Long, byte[]>, Tuple3<Long, Long, byte[]>> {
        private static final long serialVersionUID = 1L;
        private final int toB;
        private final int toC;
        private transient byte[] b;
        private transient byte[] c;

        Fork(int toB, int toC) {
            this.toB = toB;
            this.toC = toC;
        }

        @Override
        public void open(OpenContext ctx) {
            b = Bench.payload(toB, 1);
            c = Bench.payload(toC, 2);
        }

        @Override
        public void processElement(Tuple3<Long, Long, byte[]> t, Context ctx, Collector<Tuple3<Long, Long, byte[]>> out) {
            out.collect(Tuple3.of(t.f0, t.f1, b));
            ctx.output(TO_C, Tuple3.of(t.f0, t.f1, c));
        }
    }

    /** B or C: one output tuple of its size per input tuple. */
    static final class Relay extends ProcessFunction<Tuple3<Long, Long, byte[]>, Tuple3<Long, Long, byte[]>> {
        private static final long serialVersionUID = 1L;
        private final int bytes;
        private transient byte[] data;

        Relay(int bytes) {
            this.bytes = bytes;
        }

        @Override
        public void open(OpenContext ctx) {
            data = Bench.payload(bytes, 3);
        }

        @Override
        public void processElement(Tuple3<Long, Long, byte[]> t, Context ctx, Collector<Tuple3<Long, Long, byte[]>> out) {
            out.collect(Tuple3.of(t.f0, t.f1, data));
        }
    }

    /** D: B's and C's tuple of one id joined; the join's event-time latency reported. */
    static final class Join extends KeyedCoProcessFunction<Long, Tuple3<Long, Long, byte[]>, Tuple3<Long, Long, byte[]>, Long> {
        private static final long serialVersionUID = 1L;
        private final Bench bench;
        private transient ValueState<Integer> waiting; // the bytes of the tuple that came first: > 0 B's, < 0 C's
        private transient Bench.Reporter rep;
        private transient Store store;

        Join(Bench bench) {
            this.bench = bench;
        }

        @Override
        public void open(OpenContext ctx) {
            waiting = getRuntimeContext().getState(new ValueStateDescriptor<>("waiting", Types.INT));
            rep = new Bench.Reporter(bench, "sink", getRuntimeContext(), "D");
            store = new Store("B", "C");
            getRuntimeContext().getMetricGroup().gauge("streamband-store", store::sample);
        }

        @Override
        public void close() {
            if (rep != null) {
                rep.close();
            }
        }

        private void take(Tuple3<Long, Long, byte[]> t, String from, int sign, Collector<Long> out) throws Exception {
            store.seen(from, t.f1);
            rep.add("bytes_in", t.f2.length);
            Integer other = waiting.value();
            if (other == null) {
                waiting.update(sign * Math.max(t.f2.length, 1));
                store.hold(from, t.f2.length);
            } else if (Integer.signum(other) != sign) {
                store.release(other > 0 ? "B" : "C", Math.abs(other));
                waiting.clear();
                rep.latency(System.currentTimeMillis() - t.f1, 1);
                out.collect(t.f0);
            }
        }

        @Override
        public void processElement1(Tuple3<Long, Long, byte[]> t, Context ctx, Collector<Long> out) throws Exception {
            take(t, "B", 1, out);
        }

        @Override
        public void processElement2(Tuple3<Long, Long, byte[]> t, Context ctx, Collector<Long> out) throws Exception {
            take(t, "C", -1, out);
        }
    }
}
