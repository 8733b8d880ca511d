package dev.levee.quota;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.core.GcraLimit;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;

/** The spec's burst formula and the minimum burst disagree only where the formula rounds to 1 (issue 26 item 2). */
class BurstAdviceProperties {

    @Property(tries = 2000)
    void aFormulaBurstOfTwoOrMoreHoldsTheRateAndOneNeverDoes(
            @ForAll @DoubleRange(min = 0.01, max = 10_000_000) double rate,
            @ForAll @IntRange(min = 1, max = 64) int factor) {
        long formula = BurstAdvice.formulaBurst(rate, factor);
        if (formula >= 2) {
            assertThat(BurstAdvice.holds(rate, (int) Math.min(Integer.MAX_VALUE, formula), factor))
                    .as("rate %s factor %d: formula %d, minimum %d", rate, factor, formula,
                            GcraLimit.minimumBurst(rate, factor)).isTrue();
        } else {
            assertThat(BurstAdvice.holds(rate, 1, factor)).isFalse();
        }
    }
}
