package dev.levee.config;

import dev.levee.quota.ConfigProblem;
import dev.levee.quota.Quota;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaConfigException;
import dev.levee.quota.ResourceQuotas;
import dev.levee.s3.S3Operation;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Maps a quota configuration to and from the etcd layout of docs/design.md §4, relative to a prefix:
 *
 * <table>
 * <caption>keys</caption>
 * <tr><td>{@code factor}</td><td>group factor DF, integer ≥ 1 (default 1 when absent)</td></tr>
 * <tr><td>{@code mode}</td><td>{@code enforce} or {@code shadow}: the mode of quotas that set none (default
 * {@code enforce} when absent)</td></tr>
 * <tr><td>{@code lease}</td><td>{@code true} or {@code false}: whether quotas that do not say may be leased to clients
 * (default {@code true} when absent; docs/quotas.md, "Request leases")</td></tr>
 * <tr><td>{@code quotas/default}</td><td>{@code {rate, burst}} (required)</td></tr>
 * <tr><td>{@code quotas/methods_default}</td><td>{@code {<Operation>: {rate, burst}}}</td></tr>
 * <tr><td>{@code resources/<bucket>}</td><td>{@code {quota, prefixes}}</td></tr>
 * </table>
 *
 * <p>Keys under {@code limiters/} (membership), under {@code bandwidth/} (site bandwidth leases) and the import marker {@code import} are ignored; any other key is an error naming it.
 * Each value is validated with the same rules as the single-file form; errors name the etcd key.
 */
public final class QuotaLayout {

    /** Relative key of the group factor. */
    public static final String FACTOR = "factor";
    /** Relative key of the default mode of quotas (docs/quotas.md, "Shadow quotas"). */
    public static final String MODE = "mode";
    /** Relative key of the default lease setting of quotas (docs/quotas.md, "Request leases"). */
    public static final String LEASE = "lease";
    /** Relative key of the default quota. */
    public static final String DEFAULT = "quotas/default";
    /** Relative key of the per-operation defaults. */
    public static final String METHODS_DEFAULT = "quotas/methods_default";
    /** Relative key prefix of resources. */
    public static final String RESOURCES = "resources/";
    /** Relative key prefix of limiter membership (not quota data). */
    public static final String LIMITERS = "limiters/";
    /**
     * Relative key of the import marker (not quota data): present while {@code levee quota import}
     * writes its chunks; quota sources hold updates while it exists (docs/decisions.md, "Import").
     */
    public static final String IMPORT = "import";
    /**
     * Relative key prefix of the site bandwidth budgets and the gateways' leased shares (not quota
     * data; docs/design.md §10, docs/site-bandwidth.md).
     */
    public static final String BANDWIDTH = "bandwidth/";

    private QuotaLayout() {
    }

    /** Returns whether a relative key holds quota data (and not membership or the import marker). */
    public static boolean isQuotaKey(String relativeKey) {
        return !relativeKey.startsWith(LIMITERS) && !relativeKey.equals(IMPORT) && !relativeKey.startsWith(BANDWIDTH);
    }

    /**
     * Builds a configuration from the values under the prefix.
     *
     * @param prefix  the etcd prefix, for messages (for example {@code /levee/})
     * @param values  relative key → YAML value; keys under {@code limiters/} are skipped
     * @return the validated configuration
     * @throws QuotaConfigException naming each etcd key and field at fault
     */
    public static QuotaConfig fromValues(String prefix, Map<String, String> values) {
        return fromValues(prefix, values, null);
    }

    /**
     * Remembers parsed {@code resources/<bucket>} values and the last configuration built between
     * builds, so that rebuilding a large configuration after one change parses, validates and compiles
     * only the changed values: an unchanged value yields the same {@link ResourceQuotas} instance, and
     * {@link QuotaConfig.Builder#reuse} then keeps that bucket's built entry. Not thread-safe: one per
     * source, used by the thread that applies updates.
     */
    private record Parsed(String value, String bucket, ResourceQuotas quotas) {
    }

    public static final class ParseCache {
        private final Map<String, Parsed> parsed = new java.util.HashMap<>();
        private QuotaConfig lastBuilt;

        /** Returns the number of values held. */
        public int size() {
            return parsed.size();
        }
    }

    /**
     * Builds a configuration like {@link #fromValues(String, Map)}, reusing the parse of every
     * resource value unchanged since the last call with the same cache.
     *
     * @param prefix the etcd prefix, for messages
     * @param values relative key → YAML value
     * @param cache  parsed values of earlier calls, updated; null for none
     * @return the validated configuration
     * @throws QuotaConfigException naming each etcd key and field at fault
     */
    public static QuotaConfig fromValues(String prefix, Map<String, String> values, ParseCache cache) {
        return fromValues(prefix, values, cache, null);
    }

    /**
     * Builds a configuration like {@link #fromValues(String, Map, ParseCache)}, also recording the problems
     * of each key apart, so that a caller can tell which keys are at fault (issue 22: one invalid value must
     * not stop a role; see {@code EtcdQuotaSource}).
     *
     * @param prefix    the etcd prefix, for messages
     * @param values    relative key → YAML value
     * @param cache     parsed values of earlier calls, updated; null for none
     * @param byKey     filled with relative key → its problems (a missing {@code quotas/default} is recorded
     *                  under {@link #DEFAULT}); null for none
     * @return the validated configuration
     * @throws QuotaConfigException naming each etcd key and field at fault
     */
    public static QuotaConfig fromValues(String prefix, Map<String, String> values, ParseCache cache,
            Map<String, List<ConfigProblem>> byKey) {
        List<ConfigProblem> problems = new ArrayList<>();
        QuotaConfig.Builder b = QuotaConfig.builder();
        boolean haveDefault = false;
        int resources = 0; // put straight into the builder, in key order
        for (Map.Entry<String, String> e : (values instanceof java.util.SortedMap<String, String> sorted
                && sorted.comparator() == null ? values : new TreeMap<>(values)).entrySet()) {
            String key = e.getKey();
            if (!isQuotaKey(key)) {
                continue;
            }
            if (cache != null && key.startsWith(RESOURCES)) {
                Parsed hit = cache.parsed.get(key);
                if (hit != null && hit.value().equals(e.getValue())) { // the same String while etcd's value is unchanged
                    b.resource(hit.bucket(), hit.quotas());
                    resources++;
                    continue;
                }
            }
            String full = prefix + key;
            try {
                if (key.equals(FACTOR)) {
                    b.factor(QuotaConfigLoader.parseFactor(e.getValue(), full));
                } else if (key.equals(MODE)) {
                    b.defaultMode(QuotaConfigLoader.parseMode(e.getValue(), full));
                } else if (key.equals(LEASE)) {
                    b.defaultLease(QuotaConfigLoader.parseLease(e.getValue(), full));
                } else if (key.equals(DEFAULT)) {
                    b.defaultQuota(QuotaConfigLoader.parseQuota(e.getValue(), full));
                    haveDefault = true;
                } else if (key.equals(METHODS_DEFAULT)) {
                    b.methodsDefault(QuotaConfigLoader.parseMethods(e.getValue(), full));
                } else if (key.startsWith(RESOURCES) && key.length() > RESOURCES.length()) {
                    String bucket = key.substring(RESOURCES.length());
                    ResourceQuotas r = QuotaConfigLoader.parseResource(bucket, e.getValue(), full);
                    if (cache != null) {
                        cache.parsed.put(key, new Parsed(e.getValue(), bucket, r));
                    }
                    b.resource(bucket, r);
                    resources++;
                } else {
                    throw new QuotaConfigException(List.of(new ConfigProblem(full, "key", null, "unknown key: expected "
                            + prefix + FACTOR + ", " + prefix + MODE + ", " + prefix + LEASE + ", " + prefix + DEFAULT + ", " + prefix + METHODS_DEFAULT
                            + " or " + prefix + RESOURCES + "<bucket>")));
                }
            } catch (QuotaConfigException ex) {
                problems.addAll(ex.problems());
                if (byKey != null) {
                    byKey.computeIfAbsent(key, k -> new ArrayList<>()).addAll(ex.problems());
                }
            }
        }
        if (cache != null && cache.parsed.size() > resources) {
            cache.parsed.keySet().removeIf(k -> !values.containsKey(k));
        }
        if (!haveDefault && problems.stream().noneMatch(p -> p.location().equals(prefix + DEFAULT))
                && (byKey == null || !byKey.containsKey(DEFAULT))) {
            ConfigProblem missing = new ConfigProblem(prefix + DEFAULT, "key", null, "missing: the default quota is required");
            problems.add(missing);
            if (byKey != null) {
                byKey.computeIfAbsent(DEFAULT, k -> new ArrayList<>()).add(missing);
            }
        }
        if (!problems.isEmpty()) {
            throw new QuotaConfigException(problems);
        }
        if (cache == null) {
            return b.build();
        }
        QuotaConfig built = b.reuse(cache.lastBuilt).build();
        cache.lastBuilt = built;
        return built;
    }

    /**
     * Splits a configuration into the values of the etcd layout.
     *
     * @param cfg the configuration
     * @return relative key → YAML value, in key order
     */
    public static Map<String, String> toValues(QuotaConfig cfg) {
        Map<String, String> out = new LinkedHashMap<>();
        out.put(FACTOR, Integer.toString(cfg.factor()));
        if (cfg.defaultMode() != dev.levee.quota.QuotaMode.ENFORCE) {
            out.put(MODE, cfg.defaultMode().label());
        }
        if (!cfg.defaultLease()) {
            out.put(LEASE, "false");
        }
        out.put(DEFAULT, QuotaYamlWriter.writePart(cfg.defaultQuota()));
        if (!cfg.methodsDefault().isEmpty()) {
            out.put(METHODS_DEFAULT, QuotaYamlWriter.writePart(cfg.methodsDefault()));
        }
        for (Map.Entry<String, ResourceQuotas> e : cfg.resources().entrySet()) {
            out.put(RESOURCES + e.getKey(), QuotaYamlWriter.writePart(e.getValue()));
        }
        return out;
    }

    /** Writes one resource's value for {@code resources/<bucket>}. */
    public static String resourceYaml(ResourceQuotas r) {
        return QuotaYamlWriter.writePart(r);
    }

    /** Writes a methods map's value. */
    public static String methodsYaml(Map<S3Operation, Quota> m) {
        return QuotaYamlWriter.writePart(m);
    }
}
