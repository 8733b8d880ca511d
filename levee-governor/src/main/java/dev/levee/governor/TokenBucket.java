package dev.levee.governor;

/**
 * Holds one token bucket in exact integer arithmetic; the model is explained in {@link
 * DrrBandwidthGovernor}. Credit is kept in nano-bytes (10<sup>-9</sup> byte) so that refilling
 * {@code dt} ns at {@code rate} bytes/s adds exactly {@code dt × rate}: the fraction of a byte
 * earned by a short interval is carried, never rounded away. Not thread-safe: the owning governor
 * guards it with its lock.
 */
final class TokenBucket {

    static final long NANOS_PER_SECOND = 1_000_000_000L;

    /** How long a held bucket reports until it could pay: it is re-examined then, or when its rate changes. */
    static final long HELD_RECHECK_NANOS = NANOS_PER_SECOND;

    private long rate;      // bytes/s; 0 = disabled (always pays); HELD = pays nothing
    private long burst;     // bytes
    private long capacity;  // burst × 1e9 nano-bytes, ≤ 2^20 × 1e9 ≈ 1.05e15
    private long credit;    // nano-bytes, 0 ≤ credit ≤ capacity
    private long last;      // ticker reading of the last refill, ns

    /** Creates a full bucket of {@code rate} bytes/s (0 = disabled, {@link GovernorConfig#HELD} = empty and held) at {@code now}. */
    TokenBucket(long rate, long now) {
        this(rate, rate > 0 ? GovernorConfig.burstBytes(rate) : 0, now);
    }

    /** Creates a full bucket of {@code rate} bytes/s with an explicit burst (bytes, ≥ 1 when enabled). */
    TokenBucket(long rate, long burst, long now) {
        this.rate = rate;
        this.burst = rate > 0 ? burst : 0;
        this.capacity = burst * NANOS_PER_SECOND;
        this.credit = capacity;
        this.last = now;
    }

    boolean enabled() {
        return rate != 0;
    }

    /** Returns whether the bucket is held: it grants nothing until its rate changes. */
    boolean held() {
        return rate == GovernorConfig.HELD;
    }

    long rate() {
        return rate;
    }

    long burst() {
        return burst;
    }

    /** Returns the whole bytes in the bucket now (after the last refill). */
    long availableBytes() {
        return credit / NANOS_PER_SECOND;
    }

    /**
     * Adds the credit earned since the last refill. Clamps to full <em>before</em> multiplying: if
     * {@code dt} exceeds the time to fill, the product {@code dt × rate} (which could overflow after
     * a long idle) is never formed; otherwise {@code dt × rate ≤ capacity} fits easily.
     */
    void refill(long now) {
        long dt = now - last;
        if (dt <= 0) {
            return;
        }
        last = now;
        long missing = capacity - credit;
        if (rate <= 0 || missing == 0) {
            return;
        }
        if (dt > missing / rate) {
            credit = capacity;
        } else {
            credit = Math.min(capacity, credit + dt * rate);
        }
    }

    /** Returns whether the bucket holds {@code bytes} (≤ burst) now; a disabled bucket always does. */
    boolean canPay(long bytes) {
        return rate == 0 || (rate > 0 && credit >= bytes * NANOS_PER_SECOND);
    }

    /** Removes {@code bytes}; callers first check {@link #canPay}. */
    void debit(long bytes) {
        if (rate > 0) {
            credit -= bytes * NANOS_PER_SECOND;
        }
    }

    /** Returns the ns from the last refill until the bucket holds {@code bytes} (≤ burst); 0 if it does. */
    long nanosUntil(long bytes) {
        if (rate == 0) {
            return 0;
        }
        if (rate < 0) {
            return HELD_RECHECK_NANOS;
        }
        long need = bytes * NANOS_PER_SECOND - credit;
        return need <= 0 ? 0 : (need + rate - 1) / rate;
    }

    /**
     * Changes the rate at {@code now}: refills at the old rate first, then clamps the credit to the
     * new burst. A bucket that was disabled or held starts <em>empty</em>: the bytes it let through
     * while disabled were bounded by nothing of its own, so a full bucket on top would be one more
     * burst in the same window (issue 22: a principal given a site ceiling exceeded it by its burst);
     * starting empty, it grants at most {@code rate × t} in any window of length {@code t} after the
     * change, and a site share just obtained earns its bytes (docs/design.md §10).
     */
    void setRate(long newRate, long now) {
        setRate(newRate, newRate > 0 ? GovernorConfig.burstBytes(newRate) : 0, now);
    }

    /** Changes the rate and the burst (bytes) at {@code now}; see {@link #setRate(long, long)}. */
    void setRate(long newRate, long newBurst, long now) {
        refill(now);
        last = now;
        rate = newRate;
        burst = newRate > 0 ? newBurst : 0;
        capacity = burst * NANOS_PER_SECOND;
        credit = Math.min(credit, capacity); // disabled and held buckets hold no credit: they start empty
    }
}
