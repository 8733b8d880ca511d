package dev.levee.lease;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;

/**
 * The demand estimate of issue 22, item 2, on fake time: the rules one by one, a property (the demand
 * stays in [0, budget] whatever it is fed), and closed loops of gateways whose paced clients read
 * through socket buffers, with shares re-divided max-min fair to the estimates every round.
 */
class DemandEstimatorTest {

    static final long MiB = 1L << 20;
    static final long SEC = 1_000_000_000L;
    static final long ROUND = SEC / 2;
    static final long B = 30 * MiB;

    /** Feeds one estimator round by round, tracking the cumulative counters; time starts near overflow. */
    static final class Feed {
        final DemandEstimator e;
        long now;
        long granted;
        long waited;

        Feed(long start) {
            now = start;
            e = new DemandEstimator(now, 0, 0);
        }

        long round(double rateMiB, boolean waitedForAll, int waiting, long share) {
            now += ROUND;
            long bytes = (long) (rateMiB * MiB * ROUND / SEC);
            granted += bytes;
            waited += waitedForAll ? bytes : 0;
            return e.update(now, granted, waited, waiting, share, B, 3);
        }
    }

    @Test
    void aSteadyClientBelowItsShareGetsWhatItTakesPlusFivePercentAndNoMore() {
        Feed f = new Feed(Long.MAX_VALUE - 3 * SEC); // the ticker wraps during the test
        long d = 0;
        for (int i = 0; i < 20; i++) {
            d = f.round(4, false, 0, 10 * MiB);
        }
        assertThat(d).isBetween((long) (4.2 * MiB), (long) (4.2 * MiB) + 2);
    }

    @Test
    void aShareAboveWhatClientsTakeFallsToItAlthoughMostGrantsWaitedAMoment() {
        // SiteBandwidthIT, g0: clients reading 5.0 MiB/s through a 5.86 MiB/s share, its bucket 85 % used, so most quanta
        // wait a moment for tokens and a request is often waiting when the round looks; the share is still not what
        // holds them back. Such rounds were taken for a slow gateway's and changed nothing: the demand stayed at 5.86
        Feed f = new Feed(0);
        long d = 0;
        for (int i = 0; i < 12; i++) {
            d = f.round(5.58, false, 0, 10 * MiB);
        }
        assertThat(d).isBetween((long) (5.8 * MiB), (long) (5.9 * MiB));
        long share = d;
        for (int i = 0; i < 8; i++) {
            d = f.round(5.0, true, 1, share);
        }
        assertThat(d).as("demand after 8 rounds at 5.0 MiB/s").isBetween((long) (5.2 * MiB), (long) (5.3 * MiB));
    }

    /**
     * SiteBandwidthIT, g0, on a quiet machine: clients reading 5.0 MiB/s (±3 % per round) through a share that follows
     * them, 1.05 × what they take, so the share is used at about 95 % and at that use most quanta wait a moment for
     * tokens: every round has a request waiting and its bytes granted after a wait. Such rounds are not limited ones:
     * counted as limited (≥ 90 % used), they made the estimate probe to 1.08 × and then 1.25 × what the clients read,
     * 5.61–6.54 MiB/s, outside 10 % of their fair share in 2 of 3 runs.
     */
    @Test
    void aShareFollowingItsClientsIsNotTakenForALimitedOne() {
        Feed f = new Feed(Long.MAX_VALUE - 7 * SEC);
        for (int i = 0; i < 12; i++) {
            f.round(5.0, false, 0, 10 * MiB);
        }
        Random rnd = new Random(22);
        List<Long> demands = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            long share = f.e.demand(); // the share follows the demand (max-min fair gives it all of it)
            demands.add(f.round(5.0 * (0.97 + 0.06 * rnd.nextDouble()), true, 1, share));
        }
        assertThat(demands).as("demands, each within 10 %% of the clients' 5 MiB/s: %s", demands)
                .allMatch(d -> d >= 5 * MiB && d <= (long) (5.5 * MiB));
    }

    @Test
    void jitterWithinFivePercentMovesNothingAndAFallIsBelievedAfterThreeRounds() {
        Feed f = new Feed(-5 * SEC);
        for (int i = 0; i < 10; i++) {
            f.round(4, false, 0, 10 * MiB);
        }
        long steady = f.e.demand();
        Random rnd = new Random(3);
        for (int i = 0; i < 40; i++) {
            assertThat(f.round(4 * (0.97 + 0.06 * rnd.nextDouble()), false, 0, steady)).as("round %d", i).isEqualTo(steady);
        }
        // the clients slow to 2 MiB/s: the demand holds for two rounds, then falls to what they take now
        List<Long> after = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            after.add(f.round(2, false, 0, steady));
        }
        assertThat(after.subList(0, 2)).containsOnly(steady);
        assertThat(after.getLast()).isBetween((long) (2.1 * MiB) - 1, (long) (2.1 * MiB * 1.1));
    }

    @Test
    void aNewcomerAsksForAnEqualShareAtOnceAndKeepsItThroughOneQuietRound() {
        Feed f = new Feed(0);
        assertThat(f.round(0, false, 2, 0)).as("held, waiting").isEqualTo(B / 3);
        // its share arrived; the backend's first bytes have not: one quiet round gives nothing back
        assertThat(f.round(0, false, 0, B / 3)).isEqualTo(B / 3);
        f.round(6, false, 0, B / 3);
        f.round(6, false, 0, B / 3);
        assertThat(f.round(6, false, 0, B / 3)).as("then it follows what its clients take, after three rounds")
                .isBetween((long) (6.3 * MiB), (long) (6.3 * MiB) + 2);
        // idle: two quiet rounds in a row give the share back
        f.round(0, false, 0, B / 3);
        assertThat(f.round(0, false, 0, B / 3)).isZero();
    }

    @Test
    void aLimitedGatewayProbesUpwardOnlyOnceTheShareHasBeenTheBottleneckForTheWholeHorizon() {
        Feed f = new Feed(0);
        for (int i = 0; i < 10; i++) {
            f.round(5, false, 0, (long) (5.25 * MiB));
        }
        long before = f.e.demand();
        // the clients now want 25 MiB/s: every round uses the whole share and waits for it
        long share = before;
        List<Long> demands = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            long d = f.round(share / (double) MiB, true, 4, share);
            demands.add(d);
            share = Math.min(d, 10 * MiB); // max-min fair caps it at B / 3
        }
        assertThat(demands.subList(0, DemandEstimator.HORIZON - DemandEstimator.FREE_EVIDENCE)).as("within the horizon: at most 8 %% above what they"
                + " took while free (%s)", demands).allMatch(d -> d <= (long) (5.25 * MiB * 1.08) + 1);
        assertThat(demands.getLast()).as("then probes beyond: %s", demands).isGreaterThanOrEqualTo(10 * MiB);
    }

    @Test
    void aFallIsJudgedOnEveryRoundNotOnlyOnThoseTheClientsReadLessIn() {
        // clients reading 4.75 and 5.2 MiB/s in turn (4.975 on average) behind a share of 5.25: the 5.2 rounds use the
        // whole share and wait, so they are limited. Judged on the free rounds alone the last rounds "took" 4.75 and the
        // demand fell to 4.99, below what the clients read (SiteBandwidthIT, issue 22: 4.49-4.93 for clients at 5.0)
        Feed f = new Feed(0);
        long share = (long) (5.25 * MiB);
        for (int i = 0; i < 10; i++) {
            f.round(5.0, false, 0, share);
        }
        List<Long> demands = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            boolean high = i % 2 == 0;
            demands.add(f.round(high ? 5.2 : 4.75, high, high ? 2 : 0, share));
            share = demands.getLast();
        }
        assertThat(demands).as("demands (B/s)").allMatch(d -> d >= 5 * MiB);
    }

    @Test
    void aProbeBeyondTheCapThatFindsNothingEndsAtTheFirstFreeRound() {
        // a share that follows its clients closely (5.25 for 5.0) and a long run of rounds a little above it: every
        // round of the horizon is limited, probing grows to its cap (1.08 × what they took while free) and, once the
        // horizon holds no free round, past it (1.25 ×). The first free round shows the clients took no more than the
        // demand before that step allowed: the demand is back there at once, not 3 rounds later
        Feed f = new Feed(0);
        long share = (long) (5.25 * MiB);
        for (int i = 0; i < 10; i++) {
            f.round(5.0, false, 0, share);
        }
        long before = 0;
        long probed = 0;
        for (int i = 0; i < 14 && probed == 0; i++) {
            long d = f.round(share / (double) MiB, true, 2, share);
            if (d > share * 1.2) {
                before = share;
                probed = d;
            }
            share = d;
        }
        assertThat(probed).as("probed past the cap").isGreaterThan(0);
        assertThat(before).as("the cap").isLessThanOrEqualTo((long) (5.25 * MiB * 1.08) + 1);
        assertThat(f.round(5.1, false, 0, probed)).as("the first free round after it").isEqualTo(before);
    }

    @Property(tries = 300)
    void theDemandStaysWithinZeroAndTheBudget(@ForAll("rounds") List<int[]> rounds, @ForAll @LongRange(min = -1000, max = 1000)
            long startSeconds) {
        Feed f = new Feed(startSeconds * SEC);
        for (int[] r : rounds) {
            long d = f.round(r[0] / 10.0, r[1] == 1, r[2], r[3] * MiB / 10);
            assertThat(d).isBetween(0L, B);
        }
    }

    @net.jqwik.api.Provide
    net.jqwik.api.Arbitrary<List<int[]>> rounds() {
        return net.jqwik.api.Arbitraries.integers().between(0, 400).tuple4()
                .map(t -> new int[] {t.get1(), t.get2() % 2, t.get3() % 5, t.get4()}).list().ofMinSize(1).ofMaxSize(60);
    }

    // ------------------------------------------------------------------------------- closed loops

    /**
     * One gateway of the closed loop: its governor grants at most its share, its clients read at {@code rate}
     * (±{@code jitter}) through socket buffers of {@code buffer} bytes (the bytes sent and not read yet), in
     * 10 ms steps. A step is share-limited when the share, not the buffers' room, bounds what is sent: its bytes
     * are granted after a wait and a request waits at its end.
     */
    static final class PacedGateway {
        final DemandEstimator est;
        double rate;
        final long buffer;
        long granted;
        long waited;
        boolean waiting;
        double level; // bytes in the buffers
        long share;

        PacedGateway(long now, double rate, long buffer) {
            this.est = new DemandEstimator(now, 0, 0);
            this.rate = rate;
            this.buffer = buffer;
            this.waiting = rate > 0;
        }

        void run(long nanos, double jitter, Random rnd) {
            run(nanos, jitter, rnd, 1);
        }

        /** As {@link #run(long, double, Random)}, the clients reading at {@code factor ×} their rate throughout. */
        void run(long nanos, double jitter, Random rnd, double factor) {
            long step = 10_000_000L;
            for (long t = 0; t < nanos; t += step) {
                double read = rate * factor * (1 - jitter + 2 * jitter * rnd.nextDouble()) * step / SEC;
                double room = buffer - level + read;
                double may = (double) share * step / SEC;
                double sent = Math.min(may, room);
                waiting = rate > 0 && may < room;
                granted += (long) sent;
                waited += waiting ? (long) sent : 0;
                level = Math.max(0, level + sent - read);
            }
        }

        /** A new response on an emptied connection: the buffers start empty again. */
        void drain() {
            level = 0;
        }

        long demand(long now, int gateways) {
            return est.update(now, granted, waited, waiting ? 1 : 0, share, B, gateways);
        }
    }

    /** Runs the loop: every round each gateway estimates, then shares are the max-min fair division of B. */
    static List<long[]> loop(List<PacedGateway> gws, int rounds, double jitter, int drainEvery, long seed) {
        return loop(gws, rounds, jitter, drainEvery, seed, 0);
    }

    /**
     * As {@link #loop(List, int, double, int, long)}, each gateway's clients reading at their rate × (1 ± {@code
     * roundJitter}) for a whole round, drawn anew every round (a client's pause, a CPU-starved gateway).
     */
    static List<long[]> loop(List<PacedGateway> gws, int rounds, double jitter, int drainEvery, long seed,
                             double roundJitter) {
        Random rnd = new Random(seed);
        long now = Long.MAX_VALUE - 20 * SEC;
        List<long[]> shares = new ArrayList<>();
        for (int r = 0; r < rounds; r++) {
            for (int i = 0; i < gws.size(); i++) {
                if (drainEvery > 0 && r > 0 && (r + 7 * i) % drainEvery == 0) {
                    gws.get(i).drain();
                }
                gws.get(i).run(ROUND, jitter, rnd, 1 - roundJitter + 2 * roundJitter * rnd.nextDouble());
            }
            now += ROUND;
            long[] demands = new long[gws.size()];
            for (int i = 0; i < gws.size(); i++) {
                demands[i] = gws.get(i).demand(now, gws.size());
            }
            long[] s = MaxMinFair.allocate(B, demands);
            for (int i = 0; i < gws.size(); i++) {
                gws.get(i).share = s[i];
            }
            shares.add(s);
        }
        return shares;
    }

    /**
     * Issue 22's acceptance for item 2 with paced clients: 5 / 20 / 40 MiB/s behind three gateways (B = 30 MiB/s,
     * max-min fair 5 / 12.5 / 12.5), jitter ±10 % per 10 ms, 1 MiB of socket buffers per gateway that empty again
     * at every new response (every 20 rounds). From the 8th round on every share stays within 10 % of max-min
     * fair to the clients' real rates, round after round: no oscillation (the old median-of-5 estimate, same loop: swung
     * to 10 / 10 / 10 at every refill, within 10 % only from round 106).
     */
    @Test
    void pacedClientsGetSharesWithinTenPercentOfMaxMinFairToTheirRealRatesAndKeepThem() {
        double[] rates = {5 * MiB, 20 * MiB, 40 * MiB};
        List<PacedGateway> gws = new ArrayList<>();
        for (double r : rates) {
            gws.add(new PacedGateway(Long.MAX_VALUE - 20 * SEC, r, MiB));
        }
        List<long[]> shares = loop(gws, 120, 0.10, 20, 5);
        long[] fair = MaxMinFair.allocate(B, new long[] {5 * MiB, 20 * MiB, 40 * MiB});
        print("5/20/40", shares);
        int steadyFrom = firstSteadyRound(shares, fair, 0.10);
        assertThat(steadyFrom).as("first round from which all shares stay within 10 %% of %s", Arrays.toString(fair))
                .isBetween(0, 8);
    }

    /**
     * The first case: one client reading a steady 4 MiB/s through one gateway, others asking for much
     * more: its share stays within 10 % of 4 MiB/s (no swing to 10 MiB/s every 12 s), and the site's budget is
     * used (the others take the rest).
     */
    @Test
    void aSteadyFourMiBClientKeepsASteadyShareWhileTheOthersTakeTheRest() {
        List<PacedGateway> gws = List.of(new PacedGateway(0, 4 * MiB, MiB), new PacedGateway(0, 40 * MiB, MiB),
                new PacedGateway(0, 40 * MiB, MiB));
        List<long[]> shares = loop(new ArrayList<>(gws), 120, 0.05, 24, 9);
        print("4/40/40", shares);
        long[] fair = MaxMinFair.allocate(B, new long[] {4 * MiB, 40 * MiB, 40 * MiB});
        assertThat(firstSteadyRound(shares, fair, 0.10)).isBetween(0, 8);
        long used = 0;
        for (long[] s : shares.subList(12, shares.size())) {
            used += Arrays.stream(s).sum();
        }
        assertThat(used / (double) (shares.size() - 12)).as("Σ shares / B").isGreaterThanOrEqualTo(0.97 * B);
    }

    /** A demand shift (5 → 25 MiB/s) converges to 10 / 10 / 10 within the horizon plus a few rounds, and stays. */
    @Test
    void aDemandShiftConvergesToEqualShares() {
        List<PacedGateway> gws = new ArrayList<>(List.of(new PacedGateway(0, 5 * MiB, MiB),
                new PacedGateway(0, 20 * MiB, MiB), new PacedGateway(0, 40 * MiB, MiB)));
        loop(gws, 40, 0.05, 0, 1);
        gws.get(0).rate = 25 * MiB;
        List<long[]> after = loop(gws, 40, 0.05, 0, 2);
        print("shift", after);
        long[] equal = {B / 3, B / 3, B / 3};
        assertThat(firstSteadyRound(after, equal, 0.05)).as("rounds to 10/10/10 within 5 %%")
                .isBetween(0, DemandEstimator.HORIZON + 8);
    }

    /** The first round from which every later round has every share within {@code tol} of {@code fair}; -1 if none. */
    static int firstSteadyRound(List<long[]> shares, long[] fair, double tol) {
        int from = -1;
        for (int r = shares.size() - 1; r >= 0; r--) {
            long[] s = shares.get(r);
            for (int i = 0; i < s.length; i++) {
                if (Math.abs(s[i] - fair[i]) > tol * fair[i]) {
                    return from;
                }
            }
            from = r;
        }
        return from;
    }

    static void print(String name, List<long[]> shares) {
        StringBuilder b = new StringBuilder("DemandEstimatorTest " + name + ": shares per round (MiB/s):");
        for (int r = 0; r < shares.size(); r++) {
            if (r % 10 == 0) {
                b.append("\n  ").append(String.format(Locale.ROOT, "%3d", r)).append(':');
            }
            b.append(' ').append(Arrays.stream(shares.get(r)).mapToObj(x -> String.format(Locale.ROOT, "%.1f", x / (double) MiB))
                    .reduce((x, y) -> x + "/" + y).orElse(""));
        }
        System.out.println(b);
    }
}
