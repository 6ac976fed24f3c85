package streamband.storm;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.storm.generated.ClusterSummary;
import org.apache.storm.generated.ExecutorSummary;
import org.apache.storm.generated.SupervisorSummary;
import org.apache.storm.generated.KillOptions;
import org.apache.storm.generated.Nimbus;
import org.apache.storm.generated.RebalanceOptions;
import org.apache.storm.generated.TopologyInfo;
import org.apache.storm.generated.TopologySummary;
import org.apache.storm.utils.NimbusClient;
import org.apache.storm.utils.Utils;

/**
 * Nimbus over Thrift for the Python backend, one JSON document on stdout per call:
 * {@code list}; {@code info NAME} (the placement: every executor's component, task range,
 * host and slot port); {@code kill NAME [WAIT_S]}; {@code rebalance NAME [WAIT_S]}.
 */
public final class Admin {
    private Admin() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: Admin list | info NAME | kill NAME [WAIT_S] | rebalance NAME [WAIT_S]");
            System.exit(2);
        }
        Map<String, Object> conf = Utils.readStormConfig();
        try (NimbusClient nc = NimbusClient.getConfiguredClient(conf)) {
            Nimbus.Iface c = nc.getClient();
            Map<String, Object> out = new TreeMap<>();
            int wait = args.length > 2 ? Integer.parseInt(args[2]) : 0;
            switch (args[0]) {
                case "list": {
                    List<Object> tops = new ArrayList<>();
                    ClusterSummary cs = c.getClusterInfo();
                    List<Object> sups = new ArrayList<>();
                    for (SupervisorSummary s : cs.get_supervisors()) {
                        Map<String, Object> t = new TreeMap<>();
                        t.put("host", s.get_host());
                        t.put("slots", s.get_num_workers());
                        t.put("used", s.get_num_used_workers());
                        sups.add(t);
                    }
                    out.put("supervisors", sups);
                    for (TopologySummary s : cs.get_topologies()) {
                        Map<String, Object> t = new TreeMap<>();
                        t.put("id", s.get_id());
                        t.put("name", s.get_name());
                        t.put("status", s.get_status());
                        t.put("workers", s.get_num_workers());
                        tops.add(t);
                    }
                    out.put("topologies", tops);
                    break;
                }
                case "info": {
                    TopologyInfo ti = c.getTopologyInfoByName(args[1]);
                    out.put("id", ti.get_id());
                    out.put("name", ti.get_name());
                    out.put("status", ti.get_status());
                    out.put("sched_status", ti.get_sched_status());
                    List<Object> ex = new ArrayList<>();
                    for (ExecutorSummary es : ti.get_executors()) {
                        Map<String, Object> e = new TreeMap<>();
                        e.put("component", es.get_component_id());
                        e.put("task_start", es.get_executor_info().get_task_start());
                        e.put("task_end", es.get_executor_info().get_task_end());
                        e.put("host", es.get_host());
                        e.put("port", es.get_port());
                        ex.add(e);
                    }
                    out.put("executors", ex);
                    break;
                }
                case "kill": {
                    KillOptions ko = new KillOptions();
                    ko.set_wait_secs(wait);
                    c.killTopologyWithOpts(args[1], ko);
                    out.put("killed", args[1]);
                    break;
                }
                case "rebalance": {
                    RebalanceOptions ro = new RebalanceOptions();
                    ro.set_wait_secs(wait);
                    c.rebalance(args[1], ro);
                    out.put("rebalanced", args[1]);
                    break;
                }
                default:
                    System.err.println("Admin: unknown command " + args[0]);
                    System.exit(2);
            }
            System.out.println(Json.write(out));
        }
    }
}
