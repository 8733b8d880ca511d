package dev.levee.client;

/**
 * Spells the IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers, docs/design.md §11, issue 14) for
 * one GCRA quota; the mapping is in docs/decisions.md, "RateLimit header fields".
 *
 * <ul>
 *   <li>{@code RateLimit-Policy: "<level>";q=<q>;w=<w>}: the policy is named after the quota level
 *       ({@code prefix_method}, {@code prefix}, {@code resource}, {@code methods_default}, {@code default}); the
 *       window {@code w} is the least whole number of seconds over which the rate is a whole number of requests
 *       (see {@link #window}), and {@code q = floor(rate × w)} requests: the sustained rate the group admits. The burst is not part of {@code q}: it is an allowance over the rate, shown in
 *       {@code r}.</li>
 *   <li>{@code RateLimit: "<level>";r=<r>;t=<t>}: on a refusal {@code r=0} and {@code t} the {@code Retry-After}
 *       seconds (the draft: Retry-After must not end before the effective window); on an admission {@code r}
 *       the requests the deciding limiter would still admit at once and {@code t} the seconds until its
 *       allowance for the key is whole again.</li>
 * </ul>
 * Pure; every value is an sf-integer and the name an sf-string (level labels are lower-case ASCII and
 * underscores: nothing to escape).
 */
public final class RateLimitFields {

    /** The field name {@value}. */
    public static final String POLICY_HEADER = "RateLimit-Policy";
    /** The field name {@value}. */
    public static final String LIMIT_HEADER = "RateLimit";
    /** Largest window written, seconds: one day (a rate below one request a day is shown as 1 per day or 0). */
    static final long MAX_WINDOW_S = 86_400;

    private RateLimitFields() {
    }

    /** Longest window tried for an exact quota, seconds. */
    static final int MAX_EXACT_WINDOW_S = 60;

    /**
     * Returns the window {@code w} for a rate: the least whole number of seconds, up to 60, over which the rate
     * is a whole number of requests ({@code 1} for 1700/s, {@code 2} for 27.5/s, {@code 10} for 0.7/s); for
     * other rates the least window that holds one request, {@code max(1, ceil(1 / rate))}, at most one day.
     *
     * @param rate requests per second for the group, ≥ 0
     * @return seconds, 1 to 86 400
     */
    public static long window(double rate) {
        if (!(rate > 0)) {
            return 1;
        }
        for (int w = 1; w <= MAX_EXACT_WINDOW_S; w++) {
            double q = rate * w;
            if (Math.abs(q - Math.rint(q)) <= 1e-9 * Math.max(1, q) && Math.rint(q) >= 1) {
                return w;
            }
        }
        return rate >= 1 ? 1 : (long) Math.min(MAX_WINDOW_S, Math.ceil(1 / rate - 1e-9));
    }

    /**
     * Returns the quota {@code q} over {@link #window}: {@code floor(rate × w)} requests.
     *
     * @param rate requests per second for the group, ≥ 0
     * @return requests, ≥ 0 ({@code 0} for a quota that blocks everything)
     */
    public static long quota(double rate) {
        if (!(rate > 0)) {
            return 0;
        }
        double exact = rate * window(rate);
        double q = Math.floor(exact + 1e-9 * Math.max(1, exact));
        return (long) Math.min(q, 999_999_999_999_999d); // the largest sf-integer
    }

    /**
     * Returns the {@code RateLimit-Policy} value.
     *
     * @param level the quota level, the policy's name
     * @param rate  the quota's rate, requests per second for the group
     * @return for example {@code "prefix";q=1700;w=1}
     */
    public static String policy(String level, double rate) {
        return '"' + level + "\";q=" + quota(rate) + ";w=" + window(rate);
    }

    /**
     * Returns the {@code RateLimit} value.
     *
     * @param level     the quota level, the policy's name
     * @param remaining requests available, ≥ 0
     * @param seconds   the effective window, seconds, ≥ 0
     * @return for example {@code "prefix";r=0;t=1}
     */
    public static String limit(String level, long remaining, long seconds) {
        return '"' + level + "\";r=" + Math.max(0, remaining) + ";t=" + Math.max(0, seconds);
    }
}
