package dev.levee.limiter;

/**
 * The body of a check answer (docs/design.md §1 step 4): 200 accepted, 429 rejected, 500 failed.
 *
 * <p>The fields describe the <em>enforced</em> quota (docs/design.md §4 without the shadow quotas,
 * {@link dev.levee.quota.QuotaConfig#resolveEnforced}); a shadow quota that matched the request is reported in
 * {@code shadow} only (docs/decisions.md, "Shadow quotas"). When only shadow quotas apply the answer is
 * {@code accepted} with {@code level} and {@code limitKey} null.
 *
 * @param result     {@code accepted}, {@code rejected} or {@code failed}
 * @param level      matched quota level ({@code prefix_method}, {@code prefix}, {@code resource},
 *                   {@code methods_default}, {@code default}); null when failed or when no enforced quota applies
 * @param limitKey   the counter that decided; null when failed or when no enforced quota applies
 * @param remaining  requests still admitted at once on this limiter (0 when rejected)
 * @param retryAfter seconds to wait, rounded up; ≥ 1 when rejected, else 0
 * @param limiter    the id of the limiter that answered
 * @param rate       the matched quota's rate, requests per second for the whole group (0 when failed)
 * @param burst      the matched quota's burst, requests per limiter (0 when failed)
 * @param reset      seconds, rounded up, until the key's allowance on this limiter is whole again (a fresh
 *                   key's {@code max(burst, 1)}); 0 when failed or no enforced quota applies
 * @param shadow     {@code accepted} or {@code would_reject}: what the shadow quota that matched the request
 *                   decided; null when none matched
 */
public record CheckResponse(String result, String level, String limitKey, long remaining, long retryAfter,
                            String limiter, double rate, int burst, long reset, String shadow) {

    /** {@link #shadow()} when the shadow quota would have refused the request. */
    public static final String WOULD_REJECT = "would_reject";

    /** The answer of a check the limiter failed to decide. */
    static CheckResponse failed(String limiter) {
        return new CheckResponse("failed", null, null, 0, 0, limiter, 0, 0, 0, null);
    }
}
