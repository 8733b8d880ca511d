package dev.levee.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

/**
 * The asking order of one check ({@link SpillOrder#order}): every ranked limiter at most once, at most
 * {@code 2g} of them, and — whichever limiters fail for good and whichever are backed off — the
 * limiters that decide for one resource over any number of checks are never more than {@code g}
 * (docs/design.md §5: each decides with {@code rate / g}, so admitted ≤ rate × t + g × burst).
 */
class SpillOrderProperties {

    /** A cluster: active limiters, factor, and per HRW rank whether it always fails / is backed off. */
    record Cluster(int active, int factor, boolean[] failing, boolean[] backedOff) {
        int g() {
            return Math.min(factor, active);
        }

        int ranked() {
            return Math.min(2 * g(), active);
        }
    }

    @Provide
    Arbitrary<Cluster> clusters() {
        return Combinators.combine(Arbitraries.integers().between(1, 12), Arbitraries.integers().between(1, 6),
                Arbitraries.longs()).as((n, df, seed) -> {
                    java.util.Random r = new java.util.Random(seed);
                    boolean[] failing = new boolean[n];
                    boolean[] backedOff = new boolean[n];
                    for (int i = 0; i < n; i++) {
                        failing[i] = r.nextInt(3) == 0;
                        // mostly the failing ones are backed off, but not always (a back-off that ended, a
                        // member that failed once and answers again)
                        backedOff[i] = failing[i] ? r.nextInt(4) != 0 : r.nextInt(5) == 0;
                    }
                    return new Cluster(n, df, failing, backedOff);
                });
    }

    @Property
    void everyRankedLimiterIsAskedAtMostOnceAndNoMoreThanTwoG(@ForAll("clusters") Cluster c, @ForAll long start) {
        int[] order = SpillOrder.order(c.ranked(), c.g(), start, i -> c.backedOff()[i]);
        assertThat(order.length).isEqualTo(c.ranked()).isLessThanOrEqualTo(2 * c.g());
        assertThat(Arrays.stream(order).distinct().count()).isEqualTo(order.length);
        assertThat(Arrays.stream(order).allMatch(i -> i >= 0 && i < c.ranked())).as("ranks in range").isTrue();
    }

    @Property
    void limitersDecidingForOneResourceAreNeverMoreThanG(@ForAll("clusters") Cluster c,
                                                        @ForAll @IntRange(min = 0, max = 1000) int firstCheck) {
        Set<Integer> deciders = new HashSet<>();
        for (long check = firstCheck; check < firstCheck + 3L * c.ranked() + 3; check++) {
            for (int rank : SpillOrder.order(c.ranked(), c.g(), check, i -> c.backedOff()[i])) {
                if (!c.failing()[rank]) {
                    deciders.add(rank); // the first that does not fail decides
                    break;
                }
            }
        }
        assertThat(deciders).hasSizeLessThanOrEqualTo(c.g());
    }

    @Property
    void aLiveGroupMemberNotBackedOffIsAlwaysAskedBeforeAnyLimiterBeyondTheGroup(@ForAll("clusters") Cluster c,
                                                                              @ForAll long start) {
        int[] order = SpillOrder.order(c.ranked(), c.g(), start, i -> c.backedOff()[i]);
        int firstBeyond = Arrays.stream(order).boxed().toList().indexOf(
                Arrays.stream(order).filter(i -> i >= c.g()).findFirst().orElse(-1));
        for (int k = 0; k < order.length; k++) {
            if (order[k] < c.g() && !c.backedOff()[order[k]] && firstBeyond >= 0) {
                assertThat(k).isLessThan(firstBeyond);
            }
        }
    }

    /**
     * Without a limiter in back-off a check keeps no order array: its plain order is {@code order}'s, step by step,
     * from the round-robin position or from the int a plan keeps of it.
     */
    @Property
    void thePlainRankIsTheOrderWhenNoLimiterIsBackedOff(@ForAll("clusters") Cluster c, @ForAll long start) {
        int[] order = SpillOrder.order(c.ranked(), c.g(), start, i -> false);
        int position = SpillOrder.position(c.ranked(), c.g(), start);
        assertThat(position).isNotNegative();
        for (int k = 0; k < order.length; k++) {
            assertThat(SpillOrder.plainRank(c.ranked(), c.g(), start, k)).as("step %d", k).isEqualTo(order[k]);
            assertThat(SpillOrder.plainRank(c.ranked(), c.g(), position, k)).as("step %d from the int position", k)
                    .isEqualTo(order[k]);
        }
    }
}
