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
        // 1 M req/s over 2 limiters, burst 50 000: T 2 µs, τ ≈ 100 ms; a client at 20 000 req/s asks for 500 slots
        GcraLimit idle = GcraLimit.of(1_000_000, 50_000, 2);
        int slots = s.slots(20_000, 2, idle);
        assertThat(slots).isEqualTo(500);
        // 2 × 500 × (100 − 2) µs = 98 ms, over τ / 2: half of τ stays for the checks sent per request meanwhile
        assertThat(s.leadNs(20_000, 2, idle, slots)).isEqualTo(idle.toleranceNs() / 2);
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
    void belowTheLastingRateNoSlotWouldLastUntilUsed() {
        LeaseSizer s = LeaseSizer.DEFAULTS;
        // 20 000 req/s over 2 limiters, burst 400: T 0.1 ms, τ 39.9 ms; one slot lasts from 2 / (0.1 + 9.975) ms
        GcraLimit tight = GcraLimit.of(20_000, 400, 2);
        double floor = s.lastingRate(2, tight);
        assertThat(floor).isCloseTo(198.5, org.assertj.core.data.Offset.offset(0.1));
        // a sequential client at 110 req/s reaches a member's slot 18 ms after the grant, the lead at most 20 ms: twice
        // the 18 ms it needs is more than τ / 2, so the lead is cut and the slot ends before it is reached
        assertThat(110.0).isLessThan(floor);
        assertThat(s.leadNs(110, 2, tight, 1)).isEqualTo(tight.toleranceNs() / 2);
        // just above the floor, the lead asked for one slot is within τ / 2: not cut, the slot lasts until reached
        assertThat(s.leadNs(floor * 1.01, 2, tight, 1)).isLessThan(tight.toleranceNs() / 2);
        // above it, the slots asked are not cut to those that last (NGINX's batches take half a lease at once)
        assertThat(s.slots(400, 2, tight)).isEqualTo(10);
        // with the burst of 4 000 the slots last ten times longer: from 20 req/s
        assertThat(s.lastingRate(2, GcraLimit.of(20_000, 4000, 2))).isCloseTo(20.0, org.assertj.core.data.Offset.offset(0.1));
        // §4's burst with g = DF (τ ≈ 100 ms): about g / 25 ms
        assertThat(s.lastingRate(2, GcraLimit.of(5000, 250, 2))).isCloseTo(79.1, org.assertj.core.data.Offset.offset(0.1));
        assertThatThrownBy(() -> s.lastingRate(0, tight)).hasMessageContaining("g >= 1");
        assertThatThrownBy(() -> s.lastingRate(1, GcraLimit.of(0, 1, 1))).hasMessageContaining("blocked");
    }
}
