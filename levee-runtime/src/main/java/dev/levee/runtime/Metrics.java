package dev.levee.runtime;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

/** Creates the Prometheus registry of a Levee process and renders it for {@code GET /metrics}. */
public final class Metrics {

    private Metrics() {
    }

    /**
     * Creates a registry with JVM and process meters bound, and {@code levee_log_lines_dropped_total}
     * ({@link LogDrops}).
     *
     * @return a new Prometheus registry
     */
    @SuppressWarnings("resource") // JvmGcMetrics lives as long as the process
    public static PrometheusMeterRegistry newRegistry() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        new JvmMemoryMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new JvmGcMetrics().bindTo(registry);
        io.micrometer.core.instrument.FunctionCounter.builder("levee_log_lines_dropped_total", LogDrops.class,
                        c -> LogDrops.dropped())
                .description("log lines dropped because the log target did not keep up (a full ring of "
                        + Logging.QUEUE_SIZE + " lines)")
                .register(registry);
        return registry;
    }

    /** Returns the Prometheus text exposition of {@code registry}, or "" for other registries. */
    public static String scrape(MeterRegistry registry) {
        return registry instanceof PrometheusMeterRegistry p ? p.scrape() : "";
    }
}
