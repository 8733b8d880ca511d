package dev.levee.limiter;

import dev.levee.config.QuotaSource;
import dev.levee.core.GcraTable;
import dev.levee.lease.RequestLeaseWire;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The meters of a limiter ({@code GET /metrics}): its gauges of the key table, the configuration and the
 * membership, registered once, and the decision counters by result and level, registered on first use. Every
 * meter carries the tag {@code limiter=<id>} but the decision and lease counters.
 */
final class LimiterMetrics {

    private final MeterRegistry registry;
    private final Map<String, Map<String, Counter>> counters = new ConcurrentHashMap<>();
    private final Map<String, Map<String, Counter>> shadowCounters = new ConcurrentHashMap<>();
    /** The results of a request-lease ask besides {@link RequestLeaseWire}'s reasons. */
    static final String GRANTED = "granted";
    static final String INVALID = "invalid";
    /**
     * Request-lease asks ({@code POST /v1/lease}) by result ({@link #GRANTED}, {@link RequestLeaseWire#NOT_LEASABLE},
     * {@link RequestLeaseWire#FENCED}, {@link RequestLeaseWire#REFUSED}, {@link #INVALID}), each registered at once so
     * that a scrape shows its 0.
     */
    final Map<String, Counter> leaseAsks;
    /** Conformance slots granted in request leases. */
    final Counter leaseSlots;
    /** Checks per {@code POST /v1/checks} batch or wire frame (the warm-up's aside). */
    final DistributionSummary batchSizes;

    /**
     * Registers the limiter's gauges (their objects are held by the limiter: Micrometer keeps weak references).
     *
     * @param service    the limiter (its keys lost to a restart, {@link LimiterService#lostKeys()})
     * @param heartbeats its heartbeats (whether they reach the observer)
     */
    LimiterMetrics(MeterRegistry registry, String id, long maxKeys, GcraTable table, QuotaSource config,
                   LimiterService service, Heartbeats heartbeats) {
        this.registry = registry;
        Gauge.builder("levee_limiter_observer_unreachable", heartbeats, h -> h.reachable() ? 0 : 1)
                .description("1 while heartbeats do not reach the observer: clients may not list this limiter")
                .tag("limiter", id).register(registry);
        Gauge.builder("levee_limiter_keys", table, GcraTable::size).description("limit keys held")
                .tag("limiter", id).register(registry);
        FunctionCounter.builder("levee_limiter_key_evictions_total", table, GcraTable::evictions)
                .description("keys evicted by the table's cap while in use (each restarts with one burst)")
                .tag("limiter", id).register(registry);
        FunctionCounter.builder("levee_limiter_key_expirations_total", table, GcraTable::expirations)
                .description("idle keys dropped once their state equalled a fresh key's")
                .tag("limiter", id).register(registry);
        FunctionCounter.builder("levee_limiter_key_table_rebuilds_total", table, GcraTable::rebuilds)
                .description("rebuilds of the key table once a flood of keys had left it mostly empty (releases its arrays)")
                .tag("limiter", id).register(registry);
        Gauge.builder("levee_limiter_key_slots_max", table, t -> maxKeys)
                .description("cap of the key table in key slots of 256 bytes (--max-keys)")
                .tag("limiter", id).register(registry);
        FunctionCounter.builder("levee_config_rejected_updates_total", config, QuotaSource::rejectedUpdates)
                .description("configuration updates refused as invalid (last good configuration kept)")
                .tag("limiter", id).register(registry);
        this.batchSizes = DistributionSummary.builder("levee_limiter_batch_checks")
                .description("checks per POST /v1/checks batch").baseUnit("checks").tag("limiter", id)
                .register(registry);
        Gauge.builder("levee_config_revision", config, QuotaSource::revision)
                .description("revision of the configuration in force").tag("limiter", id).register(registry);
        Gauge.builder("levee_config_invalid_keys", config, c -> c.invalidKeys().size())
                .description("keys in etcd whose value is refused (each keeps its last good value, or none; /health names"
                        + " them)").tag("limiter", id).register(registry);
        Gauge.builder("levee_config_usable", config, c -> c.usable() ? 1 : 0)
                .description("0 while no configuration can be built (a key every decision needs is invalid and no"
                        + " earlier value is known): the limiter refuses everything and does not join the membership")
                .tag("limiter", id).register(registry);
        Map<String, Counter> asks = new java.util.HashMap<>();
        for (String r : new String[] {GRANTED, RequestLeaseWire.NOT_LEASABLE, RequestLeaseWire.FENCED,
                RequestLeaseWire.REFUSED, RequestLeaseWire.QUOTAS_DIFFER, INVALID}) {
            asks.put(r, Counter.builder("levee_limiter_lease_asks_total")
                    .description("request-lease asks (POST /v1/lease) by result: granted, not_leasable, fenced (within"
                            + " the restart fence), refused (no slot free yet), quotas_differ (the client resolves the"
                            + " bucket with other quotas), invalid (400)")
                    .tag("result", r).register(registry));
        }
        this.leaseAsks = Map.copyOf(asks);
        this.leaseSlots = Counter.builder("levee_limiter_lease_slots_total")
                .description("conformance slots granted in request leases (each admits at most one request at a"
                        + " client; slots unused at the end of their window are lost)").register(registry);
        FunctionCounter.builder("levee_limiter_state_lost_keys_total", service, LimiterService::lostKeys)
                .description("keys first seen within one refill horizon (tau + T) after this limiter started: any state an"
                        + " earlier incarnation held for them was lost, and they began with a full burst (an upper bound)")
                .tag("limiter", id).register(registry);
    }

    /** Counts one check's outcome with the level of the quota that produced it ({@code none}: no quota). */
    void count(String result, String level) {
        Map<String, Counter> byLevel = counters.get(result);
        Counter c = byLevel == null ? null : byLevel.get(level);
        if (c != null) {
            c.increment(); // the usual case: no lambda, no allocation
            return;
        }
        byLevel = counters.computeIfAbsent(result, r -> new ConcurrentHashMap<>());
        byLevel.computeIfAbsent(level, k -> Counter.builder("levee_limiter_decisions_total")
                .description("decisions by result (accepted, rejected, would_reject: admitted although the shadow quota"
                        + " refused; invalid, failed) and matched quota level, one per check")
                .tag("result", result).tag("level", level).register(registry)).increment();
    }

    /** Counts one decision of a shadow quota (accepted, would_reject) with its level. */
    void countShadow(String result, String level) {
        Map<String, Counter> known = shadowCounters.get(result);
        Counter c = known == null ? null : known.get(level);
        if (c != null) {
            c.increment();
            return;
        }
        Map<String, Counter> byLevel = shadowCounters.computeIfAbsent(result, r -> new ConcurrentHashMap<>());
        byLevel.computeIfAbsent(level, k -> Counter.builder("levee_limiter_shadow_decisions_total")
                .description("decisions of shadow quotas by result (accepted, would_reject) and level; the requests"
                        + " were admitted unless an enforced quota refused them")
                .tag("result", result).tag("level", level).register(registry)).increment();
    }
}
