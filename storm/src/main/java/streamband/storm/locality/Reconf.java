package streamband.storm.locality;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** What ③ carries to one instance (003 §3.4: reconfiguration_router, _send, _receive). */
public final class Reconf {
    public final long epoch;
    /** Tables of the instance's successor operators. */
    public final Map<String, RoutingTable> router;
    /** Destination instance -> keys whose state this instance sends. */
    public final LinkedHashMap<String, List<Object>> send;
    /** Source instance -> keys whose state this instance expects. */
    public final LinkedHashMap<String, List<Object>> receive;

    public Reconf(long epoch, Map<String, RoutingTable> router, LinkedHashMap<String, List<Object>> send,
                  LinkedHashMap<String, List<Object>> receive) {
        this.epoch = epoch;
        this.router = router;
        this.send = send;
        this.receive = receive;
    }
}
