package streamband.storm;

import java.io.IOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * Reports leave the worker as UDP datagrams to the manager's collector ("host:port"),
 * outside Storm's data path (000 §V-A2: the application profiler feeds the manager).
 */
public final class Udp implements AutoCloseable {
    public static final String MANAGER = "streamband.manager";

    private final DatagramSocket socket;
    private final InetSocketAddress target;

    public Udp(String hostPort) throws IOException {
        int i = hostPort.lastIndexOf(':');
        this.target = new InetSocketAddress(hostPort.substring(0, i), Integer.parseInt(hostPort.substring(i + 1)));
        this.socket = new DatagramSocket();
    }

    /** The collector named in the topology (or cluster) conf, or null when there is none. */
    public static Udp fromConf(Map<String, Object> conf) {
        Object m = conf.get(MANAGER);
        if (m == null || m.toString().isEmpty()) {
            return null;
        }
        try {
            return new Udp(m.toString());
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    public void send(Map<String, Object> record) {
        byte[] b = Json.write(record).getBytes(StandardCharsets.UTF_8);
        try {
            socket.send(new DatagramPacket(b, b.length, target));
        } catch (IOException e) {
            // a lost report is a missing sample, never an error of the topology
        }
    }

    @Override
    public void close() {
        socket.close();
    }
}
