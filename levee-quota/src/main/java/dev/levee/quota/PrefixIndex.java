package dev.levee.quota;

import dev.levee.s3.S3Operation;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * Resolves the requests of one configured resource: the validated, compiled form of one
 * {@code resources.<bucket>} value, built once and then shared by every later snapshot whose value
 * for that bucket is the same (see {@link QuotaConfig}, "Memory and incremental builds").
 *
 * <h2>Layout</h2>
 * The literal prefixes are held in one sorted {@code String[]} (the prefix strings of the
 * configuration themselves for non-wildcard entries), beside a parallel array of answers: a
 * precomputed {@link ResolvedQuota} for a non-wildcard entry without methods (the usual case), a
 * {@code ResolvedQuota[]} by operation for a non-wildcard entry with methods, an {@link Entry} for a
 * wildcard entry, whose answers depend on the object key. Nothing is held for what does not exist: no
 * per-operation arrays for entries without methods, no fallback answers for a resource with its own
 * quota (step 2 always answers before them), no arrays at all for a resource without prefixes.
 *
 * <h2>Longest match without a trie</h2>
 * Let {@code c} be the greatest literal ≤ the key (binary search). Every literal {@code p} that is a
 * prefix of the key lies between {@code p} and the key in order, so {@code p ≤ c} and {@code p} is also
 * a prefix of {@code c}: the longest matching literal is a prefix of {@code lcp(c, key)}. If {@code c}
 * itself is a prefix of the key it is the answer; otherwise the search repeats on the key's first
 * {@code lcp} characters, with a strictly smaller candidate each time. Nothing is allocated; a
 * resource with {@code n} prefixes costs {@code O(log n)} comparisons per nesting level of its prefixes.
 */
final class PrefixIndex {

    private static final S3Operation[] OPS = S3Operation.values();
    private static final String[] NO_LITERALS = {};
    private static final Object[] NO_ANSWERS = {};

    private final ResourceQuotas config;
    private final String[] literals;           // sorted (String order), unique
    private final Object[] answers;            // parallel to literals: ResolvedQuota, ResolvedQuota[] or Entry
    private final ResolvedQuota resourceLevel; // null when the resource has no quota
    private final Fallback fallback;           // steps 3 and 4; null when resourceLevel is set

    /** Steps 3 and 4 for one resource: methods_default answers by operation (or null) and the default. */
    record Fallback(ResolvedQuota[] byMethod, ResolvedQuota byDefault) {
        ResolvedQuota answer(S3Operation op) {
            ResolvedQuota m = byMethod == null ? null : byMethod[op.ordinal()];
            return m != null ? m : byDefault;
        }
    }

    private PrefixIndex(ResourceQuotas config, String[] literals, Object[] answers, ResolvedQuota resourceLevel,
            Fallback fallback) {
        this.config = config;
        this.literals = literals;
        this.answers = answers;
        this.resourceLevel = resourceLevel;
        this.fallback = fallback;
    }

    /**
     * Compiles a validated resource.
     *
     * @param resource the resource name
     * @param config   its quotas, already validated
     * @param fallback steps 3 and 4 for this resource; used only when it has no quota of its own
     */
    static PrefixIndex compile(String resource, ResourceQuotas config, Fallback fallback) {
        List<PrefixRule> prefixes = config.prefixes();
        String[] literals = NO_LITERALS;
        Object[] answers = NO_ANSWERS;
        if (!prefixes.isEmpty()) {
            Integer[] order = new Integer[prefixes.size()];
            String[] lit = new String[prefixes.size()];
            for (int i = 0; i < order.length; i++) {
                order[i] = i;
                lit[i] = prefixes.get(i).literal();
            }
            Arrays.sort(order, Comparator.comparing(i -> lit[i])); // stable: equal literals keep their order
            int unique = 0;
            for (int i = 0; i < order.length; i++) {
                if (i == 0 || !lit[order[i]].equals(lit[order[i - 1]])) {
                    unique++;
                }
            }
            literals = new String[unique];
            answers = new Object[unique];
            int at = -1;
            for (int i = 0; i < order.length; i++) {
                if (i > 0 && lit[order[i]].equals(lit[order[i - 1]])) {
                    continue; // equal literal length: the entry listed first wins
                }
                PrefixRule rule = prefixes.get(order[i]);
                literals[++at] = rule.wildcard() ? lit[order[i]] : rule.prefix();
                answers[at] = compileEntry(resource, rule);
            }
        }
        ResolvedQuota resourceLevel = config.quota() == null
                ? null
                : new ResolvedQuota(config.quota(), QuotaLevel.RESOURCE, LimitKeys.resourceKey(resource), null, null);
        return new PrefixIndex(config, literals, answers, resourceLevel, resourceLevel == null ? fallback : null);
    }

    /** Returns the resource's quotas this index was compiled from. */
    ResourceQuotas config() {
        return config;
    }

    /** Tells whether the answers depend on methods_default and default (the resource has no quota). */
    boolean usesFallback() {
        return resourceLevel == null;
    }

    /** Returns this index with other steps 3 and 4, sharing everything else. */
    PrefixIndex withFallback(Fallback other) {
        return resourceLevel != null ? this : new PrefixIndex(config, literals, answers, null, other);
    }

    private static Object compileEntry(String resource, PrefixRule rule) {
        String prefix = rule.prefix();
        String base = LimitKeys.prefixKey(resource, prefix);
        if (rule.wildcard()) {
            return new Entry(rule, base);
        }
        ResolvedQuota byQuota = rule.quota() == null ? null
                : new ResolvedQuota(rule.quota(), QuotaLevel.PREFIX, base, prefix, null);
        if (rule.methods().isEmpty()) {
            return byQuota;
        }
        ResolvedQuota[] byOp = new ResolvedQuota[OPS.length];
        for (S3Operation op : OPS) {
            S3Operation configured = LimitKeys.configuredFor(rule.methods(), op);
            byOp[op.ordinal()] = configured == null ? byQuota : new ResolvedQuota(rule.methods().get(configured),
                    QuotaLevel.PREFIX_METHOD, base + LimitKeys.operationSuffix(configured), prefix, configured);
        }
        return byOp;
    }

    /** Applies docs/design.md §4 steps 1–4 to a request of this resource. */
    ResolvedQuota resolve(String key, S3Operation op) {
        int at = longestMatch(key);
        if (at >= 0) {
            Object a = answers[at];
            ResolvedQuota hit = a instanceof ResolvedQuota fixed ? fixed
                    : a instanceof ResolvedQuota[] byOp ? byOp[op.ordinal()]
                    : ((Entry) a).resolve(key, op);
            if (hit != null) {
                return hit;
            }
        }
        return resourceLevel != null ? resourceLevel : fallback.answer(op);
    }

    /** Returns the index of the longest literal that is a prefix of {@code key}, or -1. */
    private int longestMatch(String key) {
        String[] lit = literals;
        int limit = key.length();
        int hi = lit.length - 1;
        while (hi >= 0) {
            // greatest literal ≤ key[0, limit) among lit[0..hi]
            int lo = 0;
            int found = -1;
            while (lo <= hi) {
                int mid = (lo + hi) >>> 1;
                if (compare(lit[mid], key, limit) <= 0) {
                    found = mid;
                    lo = mid + 1;
                } else {
                    hi = mid - 1;
                }
            }
            if (found < 0) {
                return -1;
            }
            String c = lit[found];
            int common = commonPrefix(c, key, limit);
            if (common == c.length()) {
                return found;
            }
            limit = common;  // key[0, common) is a proper prefix of c, so c > it: search below c
            hi = found - 1;
        }
        return -1;
    }

    /** Compares {@code a} with {@code key[0, limit)} in {@link String#compareTo} order. */
    private static int compare(String a, String key, int limit) {
        int n = Math.min(a.length(), limit);
        for (int i = 0; i < n; i++) {
            int d = a.charAt(i) - key.charAt(i);
            if (d != 0) {
                return d;
            }
        }
        return a.length() - limit;
    }

    private static int commonPrefix(String a, String key, int limit) {
        int n = Math.min(a.length(), limit);
        int i = 0;
        while (i < n && a.charAt(i) == key.charAt(i)) {
            i++;
        }
        return i;
    }

    /** A wildcard entry: every answer names the object key, so only the parts are precomputed. */
    private static final class Entry {
        private final String prefix;
        private final Quota quota;
        private final String quotaKey;               // the stem before the object key
        private final String quotaRule;              // the stem without its '@': the entry's rule key
        private final Quota[] opQuota;               // null when the entry has no methods
        private final S3Operation[] opConfigured;
        private final String[] opKey;
        private final String[] opRule;

        Entry(PrefixRule rule, String base) {
            this.prefix = rule.prefix();
            this.quota = rule.quota();
            this.quotaKey = base + "@";
            this.quotaRule = base;
            if (rule.methods().isEmpty()) {
                opQuota = null;
                opConfigured = null;
                opKey = null;
                opRule = null;
            } else {
                opQuota = new Quota[OPS.length];
                opConfigured = new S3Operation[OPS.length];
                opKey = new String[OPS.length];
                opRule = new String[OPS.length];
                for (S3Operation op : OPS) {
                    S3Operation configured = LimitKeys.configuredFor(rule.methods(), op);
                    if (configured != null) {
                        int i = op.ordinal();
                        opQuota[i] = rule.methods().get(configured);
                        opConfigured[i] = configured;
                        opRule[i] = base + LimitKeys.operationSuffix(configured);
                        opKey[i] = opRule[i] + "@";
                    }
                }
            }
        }

        /** Returns the entry's answer, or {@code null} to continue with step 2. */
        ResolvedQuota resolve(String key, S3Operation op) {
            int i = op.ordinal();
            if (opQuota != null && opQuota[i] != null) {
                return new ResolvedQuota(opQuota[i], QuotaLevel.PREFIX_METHOD, opKey[i].concat(key), prefix, opConfigured[i],
                        opRule[i]);
            }
            return quota == null ? null : new ResolvedQuota(quota, QuotaLevel.PREFIX, quotaKey.concat(key), prefix, null,
                    quotaRule);
        }
    }
}
