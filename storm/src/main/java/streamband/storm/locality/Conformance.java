package streamband.storm.locality;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Replays instances' inputs through {@link Instance} and prints what they send, so that the
 * Python reference ({@code streamband.locality.reconfig.Instance}) can be compared with it
 * message by message. Standard input, one JSON object a line: per instance, {@code {"iid",
 * "flow", "tables": {op: table}, "memory_bytes", "decay"}}, one protocol message a line, then
 * {@code {"end": true}}. Standard output: {@code {"in": i, "out": message}} for every message
 * sent while handling input i, {@code {"in": i, "error": text}} at a protocol error (the
 * instance's later inputs are ignored), {@code {"final": ...}} (phase, applied epoch, keyed
 * state, buffered tuple ids) at its end.
 *
 * <p>It also answers {@code {"hash": [[key, op, parallelism], ...]}} with the hash-fallback
 * instance of every key, one JSON array on one line.
 */
public final class Conformance {
    private Conformance() {
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        BufferedWriter w = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        Replay r = null;
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode n = Wire.JSON.readTree(line);
            if (n.has("hash")) {
                ArrayNode a = Wire.JSON.createArrayNode();
                for (JsonNode q : n.get("hash")) {
                    a.add(RoutingTable.hashRoute(Keys.fromJson(q.get(0)), q.get(1).textValue(), q.get(2).intValue()));
                }
                w.write(a.toString());
                w.newLine();
            } else if (n.has("iid")) {
                r = new Replay(n, w);
            } else if (n.has("end")) {
                if (r != null) {
                    r.finish();
                }
                r = null;
            } else if (r != null) {
                r.deliver(n);
            }
        }
        if (r != null) {
            r.finish();
        }
        w.flush();
    }

    /** One instance under replay. */
    private static final class Replay implements Instance.Out {
        private final BufferedWriter w;
        private final Instance inst;
        private int at;
        private boolean failed;

        Replay(JsonNode cfg, BufferedWriter w) {
            this.w = w;
            Map<String, RoutingTable> tables = new HashMap<>();
            cfg.get("tables").fields().forEachRemaining(e -> tables.put(e.getKey(), RoutingTable.fromJson(e.getValue())));
            inst = new Instance(cfg.get("iid").textValue(), Flow.fromJson(cfg.get("flow")), tables, this,
                cfg.path("memory_bytes").asLong(1 << 20), cfg.path("decay").asDouble(0.0));
        }

        void deliver(JsonNode msg) throws java.io.IOException {
            if (failed) {
                return;
            }
            try {
                inst.deliver(Wire.fromJson(msg), null);
            } catch (Instance.ProtocolError e) {
                ObjectNode o = Wire.JSON.createObjectNode();
                o.put("in", at);
                o.put("error", e.getMessage());
                w.write(o.toString());
                w.newLine();
                failed = true;
            }
            at++;
        }

        void finish() throws java.io.IOException {
            ObjectNode fin = Wire.JSON.createObjectNode();
            ObjectNode f = fin.putObject("final");
            f.put("phase", inst.phase().name());
            f.put("applied", inst.applied());
            ArrayNode st = f.putArray("state");
            inst.state().forEach((k, v) -> st.addArray().add(Keys.toJson(k)).add(Keys.toJson(v)));
            ArrayNode buf = f.putArray("buffer");
            inst.bufferedTids().forEach(buf::add);
            w.write(fin.toString());
            w.newLine();
        }

        @Override
        public void send(Message m) {
            write(w, at, Wire.toJson(m));
        }

        @Override
        public void emit(String succ, int dest, long seq, long tid, List<Object> fields, Object handle, Object value) {
            write(w, at, Wire.toJson(new Message(Message.DATA, inst.iid, Flow.instance(succ, dest), 0, seq,
                new Wire.Data(tid, fields))));
        }

        @Override
        public void processed(Object handle, Object key, Object value) {
        }
    }

    private static void write(BufferedWriter w, int in, ObjectNode msg) {
        ObjectNode o = Wire.JSON.createObjectNode();
        o.put("in", in);
        o.set("out", msg);
        try {
            w.write(o.toString());
            w.newLine();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
