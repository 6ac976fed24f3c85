package streamband.storm.locality;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Messages as JSON, the format of {@code streamband.locality.wire} (one object per message:
 * kind, src, dst, epoch, seq, payload). Payload types: DATA a {@link Data}; SEND_RECONF a
 * {@link Reconf}; MIGRATE a map key -> state; SEND_METRICS the JSON as the instance built
 * it; the others null.
 */
public final class Wire {
    public static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    /** A data tuple as the protocol sees it: its id and its fields (keys normalised). */
    public record Data(long tid, List<Object> fields) {
    }

    private Wire() {
    }

    public static ObjectNode toJson(Message m) {
        ObjectNode o = F.objectNode();
        o.put("kind", m.kind);
        o.put("src", m.src);
        o.put("dst", m.dst);
        o.put("epoch", m.epoch);
        o.put("seq", m.seq);
        o.set("payload", payload(m.kind, m.payload));
        return o;
    }

    public static String dumps(Message m) {
        return toJson(m).toString();
    }

    public static Message loads(String line) {
        try {
            return fromJson(JSON.readTree(line));
        } catch (IOException e) {
            throw new IllegalArgumentException("not a protocol message: " + e.getMessage(), e);
        }
    }

    @SuppressWarnings("unchecked")
    static JsonNode payload(String kind, Object p) {
        if (p == null) {
            return F.nullNode();
        }
        switch (kind) {
            case Message.DATA: {
                Data d = (Data) p;
                ArrayNode a = F.arrayNode().add(d.tid());
                ArrayNode fs = a.addArray();
                for (Object x : d.fields()) {
                    fs.add(Keys.toJson(x));
                }
                return a;
            }
            case Message.SEND_RECONF: {
                Reconf r = (Reconf) p;
                ObjectNode o = F.objectNode();
                o.put("epoch", r.epoch);
                ObjectNode router = o.putObject("router");
                r.router.forEach((op, t) -> router.set(op, t.toJson()));
                o.set("send", keyLists(r.send));
                o.set("receive", keyLists(r.receive));
                return o;
            }
            case Message.MIGRATE: {
                ArrayNode a = F.arrayNode();
                ((Map<Object, Object>) p).forEach((k, v) -> a.addArray().add(Keys.toJson(k)).add(Keys.toJson(v)));
                return a;
            }
            default:
                return p instanceof JsonNode ? (JsonNode) p : JSON.valueToTree(p);
        }
    }

    private static ObjectNode keyLists(Map<String, List<Object>> m) {
        ObjectNode o = F.objectNode();
        m.forEach((inst, keys) -> {
            ArrayNode a = o.putArray(inst);
            keys.forEach(k -> a.add(Keys.toJson(k)));
        });
        return o;
    }

    private static LinkedHashMap<String, List<Object>> keyLists(JsonNode n) {
        LinkedHashMap<String, List<Object>> out = new LinkedHashMap<>();
        n.fields().forEachRemaining(e -> {
            List<Object> ks = new ArrayList<>();
            e.getValue().forEach(k -> ks.add(Keys.fromJson(k)));
            out.put(e.getKey(), ks);
        });
        return out;
    }

    public static Message fromJson(JsonNode o) {
        String kind = o.get("kind").textValue();
        JsonNode p = o.get("payload");
        Object payload = null;
        if (p != null && !p.isNull()) {
            switch (kind) {
                case Message.DATA: {
                    List<Object> fs = new ArrayList<>();
                    p.get(1).forEach(x -> fs.add(Keys.fromJson(x)));
                    payload = new Data(p.get(0).longValue(), fs);
                    break;
                }
                case Message.SEND_RECONF: {
                    Map<String, RoutingTable> router = new LinkedHashMap<>();
                    p.get("router").fields().forEachRemaining(e -> router.put(e.getKey(), RoutingTable.fromJson(e.getValue())));
                    payload = new Reconf(p.get("epoch").longValue(), router, keyLists(p.get("send")),
                        keyLists(p.get("receive")));
                    break;
                }
                case Message.MIGRATE: {
                    LinkedHashMap<Object, Object> states = new LinkedHashMap<>();
                    p.forEach(kv -> states.put(Keys.fromJson(kv.get(0)), Keys.fromJson(kv.get(1))));
                    payload = states;
                    break;
                }
                default:
                    payload = p;
            }
        }
        return new Message(kind, o.get("src").textValue(), o.get("dst").textValue(),
            o.path("epoch").longValue(), o.path("seq").longValue(), payload);
    }
}
