package dev.levee.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.governor.Direction;
import dev.levee.governor.GovernorConfig;
import dev.levee.lease.Resource;
import dev.levee.lease.SiteBudget;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** How shares become governor rates, and the demand estimate (docs/site-bandwidth.md). */
class SiteSharesTest {

    static final long MiB = 1 << 20;
    static final long SEC = 1_000_000_000L;
    static final java.util.Set<String> IDS = java.util.Set.of("svc-a", "svc-b", "svc-free", "svc-local", "svc-new", "anonymous");

    @Test
    void aDirectionWithABudgetRunsAtItsShareCappedByTheLocalRateAndIsHeldWithoutOne() {
        GovernorConfig local = GovernorConfig.builder(Direction.DOWNLOAD).rate(8 * MiB).principalRate(MiB).build();
        SiteBudget budget = new SiteBudget(30 * MiB, 0, 0, 0, Map.of());
        assertThat(SiteShares.config(local, budget, Map.of(Resource.of(Direction.DOWNLOAD), 5 * MiB), null, 3, IDS)
                .rateBytesPerSecond()).isEqualTo(5 * MiB);
        assertThat(SiteShares.config(local, budget, Map.of(Resource.of(Direction.DOWNLOAD), 12 * MiB), null, 3, IDS)
                .rateBytesPerSecond()).as("local cap below the share").isEqualTo(8 * MiB);
        GovernorConfig held = SiteShares.config(local, budget, Map.of(), null, 3, IDS);
        assertThat(held.rateBytesPerSecond()).isEqualTo(GovernorConfig.HELD);
        assertThat(held.principalRateBytesPerSecond()).as("principals keep their local rate").isEqualTo(MiB);
        GovernorConfig up = SiteShares.config(GovernorConfig.of(Direction.UPLOAD, 4 * MiB, 0), budget, Map.of(), null, 3, IDS);
        assertThat(up.rateBytesPerSecond()).as("no upload budget: local rate").isEqualTo(4 * MiB);
    }

    @Test
    void principalsWithASiteCeilingRunAtTheirShareAndOthersAreHeldUntilTheyGetOne() {
        GovernorConfig local = GovernorConfig.builder(Direction.DOWNLOAD).principalRate("svc-local", 2 * MiB).build();
        SiteBudget budget = new SiteBudget(0, 0, 10 * MiB, 0,
                Map.of("svc-free", new SiteBudget.Ceilings(0L, null), "svc-local", new SiteBudget.Ceilings(20 * MiB, null)));
        GovernorConfig c = SiteShares.config(local, budget, Map.of(Resource.of(Direction.DOWNLOAD, "svc-a"), 3 * MiB,
                Resource.of(Direction.DOWNLOAD, "svc-local"), 5 * MiB), null, 3, IDS);
        assertThat(c.rateBytesPerSecond()).as("no direction budget").isZero();
        assertThat(c.principalRate("svc-new")).as("default ceiling, no share yet").isEqualTo(GovernorConfig.HELD);
        assertThat(c.principalRate("svc-local")).as("share capped by the local rate").isEqualTo(2 * MiB);
    }

    @Test
    void aPrincipalWhoseCeilingIsOnlyAnOverrideIsHeldBeforeItsFirstStreamNotUnbounded() {
        // issue 22: no default ceiling, svc-a's only as an override, no local rate, never seen by the governor
        GovernorConfig local = GovernorConfig.builder(Direction.DOWNLOAD).maxPrincipals(IDS.size()).build();
        SiteBudget budget = new SiteBudget(30 * MiB, 0, 0, 0, Map.of("svc-a", new SiteBudget.Ceilings(6 * MiB, null),
                "svc-elsewhere", new SiteBudget.Ceilings(6 * MiB, null)));
        Map<Resource, Long> shares = Map.of(Resource.of(Direction.DOWNLOAD), 10 * MiB);
        GovernorConfig c = SiteShares.config(local, budget, shares, null, 3, IDS);
        assertThat(c.principalRate("svc-a")).as("no share yet: held, its first stream waits for one")
                .isEqualTo(GovernorConfig.HELD);
        assertThat(c.principalRate("svc-b")).as("no ceiling: only the direction's share").isZero();
        assertThat(c.principalRates()).as("ids that cannot open a stream here are not listed").doesNotContainKey("svc-elsewhere");
        GovernorConfig withShare = SiteShares.config(local, budget, Map.of(Resource.of(Direction.DOWNLOAD), 10 * MiB,
                Resource.of(Direction.DOWNLOAD, "svc-a"), 2 * MiB), null, 3, IDS);
        assertThat(withShare.principalRate("svc-a")).isEqualTo(2 * MiB);
    }
}
