package dev.levee.gateway.site;

import static dev.levee.gateway.site.ShareKeeperModelTest.CALL_TIMEOUT;
import static dev.levee.gateway.site.ShareKeeperModelTest.DOWN;
import static dev.levee.gateway.site.ShareKeeperModelTest.MARGIN;
import static dev.levee.gateway.site.ShareKeeperModelTest.MIB;
import static dev.levee.gateway.site.ShareKeeperModelTest.RENEW;
import static dev.levee.gateway.site.ShareKeeperModelTest.RHO;
import static dev.levee.gateway.site.ShareKeeperModelTest.TTL;
import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.governor.Direction;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Scenarios of the site lease protocol found by {@link ShareKeeperModelTest}, kept as regression tests. */
class ShareKeeperTest {

    private static SiteModel.Node node(SiteModel m, String id, long origin) {
        SiteModel.Node n = m.addNode(id, 0, origin);
        n.demands = Map.of(DOWN, 40 * MIB);
        return n;
    }

    private static ShareKeeper.Settings settings(String id) {
        return SiteModel.settings(id, TTL, RENEW, RHO, MARGIN, CALL_TIMEOUT);
    }

    @Test
    void firstLeaseOnATickerBelowZeroIsNotUsedPastItsLocalDeadline() {
        // The ticker's origin is arbitrary (Ticker): here it reads −10 s when the gateway starts. The
        // deadline must be sent + TTL × (1 − ρ) − ε, not the field's initial 0 (10 s ahead).
        SiteModel m = new SiteModel(1, SiteModel.Faults.none(SiteModel.ms(1), SiteModel.ms(1)), true);
        m.store.setBudget(ShareKeeperModelTest.budget(30 * MIB, 0, 0));
        SiteModel.Node n = node(m, "gw-0", -10_000_000_000L);
        m.at(0, () -> n.start(settings("gw-0")));
        m.at(SiteModel.ms(100), () -> n.pause(TTL.toNanos() * 3)); // no renewal after the first round
        m.run(SiteModel.ms(50), 10_000);
        assertThat(n.keeper.owned(Direction.DOWNLOAD)).as("owned after the first round").isTrue();
        long deadline = (long) (TTL.toNanos() * (1 - RHO)) - MARGIN.toNanos();
        m.run(deadline + SiteModel.ms(1), 10_000);
        assertThat(n.keeper.owned(Direction.DOWNLOAD)).as("owned past sent + TTL × (1 − ρ) − ε").isFalse();
        assertThat(m.violation()).isNull();
    }
}
