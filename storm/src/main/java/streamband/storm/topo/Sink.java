package streamband.storm.topo;

import java.util.HashMap;
import java.util.Map;
import org.apache.storm.Config;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.tuple.Tuple;
import org.apache.storm.utils.TupleUtils;

/**
 * A benchmark's last operator: counts what reaches it (field {@code n}, default 1 per
 * tuple) and its event-time latency (now minus field {@code ts}), reported once a second.
 */
public class Sink extends BaseRichBolt {
    private OutputCollector out;
    private Bench.Reporter rep;

    @Override
    public void prepare(Map<String, Object> conf, TopologyContext ctx, OutputCollector collector) {
        out = collector;
        rep = new Bench.Reporter(conf, "sink", ctx.getStormId(), ctx.getThisComponentId(), ctx.getThisTaskId());
    }

    @Override
    public void execute(Tuple t) {
        if (!TupleUtils.isTick(t)) {
            double n = t.getFields().contains("n") ? ((Number) t.getValueByField("n")).doubleValue() : 1.0;
            if (n > 0) { // n 0: a join's output that does not count (let out before its time)
                rep.latency(System.currentTimeMillis() - t.getLongByField("ts"), n);
            }
            out.ack(t);
        }
        rep.tick();
    }

    @Override
    public Map<String, Object> getComponentConfiguration() {
        Map<String, Object> c = new HashMap<>();
        c.put(Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS, 1);
        return c;
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer d) {
    }
}
