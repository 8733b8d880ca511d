package dev.levee.governor;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

/**
 * Configures one {@link BandwidthGovernor}: the direction's rate, the principals' rates and the
 * bounds (docs/design.md §8). Immutable and validated at construction; a governor takes a new
 * one atomically through {@link BandwidthGovernor#reconfigure}.
 *
 * <p>Every rate is in bytes per second; {@code 0} disables that ceiling, {@link #HELD} ({@code -1})
 * grants nothing until changed; otherwise it must lie in
 * [{@value #MIN_RATE_BYTES_PER_SECOND}, 2<sup>40</sup>] so that its burst is at least one byte and
 * the integer refill cannot overflow. Derived values: {@linkplain #burstBytes(long) burst}
 * {@code = min(rate / 10, 1 MiB)} rounded down, and a principal's {@linkplain
 * #quantumBytes(String) quantum} {@code = min(64 KiB, every enabled burst)}.
 *
 * @param direction                   the direction this governor shapes
 * @param rateBytesPerSecond          the direction's shared rate, bytes/s; {@code 0} = no shared ceiling
 * @param principalRateBytesPerSecond each principal's rate unless overridden, bytes/s; {@code 0} = none
 * @param principalRates              per-principal overrides of the rate, by service-account id, bytes/s
 * @param maxWaitingQuanta            waiting requests allowed per direction (each waits for one
 *                                    quantum at a time); default {@value #DEFAULT_MAX_WAITING_QUANTA}
 * @param maxPrincipals               capacity of the principal table; default {@value #DEFAULT_MAX_PRINCIPALS}
 * @param sharedBurstCap              the largest burst of the shared bucket, bytes, in [1, 1 MiB]; default
 *                                    1 MiB. A gateway holding a share of a site budget lowers it, so that the
 *                                    gateways' bursts together stay within 5 % of the budget (docs/design.md §10)
 */
public record GovernorConfig(
        Direction direction,
        long rateBytesPerSecond,
        long principalRateBytesPerSecond,
        Map<String, Long> principalRates,
        int maxWaitingQuanta,
        int maxPrincipals,
        long sharedBurstCap) {

    /** The largest quantum, in bytes: 64 KiB. */
    public static final long MAX_QUANTUM_BYTES = 64 * 1024;
    /** The largest burst, in bytes: 1 MiB. */
    public static final long MAX_BURST_BYTES = 1024 * 1024;
    /** The smallest enabled rate, in bytes/s: below it the burst would round down to zero. */
    public static final long MIN_RATE_BYTES_PER_SECOND = 10;
    /** The largest rate, in bytes/s: 2<sup>40</sup> (about 1.1 TB/s). */
    public static final long MAX_RATE_BYTES_PER_SECOND = 1L << 40;
    /**
     * A rate meaning "held": the bucket grants nothing until its rate changes, and its requests
     * wait. A gateway uses it for a site-wide share it has not obtained yet (docs/design.md §10).
     */
    public static final long HELD = -1;
    /** The default bound on waiting quanta per direction: 256 (docs/design.md §8). */
    public static final int DEFAULT_MAX_WAITING_QUANTA = 256;
    /** The default capacity of the principal table: 1000 (docs/design.md §8). */
    public static final int DEFAULT_MAX_PRINCIPALS = 1000;

    /**
     * Validates and copies the configuration.
     *
     * @throws NullPointerException     if {@code direction}, {@code principalRates} or one of its
     *                                  keys or values is null
     * @throws IllegalArgumentException if a rate is neither 0, {@link #HELD} nor in [10, 2^40], a principal id is
     *                                  blank, {@code maxWaitingQuanta} or {@code maxPrincipals} is
     *                                  below 1, or there are more overrides than {@code maxPrincipals}
     */
    public GovernorConfig {
        Objects.requireNonNull(direction, "direction");
        checkRate("rateBytesPerSecond", rateBytesPerSecond);
        checkRate("principalRateBytesPerSecond", principalRateBytesPerSecond);
        Objects.requireNonNull(principalRates, "principalRates");
        principalRates.forEach((id, rate) -> {
            Objects.requireNonNull(id, "principal id");
            Objects.requireNonNull(rate, "principal rate");
            if (id.isBlank()) {
                throw new IllegalArgumentException("principalRates: blank principal id");
            }
            checkRate("principalRates[" + id + "]", rate);
        });
        principalRates = Map.copyOf(principalRates);
        if (maxWaitingQuanta < 1) {
            throw new IllegalArgumentException("maxWaitingQuanta must be ≥ 1, got " + maxWaitingQuanta);
        }
        if (maxPrincipals < 1) {
            throw new IllegalArgumentException("maxPrincipals must be ≥ 1, got " + maxPrincipals);
        }
        if (sharedBurstCap < 1 || sharedBurstCap > MAX_BURST_BYTES) {
            throw new IllegalArgumentException("sharedBurstCap must be in [1, " + MAX_BURST_BYTES + "] bytes, got "
                    + sharedBurstCap);
        }
        if (principalRates.size() > maxPrincipals) {
            throw new IllegalArgumentException("principalRates has " + principalRates.size()
                    + " entries, more than maxPrincipals = " + maxPrincipals);
        }
    }

    /** A configuration with the default shared burst cap (1 MiB); see the canonical constructor. */
    public GovernorConfig(Direction direction, long rateBytesPerSecond, long principalRateBytesPerSecond,
                          Map<String, Long> principalRates, int maxWaitingQuanta, int maxPrincipals) {
        this(direction, rateBytesPerSecond, principalRateBytesPerSecond, principalRates, maxWaitingQuanta, maxPrincipals,
                MAX_BURST_BYTES);
    }

    /**
     * Returns a configuration with the given rates, no overrides and the default bounds.
     *
     * @param direction                   the direction
     * @param rateBytesPerSecond          the shared rate, bytes/s, {@code 0} = none
     * @param principalRateBytesPerSecond each principal's rate, bytes/s, {@code 0} = none
     * @throws IllegalArgumentException as the canonical constructor
     */
    public static GovernorConfig of(Direction direction, long rateBytesPerSecond,
                                    long principalRateBytesPerSecond) {
        return new GovernorConfig(direction, rateBytesPerSecond, principalRateBytesPerSecond, Map.of(),
                DEFAULT_MAX_WAITING_QUANTA, DEFAULT_MAX_PRINCIPALS, MAX_BURST_BYTES);
    }

    /** Returns a builder for {@code direction} with no ceilings and the default bounds. */
    public static Builder builder(Direction direction) {
        return new Builder(direction);
    }

    /** Returns a builder initialised from this configuration. */
    public Builder toBuilder() {
        Builder b = new Builder(direction)
                .rate(rateBytesPerSecond)
                .principalRate(principalRateBytesPerSecond)
                .maxWaitingQuanta(maxWaitingQuanta)
                .maxPrincipals(maxPrincipals)
                .sharedBurstCap(sharedBurstCap);
        b.principalRates.putAll(principalRates);
        return b;
    }

    /**
     * Returns the burst of a bucket with the given rate: {@code min(rate / 10, 1 MiB)} rounded
     * down, in bytes; {@code 0} for a disabled bucket (rate 0).
     *
     * @param rateBytesPerSecond the rate, bytes/s, ≥ 0
     * @throws IllegalArgumentException if the rate is negative
     */
    public static long burstBytes(long rateBytesPerSecond) {
        if (rateBytesPerSecond < 0) {
            throw new IllegalArgumentException("rate must be ≥ 0, got " + rateBytesPerSecond);
        }
        return Math.min(rateBytesPerSecond / 10, MAX_BURST_BYTES);
    }

    /** Returns the rate of {@code principalId}, bytes/s: its override, else the default; 0 = none. */
    public long principalRate(String principalId) {
        Long override = principalRates.get(principalId);
        return override != null ? override : principalRateBytesPerSecond;
    }

    /**
     * Returns the largest grant for {@code principalId}, in bytes: {@code min(64 KiB, shared
     * burst, principal burst)}, ignoring disabled buckets.
     */
    public long quantumBytes(String principalId) {
        return quantumFor(principalRate(principalId));
    }

    /** Returns the shared bucket's burst, bytes: {@code min(rate / 10, sharedBurstCap)}; 0 without a ceiling. */
    public long sharedBurstBytes() {
        return rateBytesPerSecond > 0 ? Math.min(burstBytes(rateBytesPerSecond), sharedBurstCap) : 0;
    }

    /** The quantum of a principal of rate {@code principalRate} under this configuration's shared bucket. */
    long quantumFor(long principalRate) {
        long q = MAX_QUANTUM_BYTES;
        if (rateBytesPerSecond > 0) {
            q = Math.min(q, Math.max(1, sharedBurstBytes()));
        }
        if (principalRate > 0) {
            q = Math.min(q, burstBytes(principalRate));
        }
        return q;
    }

    private static void checkRate(String name, long rate) {
        if (rate != 0 && rate != HELD && (rate < MIN_RATE_BYTES_PER_SECOND || rate > MAX_RATE_BYTES_PER_SECOND)) {
            throw new IllegalArgumentException(name + " must be 0 (disabled), -1 (held) or in ["
                    + MIN_RATE_BYTES_PER_SECOND + ", " + MAX_RATE_BYTES_PER_SECOND + "] bytes/s, got " + rate);
        }
    }

    /** Builds a {@link GovernorConfig}; every setter returns this builder. Not thread-safe. */
    public static final class Builder {
        private final Direction direction;
        private long rate;
        private long principalRate;
        private final Map<String, Long> principalRates = new HashMap<>();
        private int maxWaitingQuanta = DEFAULT_MAX_WAITING_QUANTA;
        private int maxPrincipals = DEFAULT_MAX_PRINCIPALS;
        private long sharedBurstCap = MAX_BURST_BYTES;

        private Builder(Direction direction) {
            this.direction = Objects.requireNonNull(direction, "direction");
        }

        /** Sets the direction's shared rate in bytes/s; {@code 0} (the default) disables it. */
        public Builder rate(long bytesPerSecond) {
            this.rate = bytesPerSecond;
            return this;
        }

        /** Sets every principal's default rate in bytes/s; {@code 0} (the default) disables it. */
        public Builder principalRate(long bytesPerSecond) {
            this.principalRate = bytesPerSecond;
            return this;
        }

        /** Overrides the rate of one principal (service-account id), bytes/s; {@code 0} = none. */
        public Builder principalRate(String principalId, long bytesPerSecond) {
            principalRates.put(Objects.requireNonNull(principalId, "principalId"), bytesPerSecond);
            return this;
        }

        /** Sets the bound on waiting quanta per direction; default 256. */
        public Builder maxWaitingQuanta(int max) {
            this.maxWaitingQuanta = max;
            return this;
        }

        /** Sets the capacity of the principal table; default 1000. */
        public Builder maxPrincipals(int max) {
            this.maxPrincipals = max;
            return this;
        }

        /** Sets the largest burst of the shared bucket, bytes, in [1, 1 MiB]; default 1 MiB. */
        public Builder sharedBurstCap(long bytes) {
            this.sharedBurstCap = bytes;
            return this;
        }

        /**
         * Validates and returns the configuration.
         *
         * @throws IllegalArgumentException as {@link GovernorConfig}'s constructor
         */
        public GovernorConfig build() {
            return new GovernorConfig(direction, rate, principalRate, principalRates, maxWaitingQuanta,
                    maxPrincipals, sharedBurstCap);
        }
    }
}
