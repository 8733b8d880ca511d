package dev.levee.quota;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.s3.S3Operation;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which resolved quotas may be leased (issue 23 item 2; docs/quotas.md, "Request leases"). */
class LeaseEligibilityTest {

    @Test
    void aQuotaSettingOverridesTheConfigurationsDefault() {
        assertThat(new Quota(1, 1).leaseOr(true)).isTrue();
        assertThat(new Quota(1, 1).leaseOr(false)).isFalse();
        assertThat(new Quota(1, 1, null, false).leaseOr(true)).isFalse();
        assertThat(new Quota(1, 1, null, true).leaseOr(false)).isTrue();
    }

    @Test
    void changingTheModeKeepsTheLeaseAndTheOtherWayRound() {
        Quota q = new Quota(5, 2, null, false);
        assertThat(q.withMode(QuotaMode.SHADOW)).isEqualTo(new Quota(5, 2, QuotaMode.SHADOW, false));
        assertThat(q.withLease(true)).isEqualTo(new Quota(5, 2, null, true));
        assertThat(q.withLease(false)).isSameAs(q);
        assertThat(new Quota(5, 2)).isNotEqualTo(q);
    }

    @Test
    void theEnforcedQuotaOfAShadowedRequestIsJudgedWithTheSameDefault() {
        QuotaConfig c = QuotaConfig.builder().defaultLease(false).defaultQuota(new Quota(100, 10))
                .resource("b", new ResourceQuotas(new Quota(50, 5, null, true),
                        List.of(PrefixRule.of("trial/", new Quota(1, 1, QuotaMode.SHADOW, true)))))
                .build();
        ResolvedQuota shadow = c.resolve("b", "trial/x", S3Operation.GetObject);
        ResolvedQuota enforced = c.resolveEnforced("b", "trial/x", S3Operation.GetObject);
        assertThat(shadow.level()).isEqualTo(QuotaLevel.PREFIX);
        assertThat(enforced.level()).isEqualTo(QuotaLevel.RESOURCE);
        assertThat(c.leaseEligible(enforced)).isTrue();
        assertThat(c.leaseEligible(c.resolveEnforced("other", "k", S3Operation.GetObject))).isFalse();
    }
}
