package dev.levee.lease;

import dev.levee.core.GcraLimit;

/**
 * Decides whether a limit key is leased and how many slots a client asks one group member for
 * (docs/design.md §12). Pure arithmetic on the key's rate as this client observes it; immutable.
 *
 * <p>A key is leased from {@code threshold} requests per second at this client. The client asks each of the
 * {@code g} members of the key's group for its part of the next {@code window} of its demand:
 * {@code n = ⌈observed / g × window⌉}, at least 1, at most {@code min(maxSlots, c + ⌊window / T⌋)} — what one
 * member can give over the window from a full state. Below {@link #lastingRate} not one slot would last until used,
 * and no lease is asked for. So two clients hot on
 * one key share its rate in proportion to their demand: each reservation takes what its client asked for, in the order they arrive.
 *
 * @param windowNs               how much of the demand one grant covers, ns, in [20 ms, 100 ms]; default 50 ms
 * @param thresholdPerSecond     the observed rate from which a key is leased, requests/s, finite and &gt; 0; default 100
 * @param maxSlots               the most slots asked at once, ≥ 1; default 4096 (as {@link RequestLeaseRules#DEFAULTS})
 */
public record LeaseSizer(long windowNs, double thresholdPerSecond, int maxSlots) {

    /** Shortest window, ns: 20 ms. */
    public static final long MIN_WINDOW_NS = 20_000_000L;
    /** Longest window, ns: 100 ms. */
    public static final long MAX_WINDOW_NS = 100_000_000L;
    /** The defaults: 50 ms, 100 requests/s, 4096 slots. */
    public static final LeaseSizer DEFAULTS = new LeaseSizer(50_000_000L, 100, 4096);

    /**
     * Validates the sizer.
     *
     * @throws IllegalArgumentException naming the parameter, when one is out of range, zero where it must not be,
     *                                  or not a number
     */
    public LeaseSizer {
        if (windowNs < MIN_WINDOW_NS || windowNs > MAX_WINDOW_NS) {
            throw new IllegalArgumentException("lease window must be in [20 ms, 100 ms], got " + windowNs + " ns");
        }
        if (!(thresholdPerSecond > 0) || Double.isInfinite(thresholdPerSecond)) {
            throw new IllegalArgumentException("lease threshold must be a finite rate > 0 requests/s, got "
                    + thresholdPerSecond);
        }
        if (maxSlots < 1) {
            throw new IllegalArgumentException("maxSlots must be >= 1, got " + maxSlots);
        }
    }

    /**
     * Returns whether a key observed at {@code observedPerSecond} at this client is leased.
     *
     * @throws IllegalArgumentException when the rate is negative or not a finite number
     */
    public boolean leased(double observedPerSecond) {
        checkRate(observedPerSecond);
        return observedPerSecond >= thresholdPerSecond;
    }

    /**
     * Returns the slots to ask one member of a group of {@code groupSize} for.
     *
     * @param observedPerSecond the key's rate at this client, requests/s, finite, ≥ 0
     * @param groupSize         {@code g}, ≥ 1
     * @param limit             the per-limiter limit of the key (not blocked)
     * @return slots, in {@code [1, min(maxSlots, c + ⌊window / T⌋)]}
     * @throws IllegalArgumentException when an argument is out of range or the limit is blocked
     */
    public int slots(double observedPerSecond, int groupSize, GcraLimit limit) {
        checkRate(observedPerSecond);
        if (groupSize < 1) {
            throw new IllegalArgumentException("group size must be >= 1, got " + groupSize);
        }
        if (limit.blocked()) {
            throw new IllegalArgumentException("a blocked quota (rate 0) is never leased");
        }
        long cap = Math.min(maxSlots, limit.capacity() + windowNs / limit.emissionIntervalNs());
        double want = Math.ceil(observedPerSecond / groupSize * windowNs / 1e9);
        return (int) Math.max(1, Math.min(cap, want));
    }

    /**
     * Returns the least rate at this client at which one member's slot lasts until used (docs/design.md §12,
     * "Slots that last"): {@code g / (T + τ / 4)} requests/s. Below it no lease is asked for.
     *
     * <p>This client reaches a member's first slot about {@code g / r − T} later than the slot's virtual time would
     * need, so it lasts with a lead of that ({@link #leadNs} asks twice that), and the lead is at most {@code τ / 2}:
     * the first slot lasts while {@code 2 × (g / r − T) ≤ τ / 2}. Below it every slot is expected to end unused: an ask
     * would cost a round trip to the member, the request would still go to a limiter, and the slot's capacity would
     * be lost (a sequential client at 50 req/s on a key with {@code τ} = 40 ms: 590 grants in 300 requests, none
     * used). Above it the slots asked are not cut to those that last: with NGINX's batches a lease's slots are taken
     * half a lease at a time, not one per {@code g / r} (cutting them halved the batches and took {@code /batch/}
     * from 1.41 to 1.04 × {@code /ideal/}, docs/BENCHMARKS.md).
     *
     * @param groupSize {@code g}, ≥ 1
     * @param limit     the per-limiter limit of the key (not blocked)
     * @return requests per second, &gt; 0
     * @throws IllegalArgumentException when {@code groupSize < 1} or the limit is blocked
     */
    public double lastingRate(int groupSize, GcraLimit limit) {
        if (groupSize < 1 || limit.blocked()) {
            throw new IllegalArgumentException("lasting rate needs g >= 1 and a limit that is not blocked, got g="
                    + groupSize);
        }
        return 1e9 * groupSize / (limit.emissionIntervalNs() + limit.toleranceNs() / 4.0);
    }

    /**
     * Returns the lead to ask for with a grant of {@code slots} slots: how far after the limiter's decision the first
     * slot's virtual time should lie, {@code min(τ / 2, 2 × slots × max(0, g / observed − T))} ns (docs/design.md §12,
     * "Lead").
     *
     * <p>A slot may be used from {@code τ} before its virtual time to {@code T} after it, and this client, taking
     * about {@code observed / g} requests a second from one member, reaches slot {@code k} about {@code k × g /
     * observed} after the grant, while slot {@code k}'s window ends {@code first + k × T} after it. So slots last
     * until used when {@code first ≥ slots × (g / observed − T)}: twice that is asked. A client that takes a member's
     * rate or more (a saturated key) needs no lead: its slots start at TAT and are used as their windows open. A lead
     * is not free: where TAT is less than the lead ahead, the capacity between them is skipped. And it is at most
     * {@code τ / 2}: a lead of {@code τ} put the key's TAT at the edge of its tolerance, so that the checks this client
     * sends per request while it holds no slot (its first ones, those while an ask is refused or on its way) and its
     * next ask were refused far below the quota (one refusal in 64 000 requests at 6 % of a 200 000 req/s quota, 210
     * in 6 s of the NGINX benchmark's batches); half of {@code τ} stays for them.
     *
     * @param observedPerSecond the key's rate at this client, requests/s, finite, &gt; 0
     * @param groupSize         {@code g}, ≥ 1
     * @param limit             the per-limiter limit of the key (not blocked)
     * @param slots             the slots asked for, ≥ 1
     * @return the lead, ns, in {@code [0, τ / 2]}
     * @throws IllegalArgumentException when an argument is out of range
     */
    public long leadNs(double observedPerSecond, int groupSize, GcraLimit limit, int slots) {
        checkRate(observedPerSecond);
        if (!(observedPerSecond > 0) || groupSize < 1 || slots < 1 || limit.blocked()) {
            throw new IllegalArgumentException("lead needs a rate > 0, g >= 1, slots >= 1 and a limit that is not"
                    + " blocked, got " + observedPerSecond + ", " + groupSize + ", " + slots);
        }
        double gap = 1e9 * groupSize / observedPerSecond - limit.emissionIntervalNs(); // ns between uses minus T
        return gap <= 0 ? 0 : (long) Math.min(limit.toleranceNs() / 2, 2.0 * slots * gap);
    }

    private static void checkRate(double observedPerSecond) {
        if (!(observedPerSecond >= 0) || Double.isInfinite(observedPerSecond)) {
            throw new IllegalArgumentException("observed rate must be a finite number >= 0 requests/s, got "
                    + observedPerSecond);
        }
    }
}
