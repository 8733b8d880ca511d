package dev.levee.limiter;

import dev.levee.core.Gcra;
import dev.levee.core.GcraLimit;
import dev.levee.core.GcraTable;
import dev.levee.lease.RequestLeaseRules;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.ResolvedQuota;
import dev.levee.s3.S3Operation;
import dev.levee.wire.BinaryChecks;
import io.netty.buffer.ByteBuf;

/**
 * The decision core of a limiter: resolves a check's quota (docs/design.md §4), divides its rate by the group
 * size {@code g} (§5) and applies GCRA (§6) on the key's state in a {@link GcraTable}; a shadow quota that matched
 * is then decided on its own state and changes nothing of the answer but its shadow field (docs/decisions.md,
 * "Shadow quotas and RateLimit header fields").
 *
 * <p>A limiter clients reach decides behind the restart fence of request leases (docs/design.md §12, "Fail
 * closed"): a {@link #leasable} key first decided within {@link #LEASE_LIFETIME_NS} of the table's creation admits no
 * request whose virtual time is before that instant, so that no slot or admission of a previous incarnation is
 * doubled; keys that cannot be leased are decided exactly as before.
 *
 * <p>Pure but for the table it is given: no metrics, no logs, no clock — every decision is fed its {@code now}.
 * Counting, statistics and the decision log are the caller's ({@link Checks}, the one decision point of the HTTP
 * and the wire handlers). Thread-safe as its table is. Allocates nothing when the quota's answer is shared (every
 * level but a wildcard prefix entry).
 */
final class Decider {

    /** The GCRA state of shadow quotas is kept under its limit key with this prefix. */
    static final String SHADOW_KEY = "shadow:";

    /**
     * The longest a request lease's slots last after their grant, and the restart fence of a limiter that grants
     * them: {@code F} of docs/design.md §12 ({@link RequestLeaseRules#DEFAULTS}, 200 ms).
     */
    static final long LEASE_LIFETIME_NS = RequestLeaseRules.DEFAULTS.maxLifetimeNs();

    private final GcraTable table;
    /** The restart fence of leasable keys, ns after the table's creation; 0: none. */
    private final long fenceNs;

    /**
     * A decider without a restart fence (a limiter that no client reaches: tests, benchmarks).
     *
     * @param table the GCRA state of every limit key (the enforced quota's under its limit key, a shadow quota's
     *              under {@link #SHADOW_KEY} + its limit key)
     */
    Decider(GcraTable table) {
        this(table, false);
    }

    /**
     * @param table  the GCRA state of every limit key (as above)
     * @param fenced whether to decide behind the restart fence: true for a limiter clients reach (one a previous
     *               incarnation of which may have granted leases), false for one no client reaches (a detached
     *               limiter: tests, benchmarks). A {@link #leasable} key first decided within
     *               {@link #LEASE_LIFETIME_NS} of the table's creation then gives no virtual time before that span's
     *               end ({@link GcraTable#attempt(String, GcraLimit, long, long)}); other keys are never fenced
     */
    Decider(GcraTable table, boolean fenced) {
        this.table = table;
        this.fenceNs = fenced ? LEASE_LIFETIME_NS : 0;
    }

    /**
     * Tells whether a key may be leased (docs/design.md §12; docs/decisions.md, "Request leases: the limiter side"),
     * and so is fenced after a restart: its enforced quota is {@link QuotaConfig#leaseEligible eligible}, has a burst
     * ≥ 1 (a burst of 0 would exceed §5's bound by one per limiter) and a rate above 0, its {@code τ + T} fits the
     * lease lifetime (the fence is then that lifetime, and no key waits longer after a restart), and it is not a
     * warm-up self-check's. Depends on the limit key's quota and the group size only, never on the request's own
     * object key: every decision on one limit key is fenced alike.
     *
     * @param resource the request's bucket (the warm-up's is never leased)
     * @param limit    {@code rq.limit(g)}
     */
    static boolean leasable(QuotaConfig cfg, String resource, ResolvedQuota rq, GcraLimit limit) {
        return RequestLeaseRules.DEFAULTS.neverLeased(limit, rq.quota().burst()) == null && cfg.leaseEligible(rq)
                && !LimiterService.WARMUP_RESOURCE.equals(resource);
    }

    /**
     * Decides one check at {@code now}: the enforced quota ({@link QuotaConfig#resolveEnforced}) decides; a shadow
     * quota that matched is decided on its own state and never touches the enforced one.
     *
     * @param cfg      the configuration snapshot to use
     * @param resource bucket
     * @param key      object key
     * @param op       operation
     * @param g        group size, 1 ≤ g ≤ DF
     * @param now      monotonic time in ns (one reading for both the enforced and the shadow quota)
     * @param out      where the decision goes (every field is written)
     */
    void decide(QuotaConfig cfg, String resource, String key, S3Operation op, int g, long now, Decision out) {
        ResolvedQuota rq = cfg.resolveEnforced(resource, key, op); // null: only shadow quotas apply
        boolean ok = true;
        long retry = 0;
        long remaining = 0;
        long reset = 0;
        if (rq != null) {
            GcraLimit limit = rq.limit(g);
            long r = table.attempt(rq.limitKey(), limit, now,
                    fenceNs > 0 && leasable(cfg, resource, rq, limit) ? fenceNs : 0);
            ok = Gcra.admitted(r);
            retry = Gcra.retryAfterSeconds(r);
            remaining = ok ? r : 0;
            reset = resetSeconds(limit, r);
        }
        // a shadow quota is decided on its own state (key "shadow:<limit key>"): it never touches the enforced TAT
        ResolvedQuota sq = null;
        byte shadow = BinaryChecks.SHADOW_NONE;
        long shadowR = 0;
        if (cfg.hasShadow()) {
            ResolvedQuota full = cfg.resolve(resource, key, op);
            if (cfg.isShadow(full)) {
                sq = full;
                shadowR = table.attempt(sq.prefixedKey(SHADOW_KEY), sq.limit(g), now);
                shadow = Gcra.admitted(shadowR) ? BinaryChecks.SHADOW_ACCEPTED : BinaryChecks.SHADOW_WOULD_REJECT;
            }
        }
        out.accepted = ok;
        out.shadow = shadow;
        out.enforced = rq;
        out.shadowQuota = sq;
        out.shadowResult = shadowR;
        if (rq == null) {
            out.level = null;
            out.limitKey = null;
            out.remaining = 0;
            out.retryAfter = 0;
            out.rate = 0;
            out.burst = 0;
            out.reset = 0;
        } else {
            out.level = rq.level().label();
            out.limitKey = rq.limitKey();
            out.remaining = remaining;
            out.retryAfter = retry;
            out.rate = rq.quota().rate();
            out.burst = rq.quota().burst();
            out.reset = reset;
        }
    }

    /**
     * Seconds, rounded up, until a key's allowance is whole again after an {@link Gcra#attempt} result: for an
     * admission {@code (c − remaining) × T} (an upper bound of {@code TAT − now}, at most one emission interval
     * over), for a refusal the wait plus the tolerance {@code τ}, which is {@code TAT − now}. ≥ 1.
     */
    static long resetSeconds(GcraLimit limit, long result) {
        if (limit.blocked()) {
            return 1;
        }
        double ns = result >= 0 ? (double) (limit.capacity() - result) * limit.emissionIntervalNs()
                : (double) -result + limit.toleranceNs();
        return Math.max(1, (long) Math.min(Math.ceil(ns / 1e9), (double) (1L << 40)));
    }

    /**
     * What one decision produced, written by {@link #decide}: a holder reused for every check of a connection (one
     * per event loop), so that deciding allocates no answer.
     */
    static final class Decision {
        boolean accepted;
        /** The enforced quota's level label and limit key; null when only shadow quotas apply. */
        String level;
        String limitKey;
        long remaining;
        long retryAfter;
        double rate;
        int burst;
        long reset;
        /** {@link BinaryChecks#SHADOW_NONE}, {@link BinaryChecks#SHADOW_ACCEPTED} or {@link BinaryChecks#SHADOW_WOULD_REJECT}. */
        byte shadow;
        /** The enforced quota that decided; null when only shadow quotas apply. */
        ResolvedQuota enforced;
        /** The shadow quota that was decided as well; null when none matched. */
        ResolvedQuota shadowQuota;
        /** The shadow quota's {@link Gcra#attempt} result (≥ 0 admitted: remaining; &lt; 0 refused); 0 without one. */
        long shadowResult;

        /** Whether the check is admitted although the shadow quota refused it. */
        boolean wouldReject() {
            return accepted && shadowQuota != null && shadowResult < 0;
        }

        CheckResponse response(String limiter) {
            String result = accepted ? "accepted" : "rejected";
            String sh = shadow == BinaryChecks.SHADOW_NONE ? null
                    : shadow == BinaryChecks.SHADOW_WOULD_REJECT ? CheckResponse.WOULD_REJECT : "accepted";
            return level == null ? new CheckResponse(result, null, null, 0, 0, limiter, 0, 0, 0, sh)
                    : new CheckResponse(result, level, limitKey, remaining, retryAfter, limiter, rate, burst, reset, sh);
        }

        void write(ByteBuf out, int version) {
            BinaryChecks.writeDecision(out, version, accepted, level, limitKey, remaining, retryAfter, shadow, rate,
                    burst, reset);
        }
    }
}
