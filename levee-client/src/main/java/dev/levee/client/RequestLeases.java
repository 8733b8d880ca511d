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
 * The client side of request leases for hot keys (issue 23 item 2; docs/design.md §12): levee-client resolves the
 * quota of each check itself, with the same pure resolution the limiter runs ({@link QuotaConfig#resolveEnforced},
 * levee-quota, on the classification levee-s3 made and {@link LeveeClient#clamp} cut, the facts a check carries), from
 * the same quota source the limiters read (the quota file or etcd, handed in as a {@link Supplier} by the assembling
 * code, with the revision of what it supplies), and tells a key eligible for a lease ({@link QuotaConfig#leaseEligible},
 * the quota file's {@code lease}) and above the lease threshold ({@link HotKeys}) from the rest.
 *
 * <p>What a client does with a hot key is {@link LeaseAdmission}'s: it asks the key's group for leases of GCRA slots
 * ({@code POST /v1/lease}) and admits the key's checks from them, without a limiter per check. This class is the
 * resolution, the estimate, the client's epoch ({@link #look}: the quota revision it resolves with), the counter
 * {@code levee_client_lease_checks_total{key=hot|cold|not_eligible}}, the gauge {@code levee_client_lease_keys} and
 * one INFO line on {@code levee.client} each time a key turns hot. With leases off ({@code --no-leases}; on by default)
 * no instance exists and a check does none of this.
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

    /**
     * What one check found (see {@link #look}): the configuration it was resolved under and that configuration's
     * revision as this client knows it, the resolution, where the key stands and its estimated rate.
     *
     * @param config     the configuration in force, read once for this check
     * @param revision   its revision as this client knows it (a quota source's {@code revision()}, read before it)
     * @param resolution the enforced quota and its eligibility
     * @param heat       where the key stands
     * @param rate       the key's estimated rate at this client, checks per second (0 unless eligible)
     */
    public record Look(QuotaConfig config, long revision, Resolution resolution, Heat heat, double rate) {
    }

    private final Settings settings;
    private final Supplier<QuotaConfig> quotas;
    private final java.util.function.LongSupplier revision;
    private final HotKeys hot;
    private final Counter[] checks = new Counter[Heat.values().length];

    /**
     * Creates the client side of request leases on a configuration that says nothing of its revision: the client counts
     * one each time {@code quotas} supplies another configuration object than the last (tests; a source that swaps
     * its immutable snapshot on every change, as every {@code QuotaSource} does).
     *
     * @param settings the threshold and window
     * @param quotas   the configuration in force, read once per check (a quota source's {@code current()})
     * @param registry where the counter and gauge go
     */
    public RequestLeases(Settings settings, Supplier<QuotaConfig> quotas, MeterRegistry registry) {
        this(settings, quotas, new IdentityRevision(), registry);
    }

    /**
     * Creates the client side of request leases.
     *
     * @param settings the threshold and window
     * @param quotas   the configuration in force, read once per check (a quota source's {@code current()})
     * @param revision the revision of what {@code quotas} supplies (a quota source's {@code revision()}), read before
     *                 it each check: a source swaps its configuration before its revision, so the configuration read
     *                 is never older than the revision, and a lease is never used under a revision older than the
     *                 configuration it was checked against (docs/quotas.md, "Request leases")
     * @param registry where the counter and gauge go
     */
    public RequestLeases(Settings settings, Supplier<QuotaConfig> quotas, java.util.function.LongSupplier revision,
                         MeterRegistry registry) {
        this.settings = java.util.Objects.requireNonNull(settings, "settings");
        this.quotas = java.util.Objects.requireNonNull(quotas, "quotas");
        this.revision = revision instanceof IdentityRevision ir ? ir.over(quotas) : java.util.Objects.requireNonNull(
                revision, "revision");
        this.hot = new HotKeys(settings.threshold(), settings.window(), HotKeys.DEFAULT_MAX_KEYS);
        for (Heat h : Heat.values()) {
            checks[h.ordinal()] = Counter.builder("levee_client_lease_checks_total")
                    .description("checks by where their limit key stands for request leases (hot keys are admitted from"
                            + " leases where worth it: levee_client_lease_admissions_total)")
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
        return look(c, now).heat();
    }

    /**
     * Counts one check and says all a lease decision needs: the configuration and its revision (the revision read
     * first), the resolution, where the key stands and its rate.
     *
     * @param c   the classification, already clamped
     * @param now a reading of the client's ticker, in nanoseconds
     * @return what the check found; never null
     */
    public Look look(S3Classification c, long now) {
        return look(c, now, 0);
    }

    /**
     * As {@link #look(S3Classification, long)}, counting {@code more} arrivals on the key besides the check: the
     * requests NGINX admitted from a batch of the key since its last check (docs/design.md §12, "Batches in NGINX").
     *
     * @param more arrivals to count besides this check, ≥ 0
     */
    public Look look(S3Classification c, long now, int more) {
        long rev = revision.getAsLong();
        QuotaConfig cfg = quotas.get();
        ResolvedQuota rq = cfg.resolveEnforced(c.resource(), c.key(), c.operation());
        Resolution r = new Resolution(rq, rq != null && cfg.leaseEligible(rq));
        Heat h;
        double rate = 0;
        if (!r.eligible()) {
            h = Heat.NOT_ELIGIBLE;
        } else {
            HotKeys.Seen seen = hot.record(r.quota().limitKey(), now, 1 + more);
            h = seen.hot() ? Heat.HOT : Heat.COLD;
            rate = seen.rate();
            if (seen.turnedHot()) {
                LOG.info("lease: key {} is hot: about {} req/s seen here, above --lease-threshold {} req/s (its checks"
                                + " are admitted from request leases where the quota is worth leasing)",
                        dev.levee.runtime.LogText.escape(r.quota().limitKey()), String.format(Locale.ROOT, "%.1f",
                                seen.rate()), num(settings.threshold()));
            }
        }
        checks[h.ordinal()].increment();
        return new Look(cfg, rev, r, h, rate);
    }

    /** Returns the revision of the configuration in force as this client knows it now. */
    long revision() {
        return revision.getAsLong();
    }

    /** Returns the estimator (for tests and the status). */
    HotKeys hotKeys() {
        return hot;
    }

    private static String num(double d) {
        return d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d) : Double.toString(d);
    }

    /**
     * Counts the configurations a supplier hands out, by identity: the revision of a configuration that says none of
     * its own, as this client knows it (one up each time another object than the last is supplied).
     */
    private static final class IdentityRevision implements java.util.function.LongSupplier {
        private Supplier<QuotaConfig> quotas;
        private QuotaConfig last;
        private long count;

        IdentityRevision over(Supplier<QuotaConfig> q) {
            this.quotas = q;
            return this;
        }

        @Override
        public synchronized long getAsLong() {
            QuotaConfig now = quotas.get();
            if (now != last) {
                last = now;
                count++;
            }
            return count;
        }
    }
}
