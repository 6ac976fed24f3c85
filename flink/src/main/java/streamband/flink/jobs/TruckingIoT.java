package streamband.flink.jobs;

import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.api.java.tuple.Tuple4;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.util.Collector;

/**
 * 000 §VI-A2's Trucking IoT read from Kafka: truck events (topic {@code trucks}) and traffic
 * congestion records (topic {@code traffic}), keyed by route, meet in the combiner, which joins
 * each truck event with the congestion record of its route in force at the event's time: both
 * inputs wait in its keyed state until the watermark (the older of the two inputs') has passed
 * them (an event-time timer), then are taken in event-time order, a record updating its route's
 * congestion, an event leaving joined ({@code bench.bytes.joined}) to the scorer, which reports.
 * What waits per input is the operator gauge {@code streamband-store}.
 */
public final class TruckingIoT {
    private TruckingIoT() {
    }

    /** (route, ts, matched, payload). */
    static final TypeInformation<Tuple4<Long, Long, Boolean, byte[]>> JOINED =
        Types.TUPLE(Types.LONG, Types.LONG, Types.BOOLEAN, Types.PRIMITIVE_ARRAY(Types.BYTE));
    /** What waits: (0 truck / 1 traffic, ts, route, payload). */
    static final TypeInformation<Tuple4<Integer, Long, Long, byte[]>> HELD =
        Types.TUPLE(Types.INT, Types.LONG, Types.LONG, Types.PRIMITIVE_ARRAY(Types.BYTE));

    public static void main(String[] args) throws Exception {
        Bench b = Bench.load(args);
        StreamExecutionEnvironment env = Bench.env();
        SingleOutputStreamOperator<Tuple3<Long, Long, byte[]>> trucks = b.kafka(env, "trucks", "trucks", new Records.Keyed());
        SingleOutputStreamOperator<Tuple3<Long, Long, byte[]>> traffic = b.kafka(env, "traffic", "traffic", new Records.Keyed());
        DataStream<Tuple3<Long, Long, byte[]>> records = "all".equals(b.str("bench.grouping.traffic", "fields"))
            ? traffic.broadcast() : traffic;
        SingleOutputStreamOperator<Tuple4<Long, Long, Boolean, byte[]>> joined = b.place(trucks.connect(records)
            .keyBy(t -> t.f0, t -> t.f0, Types.LONG).process(new Combine(b)).returns(JOINED), "combine");
        b.place(joined.rebalance().addSink(new Score(b)), "score");
        env.execute(b.name());
    }

    /** The combiner: both inputs held in keyed state until the watermark passes them. */
    static final class Combine extends KeyedCoProcessFunction<Long, Tuple3<Long, Long, byte[]>, Tuple3<Long, Long, byte[]>,
        Tuple4<Long, Long, Boolean, byte[]>> {
        private static final long serialVersionUID = 1L;
        private final Bench bench;
        private transient ListState<Tuple4<Integer, Long, Long, byte[]>> held;
        private transient ValueState<byte[]> congestion;
        private transient Store store;
        private transient byte[] out;

        Combine(Bench bench) {
            this.bench = bench;
        }

        @Override
        public void open(OpenContext ctx) {
            held = getRuntimeContext().getListState(new ListStateDescriptor<>("held", HELD));
            congestion = getRuntimeContext().getState(new ValueStateDescriptor<byte[]>("congestion", byte[].class));
            out = Bench.payload((int) bench.num("bench.bytes.joined", 1536), 13);
            store = new Store("trucks", "traffic");
            getRuntimeContext().getMetricGroup().gauge("streamband-store", store::sample);
        }

        private void hold(int kind, Tuple3<Long, Long, byte[]> t, Context ctx) throws Exception {
            String input = kind == 0 ? "trucks" : "traffic";
            store.seen(input, t.f1);
            store.hold(input, t.f2.length + 12);
            held.add(Tuple4.of(kind, t.f1, t.f0, t.f2));
            ctx.timerService().registerEventTimeTimer(t.f1);
        }

        @Override
        public void processElement1(Tuple3<Long, Long, byte[]> t, Context ctx, Collector<Tuple4<Long, Long, Boolean, byte[]>> o)
            throws Exception {
            hold(0, t, ctx);
        }

        @Override
        public void processElement2(Tuple3<Long, Long, byte[]> t, Context ctx, Collector<Tuple4<Long, Long, Boolean, byte[]>> o)
            throws Exception {
            hold(1, t, ctx);
        }

        @Override
        public void onTimer(long ts, OnTimerContext ctx, Collector<Tuple4<Long, Long, Boolean, byte[]>> o) throws Exception {
            List<Tuple4<Integer, Long, Long, byte[]>> due = new ArrayList<>();
            List<Tuple4<Integer, Long, Long, byte[]>> later = new ArrayList<>();
            for (Tuple4<Integer, Long, Long, byte[]> h : held.get()) {
                (h.f1 <= ts ? due : later).add(h);
            }
            // in event-time order, a record before the events of its own time
            due.sort((a, c) -> a.f1.equals(c.f1) ? Integer.compare(c.f0, a.f0) : Long.compare(a.f1, c.f1));
            for (Tuple4<Integer, Long, Long, byte[]> h : due) {
                store.release(h.f0 == 0 ? "trucks" : "traffic", h.f3.length + 12);
                if (h.f0 == 1) {
                    congestion.update(h.f3);
                } else {
                    o.collect(Tuple4.of(h.f2, h.f1, congestion.value() != null, out));
                }
            }
            held.update(later);
        }
    }

    /** The scorer: counts the joined events and their event-time latency. */
    static final class Score extends Bench.Sink<Tuple4<Long, Long, Boolean, byte[]>> {
        private static final long serialVersionUID = 1L;

        Score(Bench bench) {
            super(bench, "score");
        }

        @Override
        public void invoke(Tuple4<Long, Long, Boolean, byte[]> t, Context ctx) {
            rep.latency(System.currentTimeMillis() - t.f1, 1);
            rep.add("bytes_in", t.f3.length + 21);
        }
    }
}
