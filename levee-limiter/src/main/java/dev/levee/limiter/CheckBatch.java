package dev.levee.limiter;

import java.util.List;

/**
 * The body of {@code POST /v1/checks}: several checks decided in one round trip, in order. A
 * levee-client coalesces the checks bound for one limiter into a batch when its earlier requests to
 * that limiter are still in flight (docs/decisions.md, "Batched checks"); each check is decided,
 * counted and logged exactly as a single {@code POST /v1/check} would be.
 *
 * @param checks 1 to {@value #MAX_CHECKS} checks
 */
public record CheckBatch(List<CheckRequest> checks) {

    /** Most checks one batch may carry: 1024. */
    public static final int MAX_CHECKS = 1024;

    /**
     * Largest batch body accepted, in bytes: 4 MiB. levee-client cuts its batches at 1 MiB; a check
     * is at most ~12.3 KiB of JSON (two 1024-byte names of control characters escaped as
     * six-character JSON escapes), so a full batch of 1024 such checks would not fit and is refused with 413.
     */
    public static final int MAX_BODY = 4 * 1024 * 1024;

    /**
     * Checks the shape of the batch (each check is validated on its own).
     *
     * @throws IllegalArgumentException naming the field at fault
     */
    void validate() {
        if (checks == null) {
            throw new IllegalArgumentException("field 'checks' is missing");
        }
        if (checks.isEmpty()) {
            throw new IllegalArgumentException("field 'checks' is empty");
        }
        if (checks.size() > MAX_CHECKS) {
            throw new IllegalArgumentException("field 'checks' has " + checks.size() + " checks, more than " + MAX_CHECKS);
        }
        for (int i = 0; i < checks.size(); i++) {
            if (checks.get(i) == null) {
                throw new IllegalArgumentException("field 'checks[" + i + "]' is null");
            }
        }
    }
}
