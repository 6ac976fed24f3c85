package streamband.storm.topo;

import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
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
import streamband.storm.kafka.KafkaSource;
import streamband.storm.kafka.Translator;

/**
 * 001's fork-join (Fig. 1a): source A sends 8 KB tuples to B and 4 KB tuples to C; B and
 * C send 6 KB and 3 KB tuples to D, which joins them 1:1 by id. Settings: {@code
 * bench.rate} (A's tuples per second), {@code bench.bytes.AB|AC|BD|CD}, {@code
 * bench.replay} (1: A emits a failed tuple again, so nothing is lost to a failure; it
 * reports {@code replayed} and {@code pending}, the tuples neither acked nor given up).
 *
 * <p>With {@code bench.source: kafka}, A's ids come from one topic ({@code
 * bench.topic.kafka-A}, default {@code forkjoin}) through a Kafka spout {@code kafka-A}
 * ({@link KafkaSource}), placed with A; A is then a bolt that forks each record to B and C.
 */
public final class ForkJoin {
    private ForkJoin() {
    }

    public static void main(String[] args) throws Exception {
        Bench.submit(args, conf -> {
            TopologyBuilder b = new TopologyBuilder();
            if (KafkaSource.enabled(conf)) {
                KafkaSource.configure(conf);
                b.setSpout("kafka-A", KafkaSource.spout(conf, "kafka-A", "forkjoin", Translator.Kind.ID), 1);
                b.setBolt("A", new Fork(), 1).localOrShuffleGrouping("kafka-A");
            } else {
                b.setSpout("A", new Source(), 1);
            }
            b.setBolt("B", new Relay("AB", "BD", 6144), 1).fieldsGrouping("A", "b", new Fields("id"));
            b.setBolt("C", new Relay("AC", "CD", 3072), 1).fieldsGrouping("A", "c", new Fields("id"));
            b.setBolt("D", new Join(), 1).fieldsGrouping("B", new Fields("id")).fieldsGrouping("C", new Fields("id"));
            return b.createTopology();
        });
    }

    /** A: one id per tick of the pace, to B (stream b) and C (stream c), acked per stream. */
    public static class Source extends BaseRichSpout {
        private final Map<Long, Object[]> pending = new HashMap<>();
        private boolean replay;
        private SpoutOutputCollector out;
        private Bench.Pace pace;
        private Bench.Reporter rep;
        private byte[] toB;
        private byte[] toC;
        private long id;

        @Override
        public void open(Map<String, Object> conf, TopologyContext ctx, SpoutOutputCollector collector) {
            out = collector;
            pace = new Bench.Pace(Bench.num(conf, "bench.rate", 200));
            rep = new Bench.Reporter(conf, "spout", ctx.getStormId(), ctx.getThisComponentId(), ctx.getThisTaskId());
            toB = Bench.payload((int) Bench.num(conf, "bench.bytes.AB", 8192), 1);
            toC = Bench.payload((int) Bench.num(conf, "bench.bytes.AC", 4096), 2);
            replay = Bench.num(conf, "bench.replay", 0) > 0;
        }

        @Override
        public void nextTuple() {
            rep.tick();
            if (!pace.take()) {
                return;
            }
            long ts = System.currentTimeMillis();
            Values b = new Values(id, ts, toB);
            Values c = new Values(id, ts, toC);
            out.emit("b", b, id * 2);
            out.emit("c", c, id * 2 + 1);
            if (replay) {
                pending.put(id * 2, new Object[] {"b", b});
                pending.put(id * 2 + 1, new Object[] {"c", c});
                rep.set("pending", pending.size());
            }
            id++;
            rep.add("emitted", 2);
        }

        @Override
        public void ack(Object msgId) {
            rep.add("acked", 1);
            if (replay) {
                pending.remove(msgId);
                rep.set("pending", pending.size());
            }
        }

        @Override
        public void fail(Object msgId) {
            rep.add("failed", 1);
            Object[] again = replay ? pending.get(msgId) : null;
            if (again != null) {
                out.emit((String) again[0], (Values) again[1], msgId);
                rep.add("replayed", 1);
            }
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {
            d.declareStream("b", new Fields("id", "ts", "data"));
            d.declareStream("c", new Fields("id", "ts", "data"));
        }
    }

    /** A fed by Kafka: each record (id, ts) to B (stream b) and C (stream c), anchored. */
    public static class Fork extends BaseRichBolt {
        private OutputCollector out;
        private byte[] toB;
        private byte[] toC;

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext ctx, OutputCollector collector) {
            out = collector;
            toB = Bench.payload((int) Bench.num(conf, "bench.bytes.AB", 8192), 1);
            toC = Bench.payload((int) Bench.num(conf, "bench.bytes.AC", 4096), 2);
        }

        @Override
        public void execute(Tuple t) {
            out.emit("b", t, new Values(t.getLong(0), t.getLong(1), toB));
            out.emit("c", t, new Values(t.getLong(0), t.getLong(1), toC));
            out.ack(t);
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {
            d.declareStream("b", new Fields("id", "ts", "data"));
            d.declareStream("c", new Fields("id", "ts", "data"));
        }
    }

    /** B or C: one output tuple of its size per input tuple. */
    public static class Relay extends BaseRichBolt {
        private final String outKey;
        private final int outDefault;
        private OutputCollector out;
        private byte[] data;

        public Relay(String inKey, String outKey, int outDefault) {
            this.outKey = outKey;
            this.outDefault = outDefault;
        }

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext ctx, OutputCollector collector) {
            out = collector;
            data = Bench.payload((int) Bench.num(conf, "bench.bytes." + outKey, outDefault), 3);
        }

        @Override
        public void execute(Tuple t) {
            out.emit(t, new Values(t.getLong(0), t.getLong(1), data));
            out.ack(t);
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {
            d.declare(new Fields("id", "ts", "data"));
        }
    }

    /**
     * D: joins B's and C's tuple of one id; throughput and event-time latency per join. What
     * waits for its match is reported every second (gauge {@code streamband-store}) per input:
     * tuples, their bytes (the payload a join keeping them would hold), the input's latest event
     * time and how far it is behind the other's ({@code lag_ms}).
     */
    public static class Join extends BaseRichBolt {
        private OutputCollector out;
        private Bench.Reporter rep;
        private final Map<Long, Object[]> waiting = new HashMap<>(); // id -> {input, bytes}
        private final Map<String, AtomicLong[]> inputs = new ConcurrentHashMap<>(); // {tuples, bytes, latest ts}

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext ctx, OutputCollector collector) {
            out = collector;
            rep = new Bench.Reporter(conf, "sink", ctx.getStormId(), ctx.getThisComponentId(), ctx.getThisTaskId());
            for (String c : new String[] {"B", "C"}) {
                inputs.put(c, new AtomicLong[] {new AtomicLong(), new AtomicLong(), new AtomicLong(Long.MIN_VALUE)});
            }
            ctx.registerGauge(TruckingIoT.StoreCombine.GAUGE, this::sample);
        }

        @Override
        public void execute(Tuple t) {
            if (TupleUtils.isTick(t)) {
                rep.max("waiting", 0);
                rep.tick();
                return;
            }
            long id = t.getLong(0);
            String from = t.getSourceComponent();
            int bytes = ((byte[]) t.getValue(2)).length;
            AtomicLong[] in = inputs.get(from);
            in[2].accumulateAndGet(t.getLong(1), Math::max);
            Object[] other = waiting.remove(id);
            if (other == null) {
                waiting.put(id, new Object[] {from, bytes});
                in[0].incrementAndGet();
                in[1].addAndGet(bytes);
            } else {
                AtomicLong[] o = inputs.get((String) other[0]);
                o[0].decrementAndGet();
                o[1].addAndGet(-(Integer) other[1]);
                if (!other[0].equals(from)) {
                    rep.latency(System.currentTimeMillis() - t.getLong(1), 1);
                }
            }
            rep.add("bytes_in", bytes);
            out.ack(t);
            rep.tick();
        }

        /** The store as {@link JoinStore#sample} gives it (nothing is forced out here). */
        Map<String, Object> sample() {
            Map<String, long[]> each = new TreeMap<>();
            inputs.forEach((name, in) -> each.put(name, new long[] {in[0].get(), in[1].get(), in[2].get()}));
            return JoinStore.describe(each, 0);
        }

        @Override
        public Map<String, Object> getComponentConfiguration() {
            Map<String, Object> c = new HashMap<>();
            c.put(Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS, 1);
            return c;
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {
        }
    }
}
