package streamband.storm.locality;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The shape of a keyed dataflow as the protocol sees it (003 §2.1, §3.1), read from the
 * JSON of {@code streamband.locality.dataflow.Dataflow}: {@code {"ops": [[name,
 * parallelism, key_field or null], ...], "edges": [[src, dst], ...]}}, operators in
 * topological order.
 */
public final class Flow {
    /** One operator: a source when {@code keyField < 0}. */
    public record Op(String name, int parallelism, int keyField) {
        public boolean keyed() {
            return keyField >= 0;
        }
    }

    private final Map<String, Op> ops = new LinkedHashMap<>();
    private final List<String[]> edges = new ArrayList<>();

    public static Flow parse(String json) {
        try {
            return fromJson(new ObjectMapper().readTree(json));
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("locality flow: " + e.getMessage(), e);
        }
    }

    public static Flow fromJson(JsonNode n) {
        Flow f = new Flow();
        for (JsonNode o : n.get("ops")) {
            JsonNode k = o.get(2);
            f.ops.put(o.get(0).textValue(),
                new Op(o.get(0).textValue(), o.get(1).intValue(), k == null || k.isNull() ? -1 : k.intValue()));
        }
        for (JsonNode e : n.get("edges")) {
            f.edges.add(new String[] {e.get(0).textValue(), e.get(1).textValue()});
        }
        return f;
    }

    public Op op(String name) {
        Op o = ops.get(name);
        if (o == null) {
            throw new IllegalArgumentException("locality flow: no operator " + name);
        }
        return o;
    }

    public List<String> successors(String op) {
        List<String> out = new ArrayList<>();
        for (String[] e : edges) {
            if (e[0].equals(op)) {
                out.add(e[1]);
            }
        }
        return out;
    }

    public List<String> predecessors(String op) {
        List<String> out = new ArrayList<>();
        for (String[] e : edges) {
            if (e[1].equals(op)) {
                out.add(e[0]);
            }
        }
        return out;
    }

    public static String instance(String op, int index) {
        return op + "[" + index + "]";
    }

    /** Operator and index of an instance id {@code "op[i]"}. */
    public static Map.Entry<String, Integer> split(String iid) {
        int i = iid.lastIndexOf('[');
        return Map.entry(iid.substring(0, i), Integer.parseInt(iid.substring(i + 1, iid.length() - 1)));
    }

    public List<String> instances(String op) {
        List<String> out = new ArrayList<>();
        Op o = op(op);
        for (int i = 0; i < o.parallelism(); i++) {
            out.add(instance(op, i));
        }
        return out;
    }
}
