package dev.levee.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The minimum-progress deadline of a request body, on an injected clock (issue 10, defect 6). */
class ProgressDeadlineTest {

    static final long S = 1_000_000_000L;

    @Test
    void aStalledClientExpiresAfterTheTimeoutOfReadingTime() {
        ProgressDeadline d = new ProgressDeadline(10 * S, 1024);
        d.resume(0);
        assertThat(d.expired(10 * S - 1)).isFalse();
        assertThat(d.expired(10 * S)).isTrue();
    }

    @Test
    void timeTheGatewayDoesNotReadCostsNothing() {
        ProgressDeadline d = new ProgressDeadline(10 * S, 1024);
        d.resume(0);
        d.pause(5 * S); // the governor withholds permits for an hour
        assertThat(d.expired(3600 * S)).isFalse();
        d.resume(3600 * S);
        assertThat(d.remaining(3600 * S)).isEqualTo(5 * S);
        assertThat(d.expired(3605 * S)).isTrue();
    }

    @Test
    void aClientBelowTheMinimumRateLosesItsAllowanceAtTheMissingRate() {
        ProgressDeadline d = new ProgressDeadline(10 * S, 1000);
        d.resume(0);
        long t = 0;
        // 500 B/s against 1000 B/s: half a second lost per second, so about 20 s
        while (!d.expired(t) && t < 100 * S) {
            t += S;
            d.received(500, t);
        }
        assertThat(t).isBetween(19 * S, 21 * S);
    }

    @Test
    void aClientAtTheMinimumRateNeverExpiresAndTheAllowanceIsCapped() {
        ProgressDeadline d = new ProgressDeadline(10 * S, 1000);
        d.resume(0);
        for (long t = 1; t <= 1000; t++) {
            d.received(1000, t * S);
            assertThat(d.expired(t * S)).isFalse();
        }
        d.received(Long.MAX_VALUE, 1000 * S); // a huge burst earns no more than the timeout
        assertThat(d.remaining(1000 * S)).isEqualTo(10 * S);
    }

    @Test
    void withoutAMinimumRateItIsAnIdleTimeout() {
        ProgressDeadline d = new ProgressDeadline(2 * S, 0);
        d.resume(0);
        d.received(1, S + S / 2);
        assertThat(d.expired(3 * S)).isFalse();
        assertThat(d.expired(3 * S + S / 2)).isTrue();
    }

    @Test
    void refusesANonPositiveTimeoutOrANegativeRate() {
        assertThatThrownBy(() -> new ProgressDeadline(0, 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new ProgressDeadline(S, -1)).isInstanceOf(IllegalArgumentException.class);
    }
}
