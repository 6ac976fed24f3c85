package streamband.flink.jobs;

import java.io.Serializable;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What waits in a join's own state for want of another input, per input: tuples, bytes, the
 * input's latest event time and, where the records name their sending subtask, each one's;
 * reported every second as the operator gauge {@code
 * streamband-store} (the format of the Storm side's {@code JoinStore}), which the flow reporter
 * picks up: problem (4)'s receiver backlog, which Flink's network queues do not see.
 */
final class Store implements Serializable {
    private static final long serialVersionUID = 1L;
    private final Map<String, AtomicLong[]> inputs = new LinkedHashMap<>(); // {tuples, bytes, latest ts}
    private final Map<String, Map<Integer, AtomicLong>> tasks = new LinkedHashMap<>(); // latest ts per sender

    Store(String... names) {
        for (String n : names) {
            inputs.put(n, new AtomicLong[] {new AtomicLong(), new AtomicLong(), new AtomicLong(Long.MIN_VALUE)});
            tasks.put(n, new ConcurrentHashMap<>());
        }
    }

    void seen(String input, long ts) {
        inputs.get(input)[2].accumulateAndGet(ts, Math::max);
    }

    /** A record of event time {@code ts} from subtask {@code task} of {@code input}. */
    void seen(String input, int task, long ts) {
        seen(input, ts);
        tasks.get(input).computeIfAbsent(task, k -> new AtomicLong(Long.MIN_VALUE)).accumulateAndGet(ts, Math::max);
    }

    void hold(String input, long bytes) {
        inputs.get(input)[0].incrementAndGet();
        inputs.get(input)[1].addAndGet(bytes);
    }

    void release(String input, long bytes) {
        inputs.get(input)[0].decrementAndGet();
        inputs.get(input)[1].addAndGet(-bytes);
    }

    /**
     * {@code {"inputs": {INPUT: {tuples, bytes, watermark_ms, lag_ms[, tasks: {SUBTASK: ms}]}},
     * "forced": 0}}.
     */
    Map<String, Object> sample() {
        long frontier = Long.MIN_VALUE;
        for (AtomicLong[] in : inputs.values()) {
            frontier = Math.max(frontier, in[2].get());
        }
        Map<String, Object> each = new TreeMap<>();
        for (Map.Entry<String, AtomicLong[]> e : inputs.entrySet()) {
            long wm = e.getValue()[2].get();
            Map<String, Object> m = new TreeMap<>();
            m.put("tuples", e.getValue()[0].get());
            m.put("bytes", e.getValue()[1].get());
            m.put("watermark_ms", wm == Long.MIN_VALUE ? null : wm);
            m.put("lag_ms", wm == Long.MIN_VALUE ? null : frontier - wm);
            Map<String, Long> senders = new TreeMap<>();
            tasks.get(e.getKey()).forEach((task, ts) -> senders.put(Integer.toString(task), ts.get()));
            if (!senders.isEmpty()) {
                m.put("tasks", senders);
            }
            each.put(e.getKey(), m);
        }
        Map<String, Object> out = new TreeMap<>();
        out.put("inputs", each);
        out.put("forced", 0);
        return out;
    }
}
