package dev.levee.lease;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.levee.core.GcraLimit;
import org.junit.jupiter.api.Test;

class LeaseSizerTest {

    @Test
    void leasesFromTheThresholdAndSizesByTheWindowOfDemandPerMember() {
        LeaseSizer s = LeaseSizer.DEFAULTS; // 50 ms, 100/s
        assertThat(s.leased(99.9)).isFalse();
        assertThat(s.leased(100)).isTrue();
        GcraLimit limit = GcraLimit.of(5000, 125, 4); // T 0.8 ms, c 125: cap 125 + 62
        assertThat(s.slots(4000, 4, limit)).isEqualTo(50); // 1000/s per member × 50 ms
        assertThat(s.slots(40_000, 4, limit)).isEqualTo(187);
        assertThat(s.slots(1, 4, limit)).isEqualTo(1);
        assertThat(new LeaseSizer(50_000_000L, 100, 20).slots(40_000, 4, limit)).isEqualTo(20);
    }

    @Test
    void badInputIsRefusedNamingIt() {
        assertThatThrownBy(() -> new LeaseSizer(19_999_999L, 100, 1)).hasMessageContaining("lease window");
        assertThatThrownBy(() -> new LeaseSizer(100_000_001L, 100, 1)).hasMessageContaining("lease window");
        assertThatThrownBy(() -> new LeaseSizer(50_000_000L, 0, 1)).hasMessageContaining("lease threshold");
        assertThatThrownBy(() -> new LeaseSizer(50_000_000L, -1, 1)).hasMessageContaining("lease threshold");
        assertThatThrownBy(() -> new LeaseSizer(50_000_000L, Double.NaN, 1)).hasMessageContaining("lease threshold");
        assertThatThrownBy(() -> new LeaseSizer(50_000_000L, Double.POSITIVE_INFINITY, 1))
                .hasMessageContaining("lease threshold");
        assertThatThrownBy(() -> new LeaseSizer(50_000_000L, 1, 0)).hasMessageContaining("maxSlots");
        LeaseSizer s = LeaseSizer.DEFAULTS;
        GcraLimit limit = GcraLimit.of(10, 1, 1);
        assertThatThrownBy(() -> s.leased(Double.NaN)).hasMessageContaining("observed rate");
        assertThatThrownBy(() -> s.slots(-1, 1, limit)).hasMessageContaining("observed rate");
        assertThatThrownBy(() -> s.slots(1, 0, limit)).hasMessageContaining("group size");
        assertThatThrownBy(() -> s.slots(1, 1, GcraLimit.of(0, 1, 1))).hasMessageContaining("blocked");
    }

    @Test
    void theLeadCoversTwiceTheTimeTheClientNeedsForItsSlotsAtMostHalfOfTauAndNoneOnASaturatedKey() {
        LeaseSizer s = LeaseSizer.DEFAULTS;
        // 1 M req/s over 2 limiters, burst 50 000: T 2 µs, τ ≈ 100 ms; a client at 20 000 req/s would want 500 slots
        // of 50 ms, but only ⌊τ / (4 × 98 µs)⌋ = 255 last with twice the lead they need, under τ / 2
        GcraLimit idle = GcraLimit.of(1_000_000, 50_000, 2);
        int slots = s.slots(20_000, 2, idle);
        assertThat(slots).isEqualTo(255);
        assertThat(s.leadNs(20_000, 2, idle, slots)).isEqualTo(2 * 255 * 98_000L).isLessThan(idle.toleranceNs() / 2);
        // 2 × 500 × (100 − 2) µs = 98 ms, over τ / 2: half of τ stays for the checks sent per request meanwhile
        assertThat(s.leadNs(20_000, 2, idle, 500)).isEqualTo(idle.toleranceNs() / 2);
        assertThat(s.leadNs(20_000, 2, idle, 100)).isEqualTo(19_600_000L); // 2 × 100 × 98 µs, under τ / 2
        // a saturated key: 500 req/s over 4, burst 13 (T 8 ms, τ 96 ms); checks seen at 16 000/s, the lease capped at 19
        GcraLimit busy = GcraLimit.of(500, 13, 4);
        int capped = s.slots(16_000, 4, busy);
        assertThat(capped).isEqualTo(19);
        // 4 000 checks/s per member, more than its 125 req/s: no lead, the slots start at TAT (about τ ahead)
        assertThat(s.leadNs(16_000, 4, busy, capped)).isZero();
        // 100 req/s at this client over 4 members: one use per 40 ms per member, T 8 ms: 32 ms more per slot
        assertThat(s.leadNs(100, 4, busy, 2)).isEqualTo(busy.toleranceNs() / 2); // 2 × 2 × 32 ms = 128 ms, over τ / 2
        assertThat(s.leadNs(200, 4, busy, 1)).isEqualTo(2 * (20_000_000L - busy.emissionIntervalNs()));
        assertThatThrownBy(() -> s.leadNs(0, 1, busy, 1)).hasMessageContaining("rate > 0");
    }

    @Test
    void belowTheLastingRateNoSlotWouldLastUntilUsedSoNoneIsAskedFor() {
        LeaseSizer s = LeaseSizer.DEFAULTS;
        // 20 000 req/s over 2 limiters, burst 400: T 0.1 ms, τ 39.9 ms; one slot lasts from 2 / (0.1 + 9.975) ms
        GcraLimit tight = GcraLimit.of(20_000, 400, 2);
        assertThat(s.lastingRate(2, tight)).isCloseTo(198.5, org.assertj.core.data.Offset.offset(0.1));
        // a sequential client at 50 or 110 req/s reaches a member's slot 40 or 18 ms after the grant: past τ / 2 + T
        assertThat(s.lastingSlots(50, 2, tight)).isZero();
        assertThat(s.lastingSlots(110, 2, tight)).isZero();
        assertThat(s.lastingSlots(198, 2, tight)).isZero();
        assertThat(s.lastingSlots(199, 2, tight)).isEqualTo(1);
        assertThat(s.lastingSlots(400, 2, tight)).isEqualTo(2); // ⌊9.975 / 4.9⌋
        assertThat(s.slots(400, 2, tight)).isEqualTo(2); // wanted 10 of 50 ms, 2 last
        assertThat(s.lastingSlots(0, 2, tight)).isZero();
        // a client taking a member's rate or more needs no lead: every slot lasts, up to maxSlots
        assertThat(s.lastingSlots(20_000, 2, tight)).isEqualTo(4096);
        assertThat(new LeaseSizer(50_000_000L, 100, 20).lastingSlots(1e6, 2, tight)).isEqualTo(20);
        // with the burst of 4 000 the slots last ten times longer: from 20 req/s
        assertThat(s.lastingRate(2, GcraLimit.of(20_000, 4000, 2))).isCloseTo(20.0, org.assertj.core.data.Offset.offset(0.1));
        assertThat(s.slots(110, 2, GcraLimit.of(20_000, 4000, 2))).isEqualTo(3); // ⌈55 × 0.05⌉, 5 would last
        assertThatThrownBy(() -> s.lastingRate(0, tight)).hasMessageContaining("g >= 1");
        assertThatThrownBy(() -> s.lastingSlots(1, 1, GcraLimit.of(0, 1, 1))).hasMessageContaining("blocked");
        assertThatThrownBy(() -> s.lastingSlots(Double.NaN, 1, tight)).hasMessageContaining("observed rate");
    }
}
