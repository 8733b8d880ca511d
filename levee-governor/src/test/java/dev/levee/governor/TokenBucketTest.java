package dev.levee.governor;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/** Exact integer refill, clamping and rate changes of one bucket (docs/design.md §8). */
class TokenBucketTest {

    static final long SEC = 1_000_000_000L;

    @Test
    void startsFullAtItsBurst() {
        TokenBucket b = new TokenBucket(1_048_576, 0);
        assertThat(b.availableBytes()).isEqualTo(104_857);
        assertThat(b.canPay(104_857)).isTrue();
        assertThat(b.canPay(104_858)).isFalse();
    }

    @Test
    void carriesTheFractionOfAByteSoThreeBytesPerSecondNeverDrift() {
        TokenBucket b = new TokenBucket(3_000, 0); // burst 300
        b.debit(300);
        long now = 0;
        long granted = 0;
        // refill in steps of 1 µs + 7 ns: each step earns 0.003021 bytes, never a whole one
        for (int i = 0; i < 10_000_000; i++) {
            now += 1_007;
            b.refill(now);
            if (b.canPay(1)) {
                b.debit(1);
                granted++;
            }
        }
        // exactly floor(3000 B/s × 10.07 s) = 30 210 bytes, no drift from rounding
        assertThat(granted).isEqualTo(3_000L * now / SEC);
    }

    @ParameterizedTest
    @ValueSource(longs = {Long.MAX_VALUE, Long.MIN_VALUE, 0, -1, 4_611_686_018_427_387_904L})
    void longIdleAtTheHighestRateClampsToFullWithoutOverflow(long origin) {
        TokenBucket b = new TokenBucket(GovernorConfig.MAX_RATE_BYTES_PER_SECOND, origin);
        b.debit(GovernorConfig.MAX_BURST_BYTES);
        assertThat(b.availableBytes()).isZero();
        b.refill(origin + Long.MAX_VALUE); // 292 years idle: dt × rate would overflow many times
        assertThat(b.availableBytes()).isEqualTo(GovernorConfig.MAX_BURST_BYTES);
        b.refill(origin + Long.MAX_VALUE + 1); // the clock wraps: still full, never negative
        assertThat(b.availableBytes()).isEqualTo(GovernorConfig.MAX_BURST_BYTES);
    }

    @Test
    void timeUntilIsExactToTheNanosecond() {
        TokenBucket b = new TokenBucket(1_000, 0); // burst 100 B, 1 µs per nano-byte… 1 ms per byte
        b.debit(100);
        assertThat(b.nanosUntil(3)).isEqualTo(3_000_000);
        b.refill(2_999_999);
        assertThat(b.canPay(3)).isFalse();
        assertThat(b.nanosUntil(3)).isEqualTo(1);
        b.refill(3_000_000);
        assertThat(b.canPay(3)).isTrue();
        assertThat(b.nanosUntil(3)).isZero();
    }

    @Test
    void clockReadingsOutOfOrderNeverTakeCreditBack() {
        TokenBucket b = new TokenBucket(1_000, 100);
        b.debit(100);
        b.refill(50_000_100); // +50 bytes
        b.refill(100);        // an older reading: ignored
        assertThat(b.availableBytes()).isEqualTo(50);
        b.refill(50_000_100);
        assertThat(b.availableBytes()).isEqualTo(50);
    }

    @Test
    void disabledBucketAlwaysPays() {
        TokenBucket b = new TokenBucket(0, 0);
        assertThat(b.enabled()).isFalse();
        assertThat(b.canPay(Long.MAX_VALUE / 2_000_000_000L)).isTrue();
        assertThat(b.nanosUntil(65_536)).isZero();
    }

    @ParameterizedTest(name = "rate {0} → {1}: credit {2} → {3}")
    @CsvSource({
            // old rate, new rate, bytes before, bytes after
            "10000000, 1000, 1000000, 100",       // lower burst clamps the credit
            "1000, 10000000, 100, 100",           // higher burst keeps the credit; it refills at the new rate
            "0, 1000, 0, 0",                      // enabling starts empty: no burst on top of what passed unbounded (issue 22)
            "-1, 1000, 0, 0",                     // a held bucket given a rate starts empty too
            "1000, 0, 100, 0",                    // disabling: no bucket
    })
    void changingTheRateClampsToTheNewBurst(long oldRate, long newRate, long before, long after) {
        TokenBucket b = new TokenBucket(oldRate, 0);
        assertThat(b.availableBytes()).isEqualTo(before);
        b.setRate(newRate, 0);
        assertThat(b.availableBytes()).isEqualTo(after);
        assertThat(b.burst()).isEqualTo(GovernorConfig.burstBytes(newRate));
    }
}
