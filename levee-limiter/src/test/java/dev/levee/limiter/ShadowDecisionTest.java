package dev.levee.limiter;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.config.QuotaConfigLoader;
import dev.levee.config.StaticQuotaSource;
import dev.levee.quota.QuotaConfig;
import dev.levee.runtime.HostPort;
import dev.levee.s3.S3Operation;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Shadow quotas at the decision point (docs/decisions.md, "Shadow quotas"): decided, counted, admitted. */
class ShadowDecisionTest {

    static final class Clock {
        final AtomicLong now = new AtomicLong(1_000_000_000L);
    }

    static LimiterService limiter(QuotaConfig cfg, Clock clock, SimpleMeterRegistry registry) {
        return LimiterService.detached(new LimiterService.Options("l1", new HostPort("127.0.0.1", 0), null, null,
                Duration.ofSeconds(1), 10_000), new StaticQuotaSource(cfg), clock.now::get, registry);
    }

    static double counter(SimpleMeterRegistry r, String name, String result, String level) {
        var c = r.find(name).tag("result", result).tag("level", level).counter();
        return c == null ? 0 : c.count();
    }

    @Test
    void aShadowQuotaThatWouldRefuseAdmitsAndCountsWouldRejectOncePerCheck() {
        QuotaConfig cfg = QuotaConfigLoader.parse("""
                default: {rate: 1000, burst: 100}
                resources:
                  trial:
                    quota: {rate: 1, burst: 2, mode: shadow}
                """, "test");
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        LimiterService l = limiter(cfg, new Clock(), registry);

        int wouldReject = 0;
        for (int i = 0; i < 10; i++) {
            CheckResponse r = l.decide(cfg, "trial", "k", S3Operation.GetObject, 1);
            assertThat(r.result()).isEqualTo("accepted");
            assertThat(r.level()).isEqualTo("default");
            assertThat(r.limitKey()).isEqualTo("default:trial");
            if (CheckResponse.WOULD_REJECT.equals(r.shadow())) {
                wouldReject++;
            } else {
                assertThat(r.shadow()).isEqualTo("accepted");
            }
        }
        assertThat(wouldReject).as("burst 2 at one instant: 2 shadow admissions, 8 refusals").isEqualTo(8);
        assertThat(counter(registry, "levee_limiter_decisions_total", "would_reject", "resource")).isEqualTo(8);
        assertThat(counter(registry, "levee_limiter_decisions_total", "accepted", "default")).isEqualTo(2);
        assertThat(counter(registry, "levee_limiter_shadow_decisions_total", "would_reject", "resource")).isEqualTo(8);
        assertThat(counter(registry, "levee_limiter_shadow_decisions_total", "accepted", "resource")).isEqualTo(2);
        assertThat(l.table().peek("resource:trial")).as("the shadow state has its own key").isNull();
        assertThat(l.table().peek(Decider.SHADOW_KEY + "resource:trial")).isNotNull();
    }

    @Test
    void onlyShadowQuotasApplyThenEveryRequestIsAdmittedWithoutAnEnforcedLevel() {
        QuotaConfig cfg = QuotaConfigLoader.parse("""
                mode: shadow
                default: {rate: 1, burst: 1}
                """, "test");
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        LimiterService l = limiter(cfg, new Clock(), registry);
        for (int i = 0; i < 5; i++) {
            CheckResponse r = l.decide(cfg, "any", "k", S3Operation.PutObject, 1);
            assertThat(r.result()).isEqualTo("accepted");
            assertThat(r.level()).isNull();
            assertThat(r.reset()).isZero();
            assertThat(r.shadow()).isEqualTo(i == 0 ? "accepted" : CheckResponse.WOULD_REJECT);
        }
        assertThat(counter(registry, "levee_limiter_decisions_total", "would_reject", "default")).isEqualTo(4);
        assertThat(counter(registry, "levee_limiter_decisions_total", "accepted", "default")).isEqualTo(1);
    }

    @Test
    void anEnforcedRefusalIsCountedAsRejectedAndTheShadowQuotaStillDecides() {
        QuotaConfig cfg = QuotaConfigLoader.parse("""
                default: {rate: 1, burst: 1}
                resources:
                  b:
                    prefixes:
                      - prefix: "x/"
                        quota: {rate: 1, burst: 1, mode: shadow}
                """, "test");
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        LimiterService l = limiter(cfg, new Clock(), registry);
        assertThat(l.decide(cfg, "b", "x/1", S3Operation.GetObject, 1).result()).isEqualTo("accepted");
        CheckResponse second = l.decide(cfg, "b", "x/1", S3Operation.GetObject, 1);
        assertThat(second.result()).isEqualTo("rejected");
        assertThat(second.shadow()).isEqualTo(CheckResponse.WOULD_REJECT);
        assertThat(counter(registry, "levee_limiter_decisions_total", "rejected", "default")).isEqualTo(1);
        assertThat(counter(registry, "levee_limiter_shadow_decisions_total", "would_reject", "prefix")).isEqualTo(1);
    }

    @Test
    void theResetIsTheTimeUntilTheAllowanceIsWholeAgain() {
        QuotaConfig cfg = QuotaConfigLoader.parse("default: {rate: 2, burst: 4}\n", "test");
        Clock clock = new Clock();
        LimiterService l = limiter(cfg, clock, new SimpleMeterRegistry());
        CheckResponse first = l.decide(cfg, "b", "k", S3Operation.GetObject, 1);
        assertThat(first.remaining()).isEqualTo(3);
        assertThat(first.reset()).as("one emission interval of 0.5 s used, rounded up").isEqualTo(1);
        for (int i = 0; i < 3; i++) {
            l.decide(cfg, "b", "k", S3Operation.GetObject, 1);
        }
        CheckResponse refused = l.decide(cfg, "b", "k", S3Operation.GetObject, 1);
        assertThat(refused.result()).isEqualTo("rejected");
        assertThat(refused.retryAfter()).isEqualTo(1);
        assertThat(refused.reset()).as("TAT − now = 4 × 0.5 s").isEqualTo(2);
        assertThat(refused.rate()).isEqualTo(2.0);
        assertThat(refused.burst()).isEqualTo(4);
    }
}
