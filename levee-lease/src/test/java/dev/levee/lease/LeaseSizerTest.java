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
}
