package dev.levee.lease;

import dev.levee.core.GcraLimit;

/**
 * The rules that keep request leases within the request-rate bound (docs/design.md §12): how a granted slot's
 * real-time window maps onto the client's clock, which grants a client accepts, and how long a restarted
 * limiter waits before deciding. Pure arithmetic; immutable.
 *
 * <h2>Mapping a slot onto the client's clock</h2>
 * Slot {@code k} of a lease may be used in real time {@code [v_k − τ, v_k + T)}, where {@code v_k = t + d_k}
 * and {@code t} is the limiter's decision instant. The client does not know {@code t}, only that it lies between
 * its own readings {@code s} (request sent) and {@code r} (grant received), and its clock's rate differs from
 * the limiter's by at most ρ: a real span {@code D} reads as a local span in {@code [D(1 − ρ), D(1 + ρ)]}. So it
 * uses slot {@code k} only in local time
 * <pre>
 *   [ r + max(0, (d_k − τ) × (1 + ρ)),   s + (d_k + T) × (1 − ρ) − ε )
 * </pre>
 * starting late from {@code r} (since {@code t ≤ r}, at least {@code d_k − τ} of real time has passed since
 * {@code t}), ending early from {@code s} (since {@code t ≥ s}, less than {@code d_k + T} has passed), each end
 * rounded inwards by one more nanosecond. ε is a fixed margin for what the local reading of a request's
 * admission and its counting may differ by. This is the same construction as the bandwidth leases' deadline
 * {@code sent + ttl × (1 − ρ) − ε} (docs/design.md §10), with the same ρ and a much smaller ε: a request lease
 * lives tens of milliseconds, not seconds, and no store's expiry has to be outrun.
 *
 * @param drift          ρ, the largest relative rate difference between a client's clock and a limiter's;
 *                       default 0.01 (as for bandwidth leases); in {@code [0, 0.5)}
 * @param marginNs       ε, ns, ≥ 0; default 100 µs
 * @param maxLifetimeNs  the longest a grant may last after its decision: {@code v_n + T − t ≤ max(this, τ + T)};
 *                       ns, ≥ 1; default 200 ms. The limiter passes it to {@code Gcra.reserve}; a restarted
 *                       limiter waits out {@link #restartFenceNs}
 * @param maxSlots       the most slots a client accepts in one grant, ≥ 1; default 4096
 */
public record RequestLeaseRules(double drift, long marginNs, long maxLifetimeNs, int maxSlots) {

    /** The defaults: ρ 1 %, ε 100 µs, lifetime 200 ms, 4096 slots. */
    public static final RequestLeaseRules DEFAULTS = new RequestLeaseRules(0.01, 100_000L, 200_000_000L, 4096);

    /**
     * Validates the rules.
     *
     * @throws IllegalArgumentException naming the parameter, when one is out of range or not a number
     */
    public RequestLeaseRules {
        if (!(drift >= 0 && drift < 0.5)) {
            throw new IllegalArgumentException("drift must be in [0, 0.5), got " + drift);
        }
        if (marginNs < 0) {
            throw new IllegalArgumentException("marginNs must be >= 0, got " + marginNs);
        }
        if (maxLifetimeNs < 1 || maxLifetimeNs > GcraLimit.MAX_SPAN_NS) {
            throw new IllegalArgumentException("maxLifetimeNs must be in [1, 2^61], got " + maxLifetimeNs);
        }
        if (maxSlots < 1) {
            throw new IllegalArgumentException("maxSlots must be >= 1, got " + maxSlots);
        }
    }

    /**
     * Returns the first local instant (client clock, ns) at which slot {@code k} of {@code lease} may be used:
     * {@code r + max(0, ⌈(d_k − τ)(1 + ρ)⌉ + 1)}.
     *
     * @param k the slot, 1-based
     */
    public long slotStartNs(RequestLease lease, int k) {
        long early = lease.offsetNs(k) - lease.toleranceNs(); // d_k − τ; offsets ≤ 2^61 in accepted grants
        if (early <= 0) {
            return lease.receivedNs();
        }
        return lease.receivedNs() + (long) Math.ceil(early * (1 + drift)) + 1;
    }

    /**
     * Returns the local instant (client clock, ns) from which slot {@code k} of {@code lease} may no longer be
     * used: {@code s + ⌊(d_k + T)(1 − ρ)⌋ − 1 − ε}. The slot is usable at {@code now} iff
     * {@code now − start ≥ 0} and {@code end − now > 0}.
     *
     * @param k the slot, 1-based
     */
    public long slotEndNs(RequestLease lease, int k) {
        long late = lease.offsetNs(k) + lease.intervalNs(); // d_k + T
        return lease.sentNs() + (long) Math.floor(late * (1 - drift)) - 1 - marginNs;
    }

    /**
     * Returns why a client must not use a grant, or null when it may: more slots than {@link #maxSlots}, a lifetime
     * longer than {@code max(maxLifetime, τ + T)}, or (when {@code expected} is given) an interval or tolerance other
     * than the ones of the limit the client resolved itself. A refused grant gets the per-request path, a WARN and
     * a counter (docs/design.md §12), never an admission.
     *
     * @param expected the per-limiter limit the client computed for the key and group, or null to skip that check
     */
    public String problem(RequestLease lease, GcraLimit expected) {
        if (lease.slots() > maxSlots) {
            return "grant of " + lease.slots() + " slots, more than " + maxSlots;
        }
        if (lease.intervalNs() > GcraLimit.MAX_SPAN_NS || lease.toleranceNs() > GcraLimit.MAX_SPAN_NS) {
            return "grant with an interval or tolerance beyond 2^61 ns";
        }
        long own = lease.toleranceNs() + lease.intervalNs(); // ≤ 2^62: no overflow
        long life = Math.max(maxLifetimeNs, own);
        if (lease.lifetimeNs() > life) {
            return "grant lasting " + lease.lifetimeNs() + " ns, more than " + life + " ns";
        }
        if (expected != null && (expected.blocked() || expected.emissionIntervalNs() != lease.intervalNs()
                || expected.toleranceNs() != lease.toleranceNs())) {
            return "grant with T=" + lease.intervalNs() + " ns, τ=" + lease.toleranceNs() + " ns; the quota gives T="
                    + expected.emissionIntervalNs() + " ns, τ=" + expected.toleranceNs() + " ns";
        }
        return null;
    }

    /**
     * Returns how long a limiter that (re)started at some instant waits, from that instant, before it decides a
     * key with {@code limit} in any way, per request or by a grant: {@code max(maxLifetime, τ + T)} ns. A previous
     * incarnation's slots and admissions all have virtual times before its end plus that span minus T, so every
     * virtual time the new incarnation gives is at least T after them (docs/design.md §12, fail closed).
     */
    public long restartFenceNs(GcraLimit limit) {
        return Math.max(maxLifetimeNs, limit.horizonNs());
    }

    /**
     * Returns why a limiter never leases a key with the per-limiter {@code limit} of a quota with {@code burst}, or
     * null when it may (docs/design.md §12, "The integration"): a burst of 0 (the bound would exceed §5's by one per
     * limiter), a rate of 0, or {@code τ + T} beyond {@link #maxLifetimeNs} (every key is fenced for that long after a
     * restart, so no leased key may need longer). Whether its quota allows leases ({@code lease}) is the caller's.
     *
     * @param burst the quota's burst, requests, ≥ 0
     * @return the reason, in words for {@code levee quota explain}, or null
     */
    public String neverLeased(GcraLimit limit, int burst) {
        if (burst < 1) {
            return "burst 0 (a leased key would exceed the bound by one request per limiter)";
        }
        if (limit.blocked()) {
            return "rate 0 refuses every request";
        }
        if (limit.horizonNs() > maxLifetimeNs) {
            return "τ + T = " + limit.horizonNs() / 1_000_000 + " ms, over a lease's " + maxLifetimeNs / 1_000_000
                    + " ms";
        }
        return null;
    }

    /**
     * Returns whether a key with {@code limit} from a quota with {@code burst} may be leased, and whether it pays
     * off at round-trip time {@code rttNs}. Not with burst 0: the bound of docs/design.md §12 is {@code rate × w
     * + g × c + g} with {@code c = max(burst, 1)}, one request per limiter above §5's {@code g × burst + g} when
     * the burst is 0. And only when a slot's local window stays open for at least half its real one at the
     * farthest offset a grant can have, {@code τ + T ≥ 2 × (rtt × (1 + ρ) + ε + 2ρ × maxLifetime)}. Otherwise the
     * key stays on the per-request path.
     *
     * @param burst the quota's burst, requests, ≥ 0
     * @param rttNs a round trip to the limiter as the client measures it, ns, ≥ 0
     * @throws IllegalArgumentException when {@code burst < 0} or {@code rttNs < 0}
     */
    public boolean worthLeasing(GcraLimit limit, int burst, long rttNs) {
        if (burst < 0) {
            throw new IllegalArgumentException("burst must be >= 0, got " + burst);
        }
        if (rttNs < 0) {
            throw new IllegalArgumentException("rttNs must be >= 0, got " + rttNs);
        }
        if (limit.blocked() || burst == 0) {
            return false;
        }
        double lost = rttNs * (1 + drift) + marginNs + 2 * drift * maxLifetimeNs;
        return limit.horizonNs() >= 2 * lost;
    }
}
