package dev.levee.quota;

import dev.levee.s3.S3Operation;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * Holds one entry of a resource's {@code prefixes} list (docs/design.md §4).
 *
 * <p>This record only carries data: the syntax of {@code prefix} (a single trailing {@code *}),
 * the presence of a quota or methods, and the operations used are checked by
 * {@link QuotaConfig} and {@link QuotaRules}, which report every problem at once.
 *
 * @param prefix  the prefix as configured; {@code ""} matches every request to the resource,
 *                a trailing {@code *} gives each distinct object key its own counter
 * @param quota   the quota for operations not listed in {@code methods}, or {@code null}
 * @param methods quotas per operation; copied, unmodifiable, in the given iteration order;
 *                may be empty
 */
public record PrefixRule(String prefix, Quota quota, Map<S3Operation, Quota> methods) {

    /**
     * Copies {@code methods} into an unmodifiable map.
     *
     * @throws NullPointerException if {@code prefix} or {@code methods} is {@code null}, or
     *                              {@code methods} holds a {@code null} key or value
     */
    public PrefixRule {
        Objects.requireNonNull(prefix, "prefix");
        methods = copyOf(methods);
    }

    /**
     * Creates an entry without per-operation quotas.
     *
     * @param prefix the prefix as configured
     * @param quota  the quota for every operation under the prefix
     * @return the entry
     * @throws NullPointerException if an argument is {@code null}
     */
    public static PrefixRule of(String prefix, Quota quota) {
        return new PrefixRule(prefix, Objects.requireNonNull(quota, "quota"), Map.of());
    }

    /**
     * Tells whether the entry ends in {@code *}, giving each object key its own counter.
     *
     * @return {@code true} for an entry such as {@code "uploads/*"}
     */
    public boolean wildcard() {
        return prefix.endsWith("*");
    }

    /**
     * Returns the prefix without its trailing {@code *}: the part that keys must start with.
     *
     * @return {@code "uploads/"} for {@code "uploads/*"}; the prefix itself otherwise
     */
    public String literal() {
        return wildcard() ? prefix.substring(0, prefix.length() - 1) : prefix;
    }

    static <K, V> Map<K, V> copyOf(Map<K, V> map) {
        Objects.requireNonNull(map, "methods");
        if (map.isEmpty()) {
            return Map.of();
        }
        Map<K, V> copy = new LinkedHashMap<>();
        map.forEach((k, v) -> copy.put(Objects.requireNonNull(k, "operation"), Objects.requireNonNull(v, "quota")));
        return Collections.unmodifiableMap(copy);
    }
}
