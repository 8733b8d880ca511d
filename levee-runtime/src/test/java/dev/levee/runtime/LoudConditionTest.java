package dev.levee.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** A lasting degraded condition is warned about at its start, at most once per interval, and its end once. */
class LoudConditionTest {

    static final long S = 1_000_000_000L;

    @Test
    void warnsAtTheStartThenAtMostOncePerIntervalThenOnceAtTheEnd() {
        LoudCondition c = new LoudCondition(Duration.ofSeconds(10));
        assertThat(c.update(0, null).kind()).isEqualTo(LoudCondition.Kind.NONE);
        assertThat(c.update(1 * S, "no limiter").kind()).isEqualTo(LoudCondition.Kind.BEGAN);
        int warnings = 0;
        for (long t = 2; t <= 31; t++) { // polled every second for 30 s
            if (c.update(t * S, "no limiter").kind() == LoudCondition.Kind.LASTS) {
                warnings++;
            }
        }
        assertThat(warnings).isEqualTo(3); // at 11, 21 and 31 s
        assertThat(c.active()).isTrue();
        LoudCondition.Report end = c.update(32 * S, null);
        assertThat(end.kind()).isEqualTo(LoudCondition.Kind.ENDED);
        assertThat(end.seconds()).isEqualTo(31);
        assertThat(c.update(33 * S, null).kind()).isEqualTo(LoudCondition.Kind.NONE);
        assertThat(c.active()).isFalse();
    }

    @Test
    void aChangedReasonIsWarnedAtOnce() {
        LoudCondition c = new LoudCondition(Duration.ofSeconds(10));
        c.update(0, "observer unreachable");
        LoudCondition.Report r = c.update(S, "no limiter");
        assertThat(r.kind()).isEqualTo(LoudCondition.Kind.LASTS);
        assertThat(r.reason()).isEqualTo("no limiter");
        assertThat(c.update(2 * S, "no limiter").kind()).isEqualTo(LoudCondition.Kind.NONE);
    }

    @Test
    void theIntervalMustBePositive() {
        assertThatThrownBy(() -> new LoudCondition(Duration.ZERO)).hasMessageContaining("positive");
    }
}
