package streamband.storm.locality;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * An instance's end of the protocol's TCP transport ({@code streamband.locality.tcp}): it
 * appends its messages to the manager's inbox on the log server, and a reader thread
 * long-polls the instance's own inbox from its offset into a queue that the executor's thread
 * drains (Storm's collectors are not thread-safe, and the protocol runs on the executor's
 * thread). A lost connection is reopened; an append is retried until the server has it.
 */
public final class HubClient implements AutoCloseable {
    private final String host;
    private final int port;
    private final String node;
    private final ConcurrentLinkedQueue<Message> inbox = new ConcurrentLinkedQueue<>();
    private final Thread reader;
    private volatile boolean closed;
    private Conn writer;
    private long offset;

    /** A request-response connection (one JSON line each way). */
    private static final class Conn implements AutoCloseable {
        final Socket sock;
        final OutputStream out;
        final BufferedReader in;

        Conn(String host, int port) throws IOException {
            sock = new Socket();
            sock.setTcpNoDelay(true);
            sock.connect(new InetSocketAddress(host, port), 5000);
            sock.setSoTimeout(60_000);
            out = sock.getOutputStream();
            in = new BufferedReader(new InputStreamReader(sock.getInputStream(), StandardCharsets.UTF_8));
        }

        JsonNode call(ObjectNode req) throws IOException {
            out.write((req.toString() + "\n").getBytes(StandardCharsets.UTF_8));
            out.flush();
            String line = in.readLine();
            if (line == null) {
                throw new IOException("log server closed the connection");
            }
            JsonNode r = Wire.JSON.readTree(line);
            if (r.has("error")) {
                throw new IOException("log server: " + r.get("error").asText());
            }
            return r;
        }

        @Override
        public void close() {
            try {
                sock.close();
            } catch (IOException e) {
                // closing
            }
        }
    }

    public HubClient(String address, String node) {
        int i = address.lastIndexOf(':');
        this.host = address.substring(0, i);
        this.port = Integer.parseInt(address.substring(i + 1));
        this.node = node;
        this.reader = new Thread(this::readLoop, "streamband-hub-" + node);
        this.reader.setDaemon(true);
        this.reader.start();
    }

    /** The next message for this node, or null. */
    public Message poll() {
        return inbox.poll();
    }

    /** Appends {@code m} to its destination's inbox (blocks until the server has it). */
    public synchronized void send(Message m) {
        ObjectNode req = Wire.JSON.createObjectNode();
        req.put("op", "append");
        ArrayNode a = req.putArray("msgs");
        a.add(Wire.toJson(m));
        long backoff = 50;
        while (!closed) {
            try {
                if (writer == null) {
                    writer = new Conn(host, port);
                }
                writer.call(req);
                return;
            } catch (IOException e) {
                if (writer != null) {
                    writer.close();
                    writer = null;
                }
                sleep(backoff);
                backoff = Math.min(backoff * 2, 1000);
            }
        }
    }

    private void readLoop() {
        Conn c = null;
        while (!closed) {
            try {
                if (c == null) {
                    c = new Conn(host, port);
                }
                ObjectNode req = Wire.JSON.createObjectNode();
                req.put("op", "read");
                req.put("node", node);
                req.put("offset", offset);
                req.put("max", 1000);
                req.put("wait", 1.0);
                JsonNode r = c.call(req);
                for (JsonNode m : r.get("msgs")) {
                    inbox.add(Wire.fromJson(m));
                    offset++;
                }
            } catch (IOException | RuntimeException e) {
                if (c != null) {
                    c.close();
                    c = null;
                }
                sleep(200);
            }
        }
        if (c != null) {
            c.close();
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        closed = true;
        reader.interrupt();
        synchronized (this) {
            if (writer != null) {
                writer.close();
            }
        }
    }
}
