package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The {@link ByteWindows} fixture with a fake clock and fake counters (no I/O; named *IT only because
 * levee-it runs its tests with failsafe): windows are exact for an even rate whatever the sampling
 * jitter, a burst shows in the sliding maximum, counters sum, observations and their failures are kept,
 * and {@link ByteWindows#reset()} starts again. One test runs the real sampling threads.
 */
class ByteWindowsIT {

    static final long MS = 1_000_000L;

    final AtomicLong now = new AtomicLong(Long.MAX_VALUE - 2_500 * MS); // crosses Long.MAX_VALUE: times compare by subtraction
    final AtomicLong a = new AtomicLong();
    final AtomicLong b = new AtomicLong();
    final ByteWindows w = new ByteWindows(Duration.ofSeconds(1), now::get).counter("a", a::get).counter("b", b::get);

    /** Advances the fake clock by {@code ms} with {@code a} at {@code aRate} and {@code b} at {@code bRate} bytes/s, then samples. */
    void run(long ms, long aRate, long bRate) {
        now.addAndGet(ms * MS);
        a.addAndGet(aRate * ms / 1000);
        b.addAndGet(bRate * ms / 1000);
        w.sampleNow();
    }

    @Test
    void windowsOfAnEvenRateAreExactWhateverTheSamplingJitter() {
        w.sampleNow();
        long[] jitter = {100, 130, 70, 100, 250, 50, 100, 100, 90, 110, 30, 170, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100};
        for (long ms : jitter) {
            run(ms, 10_000, 3_000);
        }
        // 2.5 s sampled: two complete windows
        assertThat(w.windows("a")).containsExactly(10_000L, 10_000L);
        assertThat(w.windows("b")).containsExactly(3_000L, 3_000L);
        assertThat(w.sumWindows()).containsExactly(13_000L, 13_000L);
        assertThat(w.maxWindowSum()).isEqualTo(13_000);
        assertThat(w.maxSlidingWindowSum()).isEqualTo(13_000);
        assertThat(w.recentRate("a", Duration.ofSeconds(1))).isCloseTo(10_000.0, org.assertj.core.data.Offset.offset(1.0));
        assertThat(w.sampleCount()).isEqualTo(jitter.length + 1);
    }

    @Test
    void aBurstAcrossAWindowBoundaryShowsInTheSlidingMaximum() {
        w.sampleNow();
        for (int i = 0; i < 30; i++) {
            // 50 000 bytes between 0.7 and 0.8 s and between 1.2 and 1.3 s
            run(100, i == 7 || i == 12 ? 500_000 : 0, 0);
        }
        // the consecutive windows split the two bursts; a sliding window holds both
        assertThat(w.windows("a")).hasSize(3);
        assertThat(w.windows("a").stream().mapToLong(Long::longValue).sum()).isEqualTo(100_000);
        assertThat(w.maxSlidingWindow("a")).isEqualTo(100_000);
        assertThat(w.maxSlidingWindowSum()).isEqualTo(100_000);
        assertThat(w.maxWindowSum()).isEqualTo(50_000);
    }

    @Test
    void observationsKeepValuesTimesAndFailures() {
        AtomicLong shares = new AtomicLong(30);
        w.observe("shares", shares::get).observe("broken", () -> {
            throw new IllegalStateException("gateway 2 did not answer");
        });
        w.observeNow();
        now.addAndGet(200 * MS);
        shares.set(25);
        w.observeNow();
        List<ByteWindows.Observation<Long>> os = w.observations("shares");
        assertThat(os).extracting(ByteWindows.Observation::value).containsExactly(30L, 25L);
        assertThat(os.get(1).atNanos() - os.get(0).atNanos()).isEqualTo(200 * MS);
        assertThat(os).allMatch(ByteWindows.Observation::ok);
        List<ByteWindows.Observation<Object>> broken = w.observations("broken");
        assertThat(broken).hasSize(2).noneMatch(ByteWindows.Observation::ok);
        assertThat(broken.getFirst().error()).contains("gateway 2 did not answer");
        assertThatThrownBy(() -> w.observations("nope")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("shares");
    }

    @Test
    void resetStartsTheWindowsAgainAndCountersAreFixedAtTheFirstSample() {
        w.sampleNow();
        for (int i = 0; i < 15; i++) {
            run(100, 5_000, 0);
        }
        assertThat(w.windows("a")).containsExactly(5_000L);
        w.reset();
        assertThat(w.windows("a")).isEmpty();
        w.sampleNow();
        for (int i = 0; i < 10; i++) {
            run(100, 7_000, 1_000);
        }
        assertThat(w.sumWindows()).containsExactly(8_000L);
        assertThatThrownBy(() -> w.counter("c", () -> 0)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> w.windows("c")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("[a, b]");
        assertThatThrownBy(() -> new ByteWindows(Duration.ZERO, System::nanoTime)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void theSamplingThreadsSampleAndObserveOnTheirOwn() {
        AtomicLong real = new AtomicLong();
        AtomicLong probes = new AtomicLong();
        try (ByteWindows live = ByteWindows.perSecond().counter("x", real::get).observe("n", probes::incrementAndGet)
                .start(Duration.ofMillis(20), Duration.ofMillis(50))) {
            real.set(1);
            await("samples and observations").atMost(Duration.ofSeconds(5))
                    .until(() -> live.sampleCount() >= 10 && live.observations("n").size() >= 3);
        }
    }
}
