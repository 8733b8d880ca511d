package dev.levee.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.levee.core.GcraLimit;
import dev.levee.quota.Quota;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.ResolvedQuota;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What the demo offers when a quota file is above --max-rate (issue 26 item 1): max-min fair parts, scaled copies that
 * keep the burst's tolerance in time, and the configuration the limiters then enforce.
 */
class DemoPlanTest {

    static final Path EXAMPLE = Path.of("..", "examples", "quotas.yaml");

    @Test
    void theExampleFileIsDrivenAgainstScaledCopiesWithinTheMaxRate() {
        QuotaConfig cfg = Quotas.load(EXAMPLE);
        List<DemoCommand.Stream> wanted = DemoCommand.deriveStreams(cfg, 2.0);
        List<DemoCommand.Stream> fit = DemoPlan.fit(wanted, 200, 2.0, 4);
        assertThat(fit).hasSameSizeAs(wanted);
        assertThat(fit.stream().mapToDouble(DemoCommand.Stream::offered).sum()).isLessThanOrEqualTo(200);
        QuotaConfig driven = DemoPlan.driven(cfg, fit);
        for (DemoCommand.Stream s : fit) {
            assertThat(s.isScaled()).as(s.label()).isTrue();
            assertThat(s.offered()).as("%s: offered 2 x the copy", s.label()).isCloseTo(2.0 * s.configured(), within(1e-9));
            assertThat(s.driven().burst()).as(s.label()).isGreaterThanOrEqualTo(GcraLimit.minimumBurst(s.driven().rate(), 4))
                    .isLessThanOrEqualTo(s.quota().burst());
            // the limiters enforce the copy for this stream's requests, at the same level
            ResolvedQuota r = driven.resolve(s.bucket(), s.op() == dev.levee.s3.S3Operation.ListObjectsV2 ? ""
                    : s.keys().getFirst(), s.op());
            assertThat(r.quota()).as(s.label()).isEqualTo(s.driven());
            assertThat(r.level()).as(s.label()).isEqualTo(s.entry().level());
        }
        DemoCommand.Stream def = fit.getFirst();
        assertThat(def.label()).startsWith("default");
        // 1000/s burst 500 over 4 limiters: tolerance 499 x 4 ms = 1996 ms; the copy keeps it within one interval
        GcraLimit before = GcraLimit.of(1000, 500, 4);
        GcraLimit after = GcraLimit.of(def.driven().rate(), def.driven().burst(), 4);
        assertThat((double) after.toleranceNs()).isCloseTo(before.toleranceNs(), within((double) after.emissionIntervalNs()));
    }

    @Test
    void streamsWithinTheirPartKeepTheirOwnQuota() {
        QuotaConfig cfg = Quotas.embedded();
        List<DemoCommand.Stream> wanted = DemoCommand.deriveStreams(cfg, 2.0);
        List<DemoCommand.Stream> fit = DemoPlan.fit(wanted, 200, 2.0, 4);
        assertThat(fit).isEqualTo(wanted);
        assertThat(DemoPlan.driven(cfg, fit)).isSameAs(cfg);
    }

    @Test
    void aBurstThatCannotHoldItsRateStaysSoInTheCopy() {
        assertThat(DemoPlan.scaled(new Quota(1000, 1), 10, 4).burst()).isEqualTo(1);
        assertThat(DemoPlan.scaled(new Quota(1000, 2), 10, 4).burst()).as("the minimum at the copy's rate").isEqualTo(2);
        assertThat(DemoPlan.scaled(new Quota(100, 25), 50, 4).burst()).isEqualTo(13);
    }
}
