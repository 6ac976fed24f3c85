package streamband.storm.locality;

/**
 * One message of the reconfiguration protocol (003 §3.4, Fig. 6), as in {@code
 * streamband.locality.transport.Message}: kind, sender, destination, epoch, the sender's
 * sequence number towards this destination, and a payload whose type depends on the kind
 * (see {@link Wire}).
 */
public final class Message {
    public static final String DATA = "DATA";
    public static final String GET_METRICS = "GET_METRICS";
    public static final String SEND_METRICS = "SEND_METRICS";
    public static final String SEND_RECONF = "SEND_RECONF";
    public static final String ACK_RECONF = "ACK_RECONF";
    public static final String PROPAGATE = "PROPAGATE";
    public static final String MIGRATE = "MIGRATE";
    public static final String DONE = "DONE";
    public static final String ABORT = "ABORT";
    public static final String MANAGER = "manager";
    public static final String INPUT = "input";

    public final String kind;
    public final String src;
    public final String dst;
    public final long epoch;
    public final long seq;
    public final Object payload;

    public Message(String kind, String src, String dst, long epoch, long seq, Object payload) {
        this.kind = kind;
        this.src = src;
        this.dst = dst;
        this.epoch = epoch;
        this.seq = seq;
        this.payload = payload;
    }

    @Override
    public String toString() {
        return kind + " " + src + "->" + dst + " epoch " + epoch + " seq " + seq;
    }
}
