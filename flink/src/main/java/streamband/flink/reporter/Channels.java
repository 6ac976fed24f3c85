package streamband.flink.reporter;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A task's channels as the reporter sends them: per result partition its subpartitions
 * (bytes written, bytes handed to Netty, buffers queued), per input gate its channels (the
 * producer, its data address, what is queued here and what the producer announced).
 */
final class Channels {
    private Channels() {
    }

    /** {@code ResultPartition[]}: per partition {ds, p, sub: [[written, sent, queued], ...]}. */
    static List<Object> partitions(Object array) {
        List<Object> out = new ArrayList<>();
        if (!(array instanceof Object[])) {
            return out;
        }
        for (Object rp : (Object[]) array) {
            Object id = Peek.call(rp, "getPartitionId");
            Object irp = Peek.call(id, "getPartitionId");
            Object[] subs = asArray(Peek.field(rp, "subpartitions"));
            Object counter = Peek.call(rp, "getResultPartitionBytes");
            Object snap = Peek.call(counter, "createSnapshot");
            Object written = Peek.call(snap, "getSubpartitionBytes");
            long[] w = written instanceof long[] ? (long[]) written : new long[0];
            List<Object> each = new ArrayList<>();
            for (int s = 0; s < subs.length; s++) {
                each.add(Arrays.asList(s < w.length && w[s] >= 0 ? (Long) w[s] : null,
                    Peek.num(subs[s], "getTotalNumberOfBytesUnsafe"),
                    Peek.num(subs[s], "unsynchronizedGetNumberOfQueuedBuffers"),
                    Peek.num(subs[s], "getTotalNumberOfBuffersUnsafe")));
            }
            Map<String, Object> m = new TreeMap<>();
            m.put("ds", String.valueOf(Peek.call(irp, "getIntermediateDataSetID")));
            m.put("p", Peek.num(irp, "getPartitionNumber"));
            m.put("sub", each);
            out.add(m);
        }
        return out;
    }

    /** {@code SingleInputGate[]}: per gate {ds, gate, ch: [...]}. */
    static List<Object> gates(Object array) {
        List<Object> out = new ArrayList<>();
        if (!(array instanceof Object[])) {
            return out;
        }
        for (Object gate : (Object[]) array) {
            Object[] channels = asArray(Peek.field(gate, "channels"));
            List<Object> each = new ArrayList<>();
            for (Object ch : channels) {
                each.add(channel(ch));
            }
            Map<String, Object> m = new TreeMap<>();
            m.put("ds", String.valueOf(Peek.field(gate, "consumedResultId")));
            m.put("gate", Peek.num(gate, "getGateIndex"));
            m.put("ch", each);
            out.add(m);
        }
        return out;
    }

    /** One input channel: its producer (data set partition number, subpartitions), its
     * producer's data address when remote, and its queues. */
    static Map<String, Object> channel(Object ch) {
        Map<String, Object> m = new TreeMap<>();
        Object id = Peek.call(ch, "getPartitionId");
        m.put("p", Peek.num(Peek.call(id, "getPartitionId"), "getPartitionNumber"));
        Object range = Peek.call(ch, "getConsumedSubpartitionIndexSet");
        m.put("s", Arrays.asList(Peek.num(range, "getStartIndex"), Peek.num(range, "getEndIndex")));
        String kind = ch == null ? "?" : ch.getClass().getSimpleName();
        m.put("kind", kind.replace("InputChannel", "").toLowerCase());
        Object conn = Peek.field(ch, "connectionId");
        Object addr = Peek.call(conn, "getAddress");
        if (addr instanceof InetSocketAddress) {
            InetSocketAddress a = (InetSocketAddress) addr;
            m.put("from", a.getAddress().getHostAddress() + ":" + a.getPort());
            m.put("conn", Peek.num(conn, "getConnectionIndex"));
        }
        if (kind.equals("RemoteInputChannel")) {
            m.put("queued", Peek.num(ch, "unsynchronizedGetNumberOfQueuedBuffers"));
            m.put("queued_bytes", Peek.num(ch, "unsynchronizedGetSizeOfQueuedBuffers"));
            m.put("backlog", Peek.num(ch, "getSenderBacklog"));
            m.put("credit", Peek.num(ch, "getNumberOfAvailableBuffers"));
            m.put("received", Peek.field(ch, "expectedSequenceNumber"));
        }
        return m;
    }

    private static Object[] asArray(Object o) {
        return o instanceof Object[] ? (Object[]) o : new Object[0];
    }
}
