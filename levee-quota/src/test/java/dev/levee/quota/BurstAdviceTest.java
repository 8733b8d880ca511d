package dev.levee.quota;

import static dev.levee.quota.QuotaFixtures.q;
import static dev.levee.s3.S3Operation.ListObjects;
import static dev.levee.s3.S3Operation.PutObject;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Which quotas cannot hold their rate, named by their path in the single-file form (issue 22 item 7). */
class BurstAdviceTest {

    @Test
    void everyLevelIsCheckedForTheFactorAndNamedByItsPath() {
        QuotaConfig cfg = QuotaConfig.builder().factor(4).defaultQuota(q(10, 2)).methodDefault(ListObjects, q(4, 1))
                .resource("example-bucket", new ResourceQuotas(q(20, 2), List.of(
                        new PrefixRule("uploads/*", q(3, 1), Map.of()),
                        new PrefixRule("", q(15, 2), Map.of(PutObject, q(6, 0))))))
                .resource("logs.example.com", ResourceQuotas.of(q(5000, 10)))
                .resource("blocked", ResourceQuotas.of(q(0, 0)))
                .build();
        assertThat(BurstAdvice.check(cfg)).extracting(BurstAdvice.Finding::path).containsExactly(
                "methods_default.ListObjects",
                "resources.example-bucket.prefixes[0] (prefix \"uploads/*\").quota",
                "resources.example-bucket.prefixes[1] (prefix \"\").methods.PutObject",
                "resources[\"logs.example.com\"].quota");
        assertThat(BurstAdvice.check(cfg)).extracting(BurstAdvice.Finding::minimum).containsExactly(2, 2, 2, 51);
        // with one limiter left the share of 5000/s is four times larger: 201 are needed
        assertThat(BurstAdvice.check(cfg, 1).getLast().minimum()).isEqualTo(201);
    }

    @Test
    void theSentenceSaysWhatTheBurstAbsorbsAndWhichBurstHoldsTheRate() {
        assertThat(BurstAdvice.sentence(3.3, 1, 4)).isEqualTo("burst 1 under-admits rate 3.3/s over 4 limiters:"
                + " tolerance (burst - 1) x T = 0 ms at T = 1212 ms absorbs less than 40 ms of bunched arrivals;"
                + " burst 2 holds it (docs/quotas.md, \"Bursts that hold the rate\")");
        assertThat(BurstAdvice.sentence(5000, 10, 1)).startsWith("burst 10 under-admits rate 5000/s over 1 limiter:"
                + " tolerance (burst - 1) x T = 1.8 ms at T = 0.2 ms absorbs less than 40 ms of bunched arrivals;"
                + " burst 201 holds it");
        assertThat(BurstAdvice.holds(0, 0, 4)).as("a blocked quota has no rate to hold").isTrue();
    }
}
