package dev.levee.client;

import dev.levee.quota.QuotaConfig;
import dev.levee.quota.ResolvedQuota;
import dev.levee.s3.S3Classification;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.Locale;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client side of request leases for hot keys (issue 23 item 2), as far as it is built: levee-client resolves the
 * quota of each check itself, with the same pure resolution the limiter runs ({@link QuotaConfig#resolveEnforced},
 * levee-quota, on the classification levee-s3 made and {@link LeveeClient#clamp} cut, the facts a check carries), from
 * the same quota source the limiters read (the quota file or etcd, handed in as a {@link Supplier} by the assembling
 * code), and tells a key eligible for a lease ({@link QuotaConfig#leaseEligible}, the quota file's {@code lease}) and
 * above the lease threshold ({@link HotKeys}) from the rest.
 *
 * <p><b>Not built yet</b> (docs/quotas.md, "Request leases"): asking the key's group for a lease of GCRA slots and
 * admitting from it. A check on a hot key is still decided by a limiter, exactly as with leases off; what this adds
 * is the resolution, the estimate, the counter {@code levee_client_lease_checks_total{key=hot|cold|not_eligible}}, the
 * gauge {@code levee_client_lease_keys} and one INFO line on {@code levee.client} each time a key turns hot. With
 * leases off (the default, {@code --no-leases}) no instance exists and a check does none of this.
 *
 * <p>Time: {@link #observe} takes {@code now} from the client's {@link dev.levee.core.Ticker}; nothing here reads a
 * clock. Thread-safe.
 */
public final class RequestLeases {

    private static final Logger LOG = LoggerFactory.getLogger("levee.client");

    /**
     * The lease settings of a client (CLI {@code --lease-threshold}, {@code --lease-window}).
     *
     * @param threshold checks per second on one limit key above which the key is hot: finite and &gt; 0 (default
     *                  {@value #DEFAULT_THRESHOLD}: a lease covering the next 50 ms then holds at least 5 slots)
     * @param window    the time constant of the rate estimate ({@link HotKeys}): positive, at most one day (default
     *                  1 s)
     */
    public record Settings(double threshold, Duration window) {
        /** The lease threshold by default, in requests per second: 100. */
        public static final double DEFAULT_THRESHOLD = 100;
        /** The estimate's window by default: 1 s. */
        public static final Duration DEFAULT_WINDOW = Duration.ofSeconds(1);
        /** The defaults. */
        public static final Settings DEFAULTS = new Settings(DEFAULT_THRESHOLD, DEFAULT_WINDOW);

        /**
         * Validates.
         *
         * @throws IllegalArgumentException naming the setting, when {@code threshold} is not a finite number &gt; 0 or
         *                                  {@code window} is not positive or longer than one day
         */
        public Settings {
            if (!(threshold > 0) || Double.isInfinite(threshold)) {
                throw new IllegalArgumentException("lease threshold must be a finite number > 0 (requests per second),"
                        + " got " + threshold);
            }
            if (window == null || window.isNegative() || window.isZero() || window.compareTo(Duration.ofDays(1)) > 0) {
                throw new IllegalArgumentException("lease window must be positive and at most one day, got " + window);
            }
        }
    }

    /** Where a check's limit key stands. */
    public enum Heat {
        /** Only shadow quotas apply (nothing enforced to lease), or the quota says {@code lease: false}. */
        NOT_ELIGIBLE,
        /** Eligible, at or below the threshold: the per-request path. */
        COLD,
        /** Eligible and above the threshold: a request lease would be asked for. */
        HOT;

        /** Returns the metric tag of this answer. */
        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /**
     * How a client resolves a check: the enforced quota and its counter, and whether it may be leased.
     *
     * @param quota    the enforced quota's answer, or null when only shadow quotas apply
     * @param eligible whether the quota file lets that counter be leased
     */
    public record Resolution(ResolvedQuota quota, boolean eligible) {
    }

    private final Settings settings;
    private final Supplier<QuotaConfig> quotas;
    private final HotKeys hot;
    private final Counter[] checks = new Counter[Heat.values().length];

    /**
     * Creates the client side of request leases.
     *
     * @param settings the threshold and window
     * @param quotas   the configuration in force, read once per check (a quota source's {@code current()})
     * @param registry where the counter and gauge go
     */
    public RequestLeases(Settings settings, Supplier<QuotaConfig> quotas, MeterRegistry registry) {
        this.settings = java.util.Objects.requireNonNull(settings, "settings");
        this.quotas = java.util.Objects.requireNonNull(quotas, "quotas");
        this.hot = new HotKeys(settings.threshold(), settings.window(), HotKeys.DEFAULT_MAX_KEYS);
        for (Heat h : Heat.values()) {
            checks[h.ordinal()] = Counter.builder("levee_client_lease_checks_total")
                    .description("checks by where their limit key stands for request leases (issue 23: in development,"
                            + " every check is still decided by a limiter)")
                    .tag("key", h.label()).register(registry);
        }
        Gauge.builder("levee_client_lease_keys", hot, HotKeys::size)
                .description("limit keys whose rate the client estimates for request leases").register(registry);
    }

    /** Returns the settings. */
    public Settings settings() {
        return settings;
    }

    /**
     * Resolves a check as the limiter will: the enforced quota of the clamped classification under the configuration
     * in force, and its eligibility.
     *
     * @param c the classification, already {@link LeveeClient#clamp clamped}
     * @return the resolution; never null
     */
    public Resolution resolve(S3Classification c) {
        QuotaConfig cfg = quotas.get();
        ResolvedQuota rq = cfg.resolveEnforced(c.resource(), c.key(), c.operation());
        return new Resolution(rq, rq != null && cfg.leaseEligible(rq));
    }

    /**
     * Counts one check and says where its key stands.
     *
     * @param c   the classification, already clamped
     * @param now a reading of the client's ticker, in nanoseconds
     * @return {@link Heat#NOT_ELIGIBLE}, {@link Heat#COLD} or {@link Heat#HOT}
     */
    public Heat observe(S3Classification c, long now) {
        Resolution r = resolve(c);
        Heat h;
        if (!r.eligible()) {
            h = Heat.NOT_ELIGIBLE;
        } else {
            HotKeys.Seen seen = hot.record(r.quota().limitKey(), now);
            h = seen.hot() ? Heat.HOT : Heat.COLD;
            if (seen.turnedHot()) {
                LOG.info("lease: key {} is hot: about {} req/s seen here, above --lease-threshold {} req/s (request"
                                + " leases are in development, issue 23: its checks are still decided by a limiter)",
                        dev.levee.runtime.LogText.escape(r.quota().limitKey()), String.format(Locale.ROOT, "%.1f",
                                seen.rate()), num(settings.threshold()));
            }
        }
        checks[h.ordinal()].increment();
        return h;
    }

    /** Returns the estimator (for tests and the status). */
    HotKeys hotKeys() {
        return hot;
    }

    private static String num(double d) {
        return d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d) : Double.toString(d);
    }
}
