package streamband.storm.locality;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.storm.generated.GlobalStreamId;
import org.apache.storm.grouping.CustomStreamGrouping;
import org.apache.storm.task.WorkerTopologyContext;

/**
 * 003's locality-aware fields grouping (§3.3): a key goes to the instance its routing table
 * names, any other key to the instance of the default hash (the same stable hash as the
 * manager's, {@link RoutingTable#hashRoute}). The tables are the sending task's protocol
 * instance's ({@link Routes}), switched by the protocol at run time; a sender without an
 * instance (or before it registers) routes by hash.
 *
 * <p>{@link #mismatches} counts tuples for which the grouping chose another instance than the
 * one the sending instance computed (its statistics and sequence numbers): zero when tables
 * and grouping agree, as they must.
 */
public class LocalityAwareGrouping implements CustomStreamGrouping {
    private static final long serialVersionUID = 1L;
    public static final AtomicLong MISMATCHES = new AtomicLong();

    private final String op;
    private final String field;
    private transient int keyIndex;
    private transient List<List<Integer>> choice;
    private transient RoutingTable hashOnly;

    /** Routes to operator {@code op} (the target component) by tuple field {@code field}. */
    public LocalityAwareGrouping(String op, String field) {
        this.op = op;
        this.field = field;
    }

    @Override
    public void prepare(WorkerTopologyContext context, GlobalStreamId stream, List<Integer> targetTasks) {
        keyIndex = context.getComponentOutputFields(stream).fieldIndex(field);
        List<Integer> sorted = new ArrayList<>(targetTasks);
        sorted.sort(null);
        choice = new ArrayList<>();
        for (Integer t : sorted) {
            choice.add(List.of(t));
        }
        hashOnly = RoutingTable.hash(op, sorted.size());
    }

    @Override
    public List<Integer> chooseTasks(int taskId, List<Object> values) {
        Object key = Keys.norm(values.get(keyIndex));
        Instance inst = Routes.of(taskId);
        RoutingTable t = inst != null ? inst.table(op) : null;
        int dest = (t != null ? t : hashOnly).route(key);
        int want = Routes.expected();
        if (want >= 0 && want != dest) {
            MISMATCHES.incrementAndGet();
        }
        return choice.get(dest);
    }

    public static long mismatches() {
        return MISMATCHES.get();
    }
}
