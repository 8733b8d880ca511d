package dev.levee.quota;

import dev.levee.s3.S3Operation;
import java.util.Map;

/**
 * Spells limit keys (see {@link ResolvedQuota}) and applies the {@code ListObjects} /
 * {@code ListObjectsV2} rule; shared by resolution and by the collision check of
 * {@link QuotaRules} so that both agree on every key.
 */
final class LimitKeys {

    private LimitKeys() {
    }

    static String defaultKey(String resource) {
        return "default:" + resource;
    }

    static String methodsDefaultKey(String resource, String operationSuffix) {
        return "methods_default:" + resource + operationSuffix;
    }

    static String resourceKey(String resource) {
        return "resource:" + resource;
    }

    static String prefixKey(String resource, String prefix) {
        return "prefix:" + resource + "/" + prefix;
    }

    static String operationSuffix(S3Operation op) {
        return "#" + op.name();
    }

    /**
     * Picks the configured operation whose quota applies to {@code op} at one level:
     * {@code op} itself, or {@code ListObjects} for {@code ListObjectsV2} when only
     * {@code ListObjects} is configured there (docs/design.md §4).
     *
     * @return the configured operation, or {@code null} when none applies
     */
    static S3Operation configuredFor(Map<S3Operation, ?> methods, S3Operation op) {
        if (methods.containsKey(op)) {
            return op;
        }
        if (op == S3Operation.ListObjectsV2 && methods.containsKey(S3Operation.ListObjects)) {
            return S3Operation.ListObjects;
        }
        return null;
    }
}
