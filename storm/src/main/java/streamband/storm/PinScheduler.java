package streamband.storm;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.storm.generated.StormTopology;
import org.apache.storm.metric.StormMetricsRegistry;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.EvenScheduler;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.IScheduler;
import org.apache.storm.scheduler.SupervisorDetails;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;
import org.apache.storm.scheduler.WorkerSlot;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Pins each executor of a topology to the host its placement names, one executor per
 * worker (000 §IV: an instance pair between two machines is one network flow; in Storm
 * a flow is one worker-to-worker TCP connection).
 *
 * <p>The placement is in the topology conf: {@code streamband.placement} maps a component
 * to the list of hosts of its executors (in task order; the host is the supervisor's
 * {@code storm.local.hostname}). With {@code streamband.placement.shared: true} the executors
 * placed on one host share one worker instead (003 §4.1: the instances on one server exchange
 * tuples in memory). Storm's own executors (ackers, event loggers) share the
 * worker of the first executor of {@code streamband.system.with} (default: the first
 * spout), so acking crosses the network only as the acks of remote bolts to that worker.
 * Topologies without a placement are scheduled by Storm's default scheduler.
 */
public class PinScheduler implements IScheduler {
    public static final String PLACEMENT = "streamband.placement";
    public static final String SYSTEM_WITH = "streamband.system.with";
    public static final String SHARED = "streamband.placement.shared";
    private static final Logger LOG = LoggerFactory.getLogger(PinScheduler.class);

    @Override
    public void prepare(Map<String, Object> conf, StormMetricsRegistry metricsRegistry) {
    }

    @Override
    public Map config() {
        return new HashMap<>();
    }

    @Override
    public void schedule(Topologies topologies, Cluster cluster) {
        for (TopologyDetails td : cluster.needsSchedulingTopologies()) {
            if (td.getConf().get(PLACEMENT) instanceof Map) {
                // a pinned topology is placed whole: a lost worker frees all its slots
                cluster.freeSlots(new ArrayList<>(cluster.getUsedSlotsByTopologyId(td.getId())));
                String err = pin(td, cluster);
                if (err != null) {
                    LOG.warn("streamband placement of {}: {}", td.getName(), err);
                    cluster.setStatus(td, "streamband placement: " + err);
                }
            } else {
                EvenScheduler.scheduleTopologiesEvenly(new Topologies(td), cluster);
            }
        }
    }

    /** Assigns the topology's executors; returns why it cannot, or null. */
    @SuppressWarnings("unchecked")
    static String pin(TopologyDetails td, Cluster cluster) {
        Map<String, Object> placement = (Map<String, Object>) td.getConf().get(PLACEMENT);
        Map<String, List<ExecutorDetails>> byComp = new HashMap<>();
        for (Map.Entry<ExecutorDetails, String> e : td.getExecutorToComponent().entrySet()) {
            byComp.computeIfAbsent(e.getValue(), k -> new ArrayList<>()).add(e.getKey());
        }
        for (List<ExecutorDetails> l : byComp.values()) {
            l.sort((a, b) -> Integer.compare(a.getStartTask(), b.getStartTask()));
        }
        // every executor of a placed component gets its own slot on its host
        Map<ExecutorDetails, WorkerSlot> slotOf = new HashMap<>();
        Map<WorkerSlot, List<ExecutorDetails>> plan = new HashMap<>();
        Map<String, List<WorkerSlot>> free = new HashMap<>();
        boolean shared = Boolean.parseBoolean(String.valueOf(td.getConf().get(SHARED)));
        Map<String, WorkerSlot> hostSlot = new HashMap<>();
        for (Map.Entry<String, Object> e : placement.entrySet()) {
            List<ExecutorDetails> execs = byComp.get(e.getKey());
            List<Object> hosts = (List<Object>) e.getValue();
            if (execs == null) {
                return "component " + e.getKey() + " is not in the topology";
            }
            if (execs.size() != hosts.size()) {
                return "component " + e.getKey() + " has " + execs.size() + " executors, placement names "
                    + hosts.size() + " hosts";
            }
            for (int i = 0; i < execs.size(); i++) {
                String host = hosts.get(i).toString();
                List<WorkerSlot> slots = free.computeIfAbsent(host, h -> freeSlots(cluster, h));
                WorkerSlot s = shared ? hostSlot.get(host) : null;
                if (s == null) {
                    if (slots.isEmpty()) {
                        return "no free slot on host " + host;
                    }
                    s = slots.remove(0);
                    hostSlot.put(host, s);
                }
                slotOf.put(execs.get(i), s);
                plan.computeIfAbsent(s, k -> new ArrayList<>()).add(execs.get(i));
            }
        }
        StormTopology topo = td.getTopology();
        String with = (String) td.getConf().get(SYSTEM_WITH);
        if (with == null && topo.get_spouts() != null && !topo.get_spouts().isEmpty()) {
            with = new java.util.TreeSet<>(topo.get_spouts().keySet()).first();
        }
        WorkerSlot home = with != null && byComp.containsKey(with) ? slotOf.get(byComp.get(with).get(0)) : null;
        for (Map.Entry<String, List<ExecutorDetails>> e : byComp.entrySet()) {
            if (placement.containsKey(e.getKey())) {
                continue;
            }
            if (!e.getKey().startsWith("__")) {
                return "component " + e.getKey() + " has no placement";
            }
            if (home == null) {
                return "no worker for Storm's own executors (" + e.getKey() + ")";
            }
            plan.get(home).addAll(e.getValue());
        }
        for (Map.Entry<WorkerSlot, List<ExecutorDetails>> e : plan.entrySet()) {
            cluster.assign(e.getKey(), td.getId(), e.getValue());
        }
        cluster.setStatus(td, "pinned by streamband: " + plan.size() + " workers");
        return null;
    }

    static List<WorkerSlot> freeSlots(Cluster cluster, String host) {
        List<WorkerSlot> out = new ArrayList<>();
        List<SupervisorDetails> sups = cluster.getSupervisorsByHost(host);
        if (sups == null) {
            return out;
        }
        for (SupervisorDetails s : sups) {
            out.addAll(cluster.getAvailableSlots(s));
        }
        out.sort((a, b) -> Integer.compare(a.getPort(), b.getPort()));
        return out;
    }
}
