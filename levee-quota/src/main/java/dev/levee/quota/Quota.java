package dev.levee.quota;

/**
 * A rate limit: a sustained {@code rate} and a {@code burst} allowance (docs/design.md §4).
 *
 * <p>The limiter divides {@code rate} by the size of the limiter group and keeps {@code burst}
 * per limiter (docs/design.md §5); this record holds the configured, undivided values.
 *
 * @param rate  sustained rate in requests per second; finite and ≥ 0; {@code 0} blocks every
 *              request. Decimal values such as {@code 27.5} are allowed; {@code -0.0} is stored
 *              as {@code 0.0}.
 * @param burst extra requests admitted at once above the sustained rate, in requests; ≥ 0
 * @param mode  {@link QuotaMode#SHADOW} for a quota that is only tried, {@link QuotaMode#ENFORCE} for one
 *              that decides, or {@code null} when not configured on the quota: the configuration's default
 *              mode then applies ({@link QuotaConfig#defaultMode()}, itself {@code enforce} unless set)
 * @param lease {@code Boolean.FALSE} for a quota whose counter is never leased to a client (every request decided by a
 *              limiter, as before request leases), {@code Boolean.TRUE} for one that may be, or {@code null} when not
 *              configured on the quota: the configuration's {@link QuotaConfig#defaultLease()} then applies (itself
 *              {@code true} unless set). A client with leases on (the default) admits the requests of an eligible
 *              hot key from leases; a limiter grants them only where the burst and {@code τ + T} allow
 *              (docs/quotas.md, "Request leases"; docs/design.md §12).
 */
public record Quota(double rate, int burst, QuotaMode mode, Boolean lease) {

    /**
     * Creates a quota without a mode of its own (the configuration's default mode applies).
     *
     * @param rate  requests per second, finite and ≥ 0
     * @param burst requests, ≥ 0
     * @throws IllegalArgumentException as the canonical constructor
     */
    public Quota(double rate, int burst) {
        this(rate, burst, null, null);
    }

    /**
     * Creates a quota without a lease setting of its own (the configuration's default applies).
     *
     * @param rate  requests per second, finite and ≥ 0
     * @param burst requests, ≥ 0
     * @param mode  the mode, or {@code null} for the configuration's default
     * @throws IllegalArgumentException as the canonical constructor
     */
    public Quota(double rate, int burst, QuotaMode mode) {
        this(rate, burst, mode, null);
    }

    /**
     * Validates the pair.
     *
     * @throws IllegalArgumentException if {@code rate} is negative, NaN or infinite, or
     *                                  {@code burst} is negative
     */
    public Quota {
        if (!(rate >= 0) || Double.isInfinite(rate)) {
            throw new IllegalArgumentException(
                    "rate must be a finite number ≥ 0 (requests per second), got " + rate);
        }
        if (burst < 0) {
            throw new IllegalArgumentException("burst must be ≥ 0 (requests), got " + burst);
        }
        rate += 0.0; // -0.0 + 0.0 == +0.0: one representation of "blocks everything"
    }

    /**
     * Tells whether this quota admits no request at all.
     *
     * @return {@code true} when {@code rate} is {@code 0}
     */
    public boolean blocksAll() {
        return rate == 0;
    }

    /**
     * Returns the mode that applies to this quota under a configuration's default mode.
     *
     * @param defaultMode the configuration's default mode, not null
     * @return {@link #mode()} when set, else {@code defaultMode}
     */
    public QuotaMode modeOr(QuotaMode defaultMode) {
        return mode != null ? mode : defaultMode;
    }

    /**
     * Returns this quota with another mode.
     *
     * @param newMode the mode, or {@code null} for the configuration's default
     * @return the quota with the same rate and burst
     */
    public Quota withMode(QuotaMode newMode) {
        return newMode == mode ? this : new Quota(rate, burst, newMode, lease);
    }

    /**
     * Returns whether this quota's counter may be leased to a client under a configuration's default.
     *
     * @param defaultLease the configuration's {@link QuotaConfig#defaultLease()}
     * @return {@link #lease()} when set, else {@code defaultLease}
     */
    public boolean leaseOr(boolean defaultLease) {
        return lease != null ? lease : defaultLease;
    }

    /**
     * Returns this quota with another lease setting.
     *
     * @param newLease {@code true}, {@code false}, or {@code null} for the configuration's default
     * @return the quota with the same rate, burst and mode
     */
    public Quota withLease(Boolean newLease) {
        return java.util.Objects.equals(newLease, lease) ? this : new Quota(rate, burst, mode, newLease);
    }
}
