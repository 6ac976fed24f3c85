package streamband.storm.locality;

import java.util.concurrent.ConcurrentHashMap;

/**
 * Where a sending task's {@link LocalityAwareGrouping} finds the routing tables of the task's
 * protocol instance: the instance registers itself under its task id in the worker's JVM.
 * Storm has no control stream for groupings; this in-process channel is read on the very
 * thread that switches the tables (the executor's), so the switch falls between two emitted
 * tuples, right before the ⑤ that follows them on the same channel (003 §3.4).
 */
public final class Routes {
    private static final ConcurrentHashMap<Integer, Instance> BY_TASK = new ConcurrentHashMap<>();
    /** The destination the instance computed for the tuple being emitted (-1: none). */
    private static final ThreadLocal<int[]> EXPECT = ThreadLocal.withInitial(() -> new int[] {-1});

    private Routes() {
    }

    public static void register(int task, Instance inst) {
        BY_TASK.put(task, inst);
    }

    public static void unregister(int task) {
        BY_TASK.remove(task);
    }

    public static Instance of(int task) {
        return BY_TASK.get(task);
    }

    static void expect(int dest) {
        EXPECT.get()[0] = dest;
    }

    static int expected() {
        return EXPECT.get()[0];
    }
}
