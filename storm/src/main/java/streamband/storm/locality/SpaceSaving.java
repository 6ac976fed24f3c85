package streamband.storm.locality;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * SpaceSaving (Metwally et al. 2005) in bounded memory, one item at a time: what every
 * stateful instance counts (003 §3.2, Fig. 4), its keys or its (input key, output key)
 * pairs. Counters are kept in buckets of equal count (the stream-summary), so an update and
 * an eviction of the minimum cost O(log distinct counts). Capacity: {@code memoryBytes / 24}
 * counters, as on the Python side (item, count and error of 8 bytes each).
 */
public final class SpaceSaving {
    public static final int ENTRY_BYTES = 24;
    /** The unit of a tuple's count after the first {@link #decay} (and the rescaling factor). */
    public static final long DECAY_UNIT = 16;

    /** One monitored item with its estimated count and maximal over-count. */
    public static final class Counter {
        public final Object item;
        public long count;
        public long error;

        Counter(Object item, long count, long error) {
            this.item = item;
            this.count = count;
            this.error = error;
        }
    }

    private final int capacity;
    private final Map<Object, Counter> counters = new HashMap<>();
    private final TreeMap<Long, LinkedHashSet<Counter>> buckets = new TreeMap<>();
    private long n;
    private long unit = 1;
    private double unitF = 1.0;

    public SpaceSaving(long memoryBytes) {
        this.capacity = (int) Math.max(1, memoryBytes / ENTRY_BYTES);
    }

    public int capacity() {
        return capacity;
    }

    public long total() {
        return n;
    }

    public int size() {
        return counters.size();
    }

    public void add(Object item) {
        n += unit;
        Counter c = counters.get(item);
        if (c != null) {
            move(c, c.count + unit);
            return;
        }
        if (counters.size() < capacity) {
            c = new Counter(item, unit, 0);
            counters.put(item, c);
            buckets.computeIfAbsent(unit, k -> new LinkedHashSet<>()).add(c);
            return;
        }
        // replace an item of minimal count mu: the newcomer counts mu + unit, error mu
        Map.Entry<Long, LinkedHashSet<Counter>> min = buckets.firstEntry();
        Iterator<Counter> it = min.getValue().iterator();
        Counter old = it.next();
        counters.remove(old.item);
        Counter fresh = new Counter(item, old.count, old.count);
        it.remove();
        min.getValue().add(fresh);
        counters.put(item, fresh);
        move(fresh, fresh.count + unit);
    }

    private void move(Counter c, long to) {
        LinkedHashSet<Counter> from = buckets.get(c.count);
        from.remove(c);
        if (from.isEmpty()) {
            buckets.remove(c.count);
        }
        c.count = to;
        buckets.computeIfAbsent(to, k -> new LinkedHashSet<>()).add(c);
    }

    /** Monitored items, most frequent first. */
    public List<Counter> top() {
        List<Counter> out = new ArrayList<>(counters.size());
        for (LinkedHashSet<Counter> b : buckets.descendingMap().values()) {
            out.addAll(b);
        }
        return out;
    }

    public void reset() {
        counters.clear();
        buckets.clear();
        n = 0;
        unit = 1;
        unitF = 1.0;
    }

    /** Past counts weigh {@code keep} (0 &lt; keep &lt; 1) of what they did: the opt-in decay
     * that replaces the reset of 003 §3.2 (an extension beyond 003), exact in integers as
     * {@code SpaceSaving.decay} of the Python side: tuples to come count {@code unit} (from
     * {@link #DECAY_UNIT} on, growing by 1/keep), and when it reaches DECAY_UNIT² every count,
     * error and the unit are divided by DECAY_UNIT (items left at zero are forgotten). */
    public void decay(double keep) {
        if (!(keep > 0.0 && keep < 1.0)) {
            throw new IllegalArgumentException("SpaceSaving.decay: keep must be in (0, 1), got " + keep);
        }
        long mul = 1;
        long div = 1;
        if (unitF == 1.0) {
            mul = DECAY_UNIT;
            unitF = DECAY_UNIT;
        }
        unitF /= keep;
        if (unitF >= DECAY_UNIT * DECAY_UNIT) {
            div = DECAY_UNIT;
            unitF /= DECAY_UNIT;
        }
        if (mul != 1 || div != 1) {
            List<Counter> all = new ArrayList<>(counters.values());
            long seen = n * mul / div;
            counters.clear();
            buckets.clear();
            n = seen;
            for (Counter c : all) {
                long cnt = c.count * mul / div;
                if (cnt > 0) {
                    Counter h = new Counter(c.item, cnt, c.error * mul / div);
                    counters.put(c.item, h);
                    buckets.computeIfAbsent(cnt, k -> new LinkedHashSet<>()).add(h);
                }
            }
        }
        unit = (long) Math.floor(unitF + 0.5);
    }

    /** A pair of keys, (input key, output key). */
    public record Pair(Object a, Object b) {
    }
}
