package streamband.storm.topo;

import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.apache.storm.spout.SpoutOutputCollector;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.BoltDeclarer;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.topology.base.BaseRichSpout;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Tuple;
import org.apache.storm.tuple.Values;
import streamband.storm.kafka.KafkaSource;
import streamband.storm.kafka.Translator;

/**
 * 000 §VI-A2's Trucking IoT: truck events and traffic congestion records arrive on two
 * streams of different tuple sizes (each at {@code bench.rate} per second, 250 in the
 * paper); the combiner joins each truck event with the latest congestion record of its
 * route (trucks by fields grouping on the route; records by {@code
 * bench.grouping.traffic}: {@code fields} on the route, or {@code all}, every combiner
 * gets every record) and the scorer reports. The combiner aligns the streams on event
 * time: a truck event waits (un-acked, oldest first) until every traffic task's records
 * have reached its time, so that "the latest record" is the one in force when the event
 * happened.
 * Settings: {@code bench.rate}, {@code bench.bytes.truck|traffic|joined}, {@code
 * bench.routes}, {@code bench.grouping.traffic}, {@code bench.parallelism.COMPONENT}.
 *
 * <p>With {@code bench.source: kafka} the two streams are two topics ({@code trucks},
 * {@code traffic}), each read by its own Kafka spout ({@link KafkaSource}; the records'
 * rates and sizes are the producer's), and the combiner is {@link StoreCombine}, which keeps
 * both inputs in its own store and reports it.
 */
public final class TruckingIoT {
    private TruckingIoT() {
    }

    public static void main(String[] args) throws Exception {
        Bench.submit(args, conf -> {
            TopologyBuilder b = new TopologyBuilder();
            boolean kafka = KafkaSource.enabled(conf);
            if (kafka) {
                KafkaSource.configure(conf);
                b.setSpout("trucks", KafkaSource.spout(conf, "trucks", "trucks", Translator.Kind.EVENT), Bench.parallel(conf, "trucks"));
                b.setSpout("traffic", KafkaSource.spout(conf, "traffic", "traffic", Translator.Kind.EVENT), Bench.parallel(conf, "traffic"));
            } else {
                b.setSpout("trucks", new Events("truck", 1024, 11), Bench.parallel(conf, "trucks"));
                b.setSpout("traffic", new Events("traffic", 512, 12), Bench.parallel(conf, "traffic"));
            }
            BoltDeclarer combine =
                b.setBolt("combine", kafka ? new StoreCombine() : new Combine(), Bench.parallel(conf, "combine"))
                    .fieldsGrouping("trucks", new Fields("route"));
            if ("all".equals(conf.getOrDefault("bench.grouping.traffic", "fields"))) {
                combine.allGrouping("traffic");
            } else {
                combine.fieldsGrouping("traffic", new Fields("route"));
            }
            b.setBolt("score", new Sink(), Bench.parallel(conf, "score")).shuffleGrouping("combine");
            return b.createTopology();
        });
    }

    /** One stream of events of one size, paced, on random routes. */
    public static class Events extends BaseRichSpout {
        private final String kind;
        private final int defaultBytes;
        private final long seed;
        private SpoutOutputCollector out;
        private Bench.Pace pace;
        private Bench.Reporter rep;
        private byte[] data;
        private Random rnd;
        private int routes;
        private long id;

        public Events(String kind, int defaultBytes, long seed) {
            this.kind = kind;
            this.defaultBytes = defaultBytes;
            this.seed = seed;
        }

        @Override
        public void open(Map<String, Object> conf, TopologyContext ctx, SpoutOutputCollector collector) {
            out = collector;
            int n = ctx.getComponentTasks(ctx.getThisComponentId()).size();
            pace = new Bench.Pace(Bench.num(conf, "bench.rate", 250) / n);
            rep = new Bench.Reporter(conf, "spout", ctx.getStormId(), ctx.getThisComponentId(), ctx.getThisTaskId());
            data = Bench.payload((int) Bench.num(conf, "bench.bytes." + kind, defaultBytes), seed);
            rnd = new Random(seed * 31 + ctx.getThisTaskId());
            routes = (int) Bench.num(conf, "bench.routes", 50);
        }

        @Override
        public void nextTuple() {
            rep.tick();
            if (!pace.take()) {
                return;
            }
            out.emit(new Values(rnd.nextInt(routes), System.currentTimeMillis(), data), id++);
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
            d.declare(new Fields("route", "ts", "data"));
        }
    }

    /**
     * Each truck event with the latest congestion record of its route, once the traffic
     * stream's watermark (the oldest of the traffic tasks' latest event times) has reached
     * the event's time ({@link Bench.Aligner}); until then the event waits, un-acked.
     */
    public static class Combine extends BaseRichBolt {
        private OutputCollector out;
        private final Map<Integer, byte[]> congestion = new HashMap<>();
        private transient Bench.Aligner trucks;
        private byte[] joined;

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext ctx, OutputCollector collector) {
            out = collector;
            joined = Bench.payload((int) Bench.num(conf, "bench.bytes.joined", 1536), 13);
            trucks = new Bench.Aligner(ctx.getComponentTasks("traffic").size());
        }

        @Override
        public void execute(Tuple t) {
            if (t.getSourceComponent().equals("traffic")) {
                congestion.put(t.getInteger(0), (byte[]) t.getValue(2));
                trucks.mark(t.getSourceTask(), t.getLong(1));
                out.ack(t);
            } else {
                trucks.hold(t);
            }
            for (Tuple e = trucks.next(); e != null; e = trucks.next()) {
                int route = e.getInteger(0);
                out.emit(e, new Values(route, e.getLong(1), congestion.containsKey(route), joined));
                out.ack(e);
            }
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {
            d.declare(new Fields("route", "ts", "matched", "data"));
        }
    }

    /**
     * The Kafka-fed combiner: truck events and congestion records both wait in its {@link
     * JoinStore} until the other stream's watermark has reached them, then are taken in
     * event-time order: a record updates its route's congestion, an event leaves joined with
     * its route's congestion in force at its time. The store is reported every second (gauge
     * {@code streamband-store}; {@code bench.store.max.mb}, default 96, bounds it). An event
     * the store lets out before its time carries {@code n} 0: the sink does not count it.
     */
    public static class StoreCombine extends BaseRichBolt {
        public static final String GAUGE = "streamband-store";
        private OutputCollector out;
        private final Map<Integer, byte[]> congestion = new HashMap<>();
        private transient JoinStore store;
        private byte[] joined;

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext ctx, OutputCollector collector) {
            out = collector;
            joined = Bench.payload((int) Bench.num(conf, "bench.bytes.joined", 1536), 13);
            Map<String, Integer> inputs = new HashMap<>();
            for (String c : new String[] {"trucks", "traffic"}) {
                inputs.put(c, ctx.getComponentTasks(c).size());
            }
            store = new JoinStore(inputs, (long) (Bench.num(conf, "bench.store.max.mb", 96) * (1 << 20)));
            ctx.registerGauge(GAUGE, store::sample);
        }

        @Override
        public void execute(Tuple t) {
            // the tuple's bytes: its payload and its route and time fields
            store.add(t.getSourceComponent(), t.getSourceTask(), t, t.getLong(1), ((byte[]) t.getValue(2)).length + 12);
            for (JoinStore.Held h = store.next(); h != null; h = store.next()) {
                Tuple e = h.tuple;
                int route = e.getInteger(0);
                if (h.input.equals("traffic")) {
                    congestion.put(route, (byte[]) e.getValue(2));
                } else {
                    // an event let out before its time (past the store's bound) meets the
                    // congestion of an earlier time: emitted, not counted as joined
                    out.emit(e, new Values(route, e.getLong(1), congestion.containsKey(route), joined, h.forced ? 0 : 1));
                }
                out.ack(e);
            }
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {
            d.declare(new Fields("route", "ts", "matched", "data", "n"));
        }
    }
}
