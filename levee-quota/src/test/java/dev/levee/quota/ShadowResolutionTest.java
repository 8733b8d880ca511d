package dev.levee.quota;

import static dev.levee.s3.S3Operation.GetObject;
import static dev.levee.s3.S3Operation.ListObjectsV2;
import static dev.levee.s3.S3Operation.PutObject;
import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.s3.S3Operation;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Which quota enforces a request when shadow quotas are configured (docs/decisions.md, "Shadow quotas"). */
class ShadowResolutionTest {

    static Quota q(double rate, int burst) {
        return new Quota(rate, burst);
    }

    static Quota shadow(double rate, int burst) {
        return new Quota(rate, burst, QuotaMode.SHADOW);
    }

    @Test
    void aConfigurationWithoutShadowQuotasEnforcesWhatItResolves() {
        QuotaConfig c = QuotaFixtures.configA();
        assertThat(c.hasShadow()).isFalse();
        assertThat(c.resolveEnforced("example-bucket", "photos/2024/a", GetObject))
                .isSameAs(c.resolve("example-bucket", "photos/2024/a", GetObject));
    }

    @Test
    void aShadowPrefixEntryIsTriedWhileTheEntryThatAppliesWithoutItEnforces() {
        QuotaConfig c = QuotaConfig.builder().defaultQuota(q(1000, 100))
                .resource("b", new ResourceQuotas(q(50, 5), List.of(
                        PrefixRule.of("logs/", shadow(1, 1)),
                        PrefixRule.of("", q(20, 2)))))
                .build();

        ResolvedQuota full = c.resolve("b", "logs/x", GetObject);
        assertThat(full.level()).isEqualTo(QuotaLevel.PREFIX);
        assertThat(full.matchedPrefix()).isEqualTo("logs/");
        assertThat(c.isShadow(full)).isTrue();
        ResolvedQuota enforced = c.resolveEnforced("b", "logs/x", GetObject);
        assertThat(enforced.matchedPrefix()).isEqualTo("");
        assertThat(enforced.limitKey()).isEqualTo("prefix:b/");
        assertThat(c.isShadow(enforced)).isFalse();
    }

    @Test
    void anEntryWithOnlyAShadowMethodDoesNotHideAShorterEntryFromOtherOperations() {
        // without the shadow PutObject, "photos/2024" would not exist and "photos/" would apply to GetObject
        QuotaConfig with = QuotaConfig.builder().defaultQuota(q(1000, 100))
                .resource("b", new ResourceQuotas(q(50, 5), List.of(
                        new PrefixRule("photos/2024", null, Map.of(PutObject, shadow(1, 1))),
                        PrefixRule.of("photos/", q(20, 2)))))
                .build();
        QuotaConfig without = QuotaConfig.builder().defaultQuota(q(1000, 100))
                .resource("b", new ResourceQuotas(q(50, 5), List.of(PrefixRule.of("photos/", q(20, 2)))))
                .build();

        for (S3Operation op : List.of(GetObject, PutObject)) {
            assertThat(with.resolveEnforced("b", "photos/2024/x", op)).isEqualTo(without.resolve("b", "photos/2024/x", op));
        }
        assertThat(with.resolve("b", "photos/2024/x", GetObject).level()).isEqualTo(QuotaLevel.RESOURCE);
    }

    @Test
    void aShadowListObjectsDoesNotLendItsQuotaToListObjectsV2WhenEnforcing() {
        QuotaConfig c = QuotaConfig.builder().defaultQuota(q(1000, 100))
                .methodDefault(S3Operation.ListObjects, shadow(1, 1)).build();
        assertThat(c.resolve("b", "", ListObjectsV2).limitKey()).isEqualTo("methods_default:b#ListObjects");
        assertThat(c.resolveEnforced("b", "", ListObjectsV2).limitKey()).isEqualTo("default:b");
    }

    @Test
    void theDefaultModeShadowMakesEveryQuotaWithoutAModeAShadowOne() {
        QuotaConfig c = QuotaConfig.builder().defaultMode(QuotaMode.SHADOW).defaultQuota(q(10, 1))
                .resource("b", new ResourceQuotas(null, List.of(
                        PrefixRule.of("trial/", q(1, 1)),
                        PrefixRule.of("kept/", new Quota(5, 1, QuotaMode.ENFORCE)))))
                .build();
        assertThat(c.resolveEnforced("b", "trial/x", GetObject)).as("only shadow quotas apply").isNull();
        assertThat(c.resolveEnforced("other", "x", GetObject)).isNull();
        assertThat(c.isShadow(c.resolve("b", "trial/x", GetObject))).isTrue();
        ResolvedQuota kept = c.resolveEnforced("b", "kept/x", GetObject);
        assertThat(kept.limitKey()).isEqualTo("prefix:b/kept/");
        assertThat(c.isShadow(c.resolve("b", "kept/x", GetObject))).isFalse();
    }

    @Test
    void aShadowResourceQuotaLeavesTheFallbackToEnforce() {
        QuotaConfig c = QuotaConfig.builder().defaultQuota(q(1000, 100))
                .methodDefault(GetObject, q(300, 30))
                .resource("b", ResourceQuotas.of(shadow(2, 1))).build();
        assertThat(c.resolve("b", "k", GetObject).level()).isEqualTo(QuotaLevel.RESOURCE);
        assertThat(c.resolveEnforced("b", "k", GetObject).limitKey()).isEqualTo("methods_default:b#GetObject");
        assertThat(c.resolveEnforced("b", "k", PutObject).limitKey()).isEqualTo("default:b");
    }

    @Test
    void modesTakePartInEquality() {
        QuotaConfig a = QuotaConfig.builder().defaultQuota(q(1, 1)).build();
        QuotaConfig b = QuotaConfig.builder().defaultQuota(q(1, 1)).defaultMode(QuotaMode.SHADOW).build();
        QuotaConfig c = QuotaConfig.builder().defaultQuota(shadow(1, 1)).build();
        assertThat(a).isNotEqualTo(b).isNotEqualTo(c);
        assertThat(b.toBuilder().build()).isEqualTo(b);
    }
}
