package dev.levee.lease;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/** Max-min fair division (docs/design.md §10): the examples of issue 11 and its properties. */
class MaxMinFairTest {

    private static final long MIB = 1024 * 1024;

    @Test
    void issueExampleSmallDemandKeepsWhatItNeedsTheRestSplitEqually() {
        long[] s = MaxMinFair.allocate(30 * MIB, new long[] {5 * MIB, 20 * MIB, 40 * MIB});
        assertThat(s).containsExactly(5 * MIB, 25 * MIB / 2, 25 * MIB / 2);
    }

    @Test
    void issueExampleDemandShiftGivesEqualThirds() {
        long[] s = MaxMinFair.allocate(30 * MIB, new long[] {25 * MIB, 20 * MIB, 40 * MIB});
        assertThat(s).containsExactly(10 * MIB, 10 * MIB, 10 * MIB);
    }

    @Test
    void demandsBelowTheBudgetAreMetInFull() {
        assertThat(MaxMinFair.allocate(100, new long[] {10, 0, 30})).containsExactly(10, 0, 30);
    }

    @Test
    void noClaimantsAndZeroBudget() {
        assertThat(MaxMinFair.allocate(100, new long[0])).isEmpty();
        assertThat(MaxMinFair.allocate(0, new long[] {5, 7})).containsExactly(0, 0);
    }

    @Test
    void remainderOfIntegerDivisionGoesToTheFirst() {
        assertThat(MaxMinFair.allocate(10, new long[] {100, 100, 100})).containsExactly(4, 3, 3);
    }

    @Test
    void negativeBudgetOrDemandRefused() {
        assertThatThrownBy(() -> MaxMinFair.allocate(-1, new long[] {1})).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("budget");
        assertThatThrownBy(() -> MaxMinFair.allocate(10, new long[] {1, -2})).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("demand");
    }

    @Test
    void demandsAreNotModified() {
        long[] d = {50, 5, 50};
        MaxMinFair.allocate(60, d);
        assertThat(d).containsExactly(50, 5, 50);
    }

    @Property(tries = 500)
    void sharesRespectBudgetAndDemandsAndFillUpToRounding(@ForAll @LongRange(min = 0, max = 1L << 40) long budget,
            @ForAll("bigDemands") long[] demands) {
        long[] s = MaxMinFair.allocate(budget, demands);
        assertThat(s).hasSameSizeAs(demands);
        long sum = 0;
        long sumDemand = 0;
        for (int i = 0; i < s.length; i++) {
            assertThat(s[i]).as("share %d", i).isBetween(0L, demands[i]);
            sum += s[i];
            sumDemand += demands[i];
        }
        assertThat(sum).isLessThanOrEqualTo(budget);
        assertThat(sum).isBetween(Math.min(budget, sumDemand) - s.length, Math.min(budget, sumDemand));
    }

    @Property(tries = 500)
    void noUnsatisfiedClaimantGetsLessThanAnother(@ForAll @LongRange(min = 0, max = 1L << 40) long budget,
            @ForAll("bigDemands") long[] demands) {
        long[] s = MaxMinFair.allocate(budget, demands);
        long max = Arrays.stream(s).max().orElse(0);
        for (int i = 0; i < s.length; i++) {
            if (s[i] < demands[i]) {
                // max-min: an unsatisfied claimant has at least every other's share (up to one byte/s of rounding)
                assertThat(s[i]).as("unsatisfied share %d of %s for %s", i, Arrays.toString(s), Arrays.toString(demands))
                        .isGreaterThanOrEqualTo(max - 1);
            }
        }
    }

    @Property(tries = 300)
    void smallExamplesMatchAnIndependentWaterFilling(@ForAll @LongRange(min = 0, max = 1000) long budget,
            @ForAll("smallDemands") long[] demands) {
        long[] s = MaxMinFair.allocate(budget, demands);
        // water level L: Σ min(d, L) ≤ budget, largest such; each share is min(d, L) or min(d, L) + 1
        long l = 0;
        while (l <= 400 && filled(demands, l + 1) <= budget) {
            l++;
        }
        for (int i = 0; i < s.length; i++) {
            assertThat(s[i]).as("share %d of %s for %s, budget %d", i, Arrays.toString(s), Arrays.toString(demands), budget)
                    .isBetween(Math.min(demands[i], l), Math.min(demands[i], l + 1));
        }
    }

    @Provide
    Arbitrary<long[]> bigDemands() {
        return Arbitraries.longs().between(0, 1L << 40).array(long[].class).ofMaxSize(12);
    }

    @Provide
    Arbitrary<long[]> smallDemands() {
        return Arbitraries.longs().between(0, 400).array(long[].class).ofMaxSize(6);
    }

    private static long filled(long[] demands, long level) {
        long sum = 0;
        for (long d : demands) {
            sum += Math.min(d, level);
        }
        return sum;
    }

    @Test
    void theDemosMaxRateIsDividedMaxMinFairly() {
        assertThat(MaxMinFair.fairShares(new double[] {10, 100, 100}, 110)).containsExactly(10, 50, 50);
        assertThat(MaxMinFair.fairShares(new double[] {100, 10, 30}, 60)).containsExactly(25, 10, 25);
        assertThat(MaxMinFair.fairShares(new double[] {10, 20}, 100)).as("demands that fit").containsExactly(10, 20);
    }
}
