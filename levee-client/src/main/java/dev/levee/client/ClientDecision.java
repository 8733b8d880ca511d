package dev.levee.client;

import dev.levee.s3.S3Classification;

/**
 * The outcome of one check by levee-client (docs/design.md §1 steps 2–4).
 *
 * @param result         accepted, rejected or failed (no limiter of the group answered)
 * @param retryAfter     seconds to wait when rejected (≥ 1), else 0
 * @param remaining      allowance left on the deciding limiter
 * @param limiter        address {@code host:port} of the limiter that decided; null when failed
 * @param level          matched quota level label; null when failed
 * @param limitKey       the counter that decided; null when failed
 * @param classification what the S3 request was classified as
 * @param attempts       limiters asked (≥ 1 unless there was no limiter at all)
 * @param rate           the enforced quota's rate, requests per second for the whole group; 0 when unknown
 * @param burst          its burst, requests per limiter
 * @param reset          seconds until the key's allowance on the deciding limiter is whole again; 0 when unknown
 *                       (a limiter older than issue 14, or no enforced quota)
 * @param wouldReject    whether a shadow quota would have refused the request (it was admitted unless an
 *                       enforced quota refused it; docs/decisions.md, "Shadow quotas")
 * @param batch          slots of the same key handed to the caller with this admission, for its next requests to the
 *                       same bucket (docs/design.md §12, "Batches in NGINX"); null for none
 */
public record ClientDecision(Result result, long retryAfter, long remaining, String limiter, String level,
                             String limitKey, S3Classification classification, int attempts, double rate, int burst,
                             long reset, boolean wouldReject, Batch batch) {

    /** A decision without a batch. */
    public ClientDecision(Result result, long retryAfter, long remaining, String limiter, String level,
                          String limitKey, S3Classification classification, int attempts, double rate, int burst,
                          long reset, boolean wouldReject) {
        this(result, retryAfter, remaining, limiter, level, limitKey, classification, attempts, rate, burst, reset,
                wouldReject, null);
    }

    /**
     * Leased slots handed to the caller of a check (NGINX's rate.lua) with an admission: the caller may admit up to
     * {@code slots} more requests to the same bucket, each at most once, until {@code lifeNs} after it sent the check
     * (docs/design.md §12, "Batches in NGINX"). The slots were taken from the client's lease
     * ({@link dev.levee.lease.RequestLeaseHolder#take}) and are gone from it.
     *
     * @param slots     how many, ≥ 1
     * @param lifeNs    how long they stay usable from the instant the check was decided, ns, ≥ 1 (the end of the
     *                  first slot's window, {@link dev.levee.lease.RequestLeaseRules#slotEndNs}, minus that instant)
     * @param leaseId   the lease they are of
     * @param limiterId the limiter that granted it
     * @param firstSlot the first slot's number in the lease, 1-based
     */
    public record Batch(int slots, long lifeNs, long leaseId, String limiterId, int firstSlot) {

        /** Returns the batch's name in logs, {@code <lease id>/<limiter id>/<first slot>-<last slot>}. */
        public String label() {
            return leaseId + "/" + limiterId + "/" + firstSlot + "-" + (firstSlot + slots - 1);
        }
    }

    /** A decision without quota figures (failed checks, tests). */
    public ClientDecision(Result result, long retryAfter, long remaining, String limiter, String level,
                          String limitKey, S3Classification classification, int attempts) {
        this(result, retryAfter, remaining, limiter, level, limitKey, classification, attempts, 0, 0, 0, false);
    }

    /**
     * Returns the {@code RateLimit-Policy} field value for this decision (docs/decisions.md, "RateLimit header
     * fields"), or null when the decision names no enforced quota (failed, only shadow quotas, an older
     * limiter).
     */
    public String rateLimitPolicy() {
        return hasQuota() ? RateLimitFields.policy(level, rate) : null;
    }

    /** Returns the {@code RateLimit} field value for this decision, or null as {@link #rateLimitPolicy()}. */
    public String rateLimit() {
        if (!hasQuota()) {
            return null;
        }
        return result == Result.REJECTED ? RateLimitFields.limit(level, 0, retryAfter)
                : RateLimitFields.limit(level, remaining, reset);
    }

    /** Returns whether the RateLimit fields exist for this decision (an enforced quota decided it). */
    boolean hasQuota() {
        return result != Result.FAILED && level != null && reset > 0;
    }

    /** The three results of docs/design.md §1. */
    public enum Result {
        /** 200: the request may proceed. */
        ACCEPTED,
        /** 429: the quota is exhausted; NGINX/gateway answers 503 SlowDown. */
        REJECTED,
        /** 500 or no answer: handled by the {@code on_failure} policy. */
        FAILED;

        private final String word = name().toLowerCase(java.util.Locale.ROOT);

        /** Returns the lower-case word used in logs and NGINX's {@code $levee_result}. */
        public String word() {
            return word;
        }

        /** Returns the HTTP status levee-client answers with: 200, 429 or 500. */
        public int status() {
            return switch (this) {
                case ACCEPTED -> 200;
                case REJECTED -> 429;
                case FAILED -> 500;
            };
        }
    }
}
