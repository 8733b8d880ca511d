package dev.levee.limiter;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.config.QuotaConfigLoader;
import dev.levee.core.GcraLimit;
import dev.levee.core.GcraTable;
import dev.levee.quota.QuotaConfig;
import dev.levee.s3.S3Operation;
import dev.levee.wire.BinaryChecks;
import org.junit.jupiter.api.Test;

/** The {@link Decider} on examples: the group size, shadow-only configurations, blocked quotas, the reset. */
class DeciderTest {

    static final long SECOND = 1_000_000_000L;

    /** A table whose own clock never moves: the decisions below depend on the {@code now} they are fed only. */
    static Decider decider() {
        return new Decider(GcraTable.create(() -> 0L, 10_000));
    }

    @Test
    void aGroupOfTwoHalvesTheRateEachLimiterApplies() {
        QuotaConfig cfg = QuotaConfigLoader.parse("factor: 2\ndefault: {rate: 10, burst: 1}\n", "test");
        Decider one = decider();
        Decider two = decider();
        Decider.Decision d = new Decider.Decision();
        int admittedOne = 0;
        int admittedTwo = 0;
        for (long t = SECOND; t < 11 * SECOND; t += SECOND / 100) { // 10 s at 100 requests per second
            one.decide(cfg, "b", "k", S3Operation.GetObject, 1, t, d);
            admittedOne += d.accepted ? 1 : 0;
            two.decide(cfg, "b", "k", S3Operation.GetObject, 2, t, d);
            admittedTwo += d.accepted ? 1 : 0;
        }
        assertThat(admittedOne).isBetween(99, 102);
        assertThat(admittedTwo).isBetween(49, 52);
        assertThat(d.rate).as("the answer carries the quota's rate, not the per-limiter one").isEqualTo(10.0);
    }

    @Test
    void timeIsTheNowItIsFed() {
        QuotaConfig cfg = QuotaConfigLoader.parse("default: {rate: 1, burst: 1}\n", "test");
        Decider decider = decider();
        Decider.Decision d = new Decider.Decision();
        decider.decide(cfg, "b", "k", S3Operation.GetObject, 1, 5 * SECOND, d);
        assertThat(d.accepted).isTrue();
        decider.decide(cfg, "b", "k", S3Operation.GetObject, 1, 5 * SECOND + SECOND / 2, d);
        assertThat(d.accepted).isFalse();
        assertThat(d.retryAfter).isEqualTo(1);
        decider.decide(cfg, "b", "k", S3Operation.GetObject, 1, 6 * SECOND, d);
        assertThat(d.accepted).as("one emission interval later").isTrue();
    }

    @Test
    void onlyShadowQuotasThenAdmittedWithoutAnEnforcedLevelAndTheShadowDecides() {
        QuotaConfig cfg = QuotaConfigLoader.parse("mode: shadow\ndefault: {rate: 1, burst: 1}\n", "test");
        Decider decider = decider();
        Decider.Decision d = new Decider.Decision();
        decider.decide(cfg, "b", "k", S3Operation.PutObject, 1, SECOND, d);
        assertThat(d.accepted).isTrue();
        assertThat(d.enforced).isNull();
        assertThat(d.level).isNull();
        assertThat(d.shadow).isEqualTo(BinaryChecks.SHADOW_ACCEPTED);
        decider.decide(cfg, "b", "k", S3Operation.PutObject, 1, SECOND, d);
        assertThat(d.accepted).isTrue();
        assertThat(d.shadow).isEqualTo(BinaryChecks.SHADOW_WOULD_REJECT);
        assertThat(d.wouldReject()).isTrue();
        assertThat(d.response("l1")).isEqualTo(new CheckResponse("accepted", null, null, 0, 0, "l1", 0, 0, 0,
                CheckResponse.WOULD_REJECT));
    }

    @Test
    void aBlockedQuotaRefusesWithAOneSecondResetAndRetry() {
        QuotaConfig cfg = QuotaConfigLoader.parse("default: {rate: 0, burst: 0}\n", "test");
        Decider.Decision d = new Decider.Decision();
        decider().decide(cfg, "b", "k", S3Operation.GetObject, 1, SECOND, d);
        assertThat(d.accepted).isFalse();
        assertThat(d.retryAfter).isEqualTo(1);
        assertThat(d.reset).isEqualTo(1);
    }

    @Test
    void theResetRoundsTheTimeUntilTheAllowanceIsWholeUp() {
        GcraLimit limit = GcraLimit.of(2, 4, 1); // T = 0.5 s, capacity 4
        assertThat(Decider.resetSeconds(limit, 3)).as("one interval used").isEqualTo(1);
        assertThat(Decider.resetSeconds(limit, 0)).as("four intervals used").isEqualTo(2);
        assertThat(Decider.resetSeconds(limit, -SECOND / 2)).as("a refusal: the wait plus τ")
                .isEqualTo(2); // 0.5 s + τ = 1.5 s
    }
}
