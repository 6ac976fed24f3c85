package streamband.flink.reporter;

import java.util.Properties;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;

/** Flink's entry to the {@link FlowReporter} ({@code metrics.reporter.NAME.factory.class}). */
public class FlowReporterFactory implements MetricReporterFactory {
    @Override
    public MetricReporter createMetricReporter(Properties properties) {
        return new FlowReporter();
    }
}
