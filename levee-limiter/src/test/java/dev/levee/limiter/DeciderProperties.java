package dev.levee.limiter;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.core.Gcra;
import dev.levee.core.GcraLimit;
import dev.levee.core.GcraTable;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.ResolvedQuota;
import dev.levee.s3.S3Operation;
import dev.levee.wire.BinaryChecks;
import java.util.HashMap;
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
 * The {@link Decider} is resolve → GCRA → shadow and nothing else: over random configurations (enforced and shadow
 * quotas at every level) and random request sequences, each decision equals a plain model built from the same
 * parts — {@link QuotaConfig#resolveEnforced} and {@link Gcra#attempt} on a state per limit key at the {@code now}
 * it was given, a shadow quota on its own state — and its reset bounds the time until the key's allowance is whole.
 * The group size may change at any request, as membership changes do (a key keeps its debt across them:
 * GcraTable's expiry follows the limit in force).
 */
class DeciderProperties {

    record Req(String resource, String key, S3Operation op, long advanceNs, int g) {
    }

    @Property(tries = 300)
    void eachDecisionIsGcraOnTheResolvedQuotaAtTheGivenNow(@ForAll("configs") QuotaConfig cfg,
                                                           @ForAll("requests") List<Req> requests) {
        AtomicLong now = new AtomicLong(7_000_000_000L);
        // the table's own clock follows the instants fed, as a limiter's ticker would (Caffeine's expiry reads it)
        Decider decider = new Decider(GcraTable.create(now::get, 100_000));
        Map<String, Gcra.State> model = new HashMap<>();
        Decider.Decision d = new Decider.Decision();
        for (Req r : requests) {
            long t = now.addAndGet(r.advanceNs());
            int g = r.g();
            decider.decide(cfg, r.resource(), r.key(), r.op(), g, t, d);

            ResolvedQuota rq = cfg.resolveEnforced(r.resource(), r.key(), r.op());
            boolean accepted = true;
            if (rq == null) {
                assertThat(d.level).as("%s: only shadow quotas apply", r).isNull();
                assertThat(d.limitKey).isNull();
                assertThat(new long[] {d.remaining, d.retryAfter, d.reset, d.burst}).containsOnly(0);
                assertThat(d.rate).isZero();
            } else {
                GcraLimit limit = rq.limit(g);
                Gcra.State s = model.computeIfAbsent(rq.limitKey(), k -> new Gcra.State(limit.horizonNs()));
                long res = Gcra.attempt(s, limit, t);
                accepted = Gcra.admitted(res);
                assertThat(d.enforced).isEqualTo(rq); // a wildcard entry resolves to a new answer each time
                assertThat(d.level).isEqualTo(rq.level().label());
                assertThat(d.limitKey).isEqualTo(rq.limitKey());
                assertThat(d.remaining).as("%s", r).isEqualTo(accepted ? res : 0);
                assertThat(d.retryAfter).isEqualTo(Gcra.retryAfterSeconds(res));
                assertThat(d.rate).isEqualTo(rq.quota().rate());
                assertThat(d.burst).isEqualTo(rq.quota().burst());
                if (!limit.blocked()) {
                    // the reset covers TAT − now and overshoots it by less than one emission interval and a second
                    long ahead = Math.max(0, s.tat() - t);
                    assertThat(d.reset * 1_000_000_000L).as("%s: reset %d s, TAT − now %d ns", r, d.reset, ahead)
                            .isGreaterThanOrEqualTo(ahead);
                    assertThat((d.reset - 1) * 1_000_000_000L).isLessThan(ahead + limit.emissionIntervalNs());
                } else {
                    assertThat(d.reset).isEqualTo(1);
                }
            }
            assertThat(d.accepted).as("%s", r).isEqualTo(accepted);

            ResolvedQuota full = cfg.resolve(r.resource(), r.key(), r.op());
            if (cfg.hasShadow() && cfg.isShadow(full)) {
                GcraLimit limit = full.limit(g);
                Gcra.State s = model.computeIfAbsent(Decider.SHADOW_KEY + full.limitKey(),
                        k -> new Gcra.State(limit.horizonNs()));
                long res = Gcra.attempt(s, limit, t);
                assertThat(d.shadowQuota).isEqualTo(full);
                assertThat(d.shadowResult).isEqualTo(res);
                assertThat(d.shadow).isEqualTo(Gcra.admitted(res) ? BinaryChecks.SHADOW_ACCEPTED
                        : BinaryChecks.SHADOW_WOULD_REJECT);
                assertThat(d.wouldReject()).isEqualTo(accepted && !Gcra.admitted(res));
            } else {
                assertThat(d.shadowQuota).isNull();
                assertThat(d.shadow).isEqualTo(BinaryChecks.SHADOW_NONE);
                assertThat(d.wouldReject()).isFalse();
            }
        }
    }

    @Property(tries = 200)
    void twoDecidersFedTheSameInstantsDecideAlike(@ForAll("configs") QuotaConfig cfg,
                                                  @ForAll("requests") List<Req> requests) {
        long start = 3_000_000_000L;
        AtomicLong now = new AtomicLong(start);
        Decider a = new Decider(GcraTable.create(now::get, 100_000));
        Decider b = new Decider(GcraTable.create(now::get, 100_000));
        Decider.Decision x = new Decider.Decision();
        Decider.Decision y = new Decider.Decision();
        for (Req r : requests) {
            long t = now.addAndGet(r.advanceNs());
            a.decide(cfg, r.resource(), r.key(), r.op(), r.g(), t, x);
            b.decide(cfg, r.resource(), r.key(), r.op(), r.g(), t, y);
            assertThat(x.response("l")).as("%s", r).isEqualTo(y.response("l"));
            assertThat(x.shadowResult).isEqualTo(y.shadowResult);
        }
    }

    @Provide
    Arbitrary<QuotaConfig> configs() {
        return new ShadowIsolationProperties().configs();
    }

    @Provide
    Arbitrary<List<Req>> requests() {
        Arbitrary<Req> req = Combinators.combine(Arbitraries.of("r1", "r2", "other"),
                Arbitraries.strings().withChars("ab/x").ofMaxLength(4), Arbitraries.of(ShadowIsolationProperties.OPS),
                Arbitraries.longs().between(0, 400_000_000L), Arbitraries.integers().between(1, 4)).as(Req::new);
        return req.list().ofMinSize(1).ofMaxSize(60);
    }
}
