package dev.levee.quota;

import dev.levee.core.S3Operation;
import java.util.Objects;

/**
 * Carries the outcome of {@link QuotaConfig#resolve}: which quota applies to a request and
 * which counter it is charged to (SPEC.md §4).
 *
 * <p>{@code limitKey} is the identity of the GCRA state (SPEC.md §6): two requests share a
 * counter if and only if their limit keys are equal. It is human-readable and carries the
 * resource in clear, so that operators can {@code grep} limiter logs for it (SPEC.md §2):
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
public record ResolvedQuota(
        Quota quota, QuotaLevel level, String limitKey, String matchedPrefix, S3Operation matchedOperation) {

    /**
     * Checks the mandatory components.
     *
     * @throws NullPointerException if {@code quota}, {@code level} or {@code limitKey} is
     *                              {@code null}
     */
    public ResolvedQuota {
        Objects.requireNonNull(quota, "quota");
        Objects.requireNonNull(level, "level");
        Objects.requireNonNull(limitKey, "limitKey");
    }
}
