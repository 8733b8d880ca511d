package dev.levee.quota;

import dev.levee.s3.S3Operation;
import java.util.Objects;

/**
 * Carries the outcome of {@link QuotaConfig#resolve}: which quota applies to a request and
 * which counter it is charged to (docs/design.md §4).
 *
 * <p>{@code limitKey} is the identity of the GCRA state (docs/design.md §6): two requests share a
 * counter if and only if their limit keys are equal. It is human-readable and carries the
 * resource in clear, so that operators can {@code grep} limiter logs for it (docs/design.md §2):
 * <ul>
 *   <li>{@code default:<R>}</li>
 *   <li>{@code methods_default:<R>#<Op>}</li>
 *   <li>{@code resource:<R>}</li>
 *   <li>{@code prefix:<R>/<prefix>} and {@code prefix:<R>/<prefix>#<Op>}</li>
 *   <li>wildcard entries: {@code prefix:<R>/<prefix*>@<objectKey>} and
 *       {@code prefix:<R>/<prefix*>#<Op>@<objectKey>}</li>
 * </ul>
 * The operation comes before {@code @<objectKey>} so that an object key containing {@code #}
 * can never produce another counter's key: the object key is always the last component.
 *
 * <p>{@code ruleKey} names the quota entry that matched, for statistics (issue 14): the limit key
 * without the object key of a wildcard entry ({@code prefix:<R>/<prefix*>} and
 * {@code prefix:<R>/<prefix*>#<Op>}), otherwise the limit key itself. It is derived from the other
 * components, so it takes no part in {@link #equals}; resolution hands out a precomputed string, so
 * that counting by entry allocates nothing per request.
 *
 * @param quota            the quota to apply, never {@code null}
 * @param level            the resolution step that produced it
 * @param limitKey         the counter identity, never {@code null}
 * @param matchedPrefix    the prefix entry as configured (with its {@code *}) for
 *                         {@link QuotaLevel#PREFIX} and {@link QuotaLevel#PREFIX_METHOD};
 *                         {@code null} otherwise
 * @param matchedOperation the configured operation whose quota applies, for
 *                         {@link QuotaLevel#PREFIX_METHOD} and
 *                         {@link QuotaLevel#METHODS_DEFAULT}; {@code ListObjects} when a
 *                         {@code ListObjectsV2} request used the {@code ListObjects} quota;
 *                         {@code null} otherwise
 */
public final class ResolvedQuota {

    private final Quota quota;
    private final QuotaLevel level;
    private final String limitKey;
    private final String matchedPrefix;
    private final S3Operation matchedOperation;
    private final String ruleKey;
    /** {@link #prefixedKey}'s last answer: the prefix and the key made with it. */
    private volatile String[] prefixed;
    /** GCRA parameters of this quota by group size g (index g), made on first use: {@link #limit}. */
    private volatile dev.levee.core.GcraLimit[] limits;

    /**
     * Creates an answer whose entry is named by its limit key (every level but a wildcard prefix entry).
     *
     * @throws NullPointerException if {@code quota}, {@code level} or {@code limitKey} is {@code null}
     */
    public ResolvedQuota(Quota quota, QuotaLevel level, String limitKey, String matchedPrefix,
                         S3Operation matchedOperation) {
        this(quota, level, limitKey, matchedPrefix, matchedOperation, limitKey);
    }

    /**
     * Creates an answer with the name of its entry.
     *
     * @param ruleKey the limit key without the object key of a wildcard entry (see the class comment)
     * @throws NullPointerException if {@code quota}, {@code level}, {@code limitKey} or {@code ruleKey} is {@code null}
     */
    public ResolvedQuota(Quota quota, QuotaLevel level, String limitKey, String matchedPrefix,
                         S3Operation matchedOperation, String ruleKey) {
        this.quota = Objects.requireNonNull(quota, "quota");
        this.level = Objects.requireNonNull(level, "level");
        this.limitKey = Objects.requireNonNull(limitKey, "limitKey");
        this.matchedPrefix = matchedPrefix;
        this.matchedOperation = matchedOperation;
        this.ruleKey = Objects.requireNonNull(ruleKey, "ruleKey");
    }

    /** Returns the quota to apply. */
    public Quota quota() {
        return quota;
    }

    /** Returns the resolution step that produced the answer. */
    public QuotaLevel level() {
        return level;
    }

    /** Returns the counter identity. */
    public String limitKey() {
        return limitKey;
    }

    /** Returns the prefix entry as configured, or {@code null}. */
    public String matchedPrefix() {
        return matchedPrefix;
    }

    /** Returns the configured operation whose quota applies, or {@code null}. */
    public S3Operation matchedOperation() {
        return matchedOperation;
    }

    /**
     * Returns the GCRA parameters of this quota for a group of {@code g} limiters ({@link dev.levee.core.GcraLimit#of}
     * of the quota's rate and burst), made once per group size and kept with this answer: answers are shared by
     * every request they resolve, so a decision allocates none.
     *
     * @param g the group size, ≥ 1
     * @return the parameters
     * @throws IllegalArgumentException when {@code g} is below 1
     */
    public dev.levee.core.GcraLimit limit(int g) {
        dev.levee.core.GcraLimit[] l = limits;
        if (l != null && g < l.length) {
            dev.levee.core.GcraLimit cached = l[g];
            if (cached != null) {
                return cached;
            }
        }
        dev.levee.core.GcraLimit made = dev.levee.core.GcraLimit.of(quota.rate(), quota.burst(), g);
        if (g <= 64) { // group sizes are DF at most; a larger one is made each time, not kept
            dev.levee.core.GcraLimit[] next = l == null || g >= l.length
                    ? java.util.Arrays.copyOf(l == null ? new dev.levee.core.GcraLimit[0] : l, Math.max(g + 1, 5)) : l;
            next[g] = made; // a lost race only makes the same value again
            limits = next;
        }
        return made;
    }

    /**
     * Returns {@code prefix + limitKey()}, made once and kept with this answer for the prefix asked last (the
     * limiter keeps a shadow quota's state under {@code "shadow:" + limit key}): shared answers make no string per
     * request.
     *
     * @param prefix the prefix, not null
     * @return the prefixed limit key
     */
    public String prefixedKey(String prefix) {
        String[] p = prefixed;
        if (p != null && p[0].equals(prefix)) {
            return p[1];
        }
        String k = prefix.concat(limitKey);
        prefixed = new String[] {prefix, k};
        return k;
    }

    /** Returns the name of the matched entry: the limit key without a wildcard entry's object key. */
    public String ruleKey() {
        return ruleKey;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ResolvedQuota r && quota.equals(r.quota) && level == r.level && limitKey.equals(r.limitKey)
                && Objects.equals(matchedPrefix, r.matchedPrefix) && matchedOperation == r.matchedOperation;
    }

    @Override
    public int hashCode() {
        return Objects.hash(quota, level, limitKey, matchedPrefix, matchedOperation);
    }

    @Override
    public String toString() {
        return "ResolvedQuota[quota=" + quota + ", level=" + level + ", limitKey=" + limitKey + ", matchedPrefix="
                + matchedPrefix + ", matchedOperation=" + matchedOperation + "]";
    }
}
