package dev.levee.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.Size;

/**
 * {@link GcraLimit#minimumBurst}: the smallest burst that holds a quota's rate when arrivals come up to
 * {@link GcraLimit#ARRIVAL_SPREAD_NS} late (docs/decisions.md, "Bursts that hold the rate").
 */
class MinimumBurstProperties {

    static final long J = GcraLimit.ARRIVAL_SPREAD_NS;

    /**
     * A stream no faster than one limiter's share (its k-th arrival nominally at {@code k × P}, {@code P ≥ T}), each
     * arrival late by anything in {@code [0, J]}, in clock order: with the minimum burst every arrival is admitted.
     */
    @Property(tries = 400)
    void withTheMinimumBurstAStreamAtTheRateWithArrivalsUpToTheSpreadLateIsAdmittedInFull(
            @ForAll @DoubleRange(min = 0.05, max = 20_000) double rate,
            @ForAll @IntRange(min = 1, max = 8) int g,
            @ForAll @DoubleRange(min = 0, max = 1) double slower,
            @ForAll @LongRange(min = Long.MIN_VALUE, max = Long.MAX_VALUE) long origin,
            @ForAll @Size(min = 1, max = 300) List<@LongRange(min = 0, max = J) Long> late) {
        int burst = GcraLimit.minimumBurst(rate, g);
        GcraLimit limit = GcraLimit.of(rate, burst, g);
        long period = limit.emissionIntervalNs() + (long) (slower * limit.emissionIntervalNs());
        List<Long> arrivals = new ArrayList<>();
        for (int k = 0; k < late.size(); k++) {
            arrivals.add(k * period + late.get(k));
        }
        Collections.sort(arrivals); // the clock only goes forward
        Gcra.State s = new Gcra.State(limit.horizonNs());
        for (long a : arrivals) {
            assertThat(Gcra.admitted(Gcra.attempt(s, limit, origin + a)))
                    .as("rate %s g %d burst %d: arrival at %d ns of %s", rate, g, burst, a, arrivals).isTrue();
        }
    }

    /**
     * One less than the minimum (when that is still ≥ 2) does not absorb the spread: the arrivals due in the first
     * {@code J} all come at {@code J}, the rest on time, and one of them is refused although the stream is no faster
     * than the rate.
     */
    @Property(tries = 300)
    void oneLessThanTheMinimumRefusesSomeArrivalOfSuchAStream(
            @ForAll @DoubleRange(min = 0.05, max = 20_000) double rate,
            @ForAll @IntRange(min = 1, max = 8) int g,
            @ForAll @LongRange(min = Long.MIN_VALUE, max = Long.MAX_VALUE) long origin) {
        int min = GcraLimit.minimumBurst(rate, g);
        int burst = Math.max(1, min - 1);
        GcraLimit limit = GcraLimit.of(rate, burst, g);
        long t = limit.emissionIntervalNs();
        Gcra.State s = new Gcra.State(limit.horizonNs());
        int refused = 0;
        long n = Math.min(100_000, J / t + 3);
        for (long k = 0; k < n; k++) {
            long a = Math.max(k * t, J);
            refused += Gcra.admitted(Gcra.attempt(s, limit, origin + a)) ? 0 : 1;
        }
        assertThat(refused).as("rate %s g %d burst %d (minimum %d)", rate, g, burst, min).isPositive();
    }

    /** Never below 2; grows with the rate and shrinks with the group; 0 only for a blocked quota. */
    @Property(tries = 300)
    void theMinimumIsAtLeastTwoAndFollowsTheRateShareOfOneLimiter(
            @ForAll @DoubleRange(min = 0.01, max = 1e9) double rate,
            @ForAll @IntRange(min = 1, max = 64) int g) {
        int min = GcraLimit.minimumBurst(rate, g);
        assertThat(min).isGreaterThanOrEqualTo(2);
        assertThat(GcraLimit.minimumBurst(rate * 2, g)).isGreaterThanOrEqualTo(min);
        assertThat(GcraLimit.minimumBurst(rate, g + 1)).isLessThanOrEqualTo(min);
        GcraLimit at = GcraLimit.of(rate, min, g);
        assertThat(at.toleranceNs()).isGreaterThanOrEqualTo(Math.min(J, GcraLimit.MAX_SPAN_NS));
        assertThat(GcraLimit.minimumBurst(0, g)).isZero();
    }
}
