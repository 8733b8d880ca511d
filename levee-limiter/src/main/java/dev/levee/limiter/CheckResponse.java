package dev.levee.limiter;

/**
 * The body of a check answer (SPEC.md §1 step 4): 200 accepted, 429 rejected, 500 failed.
 *
 * @param result     {@code accepted}, {@code rejected} or {@code failed}
 * @param level      matched quota level ({@code prefix_method}, {@code prefix}, {@code resource},
 *                   {@code methods_default}, {@code default}); null when failed
 * @param limitKey   the counter that decided; null when failed
 * @param remaining  requests still admitted at once on this limiter (0 when rejected)
 * @param retryAfter seconds to wait, rounded up; ≥ 1 when rejected, else 0
 * @param limiter    the id of the limiter that answered
 * @param rate       the matched quota's rate, requests per second for the whole group (0 when failed)
 * @param burst      the matched quota's burst, requests per limiter (0 when failed)
 */
public record CheckResponse(String result, String level, String limitKey, long remaining, long retryAfter,
                            String limiter, double rate, int burst) {
}
