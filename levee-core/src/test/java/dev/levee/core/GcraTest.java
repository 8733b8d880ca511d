package dev.levee.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class GcraTest {

    private static final long SEC = 1_000_000_000L;

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 2, 5, 25, 300})
    void freshKeyAdmitsExactlyMaxBurstOneAtOnce(int burst) {
        GcraLimit limit = GcraLimit.of(10, burst, 1);
        Gcra.State s = new Gcra.State(limit.horizonNs());
        long now = 123_456_789L;
        int admitted = 0;
        for (int i = 0; i < 1000; i++) {
            if (Gcra.admitted(Gcra.attempt(s, limit, now))) {
                admitted++;
            }
        }
        assertThat(admitted).isEqualTo(Math.max(burst, 1));
    }

    @Test
    void remainingCountsDownToZeroThenRejects() {
        GcraLimit limit = GcraLimit.of(1, 3, 1);
        Gcra.State s = new Gcra.State(limit.horizonNs());
        assertThat(Gcra.attempt(s, limit, 0)).isEqualTo(2);
        assertThat(Gcra.attempt(s, limit, 0)).isEqualTo(1);
        assertThat(Gcra.attempt(s, limit, 0)).isEqualTo(0);
        long rejected = Gcra.attempt(s, limit, 0);
        assertThat(rejected).isEqualTo(-SEC);
        assertThat(Gcra.retryAfterSeconds(rejected)).isEqualTo(1);
    }

    @Test
    void rejectionDoesNotMoveTat() {
        GcraLimit limit = GcraLimit.of(2, 1, 1);
        Gcra.State s = new Gcra.State(limit.horizonNs());
        Gcra.attempt(s, limit, 0);
        long tat = s.tat();
        for (int i = 0; i < 10; i++) {
            assertThat(Gcra.attempt(s, limit, i * 1000L)).isNegative();
        }
        assertThat(s.tat()).isEqualTo(tat);
        assertThat(Gcra.attempt(s, limit, SEC / 2)).isGreaterThanOrEqualTo(0);
    }

    @Test
    void retryAfterIsRoundedUpAndNeverZero() {
        assertThat(Gcra.retryAfterSeconds(-1)).isEqualTo(1);
        assertThat(Gcra.retryAfterSeconds(-SEC)).isEqualTo(1);
        assertThat(Gcra.retryAfterSeconds(-SEC - 1)).isEqualTo(2);
        assertThat(Gcra.retryAfterSeconds(5)).isZero();
        // 1 request per 10 s: the second waits ~10 s
        GcraLimit slow = GcraLimit.of(0.1, 1, 1);
        Gcra.State s = new Gcra.State(slow.horizonNs());
        Gcra.attempt(s, slow, 0);
        assertThat(Gcra.retryAfterSeconds(Gcra.attempt(s, slow, 1))).isEqualTo(10);
    }

    @Test
    void rateIsDividedByGroupSizeButBurstIsNot() {
        GcraLimit limit = GcraLimit.of(50, 5, 4);
        assertThat(limit.emissionIntervalNs()).isEqualTo(80_000_000L); // 12.5 req/s per limiter
        assertThat(limit.capacity()).isEqualTo(5);
        assertThat(limit.toleranceNs()).isEqualTo(4 * 80_000_000L);
    }

    @Test
    void zeroRateBlocksEverything() {
        GcraLimit limit = GcraLimit.of(0, 100, 1);
        Gcra.State s = new Gcra.State(limit.horizonNs());
        long r = Gcra.attempt(s, limit, 0);
        assertThat(r).isNegative();
        assertThat(Gcra.retryAfterSeconds(r)).isEqualTo(1);
        assertThat(s.used()).isFalse();
    }

    @Test
    void steadyRateIsAdmittedAtEmissionInterval() {
        GcraLimit limit = GcraLimit.of(100, 1, 1); // T = 10 ms
        Gcra.State s = new Gcra.State(limit.horizonNs());
        int admitted = 0;
        for (long t = 0; t < 10 * SEC; t += SEC / 1000) { // 1000 req/s offered for 10 s
            if (Gcra.admitted(Gcra.attempt(s, limit, t))) {
                admitted++;
            }
        }
        assertThat(admitted).isBetween(1000, 1001);
    }

    @Test
    void tinyAndHugeRatesDoNotOverflow() {
        GcraLimit tiny = GcraLimit.of(1e-12, Integer.MAX_VALUE, 64);
        assertThat(tiny.toleranceNs()).isEqualTo(GcraLimit.MAX_SPAN_NS);
        Gcra.State s = new Gcra.State(tiny.horizonNs());
        assertThat(Gcra.attempt(s, tiny, Long.MAX_VALUE - 5)).isGreaterThanOrEqualTo(0);
        GcraLimit huge = GcraLimit.of(1e15, 0, 1);
        assertThat(huge.emissionIntervalNs()).isEqualTo(1);
    }

    @Test
    void invalidArgumentsAreRefused() {
        assertThatThrownBy(() -> GcraLimit.of(-1, 1, 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("rate");
        assertThatThrownBy(() -> GcraLimit.of(Double.NaN, 1, 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> GcraLimit.of(1, -1, 1)).hasMessageContaining("burst");
        assertThatThrownBy(() -> GcraLimit.of(1, 1, 0)).hasMessageContaining("group size");
    }

    @Test
    void quotaLoweredOnADrainedKeyCarriesTheUsedShareOver() {
        GcraLimit perMinute100 = GcraLimit.of(100 / 60.0, 100, 1);
        GcraLimit perMinute10 = GcraLimit.of(10 / 60.0, 10, 1);
        Gcra.State s = new Gcra.State(perMinute100.horizonNs());
        long now = 0;
        while (Gcra.admitted(Gcra.attempt(s, perMinute100, now))) {
            // drain the burst at one instant
        }
        long r = Gcra.attempt(s, perMinute10, now);
        assertThat(r).isNegative();
        assertThat(Gcra.retryAfterSeconds(r)).isEqualTo(6); // one emission interval of the new quota
    }

    @Test
    void quotaRaisedOnAnExhaustedKeyFollowsTheNewRetryAfter() {
        GcraLimit ten = GcraLimit.of(10 / 60.0, 10, 1);
        GcraLimit fifteen = GcraLimit.of(15 / 60.0, 15, 1);
        Gcra.State s = new Gcra.State(ten.horizonNs());
        while (Gcra.admitted(Gcra.attempt(s, ten, 0))) {
            // exhaust
        }
        assertThat(Gcra.retryAfterSeconds(Gcra.attempt(s, ten, 0))).isEqualTo(6);
        assertThat(Gcra.retryAfterSeconds(Gcra.attempt(s, fifteen, 0))).isEqualTo(4);
        assertThat(Gcra.attempt(s, fifteen, 4 * SEC)).isGreaterThanOrEqualTo(0);
    }

    @Test
    void halfUsedBurstIsHalfUsedUnderTheNewQuota() {
        GcraLimit small = GcraLimit.of(1, 10, 1);   // span 10 s
        GcraLimit big = GcraLimit.of(1, 20, 1);     // span 20 s
        Gcra.State s = new Gcra.State(small.horizonNs());
        for (int i = 0; i < 5; i++) {
            assertThat(Gcra.attempt(s, small, 0)).isGreaterThanOrEqualTo(0);
        }
        // 5 of 10 used; under burst 20 that is 10 used: 10 more at once
        int more = 0;
        while (Gcra.admitted(Gcra.attempt(s, big, 0))) {
            more++;
        }
        assertThat(more).isEqualTo(10);
    }

    /**
     * The minimum burst that holds a rate (issue 22 item 7, issue 26 item 2): 2 wherever one limiter's interval is at
     * least the 40 ms arrival spread; above that, one more than the intervals the spread covers.
     */
    @Test
    void minimumBurstIsTwoForSlowSharesAndCoversFortyMillisecondsForFastOnes() {
        assertThat(GcraLimit.minimumBurst(3.3, 4)).isEqualTo(2);   // T = 1.21 s
        assertThat(GcraLimit.minimumBurst(44, 4)).isEqualTo(2);    // T = 90.9 ms
        assertThat(GcraLimit.minimumBurst(100, 4)).isEqualTo(2);   // T = 40 ms exactly
        assertThat(GcraLimit.minimumBurst(101, 4)).isEqualTo(3);   // T = 39.6 ms
        assertThat(GcraLimit.minimumBurst(5000, 4)).isEqualTo(51); // T = 800 µs: 50 intervals in 40 ms
        assertThat(GcraLimit.minimumBurst(5000, 1)).isEqualTo(201); // T = 200 µs: 200 intervals
        assertThat(GcraLimit.minimumBurst(0, 4)).isZero();
    }

    /**
     * Why 0 and 1 never hold the rate: with {@code τ = 0} a request one nanosecond before its TAT is refused, and the
     * allowance of the time until the next arrival is lost. Offered at 1.2 × the share, strictly periodic, a burst-1
     * key admits every second arrival: 60 % of the rate; burst 2 admits the whole rate.
     */
    @Test
    void burstOneAdmitsSixtyPercentOfAStreamOfferedAtOnePointTwoTimesItsShareAndBurstTwoAllOfIt() {
        double rate = 8;
        long period = (long) (1e9 * 4 / rate / 1.2); // one limiter of four: 2.4 arrivals/s
        for (int burst : new int[] {1, 2}) {
            GcraLimit limit = GcraLimit.of(rate, burst, 4);
            Gcra.State s = new Gcra.State(limit.horizonNs());
            int admitted = 0;
            int n = 1200; // 500 s
            for (int k = 0; k < n; k++) {
                admitted += Gcra.admitted(Gcra.attempt(s, limit, k * period)) ? 1 : 0;
            }
            double share = admitted / (n * period / 1e9) / (rate / 4);
            if (burst == 1) {
                assertThat(share).isCloseTo(0.6, org.assertj.core.data.Offset.offset(0.01));
            } else {
                assertThat(share).isCloseTo(1.0, org.assertj.core.data.Offset.offset(0.01));
            }
        }
    }
}
