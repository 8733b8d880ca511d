package dev.levee.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The per-key rate estimate behind "is this key above the lease threshold" (issue 23 item 2), on a fake timeline. */
class HotKeysTest {

    static final long MS = 1_000_000L;
    /** An origin near the end of the range: readings are compared by difference only. */
    static final long T0 = Long.MAX_VALUE - 5_000 * MS;

    /** Sends {@code n} checks on {@code key} at {@code perSecond} from {@code from}; returns the time after the last. */
    static long steady(HotKeys k, String key, double perSecond, int n, long from) {
        long gap = (long) (1e9 / perSecond);
        long t = from;
        for (int i = 0; i < n; i++) {
            k.record(key, t);
            t += gap;
        }
        return t;
    }

    @Test
    void aSteadyRateIsEstimatedWithinHalfACheckPerWindow() {
        HotKeys k = new HotKeys(100, Duration.ofSeconds(1), 1000);
        long t = steady(k, "a", 200, 3000, T0); // fifteen windows
        assertThat(k.rate("a", t - 5 * MS)).isBetween(199.5, 200.5 + 0.01);
        assertThat(k.isHot("a", t)).isTrue();
        long u = steady(k, "b", 50, 500, T0);
        assertThat(k.rate("b", u - 20 * MS)).isBetween(49.5, 50.5 + 0.01);
        assertThat(k.isHot("b", u)).isFalse();
        assertThat(k.rate("never", t)).isZero();
        assertThat(k.isHot("never", t)).isFalse();
    }

    @Test
    void aKeyTurnsHotOnceAndColdOnlyBelowHalfTheThreshold() {
        HotKeys k = new HotKeys(100, Duration.ofMillis(500), 1000);
        int turned = 0;
        long t = T0;
        for (int i = 0; i < 2000; i++) { // 200/s for 10 s
            if (k.record("a", t).turnedHot()) {
                turned++;
            }
            t += 5 * MS;
        }
        assertThat(turned).isEqualTo(1);
        // 70/s: below the threshold, above half of it: still hot, no new turn
        for (int i = 0; i < 700; i++) {
            HotKeys.Seen s = k.record("a", t);
            assertThat(s.hot()).isTrue();
            assertThat(s.turnedHot()).isFalse();
            t += (long) (1e9 / 70);
        }
        // silence: the estimate decays by e per window
        double before = k.rate("a", t);
        assertThat(k.rate("a", t + 500 * MS)).isCloseTo(before / Math.E, org.assertj.core.data.Offset.offset(1e-6));
        assertThat(k.isHot("a", t + 2000 * MS)).isFalse();
        // 30/s: cold; then 200/s again: one more turn
        t = steady(k, "a", 30, 300, t + 2000 * MS);
        assertThat(k.isHot("a", t)).isFalse();
        for (int i = 0; i < 600; i++) {
            if (k.record("a", t).turnedHot()) {
                turned++;
            }
            t += 5 * MS;
        }
        assertThat(turned).isEqualTo(2);
    }

    @Test
    void aBurstBelowTheWindowDoesNotMakeAKeyHotButAWindowOfItDoes() {
        HotKeys k = new HotKeys(100, Duration.ofSeconds(1), 1000);
        long t = steady(k, "a", 1000, 50, T0); // 50 checks in 50 ms: about 50/s over the window
        assertThat(k.isHot("a", t)).isFalse();
        t = steady(k, "a", 1000, 100, t); // 150 within 150 ms
        assertThat(k.isHot("a", t)).isTrue();
    }

    @Test
    void aReadingOlderThanTheLastCountsAtTheLast() {
        HotKeys k = new HotKeys(100, Duration.ofSeconds(1), 1000);
        k.record("a", T0 + 10 * MS);
        double r = k.record("a", T0).rate(); // another thread's earlier reading, counted late
        assertThat(r).isEqualTo(2.0);
        assertThat(k.rate("a", T0 + 10 * MS)).isEqualTo(2.0);
    }

    @Test
    void memoryIsBoundedByMaxKeys() {
        HotKeys k = new HotKeys(100, Duration.ofSeconds(1), 100);
        for (int i = 0; i < 10_000; i++) {
            k.record("key-" + i, T0 + i * MS);
        }
        assertThat(k.size()).isLessThanOrEqualTo(100);
    }

    @Test
    void badSettingsAreRefusedNamingThem() {
        assertThatThrownBy(() -> new HotKeys(0, Duration.ofSeconds(1), 1)).hasMessageContaining("threshold");
        assertThatThrownBy(() -> new HotKeys(Double.NaN, Duration.ofSeconds(1), 1)).hasMessageContaining("threshold");
        assertThatThrownBy(() -> new HotKeys(1, Duration.ZERO, 1)).hasMessageContaining("window");
        assertThatThrownBy(() -> new HotKeys(1, Duration.ofDays(2), 1)).hasMessageContaining("window");
        assertThatThrownBy(() -> new HotKeys(1, Duration.ofSeconds(1), 0)).hasMessageContaining("maxKeys");
    }
}
