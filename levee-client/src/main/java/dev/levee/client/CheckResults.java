package dev.levee.client;

import dev.levee.runtime.LogText;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What becomes of each check's result: counted in {@code levee_client_results_total{result}} (with the limiter
 * failures and queue events of the same counter) and logged as one line on {@code levee.client}, garbage-free
 * (docs/decisions.md, "Decision log lines without garbage"). Warm-up self-checks are neither counted nor logged.
 * Thread-safe.
 */
final class CheckResults {

    /**
     * The per-check result log: the {@code levee.client} logger through Log4j's own API, for its fixed-arity calls
     * (SLF4J's stop at two parameters, beyond which each line costs an array and boxed numbers).
     */
    private static final org.apache.logging.log4j.Logger DECISIONS = org.apache.logging.log4j.LogManager.getLogger("levee.client");

    /** The result line's format by {@link ClientDecision.Result} ordinal. */
    private static final String[] RESULT_LINES = java.util.Arrays.stream(ClientDecision.Result.values())
            .map(r -> "result=" + r.word() + " limiter={} resource={} key={} op={} level={} retry_after={} attempts={}{}{}")
            .toArray(String[]::new);

    /** The line of a check admitted from a request lease: the lease's id and the limiter that granted it. */
    private static final String LEASED_LINE = "result=accepted limiter={} resource={} key={} op={} level={} retry_after={}"
            + " attempts={} lease={} lease_limiter={}";
    /**
     * The line of a check admitted from a request lease that handed NGINX a batch of the lease's next slots: the
     * batch's label ({@link ClientDecision.Batch#label}, what NGINX's {@code $levee_lease} shows for each request it
     * admits from it), its slots and how long they stay usable.
     */
    private static final String BATCH_LINE = LEASED_LINE + " batch={} batch_slots={} batch_life_us={}";
    /** The line of a check refused while a held lease's next slot is not yet usable. */
    private static final String WAITING_LINE = "result=rejected limiter={} resource={} key={} op={} level={}"
            + " retry_after={} attempts={} lease=waiting";

    private final MeterRegistry registry;
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();

    CheckResults(MeterRegistry registry) {
        this.registry = registry;
    }

    /** Counts and logs a result decided by a limiter of the group, or by none. */
    ClientDecision done(ClientDecision d, String why) {
        return done(d, why, false);
    }

    /** Counts and logs a result; {@code spilled}: decided by a limiter beyond the group. */
    ClientDecision done(ClientDecision d, String why, boolean spilled) {
        if (dev.levee.runtime.Warmup.RESOURCE.equals(d.classification().resource())) {
            return d; // a warm-up self-check: neither counted nor logged, as on the limiters
        }
        count(d.result().word());
        if (DECISIONS.isInfoEnabled()) {
            // garbage-free: Log4j's fixed-arity call, the result word in the format, numbers through Unbox
            // (docs/decisions.md, "Decision log lines without garbage"); the line reads as it always did
            String suffix = spilled ? d.wouldReject() ? " spilled=true shadow=would_reject" : " spilled=true"
                    : d.wouldReject() ? " shadow=would_reject" : "";
            DECISIONS.info(RESULT_LINES[d.result().ordinal()], d.limiter() == null ? "-" : d.limiter(),
                    LogText.escape(d.classification().resource()), LogText.escape(d.classification().key()),
                    d.classification().operation(), d.level() == null ? "-" : d.level(),
                    org.apache.logging.log4j.util.Unbox.box(d.retryAfter()),
                    org.apache.logging.log4j.util.Unbox.box(d.attempts()), suffix,
                    why == null ? "" : " reason=" + LogText.escape(why, 400));
        }
        return d;
    }

    /**
     * Counts and logs a result decided from a request lease at the client ({@link LeaseAdmission}): the line of
     * {@link #done} (no reason, no shadow part: a shadow-matched check is never leased) ending in
     * {@code lease=<id> lease_limiter=<limiter id>} for an admission from {@code lease}, or {@code lease=waiting} for a
     * refusal while a held slot is not yet usable ({@code lease} null). Garbage-free as {@link #done}.
     */
    ClientDecision leased(ClientDecision d, dev.levee.lease.RequestLease lease) {
        if (dev.levee.runtime.Warmup.RESOURCE.equals(d.classification().resource())) {
            return d;
        }
        count(d.result().word());
        if (DECISIONS.isInfoEnabled()) {
            String limiter = d.limiter() == null ? "-" : d.limiter();
            String resource = LogText.escape(d.classification().resource());
            String key = LogText.escape(d.classification().key());
            ClientDecision.Batch b = d.batch();
            if (lease != null && b != null) {
                DECISIONS.info(BATCH_LINE, limiter, resource, key, d.classification().operation(), d.level(),
                        org.apache.logging.log4j.util.Unbox.box(d.retryAfter()),
                        org.apache.logging.log4j.util.Unbox.box(d.attempts()),
                        org.apache.logging.log4j.util.Unbox.box(lease.id()), LogText.escape(lease.limiterId()),
                        LogText.escape(b.label()), org.apache.logging.log4j.util.Unbox.box(b.slots()),
                        org.apache.logging.log4j.util.Unbox.box(b.lifeNs() / 1000));
            } else if (lease != null) {
                DECISIONS.info(LEASED_LINE, limiter, resource, key, d.classification().operation(), d.level(),
                        org.apache.logging.log4j.util.Unbox.box(d.retryAfter()),
                        org.apache.logging.log4j.util.Unbox.box(d.attempts()),
                        org.apache.logging.log4j.util.Unbox.box(lease.id()), LogText.escape(lease.limiterId()));
            } else {
                DECISIONS.info(WAITING_LINE, limiter, resource, key, d.classification().operation(), d.level(),
                        org.apache.logging.log4j.util.Unbox.box(d.retryAfter()),
                        org.apache.logging.log4j.util.Unbox.box(d.attempts()));
            }
        }
        return d;
    }

    /** Adds one to {@code levee_client_results_total{result=what}}. */
    void count(String what) {
        count(what, 1);
    }

    /** Adds {@code n} to {@code levee_client_results_total{result=what}}. */
    void count(String what, int n) {
        Counter known = counters.get(what);
        if (known != null) {
            known.increment(n); // the usual case: no lambda made
            return;
        }
        counters.computeIfAbsent(what, k -> Counter.builder("levee_client_results_total")
                .description("check results and limiter failures").tag("result", what).register(registry)).increment(n);
    }
}
