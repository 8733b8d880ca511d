package dev.levee.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.Size;

/** Invariants of GCRA (docs/design.md §6) for arbitrary arrival sequences and clock origins. */
class GcraProperties {

    /** For any window [a, b] of the arrivals, admitted ≤ c + (b − a) / T. */
    @Property(tries = 300)
    void admittedNeverExceedsCapacityPlusRateTimesWindow(
            @ForAll @DoubleRange(min = 0.01, max = 5000) double rate,
            @ForAll @IntRange(min = 0, max = 50) int burst,
            @ForAll @IntRange(min = 1, max = 8) int g,
            @ForAll @LongRange(min = Long.MIN_VALUE, max = Long.MAX_VALUE) long origin,
            @ForAll @Size(min = 1, max = 150) List<@LongRange(min = 0, max = 200_000_000L) Long> gaps) {
        GcraLimit limit = GcraLimit.of(rate, burst, g);
        Gcra.State s = new Gcra.State(limit.horizonNs());
        List<Long> admittedAt = new ArrayList<>(); // offsets from origin
        long offset = 0;
        for (long gap : gaps) {
            offset += gap;
            if (Gcra.admitted(Gcra.attempt(s, limit, origin + offset))) {
                admittedAt.add(offset);
            }
        }
        for (int i = 0; i < admittedAt.size(); i++) {
            for (int j = i; j < admittedAt.size(); j++) {
                long window = admittedAt.get(j) - admittedAt.get(i);
                long count = j - i + 1;
                double bound = limit.capacity() + (double) window / limit.emissionIntervalNs();
                assertThat((double) count).isLessThanOrEqualTo(bound);
            }
        }
    }

    /** A rejected request leaves the state exactly as it was. */
    @Property(tries = 300)
    void rejectionLeavesStateUnchanged(
            @ForAll @DoubleRange(min = 0.1, max = 1000) double rate,
            @ForAll @IntRange(min = 0, max = 10) int burst,
            @ForAll @LongRange(min = Long.MIN_VALUE, max = Long.MAX_VALUE) long origin,
            @ForAll @Size(min = 1, max = 100) List<@LongRange(min = 0, max = 50_000_000L) Long> gaps) {
        GcraLimit limit = GcraLimit.of(rate, burst, 1);
        Gcra.State s = new Gcra.State(limit.horizonNs());
        long now = origin;
        for (long gap : gaps) {
            now += gap;
            long tat = s.tat();
            boolean used = s.used();
            long r = Gcra.attempt(s, limit, now);
            if (r < 0) {
                assertThat(s.tat()).isEqualTo(tat);
                assertThat(s.used()).isEqualTo(used);
                assertThat(Gcra.retryAfterSeconds(r)).isGreaterThanOrEqualTo(1);
            }
        }
    }

    /** The same arrivals give the same decisions whatever the clock's origin (near MAX, negative, zero). */
    @Property(tries = 200)
    void decisionsDoNotDependOnClockOrigin(
            @ForAll @DoubleRange(min = 0.1, max = 1000) double rate,
            @ForAll @IntRange(min = 0, max = 20) int burst,
            @ForAll @LongRange(min = Long.MIN_VALUE, max = Long.MAX_VALUE) long origin,
            @ForAll @Size(min = 1, max = 100) List<@LongRange(min = 0, max = 50_000_000L) Long> gaps) {
        GcraLimit limit = GcraLimit.of(rate, burst, 1);
        long[] origins = {0L, origin, Long.MAX_VALUE - 1_000_000L, Long.MIN_VALUE + 7, -1L};
        List<List<Long>> runs = new ArrayList<>();
        for (long o : origins) {
            Gcra.State s = new Gcra.State(limit.horizonNs());
            List<Long> results = new ArrayList<>();
            long now = o;
            for (long gap : gaps) {
                now += gap;
                results.add(Gcra.attempt(s, limit, now));
            }
            runs.add(results);
        }
        for (List<Long> run : runs) {
            assertThat(run).isEqualTo(runs.get(0));
        }
    }
}
