package streamband.storm.locality;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Tuple;
import org.apache.storm.tuple.Values;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import streamband.storm.Udp;

/**
 * A Storm task (spout or bolt) running one protocol {@link Instance} (003 §3.4): it carries the
 * instance's messages to the manager over the TCP transport ({@link HubClient}) and to other
 * instances in-band, on the task's direct stream {@code ctl} (so ⑤ follows, on the same FIFO
 * channel, every tuple routed with the old table); it hands the manager's messages to the
 * instance on the executor's thread; it reports the instance's counters once a second to the
 * manager's collector (type {@code locality}).
 *
 * <p>Settings (topology conf): {@code locality.flow} (the dataflow's JSON), {@code
 * locality.hub} (the log server, host:port), {@code locality.memory_bytes} (SpaceSaving's memory
 * per summary, 1 MB by default), {@code locality.decay} (0: statistics restart at every
 * reconfiguration; 0 &lt; d &lt; 1: past statistics weigh d instead, the opt-in extension), {@code
 * streamband.placement} (component -> hosts, to tell local
 * from remote inputs).
 */
public final class ProtocolTask implements Instance.Out {
    public static final String CTL = "ctl";
    public static final Fields CTL_FIELDS = new Fields("kind", "src", "epoch", "seq", "payload");
    private static final Logger LOG = LoggerFactory.getLogger(ProtocolTask.class);

    /** What the task does with the instance's output. */
    public interface Emitter {
        void data(String succ, long tid, List<Object> fields, Object handle, Object value);

        void direct(int task, List<Object> values);

        void processed(Object handle, Object key, Object value);
    }

    public final Instance inst;
    private final HubClient hub;
    private final Emitter em;
    private final TopologyContext ctx;
    private final Map<String, List<Integer>> tasks = new HashMap<>();
    private final Map<String, List<String>> hosts = new HashMap<>();
    private final String myHost;
    private final Udp udp;
    private final Map<String, Object> base = new TreeMap<>();
    private long nextReport = System.currentTimeMillis() + 1000;
    public long localIn;
    public long remoteIn;
    public long errors;

    @SuppressWarnings("unchecked")
    public ProtocolTask(Map<String, Object> conf, TopologyContext ctx, Emitter em) {
        this.ctx = ctx;
        this.em = em;
        Flow flow = Flow.parse(String.valueOf(conf.get("locality.flow")));
        String op = ctx.getThisComponentId();
        int index = ctx.getComponentTasks(op).indexOf(ctx.getThisTaskId());
        String iid = Flow.instance(op, index);
        long mem = (long) num(conf.get("locality.memory_bytes"), 1 << 20);
        this.inst = new Instance(iid, flow, Map.of(), this, mem, num(conf.get("locality.decay"), 0.0));
        Object pl = conf.get("streamband.placement");
        if (pl instanceof Map) {
            ((Map<String, Object>) pl).forEach((c, hs) -> {
                List<String> l = new ArrayList<>();
                ((List<Object>) hs).forEach(h -> l.add(String.valueOf(h)));
                hosts.put(c, l);
            });
        }
        this.myHost = hostOf(op, index);
        Routes.register(ctx.getThisTaskId(), inst);
        this.hub = new HubClient(String.valueOf(conf.get("locality.hub")), iid);
        this.udp = Udp.fromConf(conf);
        base.put("type", "locality");
        base.put("topology", ctx.getStormId());
        base.put("component", op);
        base.put("task", ctx.getThisTaskId());
        base.put("iid", iid);
    }

    static double num(Object v, double dflt) {
        return v instanceof Number ? ((Number) v).doubleValue() : v == null ? dflt : Double.parseDouble(v.toString());
    }

    private String hostOf(String component, int index) {
        List<String> l = hosts.get(component);
        return l != null && index < l.size() ? l.get(index) : null;
    }

    private List<Integer> tasksOf(String op) {
        return tasks.computeIfAbsent(op, ctx::getComponentTasks);
    }

    /** The manager's messages that arrived since the last call, handled in order. */
    public void poll() {
        Message m;
        while ((m = hub.poll()) != null) {
            deliver(m, null);
        }
        report();
    }

    private void deliver(Message m, Object handle) {
        try {
            inst.deliver(m, handle);
        } catch (Instance.ProtocolError e) {
            errors++;
            LOG.error("streamband locality protocol: {}", e.getMessage());
        }
    }

    /** A tuple of a {@code ctl} stream: ⑤ or ⑥ from another instance. */
    public void onCtl(Tuple t) {
        String payload = t.getString(4);
        String json = String.format("{\"kind\":%s,\"src\":%s,\"dst\":%s,\"epoch\":%d,\"seq\":%d,\"payload\":%s}",
            quote(t.getString(0)), quote(t.getString(1)), quote(inst.iid), t.getLong(2), t.getLong(3),
            payload == null ? "null" : payload);
        deliver(Wire.loads(json), null);
    }

    /** A data tuple; {@code srcComponent}/{@code srcIndex} tell whether it crossed the network. */
    public void onData(long tid, List<Object> fields, Object handle, String srcComponent, int srcIndex) {
        if (srcComponent != null && myHost != null) {
            if (myHost.equals(hostOf(srcComponent, srcIndex))) {
                localIn++;
            } else {
                remoteIn++;
            }
        }
        try {
            inst.onData(tid, fields, handle);
        } catch (Instance.ProtocolError e) {
            errors++;
            LOG.error("streamband locality protocol: {}", e.getMessage());
            em.processed(handle, null, null);
        }
    }

    public int indexOf(String component, int task) {
        return tasksOf(component).indexOf(task);
    }

    // -- Instance.Out ------------------------------------------------------------------------
    @Override
    public void send(Message m) {
        if (Message.MANAGER.equals(m.dst)) {
            hub.send(m);
            return;
        }
        Map.Entry<String, Integer> d = Flow.split(m.dst);
        String payload = m.payload == null ? null : Wire.payload(m.kind, m.payload).toString();
        em.direct(tasksOf(d.getKey()).get(d.getValue()), new Values(m.kind, m.src, m.epoch, m.seq, payload));
    }

    @Override
    public void emit(String succ, int dest, long seq, long tid, List<Object> fields, Object handle, Object value) {
        Routes.expect(dest);
        try {
            em.data(succ, tid, fields, handle, value);
        } finally {
            Routes.expect(-1);
        }
    }

    @Override
    public void processed(Object handle, Object key, Object value) {
        em.processed(handle, key, value);
    }

    // -- reports -----------------------------------------------------------------------------
    private void report() {
        long now = System.currentTimeMillis();
        if (udp == null || now < nextReport) {
            return;
        }
        nextReport = now + 1000;
        Map<String, Object> rec = new TreeMap<>(base);
        rec.put("t", now / 1000.0);
        rec.put("processed", inst.processedCount);
        rec.put("buffered", inst.buffered());
        rec.put("errors", errors);
        rec.put("local_in", localIn);
        rec.put("remote_in", remoteIn);
        rec.put("applied", inst.applied());
        rec.put("phase", inst.phase().name());
        rec.put("grouping_mismatches", LocalityAwareGrouping.mismatches());
        Map<String, Object> eps = new TreeMap<>();
        inst.epochs.forEach((e, s) -> {
            Map<String, Object> x = new TreeMap<>();
            x.put("prepared", s.prepared);
            x.put("switched", s.switched);
            x.put("done", s.done);
            x.put("buffered_peak", s.bufferedPeak);
            x.put("keys_in", s.keysIn);
            x.put("keys_out", s.keysOut);
            x.put("last_migrate_in", s.lastMigrateIn);
            eps.put(String.valueOf(e), x);
        });
        rec.put("epochs", eps);
        udp.send(rec);
    }

    public void close() {
        Routes.unregister(ctx.getThisTaskId());
        hub.close();
        if (udp != null) {
            udp.close();
        }
    }

    private static String quote(String s) {
        return Wire.JSON.getNodeFactory().textNode(s).toString();
    }
}
