package dev.levee.quota;

import dev.levee.s3.S3Operation;
import java.util.ArrayList;
import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Holds one validated snapshot of the quota configuration and resolves which quota, and which
 * counter, applies to a request (docs/design.md §4).
 *
 * <h2>Model</h2>
 * A configuration has a group factor DF ({@link #factor()}), a {@link #defaultQuota() default}
 * quota, optional {@link #methodsDefault() quotas per operation}, and optional
 * {@link #resources() quotas per resource} (bucket), each with a resource-level quota and a
 * list of prefix entries. Instances are immutable; a live update builds a new snapshot and
 * swaps it in whole, so a decision never mixes two versions. Building validates everything and
 * reports all problems at once in a {@link QuotaConfigException}.
 *
 * <h2>Resolution of (resource R, object key K, operation M), first match wins</h2>
 * <ol>
 *   <li>R is configured and a prefix entry matches K. An entry {@code "p"} matches keys that
 *       start with {@code p}; {@code "p*"} matches the same keys but gives each distinct object
 *       key its own counter; {@code ""} matches every request to R, including bucket-level
 *       operations, whose key is {@code ""} (a non-empty entry never matches them). The entry
 *       with the longest literal prefix wins; between equal lengths ({@code "p"} and
 *       {@code "p*"}), the one listed first. If that entry has {@code methods[M]}, that quota
 *       applies ({@link QuotaLevel#PREFIX_METHOD}); else if it has a {@code quota}, that one
 *       ({@link QuotaLevel#PREFIX}); else resolution <em>continues with step 2</em>: shorter
 *       entries are deliberately not tried, so that adding a longer entry for some operations
 *       never hands the other operations to an unrelated shorter entry.</li>
 *   <li>R has a {@code quota}: one counter for the whole resource ({@link QuotaLevel#RESOURCE}).</li>
 *   <li>{@code methods_default[M]}: counted per resource and operation
 *       ({@link QuotaLevel#METHODS_DEFAULT}).</li>
 *   <li>{@code default}: counted per resource ({@link QuotaLevel#DEFAULT}).</li>
 * </ol>
 * At every level where operations are listed, {@code ListObjects} also covers
 * {@code ListObjectsV2} unless {@code ListObjectsV2} is listed there itself; the two then share
 * the {@code ListObjects} counter. {@link S3Operation#Unknown} cannot be listed, so unclassified
 * requests fall to the entry's or the resource's quota (docs/design.md §3). Matching is exact and
 * case-sensitive on the decoded key, character by character, without Unicode normalisation.
 * The counter of each answer is named by {@link ResolvedQuota#limitKey()}.
 *
 * <p>Validation rules beyond the spec's wording are listed in {@link QuotaRules}.
 *
 * <h2>Memory and incremental builds (design)</h2>
 * A site may configure 100 000 buckets; a limiter holds one snapshot and rebuilds it after every etcd
 * change. Three choices keep that cheap:
 * <ul>
 *   <li><b>One map per snapshot.</b> The only per-resource structure is {@code index}: resource name →
 *       {@link PrefixIndex}, the bucket's validated, compiled entry, which also holds the
 *       {@link ResourceQuotas} it was built from; {@link #resources()} is a read-only view of it, not a
 *       second map.</li>
 *   <li><b>Compact entries.</b> A {@link PrefixIndex} is a sorted array of literal prefixes (the
 *       configuration's own strings) and a parallel array of precomputed answers, searched by binary
 *       search instead of a trie of one node per character; per-operation arrays exist only for entries
 *       with {@code methods}, and the answers of steps 3–4 only for a resource without a quota of its own
 *       (step 2 always answers before them). For 100 000 buckets of seven prefixes this is about 1 KiB
 *       per bucket, about as much as the parsed values (it was six times as much with the trie).</li>
 *   <li><b>Structural sharing.</b> {@link Builder#reuse} (set by {@link #toBuilder()}, and by the etcd
 *       source through its parse cache) hands the previous snapshot to the build: a resource whose
 *       quotas are the same instance as, or equal to, those it had there keeps its entry as is, neither
 *       validated (it was, under the same name, when that snapshot was built) nor compiled again. If
 *       {@code default} or {@code methods_default} changed, only entries of resources without a quota of
 *       their own get new fallback answers ({@link PrefixIndex#withFallback}), sharing their prefix
 *       arrays. A rebuild after one change therefore validates and compiles one bucket and does linear
 *       work only in map operations (one new {@code index} map), milliseconds rather than seconds for
 *       100 000 buckets (docs/BENCHMARKS.md, "Large quota configurations").</li>
 * </ul>
 * Sharing does not weaken docs/design.md §4: a snapshot is never modified after its constructor returns,
 * shared entries are immutable, and a new snapshot is a new object that the source swaps in with one
 * volatile write, so a decision that read one snapshot sees only that version. Validation stays whole:
 * a build with any invalid part throws and produces no snapshot, so the last good one stays in force.
 */
public final class QuotaConfig {

    private static final S3Operation[] OPS = S3Operation.values();

    private final int factor;
    private final Quota defaultQuota;
    private final Map<S3Operation, Quota> methodsDefault;
    private final Map<String, PrefixIndex> index;  // in configured order; the only per-resource map
    private final Map<String, ResourceQuotas> resources; // read-only view of index
    private final Quota[] methodsDefaultQuota;     // by operation ordinal, after the ListObjects rule
    private final String[] methodsDefaultSuffix;   // "#ListObjects" for ListObjectsV2 when it falls back
    private final S3Operation[] methodsDefaultOp;
    private final QuotaMode defaultMode;
    private final boolean defaultLease;
    /**
     * Answers of steps 3 and 4 (methods_default, default) per resource that has no quota of its own, built on first
     * use and kept while this snapshot is in force, so that checks on unconfigured buckets allocate no limit key
     * and no answer each (bounded: Caffeine, {@value #FALLBACK_CACHE} resources; evicted ones are built again).
     */
    private final com.github.benmanes.caffeine.cache.Cache<String, PrefixIndex.Fallback> fallbacks =
            com.github.benmanes.caffeine.cache.Caffeine.newBuilder().maximumSize(FALLBACK_CACHE).build();
    /** Unconfigured resources whose answers are kept per snapshot: 16 384 (the hot ones; others are built again). */
    static final int FALLBACK_CACHE = 16_384;
    /** The configuration without its shadow quotas; {@code this} when it has none. */
    private final QuotaConfig enforced;
    /** In an enforced view only: the default quota is a shadow one, so step 4 enforces nothing. */
    private final boolean noDefault;

    private QuotaConfig(Builder b) {
        this(b, false, false);
    }

    private QuotaConfig(Builder b, boolean view, boolean noDefault) {
        QuotaConfig base = b.base;
        Map<String, PrefixIndex> reusable = base == null ? Map.of() : base.index;
        List<ConfigProblem> problems = new ArrayList<>(QuotaRules.checkFactor(b.factor, "factor"));
        if (b.defaultQuota == null) {
            problems.add(ConfigProblem.of("default", "required: the quota for requests that match nothing more specific"));
        }
        problems.addAll(QuotaRules.checkMethods(b.methodsDefault, "methods_default", null));
        PrefixIndex[] kept = new PrefixIndex[b.resources.size()];
        int n = 0;
        for (Map.Entry<String, ResourceQuotas> e : b.resources.entrySet()) {
            PrefixIndex old = reusable.get(e.getKey());
            if (old != null && (old.config() == e.getValue() || old.config().equals(e.getValue()))) {
                kept[n] = old; // validated under this name when base was built
            } else {
                problems.addAll(QuotaRules.checkResource(e.getKey(), e.getValue(), ConfigPath.key("resources", e.getKey())));
            }
            n++;
        }
        if (!problems.isEmpty()) {
            throw new QuotaConfigException(problems);
        }
        this.factor = b.factor;
        this.defaultQuota = b.defaultQuota;
        this.methodsDefault = PrefixRule.copyOf(b.methodsDefault);

        methodsDefaultQuota = new Quota[OPS.length];
        methodsDefaultSuffix = new String[OPS.length];
        methodsDefaultOp = new S3Operation[OPS.length];
        for (S3Operation op : OPS) {
            S3Operation configured = LimitKeys.configuredFor(methodsDefault, op);
            if (configured != null) {
                methodsDefaultQuota[op.ordinal()] = methodsDefault.get(configured);
                methodsDefaultSuffix[op.ordinal()] = LimitKeys.operationSuffix(configured);
                methodsDefaultOp[op.ordinal()] = configured;
            }
        }
        boolean sameFallback = base != null && base.defaultQuota.equals(defaultQuota)
                && base.methodsDefault.equals(methodsDefault);
        Map<String, PrefixIndex> compiled = new LinkedHashMap<>(Math.max(16, (int) (b.resources.size() / 0.75f) + 1));
        n = 0;
        for (Map.Entry<String, ResourceQuotas> e : b.resources.entrySet()) {
            PrefixIndex p = kept[n++];
            if (p == null) {
                p = PrefixIndex.compile(e.getKey(), e.getValue(), fallback(e.getKey()));
            } else if (!sameFallback && p.usesFallback()) {
                p = p.withFallback(fallback(e.getKey()));
            }
            compiled.put(e.getKey(), p);
        }
        this.index = compiled; // never exposed: resources() is a read-only view
        this.resources = new ResourcesView(index);
        this.defaultMode = b.defaultMode;
        this.defaultLease = b.defaultLease;
        this.noDefault = noDefault;
        this.enforced = view ? this : enforcedView();
    }

    /**
     * Builds the configuration as it would be without its shadow quotas (docs/decisions.md, "Shadow
     * quotas"): shadow quotas removed, prefix entries left with neither quota nor methods removed, the
     * default mode {@code enforce}. Returns {@code this} when nothing is a shadow quota. Resources without a
     * shadow quota keep their built entry ({@link Builder#reuse}).
     */
    private QuotaConfig enforcedView() {
        QuotaMode dm = defaultMode;
        boolean shadowDefault = defaultQuota.modeOr(dm) == QuotaMode.SHADOW;
        Map<S3Operation, Quota> md = stripped(methodsDefault, dm);
        boolean any = shadowDefault || md != methodsDefault;
        if (!any) {
            for (PrefixIndex p : index.values()) { // the usual case: no shadow quota, nothing allocated
                if (stripped(p.config(), dm) != p.config()) {
                    any = true;
                    break;
                }
            }
        }
        if (!any) {
            return this;
        }
        Map<String, ResourceQuotas> stripped = new LinkedHashMap<>(Math.max(16, (int) (index.size() / 0.75f) + 1));
        for (Map.Entry<String, PrefixIndex> e : index.entrySet()) {
            stripped.put(e.getKey(), stripped(e.getValue().config(), dm));
        }
        Builder b = builder().factor(factor).defaultLease(defaultLease).defaultQuota(defaultQuota).methodsDefault(md)
                .resources(stripped).reuse(this);
        return new QuotaConfig(b, true, shadowDefault);
    }

    private static Map<S3Operation, Quota> stripped(Map<S3Operation, Quota> methods, QuotaMode dm) {
        Map<S3Operation, Quota> out = null;
        for (Map.Entry<S3Operation, Quota> e : methods.entrySet()) {
            if (e.getValue().modeOr(dm) == QuotaMode.SHADOW) {
                if (out == null) {
                    out = new LinkedHashMap<>(methods);
                }
                out.remove(e.getKey());
            }
        }
        return out == null ? methods : out;
    }

    private static ResourceQuotas stripped(ResourceQuotas rq, QuotaMode dm) {
        boolean changed = rq.quota() != null && rq.quota().modeOr(dm) == QuotaMode.SHADOW;
        List<PrefixRule> entries = null;
        List<PrefixRule> prefixes = rq.prefixes();
        for (int i = 0; i < prefixes.size(); i++) {
            PrefixRule r = prefixes.get(i);
            Quota q = r.quota() != null && r.quota().modeOr(dm) == QuotaMode.SHADOW ? null : r.quota();
            Map<S3Operation, Quota> m = stripped(r.methods(), dm);
            if (q != r.quota() || m != r.methods()) {
                if (entries == null) {
                    entries = new ArrayList<>(prefixes.subList(0, i));
                }
                if (q != null || !m.isEmpty()) {
                    entries.add(new PrefixRule(r.prefix(), q, m));
                }
            } else if (entries != null) {
                entries.add(r);
            }
        }
        if (!changed && entries == null) {
            return rq;
        }
        return new ResourceQuotas(changed ? null : rq.quota(), entries == null ? prefixes : entries);
    }

    /**
     * Returns a builder with factor {@code 1} and nothing else set.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Creates and validates a configuration.
     *
     * @param factor         the group factor DF, ≥ 1
     * @param defaultQuota   the quota for requests that match nothing more specific
     * @param methodsDefault quotas per operation for every resource; may be empty
     * @param resources      quotas per resource (bucket) name; may be empty
     * @return the configuration
     * @throws QuotaConfigException if any rule of docs/design.md §4 or {@link QuotaRules} is broken
     * @throws NullPointerException if a map is or contains {@code null}
     */
    public static QuotaConfig of(int factor, Quota defaultQuota, Map<S3Operation, Quota> methodsDefault,
                                 Map<String, ResourceQuotas> resources) {
        return builder().factor(factor).defaultQuota(defaultQuota).methodsDefault(methodsDefault).resources(resources).build();
    }

    /**
     * Returns a builder holding this configuration, to derive a changed one.
     *
     * @return a new builder
     */
    public Builder toBuilder() {
        return builder().factor(factor).defaultMode(defaultMode).defaultLease(defaultLease).defaultQuota(defaultQuota)
                .methodsDefault(methodsDefault).resources(resources).reuse(this);
    }

    /**
     * Returns the group factor DF: the number of limiters that share a resource (docs/design.md §5).
     *
     * @return DF, ≥ 1
     */
    public int factor() {
        return factor;
    }

    /**
     * Returns the quota for requests that match nothing more specific (step 4).
     *
     * @return the default quota, never {@code null}
     */
    public Quota defaultQuota() {
        return defaultQuota;
    }

    /**
     * Returns the quotas per operation that apply to every resource (step 3).
     *
     * @return an unmodifiable map in configured order; may be empty
     */
    public Map<S3Operation, Quota> methodsDefault() {
        return methodsDefault;
    }

    /**
     * Returns the quotas per resource (bucket) name.
     *
     * @return an unmodifiable map in configured order; may be empty
     */
    public Map<String, ResourceQuotas> resources() {
        return resources;
    }

    /**
     * Resolves the quota and counter for a request (docs/design.md §4; see the class description).
     *
     * <p>Never throws for non-null arguments, whatever they contain; allocates nothing when the
     * answer does not depend on the object key (an unconfigured resource's answers are built on its first
     * request and kept with this snapshot), and one key string plus the result for a wildcard match.
     *
     * @param resource the resource (bucket) name, as classified from the request
     * @param key      the object key, percent-decoded; {@code ""} for bucket-level operations
     * @param op       the operation; {@link S3Operation#Unknown} when not classified
     * @return the quota, its level and its limit key; never {@code null}
     * @throws NullPointerException if an argument is {@code null}
     */
    public ResolvedQuota resolve(String resource, String key, S3Operation op) {
        Objects.requireNonNull(resource, "resource");
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(op, "op");
        PrefixIndex configured = index.get(resource);
        if (configured != null) {
            return configured.resolve(key, op);
        }
        PrefixIndex.Fallback f = fallbacks.getIfPresent(resource);
        if (f == null) {
            f = fallback(resource);
            fallbacks.put(resource, f);
        }
        return f.answer(op);
    }

    /**
     * Resolves the quota that <em>enforces</em> a request: the answer of {@link #resolve} for this
     * configuration without its shadow quotas (docs/decisions.md, "Shadow quotas"), so that adding, changing
     * or removing a shadow quota never changes which enforced quota, or which counter, a request gets.
     * Without shadow quotas this is {@link #resolve}.
     *
     * @param resource the resource (bucket) name
     * @param key      the object key, percent-decoded; {@code ""} for bucket-level operations
     * @param op       the operation
     * @return the enforced quota, or {@code null} when only shadow quotas apply (the default is a shadow
     *         quota and nothing enforced is more specific): the request is then admitted
     * @throws NullPointerException if an argument is {@code null}
     */
    public ResolvedQuota resolveEnforced(String resource, String key, S3Operation op) {
        ResolvedQuota r = enforced.resolve(resource, key, op);
        return enforced.noDefault && r.level() == QuotaLevel.DEFAULT ? null : r;
    }

    /**
     * Tells whether a resolved quota is a shadow one under this configuration's default mode.
     *
     * @param rq an answer of {@link #resolve}, not null
     * @return {@code true} when its quota's mode, or the default mode when it has none, is {@code shadow}
     */
    public boolean isShadow(ResolvedQuota rq) {
        return rq.quota().modeOr(defaultMode) == QuotaMode.SHADOW;
    }

    /**
     * Tells whether any quota of this configuration is a shadow one.
     *
     * @return {@code false} when {@link #resolveEnforced} always equals {@link #resolve}
     */
    public boolean hasShadow() {
        return enforced != this;
    }

    /**
     * Returns the mode of quotas that do not set one (the single-file form's top-level {@code mode},
     * etcd's {@code mode} key).
     *
     * @return {@link QuotaMode#ENFORCE} unless configured
     */
    public QuotaMode defaultMode() {
        return defaultMode;
    }

    /**
     * Returns whether quotas that do not say whether they may be leased may be (the single-file form's top-level
     * {@code lease}, etcd's {@code lease} key; docs/quotas.md, "Request leases").
     *
     * @return {@code true} unless configured
     */
    public boolean defaultLease() {
        return defaultLease;
    }

    /**
     * Tells whether a resolved quota's counter may be leased to a client (issue 23: request leases for hot keys;
     * docs/quotas.md, "Request leases"): the quota's own {@code lease}, else {@link #defaultLease()}. Being eligible
     * is not being leased: a client leases only keys above its threshold, and only with leases on (its default).
     *
     * @param rq an answer of {@link #resolve} or {@link #resolveEnforced}, not null
     * @return {@code false} when the quota, or the configuration for quotas that do not say, has {@code lease: false}
     */
    public boolean leaseEligible(ResolvedQuota rq) {
        return rq.quota().leaseOr(defaultLease);
    }

    /**
     * Returns the enforced quota every request to {@code resource} gets, whatever its object key and operation, or
     * null when two requests to it could get different counters or a shadow quota could match one of them. What lets
     * NGINX admit a bucket's requests from a batch of leased slots without classifying them (docs/design.md §12,
     * "Batches in NGINX"): every request to such a resource is counted on the same limit key.
     *
     * <p>Conservative by construction: a configured resource qualifies only with a resource-level {@code quota} and
     * no prefix entry at all (any entry matches some key); an unconfigured one only when {@code methods_default} is
     * empty (its entries give each operation its own counter). The quota must not be a shadow one.
     *
     * @param resource the resource (bucket) name, not null
     * @return the quota, its level and its limit key (as {@link #resolve} and {@link #resolveEnforced} give for every
     *         key and operation of the resource), or null
     * @throws NullPointerException if {@code resource} is null
     */
    public ResolvedQuota wholeResource(String resource) {
        ResourceQuotas configured = resources.get(Objects.requireNonNull(resource, "resource"));
        if (configured != null && (configured.quota() == null || !configured.prefixes().isEmpty())) {
            return null;
        }
        if (configured == null) {
            for (Quota q : methodsDefaultQuota) {
                if (q != null) {
                    return null;
                }
            }
        }
        ResolvedQuota r = resolve(resource, "", S3Operation.Unknown);
        return isShadow(r) ? null : r;
    }

    /**
     * Returns a digest of everything that decides how requests to {@code resource} resolve: the factor, the top-level
     * {@code mode} and {@code lease}, {@code default}, {@code methods_default} and the resource's own quotas (prefix
     * order kept, operations sorted by name). Two configurations with the same digest for a resource resolve every
     * request to it to the same quota, counter and lease eligibility; how they were written (file or etcd, key
     * order, {@code 5000} or {@code 5000.0}) does not change it.
     *
     * <p>What a lease ask carries so that a limiter grants slots only to a client that resolves the resource as it
     * does (docs/design.md §12, "Same quotas on both sides"): a client that resolved other quotas could admit, from a
     * lease of one counter, requests the limiter counts on another.
     *
     * @param resource the resource (bucket) name, not null
     * @return 16 lowercase hex digits (the first 64 bits of a SHA-256 of a canonical text)
     * @throws NullPointerException if {@code resource} is null
     */
    public String resolutionDigest(String resource) {
        StringBuilder b = new StringBuilder(256).append("factor=").append(factor).append(";mode=").append(defaultMode)
                .append(";lease=").append(defaultLease).append(";default=");
        canonical(b, defaultQuota).append(";methods_default=");
        canonical(b, methodsDefault);
        ResourceQuotas r = resources.get(Objects.requireNonNull(resource, "resource"));
        if (r != null) {
            b.append(";quota=");
            canonical(b, r.quota());
            for (PrefixRule p : r.prefixes()) {
                b.append(";prefix=").append(p.prefix().length()).append(':').append(p.prefix()).append(",quota=");
                canonical(b, p.quota()).append(",methods=");
                canonical(b, p.methods());
            }
        }
        return com.google.common.hash.Hashing.sha256().hashString(b, java.nio.charset.StandardCharsets.UTF_8)
                .toString().substring(0, 16);
    }

    private static StringBuilder canonical(StringBuilder b, Quota q) {
        return q == null ? b.append('-') : b.append(Double.doubleToLongBits(q.rate())).append('/').append(q.burst())
                .append('/').append(q.mode()).append('/').append(q.lease());
    }

    private static void canonical(StringBuilder b, Map<S3Operation, Quota> methods) {
        b.append('{');
        methods.entrySet().stream().sorted(Map.Entry.comparingByKey(java.util.Comparator.comparing(S3Operation::name)))
                .forEach(e -> canonical(b.append(e.getKey().name()).append('='), e.getValue()).append(','));
        b.append('}');
    }

    private PrefixIndex.Fallback fallback(String resource) {
        ResolvedQuota[] answers = null;
        for (int i = 0; i < OPS.length; i++) {
            if (methodsDefaultQuota[i] != null) {
                if (answers == null) {
                    answers = new ResolvedQuota[OPS.length];
                }
                answers[i] = new ResolvedQuota(methodsDefaultQuota[i], QuotaLevel.METHODS_DEFAULT,
                        LimitKeys.methodsDefaultKey(resource, methodsDefaultSuffix[i]), null, methodsDefaultOp[i]);
            }
        }
        return new PrefixIndex.Fallback(answers, defaultAnswer(resource));
    }

    private ResolvedQuota defaultAnswer(String resource) {
        return new ResolvedQuota(defaultQuota, QuotaLevel.DEFAULT, LimitKeys.defaultKey(resource), null, null);
    }

    /** Tells whether {@code resource} uses the same built entry in both configurations (for tests). */
    static boolean sharesEntry(QuotaConfig a, QuotaConfig b, String resource) {
        PrefixIndex p = a.index.get(resource);
        return p != null && p == b.index.get(resource);
    }

    /**
     * Compares the configured data: factor, default, methods_default and resources (prefix
     * order matters, map order does not).
     */
    @Override
    public boolean equals(Object o) {
        return o instanceof QuotaConfig other
                && factor == other.factor
                && defaultMode == other.defaultMode
                && defaultLease == other.defaultLease
                && defaultQuota.equals(other.defaultQuota)
                && methodsDefault.equals(other.methodsDefault)
                && sameResources(index, other.index);
    }

    private static boolean sameResources(Map<String, PrefixIndex> a, Map<String, PrefixIndex> b) {
        if (a.size() != b.size()) {
            return false;
        }
        for (Map.Entry<String, PrefixIndex> e : a.entrySet()) {
            PrefixIndex mine = e.getValue();
            PrefixIndex theirs = b.get(e.getKey());
            if (theirs == null || (theirs != mine && theirs.config() != mine.config()
                    && !theirs.config().equals(mine.config()))) {
                return false;
            }
        }
        return true;
    }

    @Override
    public int hashCode() {
        return Objects.hash(factor, defaultMode, defaultLease, defaultQuota, methodsDefault, resources);
    }

    @Override
    public String toString() {
        return "QuotaConfig[factor=" + factor + (defaultMode == QuotaMode.ENFORCE ? "" : ", mode=" + defaultMode.label())
                + (defaultLease ? "" : ", lease=false")
                + ", default=" + defaultQuota + ", methods_default=" + methodsDefault
                + ", resources=" + resources + "]";
    }

    /**
     * Collects the parts of a {@link QuotaConfig}; {@link #build()} validates them all at once.
     * Not thread-safe.
     */
    public static final class Builder {
        private int factor = 1;
        private Quota defaultQuota;
        private final Map<S3Operation, Quota> methodsDefault = new LinkedHashMap<>();
        private final Map<String, ResourceQuotas> resources = new LinkedHashMap<>();
        private QuotaConfig base;
        private QuotaMode defaultMode = QuotaMode.ENFORCE;
        private boolean defaultLease = true;

        private Builder() {
        }

        /**
         * Sets whether quotas that do not say may be leased to clients (docs/quotas.md, "Request leases"); defaults
         * to {@code true}.
         *
         * @param lease the default
         * @return this builder
         */
        public Builder defaultLease(boolean lease) {
            this.defaultLease = lease;
            return this;
        }

        /**
         * Sets the mode of quotas that do not set one; defaults to {@link QuotaMode#ENFORCE}.
         *
         * @param mode the default mode
         * @return this builder
         * @throws NullPointerException if {@code mode} is {@code null}
         */
        public Builder defaultMode(QuotaMode mode) {
            this.defaultMode = Objects.requireNonNull(mode, "mode");
            return this;
        }

        /**
         * Lets {@link #build()} reuse the validated, compiled entry of {@code previous} for every
         * resource whose quotas are the same instance as, or equal to, that resource's quotas in
         * {@code previous}: such a resource is neither validated nor compiled again. The result is
         * the same configuration as without; only the work and the memory differ. {@link
         * QuotaConfig#toBuilder()} sets this to the configuration it came from.
         *
         * @param previous an earlier configuration, or {@code null} for none
         * @return this builder
         */
        public Builder reuse(QuotaConfig previous) {
            this.base = previous;
            return this;
        }

        /**
         * Sets the group factor DF (docs/design.md §5); defaults to {@code 1}.
         *
         * @param value DF, validated ≥ 1 by {@link #build()}
         * @return this builder
         */
        public Builder factor(int value) {
            this.factor = value;
            return this;
        }

        /**
         * Sets the quota for requests that match nothing more specific; required.
         *
         * @param quota the default quota
         * @return this builder
         */
        public Builder defaultQuota(Quota quota) {
            this.defaultQuota = quota;
            return this;
        }

        /**
         * Replaces the quotas per operation for every resource.
         *
         * @param quotas quotas by operation
         * @return this builder
         * @throws NullPointerException if {@code quotas} is or contains {@code null}
         */
        public Builder methodsDefault(Map<S3Operation, Quota> quotas) {
            Map<S3Operation, Quota> copy = PrefixRule.copyOf(quotas);
            methodsDefault.clear();
            methodsDefault.putAll(copy);
            return this;
        }

        /**
         * Sets the quota of one operation for every resource, replacing any previous one.
         *
         * @param op    the operation
         * @param quota its quota
         * @return this builder
         * @throws NullPointerException if an argument is {@code null}
         */
        public Builder methodDefault(S3Operation op, Quota quota) {
            methodsDefault.put(Objects.requireNonNull(op, "op"), Objects.requireNonNull(quota, "quota"));
            return this;
        }

        /**
         * Replaces the quotas of all resources.
         *
         * @param quotas quotas by resource (bucket) name
         * @return this builder
         * @throws NullPointerException if {@code quotas} is or contains {@code null}
         */
        public Builder resources(Map<String, ResourceQuotas> quotas) {
            quotas.forEach((name, rq) -> {
                Objects.requireNonNull(name, "resource");
                Objects.requireNonNull(rq, "quotas");
            });
            resources.clear();
            resources.putAll(quotas);
            return this;
        }

        /**
         * Sets the quotas of one resource, replacing any previous ones.
         *
         * @param name   the resource (bucket) name
         * @param quotas its quotas
         * @return this builder
         * @throws NullPointerException if an argument is {@code null}
         */
        public Builder resource(String name, ResourceQuotas quotas) {
            resources.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(quotas, "quotas"));
            return this;
        }

        /**
         * Validates the parts and creates the configuration.
         *
         * @return the configuration
         * @throws QuotaConfigException listing every problem, if any rule of docs/design.md §4 or
         *                              {@link QuotaRules} is broken
         */
        public QuotaConfig build() {
            return new QuotaConfig(this);
        }
    }

    /** The read-only {@code resources()} map: a view of the built entries, so no second map per resource. */
    private static final class ResourcesView extends AbstractMap<String, ResourceQuotas> {
        private final Map<String, PrefixIndex> index;

        ResourcesView(Map<String, PrefixIndex> index) {
            this.index = index;
        }

        @Override
        public ResourceQuotas get(Object key) {
            PrefixIndex p = index.get(key);
            return p == null ? null : p.config();
        }

        @Override
        public boolean containsKey(Object key) {
            return index.containsKey(key);
        }

        @Override
        public int size() {
            return index.size();
        }

        @Override
        public Set<Entry<String, ResourceQuotas>> entrySet() {
            return new AbstractSet<>() {
                @Override
                public Iterator<Entry<String, ResourceQuotas>> iterator() {
                    Iterator<Map.Entry<String, PrefixIndex>> it = index.entrySet().iterator();
                    return new Iterator<>() {
                        @Override
                        public boolean hasNext() {
                            return it.hasNext();
                        }

                        @Override
                        public Entry<String, ResourceQuotas> next() {
                            Map.Entry<String, PrefixIndex> e = it.next();
                            return new AbstractMap.SimpleImmutableEntry<>(e.getKey(), e.getValue().config());
                        }
                    };
                }

                @Override
                public int size() {
                    return index.size();
                }
            };
        }
    }
}
