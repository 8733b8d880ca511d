package dev.levee.core;

/**
 * Holds the GCRA parameters of one quota as one limiter applies it (SPEC.md §5, §6).
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
