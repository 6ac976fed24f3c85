package streamband.storm.locality;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.util.ArrayList;
import java.util.List;

/**
 * Keys as the protocol sees them: JSON strings or integers, one Java type each
 * ({@link String}, {@link Long}), so that a key read from a tuple, from a routing table and
 * from a migrated state compare equal.
 */
public final class Keys {
    private Keys() {
    }

    /** The key's canonical form: every integral number as a Long. */
    public static Object norm(Object k) {
        if (k instanceof Integer || k instanceof Short || k instanceof Byte) {
            return ((Number) k).longValue();
        }
        return k;
    }

    /** The text the stable hash reads: Python's {@code f"{key}"} for str and int keys. */
    public static String text(Object k) {
        return String.valueOf(k);
    }

    public static Object fromJson(JsonNode n) {
        if (n == null || n.isNull()) {
            return null;
        }
        if (n.isIntegralNumber()) {
            return n.longValue();
        }
        if (n.isTextual()) {
            return n.textValue();
        }
        if (n.isArray()) {
            List<Object> out = new ArrayList<>();
            n.forEach(x -> out.add(fromJson(x)));
            return out;
        }
        if (n.isNumber()) {
            return n.doubleValue();
        }
        if (n.isBoolean()) {
            return n.booleanValue();
        }
        throw new IllegalArgumentException("a key must be a JSON string, integer or array, got " + n);
    }

    public static JsonNode toJson(Object k) {
        JsonNodeFactory f = JsonNodeFactory.instance;
        if (k == null) {
            return f.nullNode();
        }
        if (k instanceof Long || k instanceof Integer) {
            return f.numberNode(((Number) k).longValue());
        }
        if (k instanceof Double) {
            return f.numberNode((Double) k);
        }
        if (k instanceof Boolean) {
            return f.booleanNode((Boolean) k);
        }
        if (k instanceof List) {
            var a = f.arrayNode();
            for (Object x : (List<?>) k) {
                a.add(toJson(x));
            }
            return a;
        }
        return f.textNode(k.toString());
    }
}
