package streamband.storm.topo;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.storm.tuple.Tuple;

/**
 * A join's own store, joining its inputs on event time: every tuple waits until each input's
 * watermark (the oldest of its sending tasks' latest event times) has reached the tuple's
 * event time, then leaves in event-time order, so the join sees its inputs merged as they
 * happened. What waits is what the join cannot use yet for want of the other input: problem
 * (4)'s receiver backlog, which Storm's back-pressure does not see (the tuples have left the
 * receive queue).
 *
 * <p>{@link #sample} (the flow reporter's thread, every second) gives per input the tuples
 * and bytes waiting, its watermark, and {@code lag_ms}: how far its watermark is behind the
 * join's frontier, the newest input watermark (0 for the input ahead). When the store holds
 * more than {@code maxBytes}, its oldest tuple leaves before its time ({@code forced}), so
 * the worker keeps its heap whatever the imbalance.
 */
public final class JoinStore {
    /** One held tuple: its input, event time, bytes; {@code forced} once it left before its
     * time (past the store's bound, before every input's watermark reached it). */
    public static final class Held {
        public final String input;
        public final Tuple tuple;
        public final long ts;
        final long bytes;
        final long seq;
        public boolean forced;

        Held(String input, Tuple tuple, long ts, long bytes, long seq) {
            this.input = input;
            this.tuple = tuple;
            this.ts = ts;
            this.bytes = bytes;
            this.seq = seq;
        }
    }

    /** One input's watermark and what of it waits. */
    static final class Input {
        final int tasks;
        // read by the reporter's thread too
        final Map<Integer, Long> latest = new ConcurrentHashMap<>();
        volatile long watermark = Long.MIN_VALUE;
        final AtomicLong tuples = new AtomicLong();
        final AtomicLong bytes = new AtomicLong();

        Input(int tasks) {
            this.tasks = tasks;
        }
    }

    private final Map<String, Input> inputs = new LinkedHashMap<>();
    private final PriorityQueue<Held> waiting = new PriorityQueue<>((a, b) ->
        a.ts != b.ts ? Long.compare(a.ts, b.ts) : Long.compare(a.seq, b.seq));
    private final long maxBytes;
    private long held;
    private long seq;
    private final AtomicLong forced = new AtomicLong();

    /** {@code inputs}: each input's name and how many tasks send it. */
    public JoinStore(Map<String, Integer> inputs, long maxBytes) {
        inputs.forEach((name, tasks) -> this.inputs.put(name, new Input(tasks)));
        this.maxBytes = maxBytes;
    }

    /** Holds {@code t} of {@code input}, sent by {@code task}, of event time {@code ts}. */
    public void add(String input, int task, Tuple t, long ts, long bytes) {
        Input in = inputs.get(input);
        in.latest.merge(task, ts, Math::max);
        if (in.latest.size() >= in.tasks) {
            long wm = Long.MAX_VALUE;
            for (long v : in.latest.values()) {
                wm = Math.min(wm, v);
            }
            in.watermark = wm;
        }
        waiting.add(new Held(input, t, ts, bytes, seq++));
        in.tuples.incrementAndGet();
        in.bytes.addAndGet(bytes);
        held += bytes;
    }

    /** The oldest held tuple every input's watermark has reached (or, over the store's
     * bound, the oldest held tuple), or null. */
    public Held next() {
        Held h = waiting.peek();
        if (h == null) {
            return null;
        }
        long wm = Long.MAX_VALUE;
        for (Input in : inputs.values()) {
            wm = Math.min(wm, in.watermark);
        }
        if (h.ts > wm) {
            if (held <= maxBytes) {
                return null;
            }
            forced.incrementAndGet();
            h.forced = true;
        }
        waiting.poll();
        Input in = inputs.get(h.input);
        in.tuples.decrementAndGet();
        in.bytes.addAndGet(-h.bytes);
        held -= h.bytes;
        return h;
    }

    /** {@code {"inputs": {INPUT: {tuples, bytes, watermark_ms, lag_ms, tasks}}, "forced": n}},
     * {@code tasks} each sending task's latest event time (ms): safe to call from another
     * thread (each number is current; together they may be a tuple apart). */
    public Map<String, Object> sample() {
        Map<String, long[]> each = new LinkedHashMap<>();
        inputs.forEach((name, in) -> each.put(name, new long[] {in.tuples.get(), in.bytes.get(), in.watermark}));
        Map<String, Object> out = describe(each, forced.get());
        @SuppressWarnings("unchecked")
        Map<String, Map<String, Object>> described = (Map<String, Map<String, Object>>) out.get("inputs");
        inputs.forEach((name, in) -> described.get(name).put("tasks", new TreeMap<>(in.latest)));
        return out;
    }

    /** The report of a store: per input {tuples, bytes, watermark (Long.MIN_VALUE: none yet)}. */
    static Map<String, Object> describe(Map<String, long[]> inputs, long forced) {
        long frontier = Long.MIN_VALUE;
        for (long[] in : inputs.values()) {
            frontier = Math.max(frontier, in[2]);
        }
        Map<String, Object> each = new TreeMap<>();
        for (Map.Entry<String, long[]> e : inputs.entrySet()) {
            long wm = e.getValue()[2];
            Map<String, Object> m = new TreeMap<>();
            m.put("tuples", e.getValue()[0]);
            m.put("bytes", e.getValue()[1]);
            m.put("watermark_ms", wm == Long.MIN_VALUE ? null : wm);
            m.put("lag_ms", wm == Long.MIN_VALUE ? null : frontier - wm);
            each.put(e.getKey(), m);
        }
        Map<String, Object> out = new TreeMap<>();
        out.put("inputs", each);
        out.put("forced", forced);
        return out;
    }
}
