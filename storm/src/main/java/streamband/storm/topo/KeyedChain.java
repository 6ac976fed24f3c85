package streamband.storm.topo;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
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
import streamband.storm.Json;
import streamband.storm.locality.Keys;
import streamband.storm.locality.LocalityAwareGrouping;
import streamband.storm.locality.ProtocolTask;

/**
 * 003's keyed chain (§4.1): a source S, then A counting the occurrences of field 1 ({@code
 * k1}) and B those of field 2 ({@code k2}), both routed by {@link LocalityAwareGrouping} and
 * running the instance side of the reconfiguration protocol, then a sink that checks every
 * key's counts. A adds {@code locality.padding} bytes to what it sends to B (the keyed hop
 * whose locality 003 optimises; S sends the keys only).
 *
 * <p>The sink receives, for every tuple, A's count of {@code k1} and B's count of {@code k2}
 * right after the tuple: without loss or duplicates, and with every key's state moved intact,
 * each key of n tuples shows the counts 1..n exactly once. It writes, per key, the tuples seen,
 * the largest count and the sum of counts, and the tuples it received per wall-clock second
 * ({@code locality.out}/sink-TASK.json, every second).
 *
 * <p>Settings: {@code locality.workload} (a file: a JSON header line {@code {"keys": "int" |
 * "str", "time": bool}}, then {@code k1 TAB k2 [TAB hours]} a line; spout i replays lines
 * i, i + n, ...), {@code locality.rate} (tuples/s over all spouts, 0: as fast as acking
 * allows) or {@code locality.speedup} (replay by the time column, data hours per wall hour),
 * {@code locality.padding}, {@code bench.parallelism.S|A|B}, plus {@link ProtocolTask}'s.
 */
public final class KeyedChain {
    private KeyedChain() {
    }

    public static void main(String[] args) throws Exception {
        Bench.submit(args, conf -> {
            TopologyBuilder b = new TopologyBuilder();
            b.setSpout("S", new Source(), Bench.parallel(conf, "S"));
            b.setBolt("A", new Counter(false), Bench.parallel(conf, "A"))
                .customGrouping("S", "data", new LocalityAwareGrouping("A", "k1"))
                .directGrouping("S", ProtocolTask.CTL).directGrouping("A", ProtocolTask.CTL);
            b.setBolt("B", new Counter(true), Bench.parallel(conf, "B"))
                .customGrouping("A", "data", new LocalityAwareGrouping("B", "k2"))
                .directGrouping("A", ProtocolTask.CTL).directGrouping("B", ProtocolTask.CTL);
            b.setBolt("sink", new CountSink(), 1).globalGrouping("B", "sink");
            return b.createTopology();
        });
    }

    /** S: replays its share of the workload file; every tuple acked (replayed on failure). */
    public static class Source extends BaseRichSpout {
        private SpoutOutputCollector out;
        private ProtocolTask node;
        private Bench.Reporter rep;
        private final List<Object[]> rows = new ArrayList<>();
        private final List<Long> tids = new ArrayList<>();
        private double[] hours;
        private Bench.Pace pace;
        private double speedup;
        private long start;
        private int next;
        private final Map<Long, Object[]> inFlight = new HashMap<>();

        @Override
        public void open(Map<String, Object> conf, TopologyContext ctx, SpoutOutputCollector collector) {
            out = collector;
            int n = ctx.getComponentTasks(ctx.getThisComponentId()).size();
            int me = ctx.getComponentTasks(ctx.getThisComponentId()).indexOf(ctx.getThisTaskId());
            load(Paths.get(String.valueOf(conf.get("locality.workload"))), n, me);
            double rate = Bench.num(conf, "locality.rate", 0);
            speedup = Bench.num(conf, "locality.speedup", 0);
            pace = rate > 0 ? new Bench.Pace(rate / n) : null;
            rep = new Bench.Reporter(conf, "spout", ctx.getStormId(), ctx.getThisComponentId(), ctx.getThisTaskId());
            node = new ProtocolTask(conf, ctx, new ProtocolTask.Emitter() {
                @Override
                public void data(String succ, long tid, List<Object> fields, Object handle, Object value) {
                    out.emit("data", new Values(tid, fields.get(0), fields.get(1), System.currentTimeMillis()), tid);
                }

                @Override
                public void direct(int task, List<Object> values) {
                    out.emitDirect(task, ProtocolTask.CTL, values);
                }

                @Override
                public void processed(Object handle, Object key, Object value) {
                }
            });
            start = System.currentTimeMillis();
        }

        private void load(Path file, int n, int me) {
            List<Double> hs = new ArrayList<>();
            try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
                var head = streamband.storm.locality.Wire.JSON.readTree(r.readLine());
                boolean ints = "int".equals(head.path("keys").asText());
                boolean timed = head.path("time").asBoolean(false);
                String line;
                long i = 0;
                while ((line = r.readLine()) != null) {
                    if (i % n == me) {
                        String[] f = line.split("\t");
                        rows.add(new Object[] {key(f[0], ints), key(f[1], ints)});
                        tids.add(i);
                        if (timed) {
                            hs.add(Double.parseDouble(f[2]));
                        }
                    }
                    i++;
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            if (!hs.isEmpty()) {
                hours = new double[hs.size()];
                double t0 = hs.get(0);
                for (int k = 0; k < hours.length; k++) {
                    hours[k] = hs.get(k) - t0;
                }
            }
        }

        private static Object key(String s, boolean ints) {
            return ints ? (Object) Long.parseLong(s) : s;
        }

        @Override
        public void nextTuple() {
            node.poll();
            rep.tick();
            if (next >= rows.size()) {
                return;
            }
            if (pace != null && !pace.take()) {
                return;
            }
            if (speedup > 0 && hours != null
                && System.currentTimeMillis() - start < hours[next] * 3_600_000.0 / speedup) {
                return;
            }
            Object[] row = rows.get(next);
            long tid = tids.get(next);
            next++;
            inFlight.put(tid, row);
            rep.add("emitted", 1);
            if (hours != null) {
                rep.max("data_hours", hours[next - 1]);
            }
            node.onData(tid, List.of(row[0], row[1]), tid, null, -1);
        }

        @Override
        public void ack(Object msgId) {
            inFlight.remove(msgId);
            rep.add("acked", 1);
            node.poll(); // at max.spout.pending Storm calls ack, not nextTuple
        }

        @Override
        public void fail(Object msgId) {
            rep.add("failed", 1);
            Object[] row = inFlight.get(msgId);
            if (row != null) { // at-least-once: route again with the tables in force
                node.onData((Long) msgId, List.of(row[0], row[1]), msgId, null, -1);
            }
        }

        @Override
        public void close() {
            node.close();
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {
            d.declareStream("data", new Fields("tid", "k1", "k2", "ts"));
            d.declareStream(ProtocolTask.CTL, true, ProtocolTask.CTL_FIELDS);
        }
    }

    /** A or B: counts its key (the keyed state that migrates) and runs the protocol. */
    public static class Counter extends BaseRichBolt {
        private final boolean last;
        private OutputCollector out;
        private ProtocolTask node;
        private byte[] pad;

        public Counter(boolean last) {
            this.last = last;
        }

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext ctx, OutputCollector collector) {
            out = collector;
            pad = Bench.payload((int) Bench.num(conf, "locality.padding", 0), 7);
            node = new ProtocolTask(conf, ctx, new ProtocolTask.Emitter() {
                @Override
                public void data(String succ, long tid, List<Object> fields, Object handle, Object value) {
                    Tuple in = (Tuple) handle;
                    out.emit("data", in, new Values(tid, fields.get(0), fields.get(1), in.getLongByField("ts"), pad, value));
                }

                @Override
                public void direct(int task, List<Object> values) {
                    out.emitDirect(task, ProtocolTask.CTL, values);
                }

                @Override
                public void processed(Object handle, Object key, Object value) {
                    Tuple in = (Tuple) handle;
                    if (last && key != null) {
                        out.emit("sink", in, new Values(in.getValueByField("k1"), in.getValueByField("aval"), key, value,
                            in.getLongByField("ts")));
                    }
                    out.ack(in);
                }
            });
        }

        @Override
        public void execute(Tuple t) {
            node.poll();
            if (TupleUtils.isTick(t)) {
                return;
            }
            if (ProtocolTask.CTL.equals(t.getSourceStreamId())) {
                node.onCtl(t);
                out.ack(t);
                return;
            }
            String src = t.getSourceComponent();
            node.onData(t.getLongByField("tid"), List.of(Keys.norm(t.getValueByField("k1")), Keys.norm(t.getValueByField("k2"))),
                t, src, node.indexOf(src, t.getSourceTask()));
        }

        @Override
        public void cleanup() {
            node.close();
        }

        @Override
        public Map<String, Object> getComponentConfiguration() {
            Map<String, Object> c = new HashMap<>();
            c.put(Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS, 1);
            return c;
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer d) {
            if (last) {
                d.declareStream("sink", new Fields("k1", "aval", "k2", "bval", "ts"));
            } else {
                d.declareStream("data", new Fields("tid", "k1", "k2", "ts", "pad", "aval"));
            }
            d.declareStream(ProtocolTask.CTL, true, ProtocolTask.CTL_FIELDS);
        }
    }

    /** The sink: per-key checks of A's and B's counts, throughput per second. */
    public static class CountSink extends BaseRichBolt {
        private OutputCollector out;
        private Bench.Reporter rep;
        private final Map<String, Map<Object, long[]>> keys = new TreeMap<>();
        private final TreeMap<Long, Long> perSecond = new TreeMap<>();
        private Path file;
        private long count;
        private long written = -1;
        private long nextWrite;

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext ctx, OutputCollector collector) {
            out = collector;
            rep = new Bench.Reporter(conf, "sink", ctx.getStormId(), ctx.getThisComponentId(), ctx.getThisTaskId());
            Object dir = conf.get("locality.out");
            file = dir == null ? null : Paths.get(dir.toString(), "sink-" + ctx.getThisTaskId() + ".json");
            keys.put("A", new HashMap<>());
            keys.put("B", new HashMap<>());
        }

        private void see(String op, Object key, Object value) {
            long v = ((Number) value).longValue();
            long[] s = keys.get(op).computeIfAbsent(key, k -> new long[3]);
            s[0]++;
            s[1] = Math.max(s[1], v);
            s[2] += v;
        }

        @Override
        public void execute(Tuple t) {
            long now = System.currentTimeMillis();
            if (!TupleUtils.isTick(t)) {
                see("A", t.getValue(0), t.getValue(1));
                see("B", t.getValue(2), t.getValue(3));
                count++;
                perSecond.merge(now / 1000, 1L, Long::sum);
                double lat = now - t.getLong(4);
                rep.add("count", 1);
                rep.add("latency_sum_ms", lat);
                rep.max("latency_max_ms", lat);
                out.ack(t);
            }
            rep.tick();
            if (file != null && now >= nextWrite && count != written) {
                nextWrite = now + 1000;
                write();
            }
        }

        private void write() {
            Map<String, Object> doc = new TreeMap<>();
            doc.put("count", count);
            Map<String, Object> ks = new TreeMap<>();
            keys.forEach((op, m) -> {
                List<Object> rows = new ArrayList<>();
                m.forEach((k, s) -> rows.add(List.of(k, s[0], s[1], s[2])));
                ks.put(op, rows);
            });
            doc.put("keys", ks);
            Map<String, Object> ps = new TreeMap<>();
            perSecond.forEach((s, c) -> ps.put(String.valueOf(s), c));
            doc.put("per_second", ps);
            try {
                Files.createDirectories(file.getParent());
                Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
                try (Writer w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
                    w.write(Json.write(doc));
                }
                Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                written = count;
            } catch (IOException e) {
                // the next second tries again
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
        }
    }
}
