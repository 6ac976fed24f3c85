package streamband.storm.locality;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.HashMap;
import java.util.Map;

/**
 * key -> instance index of one keyed operator, with hash fallback for every other key
 * (003 §3.3); the Java twin of {@code streamband.locality.routing_table.RoutingTable}, read
 * from the same JSON.
 */
public final class RoutingTable {
    public final String op;
    public final int parallelism;
    private final Map<Object, Integer> table;

    public RoutingTable(String op, int parallelism, Map<Object, Integer> table) {
        this.op = op;
        this.parallelism = parallelism;
        this.table = table;
    }

    public static RoutingTable hash(String op, int parallelism) {
        return new RoutingTable(op, parallelism, new HashMap<>());
    }

    /** The default fields grouping: the stable hash of the key salted by the operator. */
    public static int hashRoute(Object key, String op, int parallelism) {
        return (int) Long.remainderUnsigned(Blake2b.stableHash(key, op), parallelism);
    }

    public int route(Object key) {
        Integer i = table.get(key);
        return i != null ? i : hashRoute(key, op, parallelism);
    }

    public int size() {
        return table.size();
    }

    public static RoutingTable fromJson(JsonNode n) {
        Map<Object, Integer> t = new HashMap<>();
        for (JsonNode kv : n.get("table")) {
            t.put(Keys.fromJson(kv.get(0)), kv.get(1).intValue());
        }
        return new RoutingTable(n.get("op").textValue(), n.get("parallelism").intValue(), t);
    }

    public ObjectNode toJson() {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("op", op);
        o.put("parallelism", parallelism);
        var a = o.putArray("table");
        for (Map.Entry<Object, Integer> e : table.entrySet()) {
            a.addArray().add(Keys.toJson(e.getKey())).add(e.getValue());
        }
        return o;
    }
}
