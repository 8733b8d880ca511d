package dev.levee.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Set;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

/**
 * The asking order of one check, case by case ({@link SpillOrder}; docs/design.md §5, docs/decisions.md
 * "Spill-over"): the group from the round-robin position, then those beyond it, then the backed-off ones in the
 * same two steps. {@link SpillOrderProperties} holds the invariants over arbitrary clusters.
 */
class SpillOrderTest {

    static Stream<Arguments> orders() {
        return Stream.of(
                // n, g, start, backed-off ranks, expected order
                Arguments.of(4, 2, 0L, Set.of(), new int[] {0, 1, 2, 3}),
                Arguments.of(4, 2, 1L, Set.of(), new int[] {1, 0, 3, 2}),
                Arguments.of(4, 2, 2L, Set.of(), new int[] {0, 1, 2, 3}),
                Arguments.of(4, 2, Long.MAX_VALUE, Set.of(), new int[] {1, 0, 3, 2}),
                Arguments.of(4, 2, Long.MIN_VALUE, Set.of(), new int[] {0, 1, 2, 3}),
                // a negative position counts from the end of each set
                Arguments.of(6, 3, -1L, Set.of(), new int[] {2, 0, 1, 5, 3, 4}),
                // one member backed off: the other member, then beyond the group, the backed-off member last
                Arguments.of(4, 2, 0L, Set.of(0), new int[] {1, 2, 3, 0}),
                // the whole group backed off: straight to the spill-over, the group as a last resort
                Arguments.of(4, 2, 1L, Set.of(0, 1), new int[] {3, 2, 1, 0}),
                // one beyond the group backed off: it comes after the other one beyond
                Arguments.of(4, 2, 0L, Set.of(2), new int[] {0, 1, 3, 2}),
                // everyone backed off: the plain order
                Arguments.of(4, 2, 1L, Set.of(0, 1, 2, 3), new int[] {1, 0, 3, 2}),
                // fewer beyond the group than in it
                Arguments.of(3, 2, 5L, Set.of(), new int[] {1, 0, 2}),
                // no one beyond the group (g = active)
                Arguments.of(3, 3, 4L, Set.of(), new int[] {1, 2, 0}),
                // fewer ranked than the group size: read as a group of n
                Arguments.of(1, 3, 7L, Set.of(), new int[] {0}),
                Arguments.of(2, 3, 7L, Set.of(1), new int[] {0, 1}));
    }

    @ParameterizedTest(name = "n={0} g={1} start={2} backed off {3}")
    @MethodSource("orders")
    void asksInThisOrder(int n, int g, long start, Set<Integer> backedOff, int[] expected) {
        assertThat(SpillOrder.order(n, g, start, backedOff::contains)).containsExactly(expected);
    }

    @ParameterizedTest(name = "n={0} g={1} start={2} backed off {3}")
    @MethodSource("orders")
    void thePlainRankAndItsIntPositionFollowTheOrderWhenNoneIsBackedOff(int n, int g, long start,
                                                                      Set<Integer> ignored, int[] unused) {
        int[] plain = SpillOrder.order(n, g, start, r -> false);
        int position = SpillOrder.position(n, g, start);
        assertThat(position).isNotNegative();
        for (int k = 0; k < n; k++) {
            assertThat(SpillOrder.plainRank(n, g, start, k)).as("step %d", k).isEqualTo(plain[k]);
            assertThat(SpillOrder.plainRank(n, g, position, k)).as("step %d from %d", k, position).isEqualTo(plain[k]);
        }
    }

    @Test
    void aRoundRobinPositionWalksEveryMemberOfTheGroupInTurn() {
        // consecutive checks of one key start at consecutive positions: each member of the group first once per g
        assertThat(IntStream.range(0, 6).map(s -> SpillOrder.order(6, 3, s, r -> false)[0]))
                .containsExactly(0, 1, 2, 0, 1, 2);
    }

    @Test
    void thePositionIsTheStartModuloBothSetSizes() {
        assertThat(SpillOrder.position(4, 2, -1)).isEqualTo(3);
        assertThat(SpillOrder.position(3, 3, 7)).isEqualTo(1);
        assertThat(SpillOrder.position(6, 3, Long.MAX_VALUE)).isEqualTo((int) Math.floorMod(Long.MAX_VALUE, 9L));
    }

    @Test
    void aPositionThatDoesNotFitAnIntIsMinusOne() {
        // 50 000 in the group and 50 000 beyond: a period of 2.5e9
        assertThat(SpillOrder.position(100_000, 50_000, 12345)).isEqualTo(-1);
    }

    @Test
    void asksOnlyAboutRanksItHasAndEachOnceAPass() {
        int[] asked = new int[4];
        SpillOrder.order(4, 2, 3, r -> {
            asked[r]++;
            return r == 1;
        });
        assertThat(asked).containsExactly(2, 2, 2, 2);
    }
}
