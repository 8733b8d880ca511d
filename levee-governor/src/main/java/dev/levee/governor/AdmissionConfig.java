package dev.levee.governor;

/**
 * Configures an {@link AdmissionQueue}: requests in flight per principal and class, and the
 * bounds on waiting (docs/design.md §8). Immutable, validated at construction.
 *
 * @param maxUploadsPerPrincipal   mutating uploads in flight per principal; default 1
 * @param maxDownloadsPerPrincipal downloads in flight per principal; default {@code min(4, maxDownloads)}
 * @param maxWaiters               requests waiting, all principals together; 0 = never wait;
 *                                 default {@value #DEFAULT_MAX_WAITERS}
 * @param waitTimeoutNanos         longest wait before a request is refused, ns; default 10 s
 */
public record AdmissionConfig(
        int maxUploadsPerPrincipal,
        int maxDownloadsPerPrincipal,
        int maxWaiters,
        long waitTimeoutNanos) {

    /** The default mutating uploads in flight per principal: 1 (docs/design.md §8). */
    public static final int DEFAULT_MAX_UPLOADS_PER_PRINCIPAL = 1;
    /** The cap of the default downloads in flight per principal: {@code min(4, maxDownloads)}. */
    public static final int DEFAULT_MAX_DOWNLOADS_PER_PRINCIPAL = 4;
    /** The default bound on waiting requests, all principals together: 1024. */
    public static final int DEFAULT_MAX_WAITERS = 1024;
    /** The default wait timeout, ns: 10 s. */
    public static final long DEFAULT_WAIT_TIMEOUT_NANOS = 10_000_000_000L;

    /**
     * Validates the configuration.
     *
     * @throws IllegalArgumentException if a per-principal limit or the timeout is below 1, or
     *                                  {@code maxWaiters} is negative
     */
    public AdmissionConfig {
        if (maxUploadsPerPrincipal < 1) {
            throw new IllegalArgumentException("maxUploadsPerPrincipal must be ≥ 1, got " + maxUploadsPerPrincipal);
        }
        if (maxDownloadsPerPrincipal < 1) {
            throw new IllegalArgumentException("maxDownloadsPerPrincipal must be ≥ 1, got " + maxDownloadsPerPrincipal);
        }
        if (maxWaiters < 0) {
            throw new IllegalArgumentException("maxWaiters must be ≥ 0, got " + maxWaiters);
        }
        if (waitTimeoutNanos < 1) {
            throw new IllegalArgumentException("waitTimeoutNanos must be ≥ 1, got " + waitTimeoutNanos);
        }
    }

    /**
     * Returns the defaults of docs/design.md §8 for a gateway that allows {@code maxDownloads}
     * downloads: 1 mutating upload and {@code min(4, maxDownloads)} downloads per principal,
     * {@value #DEFAULT_MAX_WAITERS} waiters, a 10 s timeout.
     *
     * @param maxDownloads the gateway's download limit, ≥ 1
     * @throws IllegalArgumentException if {@code maxDownloads} is below 1
     */
    public static AdmissionConfig defaults(int maxDownloads) {
        if (maxDownloads < 1) {
            throw new IllegalArgumentException("maxDownloads must be ≥ 1, got " + maxDownloads);
        }
        return new AdmissionConfig(DEFAULT_MAX_UPLOADS_PER_PRINCIPAL,
                Math.min(DEFAULT_MAX_DOWNLOADS_PER_PRINCIPAL, maxDownloads), DEFAULT_MAX_WAITERS,
                DEFAULT_WAIT_TIMEOUT_NANOS);
    }

    /** Returns the in-flight limit per principal for {@code admissionClass}. */
    public int limit(AdmissionClass admissionClass) {
        return switch (admissionClass) {
            case MUTATING_UPLOAD -> maxUploadsPerPrincipal;
            case DOWNLOAD -> maxDownloadsPerPrincipal;
        };
    }
}
