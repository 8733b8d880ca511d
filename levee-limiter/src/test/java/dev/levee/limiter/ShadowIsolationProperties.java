package dev.levee.limiter;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.config.StaticQuotaSource;
import dev.levee.quota.PrefixRule;
import dev.levee.quota.Quota;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaMode;
import dev.levee.quota.ResourceQuotas;
import dev.levee.runtime.HostPort;
import dev.levee.s3.S3Operation;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * A shadow quota never changes an enforced decision (docs/decisions.md, "Shadow quotas"): the same request
 * sequence, at the same instants, through a limiter whose configuration has shadow quotas and through one whose
 * configuration is the same without them, gets the same enforced answers — result, level, counter, remaining,
 * Retry-After and reset — whatever the shadow quotas decide.
 */
class ShadowIsolationProperties {

    record Req(String resource, String key, S3Operation op, long advanceNs) {
    }

    @Property(tries = 300)
    void enforcedDecisionsAreIdenticalWithAndWithoutTheShadowQuotas(@ForAll("configs") QuotaConfig with,
                                                                   @ForAll("requests") List<Req> requests) {
        QuotaConfig without = withoutShadows(with);
        AtomicLong now = new AtomicLong(5_000_000_000L);
        LimiterService a = limiter(with, now);
        LimiterService b = limiter(without, now);
        for (Req r : requests) {
            now.addAndGet(r.advanceNs());
            CheckResponse x = a.decide(with, r.resource(), r.key(), r.op(), 1);
            CheckResponse y = b.decide(without, r.resource(), r.key(), r.op(), 1);
            assertThat(new CheckResponse(x.result(), x.level(), x.limitKey(), x.remaining(), x.retryAfter(), x.limiter(),
                    x.rate(), x.burst(), x.reset(), null)).as("%s", r).isEqualTo(y);
            assertThat(y.shadow()).isNull();
            if (x.shadow() != null) {
                assertThat(with.isShadow(with.resolve(r.resource(), r.key(), r.op()))).isTrue();
            }
        }
    }

    static LimiterService limiter(QuotaConfig cfg, AtomicLong now) {
        return LimiterService.detached(new LimiterService.Options("l", new HostPort("127.0.0.1", 0), null, null,
                Duration.ofSeconds(1), 100_000), new StaticQuotaSource(cfg), now::get, new SimpleMeterRegistry());
    }

    /** The configuration as an operator would write it without the shadow quotas: a plain reading of the rule. */
    static QuotaConfig withoutShadows(QuotaConfig c) {
        QuotaMode dm = c.defaultMode();
        Map<S3Operation, Quota> md = new LinkedHashMap<>();
        c.methodsDefault().forEach((op, q) -> {
            if (!shadow(q, dm)) {
                md.put(op, q);
            }
        });
        Map<String, ResourceQuotas> resources = new LinkedHashMap<>();
        c.resources().forEach((name, rq) -> {
            List<PrefixRule> entries = new ArrayList<>();
            for (PrefixRule e : rq.prefixes()) {
                Map<S3Operation, Quota> m = new LinkedHashMap<>();
                e.methods().forEach((op, q) -> {
                    if (!shadow(q, dm)) {
                        m.put(op, q);
                    }
                });
                Quota q = e.quota() == null || shadow(e.quota(), dm) ? null : e.quota();
                if (q != null || !m.isEmpty()) {
                    entries.add(new PrefixRule(e.prefix(), q, m));
                }
            }
            resources.put(name, new ResourceQuotas(rq.quota() == null || shadow(rq.quota(), dm) ? null : rq.quota(), entries));
        });
        return QuotaConfig.of(c.factor(), c.defaultQuota(), md, resources);
    }

    /** A quota's mode, or the configuration's default mode when it sets none. */
    static boolean shadow(Quota q, QuotaMode defaultMode) {
        return (q.mode() != null ? q.mode() : defaultMode) == QuotaMode.SHADOW;
    }

    static final List<S3Operation> OPS = List.of(S3Operation.GetObject, S3Operation.PutObject, S3Operation.ListObjects,
            S3Operation.ListObjectsV2);

    @Provide
    Arbitrary<QuotaConfig> configs() {
        Arbitrary<QuotaMode> modes = Arbitraries.of(QuotaMode.SHADOW, QuotaMode.ENFORCE).injectNull(0.4);
        Arbitrary<Quota> quotas = Combinators.combine(Arbitraries.integers().between(0, 20),
                Arbitraries.integers().between(0, 4), modes).as(Quota::new);
        Arbitrary<Map<S3Operation, Quota>> methods = Arbitraries.maps(Arbitraries.of(OPS), quotas).ofMaxSize(2);
        Arbitrary<PrefixRule> entry = Combinators.combine(Arbitraries.of("", "a", "a*", "ab", "b/", "ab*"),
                quotas.injectNull(0.4), methods).as(PrefixRule::new).filter(e -> e.quota() != null || !e.methods().isEmpty());
        Arbitrary<ResourceQuotas> resource = Combinators.combine(quotas.injectNull(0.5),
                entry.list().ofMaxSize(4).uniqueElements(PrefixRule::prefix)).as(ResourceQuotas::new);
        // the default stays enforced: without it there would be no configuration to compare with
        Arbitrary<Quota> defaults = Combinators.combine(Arbitraries.integers().between(1, 20),
                Arbitraries.integers().between(0, 4)).as((r, b) -> new Quota(r, b, QuotaMode.ENFORCE));
        return Combinators.combine(modes.filter(m -> m != null), defaults, methods, resource, resource)
                .as((dm, d, md, r1, r2) -> QuotaConfig.builder().defaultMode(dm).defaultQuota(d).methodsDefault(md).resource("r1", r1).resource("r2", r2)
                .build());
    }

    @Provide
    Arbitrary<List<Req>> requests() {
        Arbitrary<Req> req = Combinators.combine(Arbitraries.of("r1", "r2", "other"),
                Arbitraries.strings().withChars("ab/x").ofMaxLength(4), Arbitraries.of(OPS),
                Arbitraries.longs().between(0, 400_000_000L)).as(Req::new);
        return req.list().ofMinSize(1).ofMaxSize(60);
    }
}
