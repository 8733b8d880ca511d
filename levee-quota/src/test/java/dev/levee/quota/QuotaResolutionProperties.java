package dev.levee.quota;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.s3.S3Operation;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/** Invariants of {@link QuotaConfig#resolve} over arbitrary inputs and configurations. */
class QuotaResolutionProperties {

    private static final QuotaConfig A = QuotaFixtures.configA();

    @Property(tries = 2000)
    void resolveNeverThrowsAndAlwaysAnswers(@ForAll("resources") String resource, @ForAll String key,
                                            @ForAll S3Operation op) {
        ResolvedQuota r = A.resolve(resource, key, op);

        assertThat(r.quota()).isNotNull();
        assertThat(r.limitKey()).contains(resource);
    }

    @Provide
    Arbitrary<String> resources() {
        return Arbitraries.oneOf(Arbitraries.strings(), Arbitraries.of(A.resources().keySet()));
    }

    /** Compares the trie-based resolution with a plain reading of docs/design.md §4 over random configurations. */
    @Property(tries = 500)
    void agreesWithAPlainReadingOfTheSpec(@ForAll("configs") QuotaConfig config, @ForAll("keys") String key,
                                          @ForAll("ops") S3Operation op) {
        for (String resource : List.of("r", "unconfigured")) {
            assertThat(config.resolve(resource, key, op)).isEqualTo(reference(config, resource, key, op));
        }
    }

    @Provide
    Arbitrary<S3Operation> ops() {
        return Arbitraries.of(S3Operation.GetObject, S3Operation.PutObject, S3Operation.ListObjects,
                S3Operation.ListObjectsV2, S3Operation.Unknown);
    }

    @Provide
    Arbitrary<String> keys() {
        return Arbitraries.strings().withChars("ab/*#").ofMaxLength(6);
    }

    @Provide
    Arbitrary<QuotaConfig> configs() {
        Arbitrary<Quota> quotas = Combinators.combine(Arbitraries.integers().between(0, 50), Arbitraries.integers().between(0, 9))
                .as((rate, burst) -> new Quota(rate, burst));
        Arbitrary<Map<S3Operation, Quota>> methods = Arbitraries.maps(
                Arbitraries.of(S3Operation.GetObject, S3Operation.PutObject, S3Operation.ListObjects, S3Operation.ListObjectsV2),
                quotas).ofMaxSize(3);
        Arbitrary<String> prefixes = Combinators.combine(Arbitraries.strings().withChars("ab/").ofMaxLength(3), Arbitraries.of(true, false))
                .as((literal, star) -> star ? literal + "*" : literal);
        Arbitrary<PrefixRule> rules = Combinators.combine(prefixes, quotas.injectNull(0.4), methods)
                .filter((p, q, m) -> q != null || !m.isEmpty())
                .as(PrefixRule::new);
        Arbitrary<List<PrefixRule>> lists = rules.list().ofMaxSize(6).uniqueElements(PrefixRule::prefix);
        return Combinators.combine(quotas, methods, quotas.injectNull(0.5), lists)
                .as((def, md, rq, list) -> QuotaConfig.builder().defaultQuota(def).methodsDefault(md)
                        .resource("r", new ResourceQuotas(rq, list)).build());
    }

    /** A deliberately naive reading of docs/design.md §4: linear scan, strings built on every call. */
    private static ResolvedQuota reference(QuotaConfig config, String resource, String key, S3Operation op) {
        ResourceQuotas rq = config.resources().get(resource);
        if (rq != null) {
            PrefixRule best = null;
            for (PrefixRule rule : rq.prefixes()) {
                if (key.startsWith(rule.literal()) && (best == null || rule.literal().length() > best.literal().length())) {
                    best = rule;
                }
            }
            if (best != null) {
                String base = "prefix:" + resource + "/" + best.prefix();
                String at = best.wildcard() ? "@" + key : "";
                S3Operation configured = configured(best.methods(), op);
                if (configured != null) {
                    return new ResolvedQuota(best.methods().get(configured), QuotaLevel.PREFIX_METHOD,
                            base + "#" + configured + at, best.prefix(), configured);
                }
                if (best.quota() != null) {
                    return new ResolvedQuota(best.quota(), QuotaLevel.PREFIX, base + at, best.prefix(), null);
                }
            }
            if (rq.quota() != null) {
                return new ResolvedQuota(rq.quota(), QuotaLevel.RESOURCE, "resource:" + resource, null, null);
            }
        }
        S3Operation configured = configured(config.methodsDefault(), op);
        if (configured != null) {
            return new ResolvedQuota(config.methodsDefault().get(configured), QuotaLevel.METHODS_DEFAULT,
                    "methods_default:" + resource + "#" + configured, null, configured);
        }
        return new ResolvedQuota(config.defaultQuota(), QuotaLevel.DEFAULT, "default:" + resource, null, null);
    }

    private static S3Operation configured(Map<S3Operation, Quota> methods, S3Operation op) {
        if (methods.containsKey(op)) {
            return op;
        }
        return op == S3Operation.ListObjectsV2 && methods.containsKey(S3Operation.ListObjects) ? S3Operation.ListObjects : null;
    }

    /**
     * {@link QuotaConfig#wholeResource}: when it names a quota, every key and operation of the resource resolves to
     * it, enforced and not shadow; when it does not, the configuration gives the resource more than one counter, a
     * shadow quota or no resource-level quota (docs/design.md §12, "Batches in NGINX").
     */
    @Property(tries = 500)
    void aWholeResourceQuotaIsWhatEveryRequestToItGets(@ForAll("configs") QuotaConfig config, @ForAll("keys") String key,
                                                      @ForAll("ops") S3Operation op, @ForAll boolean shadowDefault) {
        QuotaConfig c = shadowDefault ? config.toBuilder().defaultMode(QuotaMode.SHADOW).build() : config;
        for (String resource : List.of("r", "unconfigured")) {
            ResolvedQuota whole = c.wholeResource(resource);
            if (whole == null) {
                ResourceQuotas rq = c.resources().get(resource);
                boolean single = rq != null ? rq.quota() != null && rq.prefixes().isEmpty() : c.methodsDefault().isEmpty();
                assertThat(!single || c.isShadow(c.resolve(resource, "", op))).as(resource).isTrue();
                continue;
            }
            assertThat(c.resolve(resource, key, op)).as(resource).isEqualTo(whole);
            assertThat(c.resolveEnforced(resource, key, op)).as(resource).isEqualTo(whole);
            assertThat(c.isShadow(whole)).isFalse();
        }
    }

    /** Distinct object keys under one wildcard entry never share a counter, whatever they contain. */
    @Property(tries = 1000)
    void wildcardCountersAreDistinctPerKeyAndOperation(@ForAll String suffix1, @ForAll String suffix2,
                                                       @ForAll("ops") S3Operation op1, @ForAll("ops") S3Operation op2) {
        String k1 = "tmp/" + suffix1;
        String k2 = "tmp/" + suffix2;
        boolean sameCounter = k1.equals(k2) && sameMethodQuota(op1, op2);
        assertThat(A.resolve("wild-methods", k1, op1).limitKey().equals(A.resolve("wild-methods", k2, op2).limitKey()))
                .isEqualTo(sameCounter);
    }

    private static boolean sameMethodQuota(S3Operation a, S3Operation b) {
        // "wild-methods" has methods {PutObject} and a quota: every other operation shares the quota's counter
        return (a == S3Operation.PutObject) == (b == S3Operation.PutObject);
    }

    /** Deeply nested and sibling prefixes: the binary search with back-off finds the entry a linear scan finds. */
    @Property(tries = 300)
    void agreesWithAPlainReadingOfTheSpecForManyNestedPrefixes(@ForAll("manyPrefixConfigs") QuotaConfig config,
                                                               @ForAll("longKeys") List<String> keys) {
        for (String key : keys) {
            for (S3Operation op : List.of(S3Operation.GetObject, S3Operation.PutObject)) {
                assertThat(config.resolve("r", key, op)).as(key).isEqualTo(reference(config, "r", key, op));
            }
        }
    }

    @Provide
    Arbitrary<List<String>> longKeys() {
        return Arbitraries.strings().withChars("ab/").ofMaxLength(9).list().ofMinSize(1).ofMaxSize(20);
    }

    @Provide
    Arbitrary<QuotaConfig> manyPrefixConfigs() {
        Arbitrary<Quota> quotas = Arbitraries.integers().between(0, 50).map(rate -> new Quota(rate, 1));
        Arbitrary<String> prefixes = Combinators.combine(Arbitraries.strings().withChars("ab/").ofMaxLength(7),
                Arbitraries.of(true, false)).as((literal, star) -> star ? literal + "*" : literal);
        Arbitrary<PrefixRule> rules = Combinators.combine(prefixes, quotas.injectNull(0.3),
                        Arbitraries.maps(Arbitraries.of(S3Operation.PutObject), quotas).ofMaxSize(1))
                .filter((p, q, m) -> q != null || !m.isEmpty())
                .as(PrefixRule::new);
        return Combinators.combine(quotas, quotas.injectNull(0.5), rules.list().ofMaxSize(40).uniqueElements(PrefixRule::prefix))
                .as((def, rq, list) -> QuotaConfig.builder().defaultQuota(def).resource("r", new ResourceQuotas(rq, list)).build());
    }

    /** A build that reuses an earlier configuration's entries resolves exactly as a fresh build of the same data. */
    @Property(tries = 300)
    void aBuildReusingAnEarlierConfigResolvesAsAFreshBuild(@ForAll("configs") QuotaConfig earlier,
                                                          @ForAll("configs") QuotaConfig later,
                                                          @ForAll("keys") String key, @ForAll("ops") S3Operation op) {
        // "s" keeps earlier's value (reused); "r" takes later's value; the defaults are later's
        QuotaConfig mixed = earlier.toBuilder().resource("s", earlier.resources().get("r"))
                .build().toBuilder().defaultQuota(later.defaultQuota()).methodsDefault(later.methodsDefault())
                .resource("r", later.resources().get("r")).build();
        QuotaConfig fresh = QuotaConfig.builder().defaultQuota(later.defaultQuota()).methodsDefault(later.methodsDefault())
                .resource("r", later.resources().get("r")).resource("s", earlier.resources().get("r")).build();
        assertThat(mixed).isEqualTo(fresh);
        for (String resource : List.of("r", "s", "unconfigured")) {
            assertThat(mixed.resolve(resource, key, op)).isEqualTo(fresh.resolve(resource, key, op));
        }
    }
}
