package dev.levee.gateway;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * What a gateway counts: {@code levee_gateway_requests_total} by result, and the client faults that
 * {@code GET /health/ready} aggregates ({@link ReadyReport.ClientFaults}). Thread-safe.
 */
final class GatewayCounters {

    private final MeterRegistry registry;
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();
    final LongAdder headerTimeouts = new LongAdder();
    final LongAdder bodyTimeouts = new LongAdder();
    final LongAdder sendTimeouts = new LongAdder();
    final LongAdder malformedRequests = new LongAdder();
    final LongAdder connectionErrors = new LongAdder();

    GatewayCounters(MeterRegistry registry) {
        this.registry = registry;
    }

    /** Counts one request of result {@code what} (a tag of {@code levee_gateway_requests_total}). */
    void count(String what) {
        counters.computeIfAbsent(what, k -> Counter.builder("levee_gateway_requests_total")
                .description("gateway requests by check result").tag("result", what).register(registry)).increment();
    }

    /** Returns the client faults counted so far. */
    ReadyReport.ClientFaults clientFaults() {
        return new ReadyReport.ClientFaults(headerTimeouts.sum(), bodyTimeouts.sum(), sendTimeouts.sum(),
                malformedRequests.sum(), connectionErrors.sum());
    }
}
