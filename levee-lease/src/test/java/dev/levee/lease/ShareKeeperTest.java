package dev.levee.lease;

import static dev.levee.lease.ShareKeeperModelTest.CALL_TIMEOUT;
import static dev.levee.lease.ShareKeeperModelTest.DOWN;
import static dev.levee.lease.ShareKeeperModelTest.MARGIN;
import static dev.levee.lease.ShareKeeperModelTest.MIB;
import static dev.levee.lease.ShareKeeperModelTest.RENEW;
import static dev.levee.lease.ShareKeeperModelTest.RHO;
import static dev.levee.lease.ShareKeeperModelTest.TTL;
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

    @Test
    void lateLoweringWriteCannotUndercutAShareInUse() {
        // gw-0 holds 30 MiB/s, lowers to 10 locally and writes; that write is delayed 1.5 s (its call times
        // out). Its demand comes back: the store still shows 30 for it, so it used to raise to 30 again
        // without a write; the late write then landed, the store said 10, and gw-1 took the other 20 while
        // gw-0 still used 30. Now the late write is refused (its entry revision is stale) and gw-0 writes
        // before raising while a write of it is in doubt.
        SiteModel m = new SiteModel(1, SiteModel.Faults.none(SiteModel.ms(1), SiteModel.ms(1)), true);
        m.store.setBudget(ShareKeeperModelTest.budget(30 * MIB, 0, 0));
        SiteModel.Node g0 = node(m, "gw-0", 0);
        SiteModel.Node g1 = node(m, "gw-1", 123_456_789);
        g0.demands = Map.of(DOWN, 30 * MIB);
        g1.demands = Map.of(DOWN, 30 * MIB);
        boolean[] delayed = {false};
        m.requestDelay = (id, what) -> {
            if (id.equals("gw-0") && what.startsWith("write") && m.now() > SiteModel.ms(900) && !delayed[0]) {
                delayed[0] = true;
                return SiteModel.ms(1500);
            }
            return null;
        };
        m.at(0, () -> g0.start(settings("gw-0")));
        m.at(SiteModel.ms(600), () -> g0.demands = Map.of(DOWN, 10 * MIB));
        m.at(SiteModel.ms(1200), () -> g0.demands = Map.of(DOWN, 30 * MIB));
        m.at(SiteModel.ms(2600), () -> g1.start(settings("gw-1")));
        m.run(SiteModel.ms(6000), 100_000);
        assertThat(delayed[0]).isTrue();
        assertThat(m.violation()).isNull();
        // and they converge to halves
        assertThat(g0.keeper.shares().get(DOWN)).isEqualTo(15 * MIB);
        assertThat(g1.keeper.shares().get(DOWN)).isEqualTo(15 * MIB);
    }

    @Test
    void slowStoreAnsweringWithinTheCallTimeoutDoesNotCostTheLease() {
        // Every answer takes 0.8–0.98 s (one way 400–490 ms), within the 1 s call timeout; six gateways
        // raise at once and conflict. A round renews once, at its start: with 3 conflict retries it took
        // up to keep-alive + 4 × (read + write) ≈ 8 s, past the 5 s TTL, so etcd expired leases that were
        // renewed as fast as etcd answered, and gateways failed closed. Retries now stop once the round is a
        // renew interval old (the next round, which renews first, starts at once).
        SiteModel m = new SiteModel(1, SiteModel.Faults.none(SiteModel.ms(400), SiteModel.ms(490)), false);
        m.notes = false;
        long budget = 1L << 31;
        m.store.setBudget(new SiteBudget(budget, 0, 0, 0, Map.of()));
        for (int i = 0; i < 6; i++) {
            SiteModel.Node n = node(m, "gw-" + i, i * 1_000_000_007L);
            n.demands = Map.of(DOWN, budget / 6 * (1 + i % 3));
            m.at(i * 1_000_000L, () -> n.start(ShareKeeper.Settings.defaults(n.id)));
        }
        int closed = 0;
        for (long t = 5_000_000_000L; t < 60_000_000_000L; t += 100_000_000L) {
            m.run(t, Long.MAX_VALUE);
            for (SiteModel.Node n : m.nodes) {
                closed += n.keeper.owned(Direction.DOWNLOAD) ? 0 : 1;
            }
        }
        assertThat(m.nodes).allSatisfy(n -> assertThat(n.keeper.status().leaseLosses()).as(n.id + " lease losses")
                .isZero());
        assertThat(closed).as("samples failing closed after 5 s").isZero();
    }

    @Test
    void budgetDecreaseHoldsOnceEveryGatewayHasDoneARoundAfterIt() {
        // The documented rule (docs/decisions.md): a decrease does not move the guard; Σ ≤ the new budget
        // once every gateway has finished a round that started after it, and from then on at every revision.
        SiteModel m = new SiteModel(1, SiteModel.Faults.none(SiteModel.ms(1), SiteModel.ms(3)), true);
        m.store.setBudget(ShareKeeperModelTest.budget(30 * MIB, 0, 0));
        for (int i = 0; i < 3; i++) {
            SiteModel.Node n = node(m, "gw-" + i, -i * 7_000_000_000L);
            n.demands = Map.of(DOWN, 30 * MIB);
            m.at(i * 150_000_000L, () -> n.start(settings(n.id)));
        }
        m.run(SiteModel.ms(3300), 100_000);
        assertThat(m.store.shares(DOWN).values()).containsOnly(10 * MIB);
        m.checkUseAtEvents = false;
        m.store.checkRevisions = false;
        m.store.setBudget(ShareKeeperModelTest.budget(15 * MIB, 0, 0));
        m.run(SiteModel.ms(3300) + 2 * RENEW.toNanos() + SiteModel.ms(50), 100_000); // every gateway's next round
        assertThat(m.store.shares(DOWN).values().stream().mapToLong(Long::longValue).sum()).isLessThanOrEqualTo(15 * MIB);
        m.checkUse();
        m.store.checkStore();
        m.checkUseAtEvents = true;
        m.store.checkRevisions = true;
        m.at(SiteModel.ms(5000), () -> m.nodes.get(0).demands = Map.of(DOWN, MIB)); // and raises stay within it
        m.run(SiteModel.ms(10_000), 100_000);
        assertThat(m.violation()).isNull();
        assertThat(m.store.shares(DOWN).values()).containsExactlyInAnyOrder(MIB, 7 * MIB, 7 * MIB);
    }

    @Test
    void statusFailsClosedExactlyWhereTheGovernorsAreRefused() {
        // A budget of per-principal ceilings only (no direction budget) and no principal holding a share here:
        // past the local deadline the governors' ownership check refused every download (and the gateway
        // answered 503), while the status — /health/ready, the failing-closed WARN, the metric — counted the
        // direction as budgeted only once a principal held a share, and said it was not failing closed. Both
        // now read the one published SiteLease.
        SiteModel m = new SiteModel(1, SiteModel.Faults.none(SiteModel.ms(1), SiteModel.ms(1)), true);
        m.store.setBudget(ShareKeeperModelTest.budget(0, 0, 10 * MIB));
        SiteModel.Node n = node(m, "gw-0", 0);
        n.demands = Map.of();
        m.at(0, () -> n.start(settings("gw-0")));
        m.at(SiteModel.ms(100), () -> n.pause(TTL.toNanos() * 3)); // no renewal after the first round
        m.run(SiteModel.ms(50), 10_000);
        assertThat(n.keeper.owned(Direction.DOWNLOAD)).as("owned after the first round").isTrue();
        assertThat(n.keeper.status().failingClosed(Direction.DOWNLOAD)).isFalse();
        assertThat(n.keeper.shares()).isEmpty();
        m.run(TTL.toNanos(), 10_000);
        assertThat(n.keeper.owned(Direction.DOWNLOAD)).as("owned past the local deadline").isFalse();
        assertThat(n.keeper.status().failingClosed(Direction.DOWNLOAD)).as("status failing closed").isTrue();
        assertThat(n.keeper.owned(Direction.UPLOAD)).as("upload has no site budget").isTrue();
        assertThat(n.keeper.status().failingClosed(Direction.UPLOAD)).isFalse();
    }

    @Test
    void everyChangeIsPublishedAsOneNewValue() {
        // Lease id, deadline, budget and shares arrive together: each publication is a new SiteLease with the
        // next epoch, and the listener is handed the value the keeper then holds.
        SiteModel m = new SiteModel(1, SiteModel.Faults.none(SiteModel.ms(1), SiteModel.ms(1)), true);
        m.store.setBudget(ShareKeeperModelTest.budget(30 * MIB, 0, 0));
        SiteModel.Node n = node(m, "gw-0", 0);
        m.at(0, () -> n.start(settings("gw-0")));
        m.run(SiteModel.ms(50), 10_000);
        SiteLease first = n.keeper.lease();
        assertThat(first.held()).isTrue();
        assertThat(first.budget()).isEqualTo(ShareKeeperModelTest.budget(30 * MIB, 0, 0));
        assertThat(first.share(DOWN)).isEqualTo(30 * MIB);
        assertThat(first.shares()).isEqualTo(n.keeper.shares());
        assertThat(first.epoch()).isPositive();
        m.run(SiteModel.ms(50) + RENEW.toNanos(), 10_000); // one renewal more: a later deadline, a new value
        SiteLease second = n.keeper.lease();
        assertThat(second.epoch()).isGreaterThan(first.epoch());
        assertThat(second.deadline() - first.deadline()).isPositive();
        assertThat(second.id()).isEqualTo(first.id());
    }
    @Test
    void aDemandRisingLessThanTenPercentAboveItsShareIsWrittenAndTheOthersMakeRoom() {
        // SiteBandwidthIT, issue 22: g0's estimate fell to 4.93 MiB/s, just below what its clients read, and rose
        // again to 5.1-5.4. A demand was written only when it moved by more than 10 %, so g1 and g2 kept dividing
        // 30 MiB/s by the stale 4.93 (12.53 each) and g0 could not rise for 3 s; its rounds all looked limited, and
        // once the estimator's horizon held no free round it probed uncapped to 6.2 and 7.3 MiB/s
        SiteModel m = new SiteModel(1, SiteModel.Faults.none(SiteModel.ms(1), SiteModel.ms(1)), true);
        m.store.setBudget(ShareKeeperModelTest.budget(30 * MIB, 0, 0));
        SiteModel.Node g0 = node(m, "gw-0", 0);
        SiteModel.Node g1 = node(m, "gw-1", 123_456_789);
        SiteModel.Node g2 = node(m, "gw-2", 987_654_321);
        long low = 5_172_624; // 4.933 MiB/s, so that 30 MiB/s − low halves exactly (no byte of rounding left to write)
        long high = (long) (5.4 * MIB); // 9.5 % more
        g0.demands = Map.of(DOWN, low);
        m.at(0, () -> g0.start(settings("gw-0")));
        m.at(SiteModel.ms(10), () -> g1.start(settings("gw-1")));
        m.at(SiteModel.ms(20), () -> g2.start(settings("gw-2")));
        m.run(SiteModel.ms(5000), 200_000);
        assertThat(g0.keeper.shares().get(DOWN)).as("g0 at its demand").isEqualTo(low);
        m.at(SiteModel.ms(5000), () -> g0.demands = Map.of(DOWN, high));
        m.run(SiteModel.ms(5000) + 4 * RENEW.toNanos(), 200_000);
        assertThat(g0.keeper.shares().get(DOWN)).as("g0's share 4 renew intervals after its demand rose 9.5 %")
                .isEqualTo(high);
        assertThat(m.violation()).isNull();
    }
}
