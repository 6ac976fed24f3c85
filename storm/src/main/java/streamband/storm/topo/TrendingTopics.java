package streamband.storm.topo;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.storm.Config;
import org.apache.storm.spout.SpoutOutputCollector;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.topology.base.BaseRichSpout;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Tuple;
import org.apache.storm.tuple.Values;
import org.apache.storm.utils.TupleUtils;
import streamband.kafka.Records;
import streamband.storm.kafka.KafkaSource;
import streamband.storm.kafka.Translator;

/**
 * 000 §VI-A2's Trending Topics: tweets (at {@code bench.rate} per second; 1000 in the
 * paper) are split into words, counted by word (fields grouping), each counter emits its
 * local top list every {@code bench.k} arrivals, one aggregator keeps the top {@code
 * bench.topk} over a sliding window of {@code bench.window.s} seconds (30 in the paper)
 * and the report receives the ranking every second.
 *
 * <p>Tweets are synthesised from real English word frequencies ({@code bench.words}: a
 * list of [word, frequency], exported from {@code wordfreq} at submit time) with a Zipf
 * tail of rarer words beyond the list, and trending bursts: every {@code
 * bench.burst.period.s} seconds, {@code bench.burst.words} random words take a share
 * {@code bench.burst.share} of all words for {@code bench.burst.length.s} seconds. A tweet
 * has {@code bench.words.per.tweet} words on average (12: 8-16 words; n: n - n/3 to
 * n + n/3).
 *
 * <p>Tuple sizes: each stream's tuples carry a payload of {@code bench.bytes.tweet|word|
 * partial|ranking} bytes (default 0) beside their text, so that the spec's tuple sizes
 * (000 leaves them open; streamband's spec sets 1 KB tweets, 64-B words, 3-KB partials)
 * load the network as in the simulator.
 *
 * <p>With {@code bench.source: kafka} the tweets are read from the topic {@code tweets} by a
 * Kafka spout ({@link KafkaSource}); the replay producer writes them with the same generator.
 */
public final class TrendingTopics {
    private TrendingTopics() {
    }

    public static void main(String[] args) throws Exception {
        Bench.submit(args, conf -> {
            TopologyBuilder b = new TopologyBuilder();
            if (KafkaSource.enabled(conf)) {
                KafkaSource.configure(conf);
                b.setSpout("tweets", KafkaSource.spout(conf, "tweets", "tweets", Translator.Kind.TWEET), Bench.parallel(conf, "tweets"));
            } else {
                b.setSpout("tweets", new Tweets(), Bench.parallel(conf, "tweets"));
            }
            b.setBolt("split", new Split(), Bench.parallel(conf, "split")).shuffleGrouping("tweets");
            b.setBolt("count", new Count(), Bench.parallel(conf, "count"))
                .fieldsGrouping("split", new Fields("word"));
            b.setBolt("topk", new TopK(), 1).globalGrouping("count");
            b.setBolt("report", new Sink(), 1).globalGrouping("topk");
            return b.createTopology();
        });
    }

    /** Paced tweets of 8-16 words. */
    public static class Tweets extends BaseRichSpout {
        private SpoutOutputCollector out;
        private Bench.Pace pace;
        private Bench.Reporter rep;
        private Records.Tweets tweets;
        private long id;
        private byte[] pad;

        @Override
        public void open(Map<String, Object> conf, TopologyContext ctx, SpoutOutputCollector collector) {
            out = collector;
            int n = ctx.getComponentTasks(ctx.getThisComponentId()).size();
            pace = new Bench.Pace(Bench.num(conf, "bench.rate", 1000) / n);
            rep = new Bench.Reporter(conf, "spout", ctx.getStormId(), ctx.getThisComponentId(), ctx.getThisTaskId());
            tweets = new Records.Tweets(conf, ctx.getThisTaskId() * 7919L, System.currentTimeMillis());
            pad = Bench.payload((int) Bench.num(conf, "bench.bytes.tweet", 0), 3);
        }

        @Override
        public void nextTuple() {
            rep.tick();
            if (!pace.take()) {
                return;
            }
            long now = System.currentTimeMillis();
            out.emit(new Values(tweets.next(now), now, pad), id++);
            rep.add("emitted", 1);
        }

        @Override
        public void ack(Object msgId) {
            rep.add("acked", 1);
        }

        @Override
        public void fail(Object msgId) {
            rep.add("failed", 1);
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {
            d.declare(new Fields("tweet", "ts", "pad"));
        }
    }

    /** A tweet into its words. */
    public static class Split extends BaseRichBolt {
        private OutputCollector out;
        private byte[] pad;

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext ctx, OutputCollector collector) {
            out = collector;
            pad = Bench.payload((int) Bench.num(conf, "bench.bytes.word", 0), 5);
        }

        @Override
        public void execute(Tuple t) {
            for (String w : t.getString(0).split(" ")) {
                out.emit(t, new Values(w, t.getLong(1), pad));
            }
            out.ack(t);
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {
            d.declare(new Fields("word", "ts", "pad"));
        }
    }

    /** Word counts; every K arrivals, the local top list with how many words it covers. */
    public static class Count extends BaseRichBolt {
        private OutputCollector out;
        private final Map<String, Long> counts = new HashMap<>();
        private int k;
        private int topn;
        private int since;
        private double tsSum;
        private byte[] pad;

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext ctx, OutputCollector collector) {
            out = collector;
            k = (int) Bench.num(conf, "bench.k", 100);
            topn = (int) Bench.num(conf, "bench.topk", 10);
            pad = Bench.payload((int) Bench.num(conf, "bench.bytes.partial", 0), 7);
        }

        @Override
        public void execute(Tuple t) {
            counts.merge(t.getString(0), 1L, Long::sum);
            since++;
            tsSum += t.getLong(1);
            if (since >= k) {
                List<Map.Entry<String, Long>> top = new ArrayList<>(counts.entrySet());
                top.sort((a, b) -> Long.compare(b.getValue(), a.getValue()));
                StringBuilder sb = new StringBuilder();
                for (int i = 0; i < Math.min(topn, top.size()); i++) {
                    sb.append(top.get(i).getKey()).append('=').append(top.get(i).getValue()).append(' ');
                }
                out.emit(t, new Values(sb.toString(), (long) (tsSum / since), since, pad));
                since = 0;
                tsSum = 0;
            }
            out.ack(t);
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {
            d.declare(new Fields("top", "ts", "n", "pad"));
        }
    }

    /**
     * The global top K over a sliding window; the ranking once a second. It merges the
     * counters' partials aligned on event time: a partial waits (un-acked) until every
     * counter's partials have reached its time, as a ranking needs all instances' counts.
     * The partials wait in a {@link JoinStore} with one input per counter task ("count:TASK"),
     * reported every second (gauge {@code streamband-store}). A partial the store lets out
     * before its time (past its bound) is merged but not counted in the ranking's {@code n}.
     */
    public static class TopK extends BaseRichBolt {
        private OutputCollector out;
        private final Map<String, long[]> window = new HashMap<>(); // word -> {count, seen ms}
        private transient JoinStore partials;
        private long windowMs;
        private int topk;
        private long n;
        private double tsSum;
        private byte[] pad;

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext ctx, OutputCollector collector) {
            out = collector;
            windowMs = (long) (1000 * Bench.num(conf, "bench.window.s", 30));
            topk = (int) Bench.num(conf, "bench.topk", 10);
            pad = Bench.payload((int) Bench.num(conf, "bench.bytes.ranking", 0), 11);
            Map<String, Integer> inputs = new HashMap<>();
            for (int task : ctx.getComponentTasks("count")) {
                inputs.put("count:" + task, 1);
            }
            partials = new JoinStore(inputs, (long) (Bench.num(conf, "bench.store.max.mb", 96) * (1 << 20)));
            ctx.registerGauge(TruckingIoT.StoreCombine.GAUGE, partials::sample);
        }

        private void merge(JoinStore.Held p, long now) {
            Tuple t = p.tuple;
            for (String e : t.getString(0).trim().split(" ")) {
                int eq = e.lastIndexOf('=');
                if (eq > 0) {
                    window.put(e.substring(0, eq), new long[] {Long.parseLong(e.substring(eq + 1)), now});
                }
            }
            if (p.forced) {
                // merged without the other counters' counts of its time: a ranking that
                // cannot be trusted, so not throughput (the store reports it as forced)
                out.ack(t);
                return;
            }
            int covered = t.getInteger(2);
            n += covered;
            tsSum += (double) t.getLong(1) * covered;
            out.ack(t);
        }

        @Override
        public void execute(Tuple t) {
            long now = System.currentTimeMillis();
            if (TupleUtils.isTick(t)) {
                for (Iterator<long[]> it = window.values().iterator(); it.hasNext();) {
                    if (now - it.next()[1] > windowMs) {
                        it.remove();
                    }
                }
                if (n > 0) {
                    List<Map.Entry<String, long[]>> top = new ArrayList<>(window.entrySet());
                    top.sort((a, b) -> Long.compare(b.getValue()[0], a.getValue()[0]));
                    StringBuilder sb = new StringBuilder();
                    for (int i = 0; i < Math.min(topk, top.size()); i++) {
                        sb.append(top.get(i).getKey()).append(' ');
                    }
                    out.emit(new Values(sb.toString().trim(), (long) (tsSum / n), n, pad));
                    n = 0;
                    tsSum = 0;
                }
                return;
            }
            // the partial's bytes: its top list, its padding and its time and count fields
            long bytes = t.getString(0).length() + ((byte[]) t.getValue(3)).length + 12;
            partials.add("count:" + t.getSourceTask(), t.getSourceTask(), t, t.getLong(1), bytes);
            for (JoinStore.Held p = partials.next(); p != null; p = partials.next()) {
                merge(p, now);
            }
        }

        @Override
        public Map<String, Object> getComponentConfiguration() {
            Map<String, Object> c = new HashMap<>();
            c.put(Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS, 1);
            return c;
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {
            d.declare(new Fields("ranking", "ts", "n", "pad"));
        }
    }
}
