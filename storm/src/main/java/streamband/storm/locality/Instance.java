package streamband.storm.locality;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The instance side of the reconfiguration protocol (003 §3.4, Algorithm 1, Fig. 6), a port
 * of {@code streamband.locality.reconfig.Instance}, which is the reference: the same states,
 * messages, sequence numbers and order of sends, checked by replaying the Python instances'
 * message traces through this class.
 *
 * <pre>
 * IDLE -③-> PREPARED -⑤ from all predecessors-> SWITCHED (routing updated, ⑥ sent)
 *      -⑥ from every sender-> IDLE (⑤ to successors, DONE to the manager)
 * </pre>
 *
 * <p>The stream is never paused: a tuple whose key's state is on its way (a key of the
 * {@code receive} list) is buffered, never dropped, and processed in arrival order once the
 * MIGRATE carrying the state has arrived. Its state is one counter per key (003 §4.1: each
 * operator counts the occurrences of its key). Everything runs on the caller's thread (in
 * Storm: the executor's), so the routing table switches between two emitted tuples, exactly
 * where ⑤ is emitted on the same channel.
 */
public final class Instance {
    public enum Phase { IDLE, PREPARED, SWITCHED }

    /** Where the instance's output goes. */
    public interface Out {
        /** A protocol message other than DATA. */
        void send(Message m);

        /** DATA: tuple {@code tid} to instance {@code dest} of {@code succ}; {@code value} is the
         * instance's state of the tuple's key after it (null at a source). */
        void emit(String succ, int dest, long seq, long tid, List<Object> fields, Object handle, Object value);

        /** One tuple processed: its key's state updated and its outputs emitted. */
        void processed(Object handle, Object key, Object value);
    }

    /** A message the protocol says cannot happen (a bug, never a condition). */
    public static final class ProtocolError extends RuntimeException {
        public ProtocolError(String what) {
            super(what);
        }
    }

    /** Timings and buffer peak of one reconfiguration at this instance (ms since the epoch). */
    public static final class EpochStats {
        public long prepared;
        public long switched;
        public long done;
        public int bufferedPeak;
        public int keysIn;
        public int keysOut;
        public long lastMigrateIn;
    }

    private record Buffered(long tid, List<Object> fields, Object handle) {
    }

    public final String iid;
    public final String op;
    public final int index;
    private final Flow flow;
    private final Flow.Op spec;
    private final List<String> successors;
    private final List<String> predecessors;
    private final Out out;
    private final long memoryBytes;
    private final double decay;

    // the protocol record (InstanceRecord on the Python side)
    private Phase phase = Phase.IDLE;
    private long applied;
    private Reconf pending;
    private Set<String> propagatedFrom = new LinkedHashSet<>();
    private Set<String> migratedFrom = new LinkedHashSet<>();
    private final Map<Object, String> waiting = new HashMap<>();
    private final Set<Object> gone = new HashSet<>();
    private List<Buffered> buffer = new ArrayList<>();
    private final Map<Object, Object> state = new HashMap<>();
    private Map<String, RoutingTable> tables = new LinkedHashMap<>();

    // the endpoint: sequence numbers per destination, last seen per sender
    private final Map<String, Long> nextSeq = new HashMap<>();
    private final Map<String, Long> lastSeq = new HashMap<>();
    private long generation;

    private final SpaceSaving keyStats;
    private final Map<String, SpaceSaving> pairStats = new LinkedHashMap<>();

    public long processedCount;
    public long protocolErrors;
    public final TreeMap<Long, EpochStats> epochs = new TreeMap<>();

    public Instance(String iid, Flow flow, Map<String, RoutingTable> initial, Out out, long memoryBytes,
                    double decay) {
        this.iid = iid;
        Map.Entry<String, Integer> oi = Flow.split(iid);
        this.op = oi.getKey();
        this.index = oi.getValue();
        this.flow = flow;
        this.spec = flow.op(op);
        this.out = out;
        this.memoryBytes = memoryBytes;
        this.decay = decay;
        this.successors = flow.successors(op);
        List<String> preds = new ArrayList<>();
        for (String p : flow.predecessors(op)) {
            preds.addAll(flow.instances(p));
        }
        this.predecessors = preds.isEmpty() ? List.of(Message.MANAGER) : preds;
        for (String s : successors) {
            RoutingTable t = initial.get(s);
            tables.put(s, t != null ? t : RoutingTable.hash(s, flow.op(s).parallelism()));
            if (flow.op(s).keyed()) {
                pairStats.put(s, new SpaceSaving(memoryBytes));
            }
        }
        this.keyStats = new SpaceSaving(memoryBytes);
    }

    // -- what the engine reads ------------------------------------------------------------
    public Phase phase() {
        return phase;
    }

    public long applied() {
        return applied;
    }

    public int buffered() {
        return buffer.size();
    }

    /** The table this instance routes {@code succ}'s keys with (what its grouping reads). */
    public RoutingTable table(String succ) {
        return tables.get(succ);
    }

    public Map<Object, Object> state() {
        return state;
    }

    public List<Long> bufferedTids() {
        List<Long> out = new ArrayList<>();
        buffer.forEach(b -> out.add(b.tid()));
        return out;
    }

    public Map<Object, String> waiting() {
        return waiting;
    }

    // -- the endpoint ----------------------------------------------------------------------
    private long seqFor(String dst) {
        long s = Math.max(nextSeq.getOrDefault(dst, 0L), generation << 32) + 1;
        nextSeq.put(dst, s);
        return s;
    }

    private void send(String kind, String dst, long epoch, Object payload) {
        out.send(new Message(kind, iid, dst, epoch, seqFor(dst), payload));
    }

    /** Handles {@code m} unless it is a duplicate (a sequence number already seen from its
     * sender); {@code handle} travels with a DATA message to {@link Out}. */
    public boolean deliver(Message m, Object handle) {
        if (m.seq != 0) {
            long last = lastSeq.getOrDefault(m.src, 0L);
            if (m.seq <= last) {
                return false;
            }
            lastSeq.put(m.src, m.seq);
        }
        handle(m, handle);
        return true;
    }

    public void handle(Message m, Object handle) {
        switch (m.kind) {
            case Message.DATA:
                Wire.Data d = (Wire.Data) m.payload;
                onData(d.tid(), d.fields(), handle);
                break;
            case Message.GET_METRICS:
                send(Message.SEND_METRICS, Message.MANAGER, m.epoch, metrics());
                break;
            case Message.SEND_RECONF:
                onReconf((Reconf) m.payload);
                break;
            case Message.PROPAGATE:
                onPropagate(m);
                break;
            case Message.MIGRATE:
                onMigrate(m);
                break;
            case Message.ABORT:
                onAbort(m);
                break;
            default:
                throw new ProtocolError(iid + ": unexpected " + m.kind + " from " + m.src);
        }
    }

    // -- data ------------------------------------------------------------------------------
    public void onData(long tid, List<Object> fields, Object handle) {
        if (!spec.keyed()) {
            emit(tid, fields, null, handle, null);
            return;
        }
        Object key = fields.get(spec.keyField());
        if (waiting.containsKey(key)) {
            buffer.add(new Buffered(tid, fields, handle)); // state not here yet: buffer, never drop
            EpochStats st = pending != null ? epochs.get(pending.epoch) : null;
            if (st != null) {
                st.bufferedPeak = Math.max(st.bufferedPeak, buffer.size());
            }
            return;
        }
        if (gone.contains(key)) {
            protocolErrors++;
            throw new ProtocolError(iid + ": tuple " + tid + " for key " + key + " after its state left");
        }
        process(tid, fields, handle);
    }

    private void process(long tid, List<Object> fields, Object handle) {
        Object key = fields.get(spec.keyField());
        Object old = state.get(key);
        Long value = (old == null ? 0L : (Long) old) + 1; // 003 §4.1: count the key's occurrences
        state.put(key, value);
        processedCount++;
        keyStats.add(key);
        emit(tid, fields, key, handle, value);
        out.processed(handle, key, value);
    }

    private void emit(long tid, List<Object> fields, Object inKey, Object handle, Object value) {
        for (String succ : successors) {
            Flow.Op s = flow.op(succ);
            Object outKey = fields.get(s.keyField());
            int dest = tables.get(succ).route(outKey);
            SpaceSaving ps = pairStats.get(succ);
            if (inKey != null && ps != null) {
                ps.add(new SpaceSaving.Pair(inKey, outKey));
            }
            String dst = Flow.instance(succ, dest);
            out.emit(succ, dest, seqFor(dst), tid, fields, handle, value);
        }
    }

    // -- ① ② statistics ----------------------------------------------------------------------
    /** Key and key-pair counts (003 Fig. 4). */
    public ObjectNode metrics() {
        JsonNodeFactory f = JsonNodeFactory.instance;
        ObjectNode o = f.objectNode();
        ArrayNode keys = o.putArray("keys");
        for (SpaceSaving.Counter c : keyStats.top()) {
            keys.addArray().add(Keys.toJson(c.item)).add(c.count);
        }
        ObjectNode pairs = o.putObject("pairs");
        pairStats.forEach((succ, ps) -> {
            ArrayNode a = pairs.putArray(succ);
            for (SpaceSaving.Counter c : ps.top()) {
                SpaceSaving.Pair p = (SpaceSaving.Pair) c.item;
                a.addArray().add(Keys.toJson(p.a())).add(Keys.toJson(p.b())).add(c.count);
            }
        });
        return o;
    }

    // -- ③ ④ ---------------------------------------------------------------------------------
    private void onReconf(Reconf r) {
        if (r.epoch <= applied || (pending != null && pending.epoch == r.epoch)) {
            send(Message.ACK_RECONF, Message.MANAGER, r.epoch, null); // a re-sent ③: re-acknowledge
            return;
        }
        if (pending != null) {
            throw new ProtocolError(iid + ": ③ for epoch " + r.epoch + " while " + pending.epoch + " runs");
        }
        pending = r;
        phase = Phase.PREPARED;
        propagatedFrom = new LinkedHashSet<>();
        migratedFrom = new LinkedHashSet<>();
        EpochStats st = new EpochStats();
        st.prepared = System.currentTimeMillis();
        epochs.put(r.epoch, st);
        while (epochs.size() > 64) {
            epochs.pollFirstEntry();
        }
        for (Map.Entry<String, List<Object>> e : r.receive.entrySet()) {
            for (Object k : e.getValue()) {
                waiting.put(k, e.getKey());
                gone.remove(k);
            }
            st.keysIn += e.getValue().size();
        }
        send(Message.ACK_RECONF, Message.MANAGER, r.epoch, null);
    }

    private void onAbort(Message m) {
        if (pending == null || pending.epoch != m.epoch) {
            return;
        }
        if (phase != Phase.PREPARED || !propagatedFrom.isEmpty()) {
            throw new ProtocolError(iid + ": ABORT of epoch " + m.epoch + " after it started");
        }
        pending = null;
        phase = Phase.IDLE;
        waiting.clear();
        drainBuffer();
    }

    // -- ⑤ ⑥ ---------------------------------------------------------------------------------
    private void onPropagate(Message m) {
        if (m.epoch <= applied) {
            return; // a duplicate from a restarted manager
        }
        if (pending == null || pending.epoch != m.epoch) {
            throw new ProtocolError(iid + ": ⑤ for epoch " + m.epoch + " before its ③");
        }
        propagatedFrom.add(m.src);
        if (phase == Phase.PREPARED && propagatedFrom.containsAll(predecessors)) {
            doSwitch();
        }
    }

    /** All predecessors route with the new tables: switch ours, hand over the states. */
    private void doSwitch() {
        Reconf r = pending;
        Map<String, RoutingTable> next = new LinkedHashMap<>();
        for (String s : successors) {
            next.put(s, r.router.get(s));
        }
        tables = next;
        EpochStats st = epochs.get(r.epoch);
        for (Map.Entry<String, List<Object>> e : r.send.entrySet()) {
            LinkedHashMap<Object, Object> states = new LinkedHashMap<>();
            for (Object k : e.getValue()) {
                states.put(k, state.remove(k));
                gone.add(k);
            }
            if (st != null) {
                st.keysOut += states.size();
            }
            send(Message.MIGRATE, e.getKey(), r.epoch, states);
        }
        phase = Phase.SWITCHED;
        if (st != null) {
            st.switched = System.currentTimeMillis();
        }
        maybeDone();
    }

    @SuppressWarnings("unchecked")
    private void onMigrate(Message m) {
        if (m.epoch <= applied) {
            return;
        }
        if (pending == null || pending.epoch != m.epoch) {
            throw new ProtocolError(iid + ": ⑥ for epoch " + m.epoch + " before its ③");
        }
        for (Map.Entry<Object, Object> e : ((Map<Object, Object>) m.payload).entrySet()) {
            Object k = e.getKey();
            if (e.getValue() != null && state.get(k) == null) {
                state.put(k, e.getValue()); // merge: the migrated state, unless one is here
            }
            if (m.src.equals(waiting.get(k))) {
                waiting.remove(k);
            }
        }
        migratedFrom.add(m.src);
        EpochStats st = epochs.get(m.epoch);
        if (st != null) {
            st.lastMigrateIn = System.currentTimeMillis();
        }
        drainBuffer();
        maybeDone();
    }

    private void drainBuffer() {
        if (buffer.isEmpty()) {
            return;
        }
        List<Buffered> keep = new ArrayList<>();
        List<Buffered> all = buffer;
        buffer = keep;
        for (Buffered b : all) {
            if (waiting.containsKey(b.fields().get(spec.keyField()))) {
                keep.add(b);
            } else {
                process(b.tid(), b.fields(), b.handle());
            }
        }
    }

    private void maybeDone() {
        Reconf r = pending;
        if (r == null || phase != Phase.SWITCHED) {
            return;
        }
        if (!migratedFrom.containsAll(r.receive.keySet())) {
            return;
        }
        applied = r.epoch;
        pending = null;
        phase = Phase.IDLE;
        propagatedFrom = new LinkedHashSet<>();
        migratedFrom = new LinkedHashSet<>();
        for (String succ : successors) {
            for (String i : flow.instances(succ)) {
                send(Message.PROPAGATE, i, r.epoch, null);
            }
        }
        send(Message.DONE, Message.MANAGER, r.epoch, null);
        EpochStats st = epochs.get(r.epoch);
        if (st != null) {
            st.done = System.currentTimeMillis();
        }
        // 003 §3.2: statistics restart after every reconfiguration (or, opted in, decay)
        for (SpaceSaving s : allStats()) {
            if (decay > 0) {
                s.decay(decay);
            } else {
                s.reset();
            }
        }
    }

    private List<SpaceSaving> allStats() {
        List<SpaceSaving> l = new ArrayList<>(pairStats.values());
        l.add(keyStats);
        return l;
    }
}
