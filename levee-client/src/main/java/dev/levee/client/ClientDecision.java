package dev.levee.client;

import dev.levee.s3.S3Classification;

/**
 * The outcome of one check by levee-client (SPEC.md §1 steps 2–4).
 *
 * @param result         accepted, rejected or failed (no limiter of the group answered)
 * @param retryAfter     seconds to wait when rejected (≥ 1), else 0
 * @param remaining      allowance left on the deciding limiter
 * @param limiter        address {@code host:port} of the limiter that decided; null when failed
 * @param level          matched quota level label; null when failed
 * @param limitKey       the counter that decided; null when failed
 * @param classification what the S3 request was classified as
 * @param attempts       limiters asked (≥ 1 unless there was no limiter at all)
 */
public record ClientDecision(Result result, long retryAfter, long remaining, String limiter, String level,
                             String limitKey, S3Classification classification, int attempts) {

    /** The three results of SPEC.md §1. */
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
