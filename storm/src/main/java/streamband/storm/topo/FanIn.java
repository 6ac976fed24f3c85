package streamband.storm.topo;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.storm.generated.StormTopology;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.BoltDeclarer;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Tuple;
import org.apache.storm.utils.TupleUtils;
import streamband.storm.kafka.KafkaSource;
import streamband.storm.kafka.Translator;

/**
 * 000 §VII's competing applications as Storm runs them ({@code bench appfair --backend
 * storm}): k independent sources, each a Kafka topic of its own read by its own spout
 * ({@link KafkaSource}; the producer numbers the records of every topic alike and gives each
 * topic its own record size), all into one join that takes one tuple of every input per
 * record number ({@link StoreJoin}: the spec's join mode {@code all}), keeping what waits for
 * the other inputs in its own {@link JoinStore}. The join counts what it completes as the
 * topology's sink; with one source and no join, the source feeds a {@link Sink}.
 *
 * <p>Settings: {@code bench.fanin.sources} (the source components; each reads the topic of
 * its name, or {@code bench.topic.COMPONENT}), {@code bench.fanin.join} (the join component;
 * absent: none), {@code bench.fanin.sink} (the sink component, when there is no join),
 * {@code bench.parallelism.COMPONENT}, {@code bench.store.max.mb} (the join's store bound,
 * default 64), {@code bench.join.heap.mb} (the join's on-heap memory, default the store
 * bound plus 160). Kafka-fed only ({@code bench.source: kafka}).
 */
public final class FanIn {
    private FanIn() {
    }

    public static void main(String[] args) throws Exception {
        Bench.submit(args, FanIn::build);
    }

    @SuppressWarnings("unchecked")
    static StormTopology build(Map<String, Object> conf) {
        if (!KafkaSource.enabled(conf)) {
            throw new IllegalArgumentException("FanIn: expected bench.source: kafka (its sources are Kafka topics)");
        }
        KafkaSource.configure(conf);
        Object listed = conf.get("bench.fanin.sources");
        if (!(listed instanceof List) || ((List<Object>) listed).isEmpty()) {
            throw new IllegalArgumentException("FanIn: bench.fanin.sources: expected a list of source components, got " + listed);
        }
        List<String> sources = new ArrayList<>();
        for (Object s : (List<Object>) listed) {
            sources.add(s.toString());
        }
        Object join = conf.get("bench.fanin.join");
        TopologyBuilder b = new TopologyBuilder();
        for (String s : sources) {
            b.setSpout(s, KafkaSource.spout(conf, s, s, Translator.Kind.ID), Bench.parallel(conf, s));
        }
        if (join == null) {
            if (sources.size() != 1) {
                throw new IllegalArgumentException("FanIn: " + sources.size() + " sources need a join (bench.fanin.join)");
            }
            String sink = String.valueOf(conf.getOrDefault("bench.fanin.sink", "sink"));
            b.setBolt(sink, new Sink(), Bench.parallel(conf, sink)).shuffleGrouping(sources.get(0));
        } else {
            String name = join.toString();
            double store = Bench.num(conf, "bench.store.max.mb", 64);
            BoltDeclarer j = b.setBolt(name, new StoreJoin(sources), Bench.parallel(conf, name));
            // the worker's heap is its executors' on-heap memory: the store must fit beside the queues
            j.setMemoryLoad(Bench.num(conf, "bench.join.heap.mb", store + 160));
            for (String s : sources) {
                j.fieldsGrouping(s, new Fields("id"));
            }
        }
        return b.createTopology();
    }

    /**
     * One tuple of every input per record number: each input's tuples wait in the {@link
     * JoinStore} until every input's watermark has reached their event time (the producer
     * stamps record n of every topic with the same time), then the record's group is complete
     * and counted (reported as a sink: joins per second and their event-time latency). The
     * store is reported every second (gauge {@code streamband-store}): per input, what waits
     * for the others, problem (4)'s receiver backlog.
     */
    public static class StoreJoin extends BaseRichBolt {
        public static final String GAUGE = "streamband-store";
        private final List<String> inputs;
        private OutputCollector out;
        private transient JoinStore store;
        private transient Map<String, Integer> slot;
        private transient Map<Long, Tuple[]> partial;
        private transient Bench.Reporter rep;

        public StoreJoin(List<String> inputs) {
            this.inputs = new ArrayList<>(inputs);
        }

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext ctx, OutputCollector collector) {
            out = collector;
            Map<String, Integer> tasks = new HashMap<>();
            slot = new HashMap<>();
            for (String c : inputs) {
                tasks.put(c, ctx.getComponentTasks(c).size());
                slot.put(c, slot.size());
            }
            store = new JoinStore(tasks, (long) (Bench.num(conf, "bench.store.max.mb", 64) * (1 << 20)));
            partial = new HashMap<>();
            rep = new Bench.Reporter(conf, "sink", ctx.getStormId(), ctx.getThisComponentId(), ctx.getThisTaskId());
            ctx.registerGauge(GAUGE, store::sample);
        }

        @Override
        public void execute(Tuple t) {
            if (!TupleUtils.isTick(t)) {
                // the tuple's bytes: its payload and its id and time fields
                store.add(t.getSourceComponent(), t.getSourceTask(), t, t.getLong(1), ((byte[]) t.getValue(2)).length + 16);
                for (JoinStore.Held h = store.next(); h != null; h = store.next()) {
                    complete(h);
                }
            }
            rep.tick();
        }

        private void complete(JoinStore.Held h) {
            long id = h.tuple.getLong(0);
            Tuple[] group = partial.computeIfAbsent(id, k -> new Tuple[inputs.size()]);
            int i = slot.get(h.input);
            if (group[i] != null) {
                out.ack(group[i]); // a replay of a record already held (at-least-once)
            }
            group[i] = h.tuple;
            for (Tuple g : group) {
                if (g == null) {
                    return;
                }
            }
            partial.remove(id);
            rep.latency(System.currentTimeMillis() - h.ts, 1);
            for (Tuple g : group) {
                out.ack(g);
            }
        }

        @Override
        public Map<String, Object> getComponentConfiguration() {
            return Bench.everySecond();
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {
        }
    }
}
