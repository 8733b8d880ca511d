package dev.levee.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

class RendezvousTest {

    private static final List<String> MEMBERS = List.of("limiter-1", "limiter-2", "limiter-3", "limiter-4", "limiter-5");

    @Test
    void scoreIsStableAcrossRuns() {
        // pinned values: every client in every process must compute the same ranking
        assertThat(Rendezvous.score("limiter-1", "example-bucket"))
                .isEqualTo(Rendezvous.score("limiter-1", "example-bucket"));
        assertThat(Rendezvous.score("a", "b")).isNotEqualTo(Rendezvous.score("b", "a"));
        assertThat(Rendezvous.score("ab", "c")).isNotEqualTo(Rendezvous.score("a", "bc"));
    }

    @Test
    void groupDoesNotDependOnMemberOrder() {
        List<String> reversed = new ArrayList<>(MEMBERS);
        java.util.Collections.reverse(reversed);
        for (int i = 0; i < 200; i++) {
            String r = "bucket-" + i;
            assertThat(Rendezvous.top(reversed, Function.identity(), r, 3))
                    .isEqualTo(Rendezvous.top(MEMBERS, Function.identity(), r, 3));
        }
    }

    @Test
    void removingAMemberMovesOnlyGroupsThatContainedIt() {
        List<String> without = MEMBERS.subList(0, 4);
        for (int i = 0; i < 500; i++) {
            String r = "bucket-" + i;
            List<String> before = Rendezvous.top(MEMBERS, Function.identity(), r, 2);
            List<String> after = Rendezvous.top(without, Function.identity(), r, 2);
            if (!before.contains("limiter-5")) {
                assertThat(after).isEqualTo(before);
            } else {
                assertThat(after).containsAll(before.stream().filter(m -> !m.equals("limiter-5")).toList());
            }
        }
    }

    @Test
    void resourcesSpreadEvenlyOverMembers() {
        Map<String, Integer> firsts = new HashMap<>();
        int n = 10_000;
        for (int i = 0; i < n; i++) {
            firsts.merge(Rendezvous.top(MEMBERS, Function.identity(), "bucket-" + i, 1).get(0), 1, Integer::sum);
        }
        assertThat(firsts).hasSize(5);
        firsts.values().forEach(c -> assertThat(c).isBetween(n / 5 * 85 / 100, n / 5 * 115 / 100));
    }

    @Test
    void groupSizeIsMinOfFactorAndActive() {
        assertThat(Rendezvous.groupSize(4, 10)).isEqualTo(4);
        assertThat(Rendezvous.groupSize(4, 2)).isEqualTo(2);
        assertThat(Rendezvous.groupSize(4, 0)).isZero();
        assertThat(Rendezvous.top(MEMBERS, Function.identity(), "x", 9)).hasSize(5);
    }
}
