package dev.levee.core;

/**
 * Holds the GCRA parameters of one quota as one limiter applies it (docs/design.md §5, §6).
 *
 * <p>The quota's rate is divided by the group size {@code g} (each of the {@code g} limiters of a
 * group admits {@code rate / g}); the burst is per limiter and is not divided. The emission
 * interval is rounded <em>up</em> to a whole nanosecond so that a limiter never admits faster than
 * its share.
 *
 * @param emissionIntervalNs {@code T = g / rate} in nanoseconds, ≥ 1 ({@link Long#MAX_VALUE} when blocked)
 * @param capacity           {@code c = max(burst, 1)} requests
 * @param toleranceNs        {@code (c − 1) × T} in nanoseconds, saturated at {@link #MAX_SPAN_NS}
 * @param blocked            true when the rate is 0: every request is rejected
 */
public record GcraLimit(long emissionIntervalNs, int capacity, long toleranceNs, boolean blocked) {

    /** Largest span (ns) the algorithm keeps between TAT and now: about 73 years, far from overflow. */
    public static final long MAX_SPAN_NS = 1L << 61;

    /** Retry-After given while a quota has rate 0: 1 second (the quota may change at any moment). */
    public static final long BLOCKED_RETRY_NS = 1_000_000_000L;

    /**
     * Validates the parameters.
     *
     * @throws IllegalArgumentException when {@code emissionIntervalNs < 1} or {@code capacity < 1}
     */
    public GcraLimit {
        if (emissionIntervalNs < 1) {
            throw new IllegalArgumentException("emissionIntervalNs must be >= 1, got " + emissionIntervalNs);
        }
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be >= 1, got " + capacity);
        }
        if (toleranceNs < 0) {
            throw new IllegalArgumentException("toleranceNs must be >= 0, got " + toleranceNs);
        }
    }

    /**
     * Builds the limit one limiter of a group of {@code groupSize} applies for a quota.
     *
     * @param ratePerSecond the quota's rate in requests per second, finite and ≥ 0 (0 blocks everything)
     * @param burst         the quota's burst in requests, ≥ 0 (capacity is {@code max(burst, 1)})
     * @param groupSize     {@code g}, the number of limiters sharing the quota, ≥ 1
     * @return the per-limiter GCRA parameters
     * @throws IllegalArgumentException when an argument is out of range
     */
    public static GcraLimit of(double ratePerSecond, int burst, int groupSize) {
        if (!(ratePerSecond >= 0) || Double.isInfinite(ratePerSecond)) {
            throw new IllegalArgumentException("rate must be finite and >= 0, got " + ratePerSecond);
        }
        if (burst < 0) {
            throw new IllegalArgumentException("burst must be >= 0, got " + burst);
        }
        if (groupSize < 1) {
            throw new IllegalArgumentException("group size must be >= 1, got " + groupSize);
        }
        int capacity = Math.max(burst, 1);
        if (ratePerSecond == 0) {
            return new GcraLimit(Long.MAX_VALUE, capacity, 0, true);
        }
        double t = Math.ceil(1e9 * groupSize / ratePerSecond);
        long interval = t >= MAX_SPAN_NS ? MAX_SPAN_NS : Math.max(1L, (long) t);
        long tolerance = saturatedMultiply(capacity - 1L, interval);
        return new GcraLimit(interval, capacity, tolerance, false);
    }

    /**
     * The spread of arrival times a burst must absorb to hold its rate (docs/decisions.md, "Bursts that hold the
     * rate"): 40 ms, in nanoseconds. Levee itself bunches arrivals at a limiter: levee-client sends the checks that
     * queued while earlier ones were out as one batch (one limiter round trip, 1–3 ms under load), and the checks of
     * one batch reach GCRA at the same instant; NGINX workers, the network and the scheduler add their own spread.
     * 40 ms is the largest spread that every burst of docs/design.md §4's formula ({@code rate / DF × 0.1}, rounded) of 2 or
     * more absorbs, so the formula and this minimum disagree only where the formula rounds to 0 or 1.
     */
    public static final long ARRIVAL_SPREAD_NS = 40_000_000L;

    /**
     * Returns the smallest burst with which one limiter of a group of {@code groupSize} admits the whole rate of a
     * stream that offers at least its share, when each arrival may come up to {@link #ARRIVAL_SPREAD_NS} later than
     * a strictly periodic schedule: the smallest {@code burst ≥ 2} whose tolerance {@code τ = (burst − 1) × T} is at
     * least that spread. A burst of 0 or 1 has no tolerance at all (docs/design.md §6: {@code c = max(burst, 1)}, {@code
     * τ = 0}), so it admits the rate only for arrivals exactly {@code T} apart: it never holds the rate in practice.
     * Pure arithmetic on the same {@code T} as {@link #of}.
     *
     * @param ratePerSecond the quota's rate in requests per second, finite and ≥ 0
     * @param groupSize     {@code g}, the number of limiters sharing the quota, ≥ 1
     * @return the minimum burst in requests, ≥ 2 ({@link Integer#MAX_VALUE} when it would exceed an int); 0 for rate
     *         0 (a blocked quota has no rate to hold)
     * @throws IllegalArgumentException when an argument is out of range
     */
    public static int minimumBurst(double ratePerSecond, int groupSize) {
        GcraLimit one = of(ratePerSecond, 1, groupSize);
        if (one.blocked()) {
            return 0;
        }
        long t = one.emissionIntervalNs();
        long intervals = (ARRIVAL_SPREAD_NS + t - 1) / t; // ceil(spread / T) ≥ 1
        return (int) Math.min(Integer.MAX_VALUE, 1 + Math.max(1, intervals));
    }

    /**
     * Returns how far past {@code now} a key's TAT can be after an admitted request: {@code τ + T} ns.
     * State older than this horizon is equivalent to a fresh key.
     */
    public long horizonNs() {
        return blocked ? 0 : Math.min(MAX_SPAN_NS, toleranceNs + emissionIntervalNs);
    }

    private static long saturatedMultiply(long a, long b) {
        long hi = Math.multiplyHigh(a, b);
        long lo = a * b;
        if (hi != 0 || lo < 0 || lo > MAX_SPAN_NS) {
            return MAX_SPAN_NS;
        }
        return lo;
    }
}
