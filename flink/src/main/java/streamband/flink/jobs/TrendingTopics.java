package streamband.flink.jobs;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.api.java.tuple.Tuple4;
import org.apache.flink.api.java.tuple.Tuple5;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;

/**
 * 000 §VI-A2's Trending Topics read from Kafka (topic {@code tweets}): tweets are split into
 * words (rebalanced, as Storm's shuffle grouping), counted by word (keyed), each counter emits
 * its local top list every {@code bench.k} arrivals, one aggregator ({@code topk}) merges the
 * partials aligned on event time (a partial waits until the watermark, the oldest of every
 * counter's, has passed it: a ranking needs all counters' counts; what waits is the operator
 * gauge {@code streamband-store}) into the top {@code bench.topk} of a sliding window of {@code
 * bench.window.s}, and the report receives the ranking every second. Payloads per stream:
 * {@code bench.bytes.word|partial|ranking}.
 */
public final class TrendingTopics {
    private TrendingTopics() {
    }

    /** (top list, ts, words covered, payload): the ranking. */
    static final TypeInformation<Tuple4<String, Long, Integer, byte[]>> PARTIAL =
        Types.TUPLE(Types.STRING, Types.LONG, Types.INT, Types.PRIMITIVE_ARRAY(Types.BYTE));
    /** (top list, ts, words covered, payload, the counter's subtask): a counter's partial. */
    static final TypeInformation<Tuple5<String, Long, Integer, byte[], Integer>> COUNTED =
        Types.TUPLE(Types.STRING, Types.LONG, Types.INT, Types.PRIMITIVE_ARRAY(Types.BYTE), Types.INT);

    public static void main(String[] args) throws Exception {
        Bench b = Bench.load(args);
        StreamExecutionEnvironment env = Bench.env();
        SingleOutputStreamOperator<Tuple3<String, Long, byte[]>> tweets = b.kafka(env, "tweets", "tweets", new Records.Tweet());
        SingleOutputStreamOperator<Tuple3<String, Long, byte[]>> words =
            b.place(tweets.rebalance().process(new Split((int) b.num("bench.bytes.word", 0))).returns(Records.TEXT), "split");
        SingleOutputStreamOperator<Tuple5<String, Long, Integer, byte[], Integer>> partials = b.place(
            words.keyBy(t -> t.f0, Types.STRING).process(new Count(b)).returns(COUNTED), "count");
        SingleOutputStreamOperator<Tuple4<String, Long, Integer, byte[]>> ranking = b.place(
            partials.keyBy(t -> 0, Types.INT).process(new TopK(b)).returns(PARTIAL), "topk");
        b.place(ranking.rebalance().addSink(new Report(b)), "report");
        env.execute(b.name());
    }

    /** A tweet into its words. */
    static final class Split extends ProcessFunction<Tuple3<String, Long, byte[]>, Tuple3<String, Long, byte[]>> {
        private static final long serialVersionUID = 1L;
        private final int bytes;
        private transient byte[] pad;

        Split(int bytes) {
            this.bytes = bytes;
        }

        @Override
        public void open(OpenContext ctx) {
            pad = Bench.payload(bytes, 5);
        }

        @Override
        public void processElement(Tuple3<String, Long, byte[]> t, Context ctx, Collector<Tuple3<String, Long, byte[]>> out) {
            for (String w : t.f0.split(" ")) {
                out.collect(Tuple3.of(w, t.f1, pad));
            }
        }
    }

    /**
     * Word counts; every K arrivals, the local top list with how many words it covers and the
     * subtask that counted them (the aggregator's store reports how far each has come).
     */
    static final class Count extends KeyedProcessFunction<String, Tuple3<String, Long, byte[]>, Tuple5<String, Long, Integer, byte[], Integer>> {
        private static final long serialVersionUID = 1L;
        private final Bench bench;
        private transient Map<String, Long> counts;
        private transient byte[] pad;
        private int k;
        private int topn;
        private int task;
        private int since;
        private double tsSum;

        Count(Bench bench) {
            this.bench = bench;
        }

        @Override
        public void open(OpenContext ctx) {
            counts = new HashMap<>();
            k = (int) bench.num("bench.k", 100);
            topn = (int) bench.num("bench.topk", 10);
            pad = Bench.payload((int) bench.num("bench.bytes.partial", 0), 7);
            task = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        }

        @Override
        public void processElement(Tuple3<String, Long, byte[]> t, Context ctx,
                                   Collector<Tuple5<String, Long, Integer, byte[], Integer>> out) {
            counts.merge(t.f0, 1L, Long::sum);
            since++;
            tsSum += t.f1;
            if (since >= k) {
                List<Map.Entry<String, Long>> top = new ArrayList<>(counts.entrySet());
                top.sort((a, c) -> Long.compare(c.getValue(), a.getValue()));
                StringBuilder sb = new StringBuilder();
                for (int i = 0; i < Math.min(topn, top.size()); i++) {
                    sb.append(top.get(i).getKey()).append('=').append(top.get(i).getValue()).append(' ');
                }
                out.collect(Tuple5.of(sb.toString(), (long) (tsSum / since), since, pad, task));
                since = 0;
                tsSum = 0;
            }
        }
    }

    /**
     * The global top K over a sliding window, merged in event time: a partial waits until the
     * watermark has passed its time (an event-time timer), then updates the window; every second
     * (a processing-time timer) the ranking goes out with the words it covers.
     */
    static final class TopK extends KeyedProcessFunction<Integer, Tuple5<String, Long, Integer, byte[], Integer>,
        Tuple4<String, Long, Integer, byte[]>> {
        private static final long serialVersionUID = 1L;
        private final Bench bench;
        private transient Map<String, long[]> window; // word -> {count, seen ms}
        private transient PriorityQueue<Tuple5<String, Long, Integer, byte[], Integer>> waiting;
        private transient Store store;
        private transient byte[] pad;
        private long windowMs;
        private int topk;
        private long n;
        private double tsSum;
        private long nextTick;

        TopK(Bench bench) {
            this.bench = bench;
        }

        @Override
        public void open(OpenContext ctx) {
            window = new HashMap<>();
            waiting = new PriorityQueue<>((a, c) -> Long.compare(a.f1, c.f1));
            windowMs = (long) (1000 * bench.num("bench.window.s", 30));
            topk = (int) bench.num("bench.topk", 10);
            pad = Bench.payload((int) bench.num("bench.bytes.ranking", 0), 11);
            store = new Store("count");
            getRuntimeContext().getMetricGroup().gauge("streamband-store", store::sample);
        }

        @Override
        public void processElement(Tuple5<String, Long, Integer, byte[], Integer> t, Context ctx,
                                   Collector<Tuple4<String, Long, Integer, byte[]>> out) {
            long bytes = t.f0.length() + t.f3.length + 12;
            store.seen("count", t.f4, t.f1);
            store.hold("count", bytes);
            waiting.add(t);
            ctx.timerService().registerEventTimeTimer(t.f1);
            long now = ctx.timerService().currentProcessingTime();
            if (nextTick == 0) {
                nextTick = now + 1000;
                ctx.timerService().registerProcessingTimeTimer(nextTick);
            }
        }

        @Override
        public void onTimer(long ts, OnTimerContext ctx, Collector<Tuple4<String, Long, Integer, byte[]>> out) {
            long now = ctx.timerService().currentProcessingTime();
            long wm = ctx.timerService().currentWatermark();
            while (!waiting.isEmpty() && waiting.peek().f1 <= wm) {
                Tuple5<String, Long, Integer, byte[], Integer> p = waiting.poll();
                store.release("count", p.f0.length() + p.f3.length + 12);
                for (String e : p.f0.trim().split(" ")) {
                    int eq = e.lastIndexOf('=');
                    if (eq > 0) {
                        window.put(e.substring(0, eq), new long[] {Long.parseLong(e.substring(eq + 1)), now});
                    }
                }
                n += p.f2;
                tsSum += (double) p.f1 * p.f2;
            }
            if (ctx.timeDomain() == org.apache.flink.streaming.api.TimeDomain.PROCESSING_TIME) {
                for (Iterator<long[]> it = window.values().iterator(); it.hasNext();) {
                    if (now - it.next()[1] > windowMs) {
                        it.remove();
                    }
                }
                if (n > 0) {
                    List<Map.Entry<String, long[]>> top = new ArrayList<>(window.entrySet());
                    top.sort((a, c) -> Long.compare(c.getValue()[0], a.getValue()[0]));
                    StringBuilder sb = new StringBuilder();
                    for (int i = 0; i < Math.min(topk, top.size()); i++) {
                        sb.append(top.get(i).getKey()).append(' ');
                    }
                    out.collect(Tuple4.of(sb.toString().trim(), (long) (tsSum / n), (int) n, pad));
                    n = 0;
                    tsSum = 0;
                }
                nextTick = now + 1000;
                ctx.timerService().registerProcessingTimeTimer(nextTick);
            }
        }
    }

    /** The report: counts the words each ranking covers and their event-time latency. */
    static final class Report extends Bench.Sink<Tuple4<String, Long, Integer, byte[]>> {
        private static final long serialVersionUID = 1L;

        Report(Bench bench) {
            super(bench, "report");
        }

        @Override
        public void invoke(Tuple4<String, Long, Integer, byte[]> t, Context ctx) {
            rep.latency(System.currentTimeMillis() - t.f1, t.f2);
            rep.add("bytes_in", t.f0.length() + t.f3.length + 12);
        }
    }
}
