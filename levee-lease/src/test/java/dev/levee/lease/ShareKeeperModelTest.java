package dev.levee.lease;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.governor.Direction;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;

/**
 * A model test of the site lease protocol (issue 11, docs/design.md §10): N gateways' {@link ShareKeeper}s
 * against a model store with etcd's semantics, through a network that loses and delays requests
 * and replies (sometimes longer than the TTL), with gateway crashes, restarts, pauses longer than
 * the TTL, clock drift within ρ and budget increases. At every event, Σ of shares gateways may use
 * ≤ budget; at every revision, Σ of live shares in the store ≤ budget.
 */
class ShareKeeperModelTest {

    static final long MIB = 1024 * 1024;
    static final Duration TTL = Duration.ofSeconds(2);
    static final Duration RENEW = Duration.ofMillis(500);
    static final double RHO = 0.01;
    static final Duration MARGIN = Duration.ofMillis(20);
    static final Duration CALL_TIMEOUT = Duration.ofMillis(400);
    static final Resource DOWN = Resource.of(Direction.DOWNLOAD);
    static final Resource UP = Resource.of(Direction.UPLOAD);
    static final Resource P1 = Resource.of(Direction.DOWNLOAD, "p1");

    static SiteBudget budget(long down, long up, long p1) {
        return new SiteBudget(down, up, 0, 0, Map.of("p1", new SiteBudget.Ceilings(p1, null)));
    }

    static Map<Resource, Long> randomDemands(Random rnd, SiteBudget b) {
        Map<Resource, Long> d = new HashMap<>();
        for (Resource r : List.of(DOWN, UP, P1)) {
            if (rnd.nextInt(5) > 0) {
                d.put(r, (long) (rnd.nextDouble() * 1.2 * b.budget(r)));
            }
        }
        return d;
    }

    @Property(tries = 200)
    void sharesInUseAndInTheStoreNeverExceedTheBudget(
            @ForAll @IntRange(min = 2, max = 6) int gateways,
            @ForAll @DoubleRange(min = 0, max = 0.3) double requestLoss,
            @ForAll @DoubleRange(min = 0, max = 0.3) double replyLoss,
            @ForAll @DoubleRange(min = 0, max = 0.1) double longDelay,
            @ForAll boolean crashes,
            @ForAll boolean pauses,
            @ForAll long seed) {
        SiteModel m = faultyRun(gateways, requestLoss, replyLoss, longDelay, crashes, pauses, seed);
        assertThat(m.violation()).as("invariant").isNull();
    }

    /** One run of 20 s (model time) with the given faults; returns the model, its violation if any. */
    static SiteModel faultyRun(int gateways, double requestLoss, double replyLoss, double longDelay, boolean crashes,
                               boolean pauses, long seed) {
        return faultyRun(gateways, requestLoss, replyLoss, longDelay, crashes, pauses, seed, Duration.ofSeconds(20),
                Duration.ofSeconds(20));
    }

    /** Faults (and demand and budget changes) until {@code faultsEnd}, then none; runs until {@code runEnd}. */
    static SiteModel faultyRun(int gateways, double requestLoss, double replyLoss, double longDelay, boolean crashes,
                               boolean pauses, long seed, Duration faultsEnd, Duration runEnd) {
        SiteModel.Faults faults = new SiteModel.Faults(requestLoss, replyLoss, SiteModel.ms(0.5), SiteModel.ms(30),
                longDelay, TTL.toNanos() * 3 / 2);
        SiteModel m = new SiteModel(seed, faults, true);
        Random rnd = m.rnd;
        SiteBudget b = budget(30 * MIB, 10 * MIB, 8 * MIB);
        m.store.setBudget(b);
        long end = faultsEnd.toNanos();
        // half the runs without the margin ε: then only ρ keeps a gateway's deadline before the store's expiry
        Duration margin = rnd.nextBoolean() ? Duration.ZERO : MARGIN;
        for (int i = 0; i < gateways; i++) {
            double drift = rnd.nextInt(3) == 0 ? (rnd.nextBoolean() ? -1 : 1) * RHO * 0.999 // at the edge
                    : (rnd.nextDouble() * 2 - 1) * RHO * 0.999;
            long origin = rnd.nextInt(3) == 0 ? Long.MAX_VALUE - rnd.nextInt(1_000_000_000) : rnd.nextLong();
            SiteModel.Node n = m.addNode("gw-" + i, drift, origin);
            n.demands = randomDemands(rnd, b);
            ShareKeeper.Settings s = SiteModel.settings(n.id, TTL, RENEW, RHO, margin, CALL_TIMEOUT);
            m.at(rnd.nextInt((int) RENEW.toMillis()) * 1_000_000L, () -> n.start(s));
        }
        for (long t = 0; t < end; t += SiteModel.ms(50 + rnd.nextInt(400))) {
            long at = t;
            SiteModel.Node n = m.nodes.get(rnd.nextInt(gateways));
            int kind = rnd.nextInt(10);
            if (kind < 5) {
                m.at(at, () -> {
                    n.demands = randomDemands(rnd, m.store.budget);
                    m.note(n.id + ": demands " + n.demands);
                });
            } else if (kind < 7 && crashes) {
                m.at(at, () -> {
                    if (n.keeper != null) {
                        n.crash();
                        long back = (long) (rnd.nextDouble() * TTL.toNanos() * 2);
                        m.at(m.now() + back, () -> n.start(SiteModel.settings(n.id, TTL, RENEW, RHO, margin,
                                CALL_TIMEOUT)));
                    }
                });
            } else if (kind < 9 && pauses) {
                m.at(at, () -> n.pause((long) (rnd.nextDouble() * TTL.toNanos() * 1.5)));
            } else if (kind == 9 && rnd.nextInt(4) == 0) {
                m.at(at, () -> {
                    SiteBudget was = m.store.budget;
                    m.store.setBudget(budget(was.download() + rnd.nextInt(8) * MIB, was.upload() + rnd.nextInt(4) * MIB,
                            was.ceiling(Direction.DOWNLOAD, "p1") + rnd.nextInt(2) * MIB));
                });
            }
        }
        m.at(end, () -> m.faults = SiteModel.Faults.none(SiteModel.ms(0.5), SiteModel.ms(30)));
        m.run(runEnd.toNanos(), 400_000);
        return m;
    }

    @Property(tries = 100)
    void withoutFaultsSharesConvergeToMaxMinFairWithinFiveRenewIntervals(
            @ForAll @IntRange(min = 2, max = 6) int gateways, @ForAll long seed) {
        SiteModel m = new SiteModel(seed, SiteModel.Faults.none(SiteModel.ms(0.5), SiteModel.ms(5)), true);
        Random rnd = m.rnd;
        SiteBudget b = budget(30 * MIB, 10 * MIB, 8 * MIB);
        m.store.setBudget(b);
        for (int i = 0; i < gateways; i++) {
            SiteModel.Node n = m.addNode("gw-" + i, (rnd.nextDouble() * 2 - 1) * RHO * 0.999, rnd.nextLong());
            n.demands = randomDemands(rnd, b);
            m.at(rnd.nextInt((int) RENEW.toMillis()) * 1_000_000L,
                    () -> n.start(SiteModel.settings(n.id, TTL, RENEW, RHO, MARGIN, CALL_TIMEOUT)));
        }
        long converged = RENEW.toNanos() * 6; // the last start + 5 intervals
        m.run(converged, 100_000);
        for (int k = 0; k < 10; k++) { // and it stays there
            m.run(converged + k * RENEW.toNanos(), 100_000);
            assertThat(unfairness(m)).as("after %d intervals", 6 + k).isEmpty();
        }
        assertThat(m.violation()).isNull();
    }

    @Property(tries = 50)
    void afterFaultsEndSharesConvergeAgain(
            @ForAll @IntRange(min = 2, max = 6) int gateways,
            @ForAll @DoubleRange(min = 0, max = 0.3) double requestLoss,
            @ForAll @DoubleRange(min = 0, max = 0.3) double replyLoss,
            @ForAll @DoubleRange(min = 0, max = 0.1) double longDelay,
            @ForAll boolean crashes,
            @ForAll boolean pauses,
            @ForAll long seed) {
        // faults end at 10 s; restarts come within 2 TTL, pauses end within 1.5 TTL, late messages within 1.5
        // TTL, leases of crashed incarnations expire within a TTL: by 10 s + 4.5 TTL = 19 s all is quiet, then
        // 5 renew intervals
        SiteModel m = faultyRun(gateways, requestLoss, replyLoss, longDelay, crashes, pauses, seed,
                Duration.ofSeconds(10), Duration.ofMillis(21_500));
        assertThat(m.violation()).as("invariant").isNull();
        assertThat(m.nodes).allSatisfy(n -> assertThat(n.keeper).as(n.id + " running").isNotNull());
        for (int k = 0; k < 6; k++) {
            m.run(Duration.ofMillis(21_500).toNanos() + k * RENEW.toNanos(), 100_000);
            assertThat(unfairness(m)).as("%d intervals after quiet", 5 + k).isEmpty();
        }
    }

    /** Gateways whose share is more than 5 % off its max-min fair share (of the true demands), per resource. */
    static List<String> unfairness(SiteModel m) {
        List<String> off = new ArrayList<>();
        for (Resource r : m.budgeted()) {
            long budget = m.store.budget.budget(r);
            long[] demands = new long[m.nodes.size()];
            for (int i = 0; i < demands.length; i++) {
                demands[i] = Math.min(budget, m.nodes.get(i).demands.getOrDefault(r, 0L));
            }
            long[] fair = MaxMinFair.allocate(budget, demands);
            for (int i = 0; i < demands.length; i++) {
                ShareKeeper k = m.nodes.get(i).keeper;
                long s = k == null || !k.owned(r.direction()) ? 0 : k.shares().getOrDefault(r, 0L);
                if (Math.abs(s - fair[i]) > Math.max(1, fair[i] / 20)) {
                    off.add(m.nodes.get(i).id + " " + r + ": " + s + " for a fair " + fair[i]);
                }
            }
        }
        return off;
    }

    /** Replays one case and prints its history: {@code gateways requestLoss replyLoss longDelay crashes pauses seed}. */
    public static void main(String[] a) {
        if (a[0].equals("sweep")) { // sweep <tries> <first seed>: random cases, prints the failing ones
            long first = Long.parseLong(a[2]);
            int failed = 0;
            for (long i = first; i < first + Integer.parseInt(a[1]); i++) {
                Random r = new Random(i);
                Object[] p = {2 + r.nextInt(5), r.nextDouble() * 0.3, r.nextDouble() * 0.3, r.nextDouble() * 0.1,
                    r.nextBoolean(), r.nextBoolean(), i};
                SiteModel m = faultyRun((int) p[0], (double) p[1], (double) p[2], (double) p[3], (boolean) p[4],
                        (boolean) p[5], i);
                if (m.violation() != null) {
                    failed++;
                    System.out.println(java.util.Arrays.toString(p) + ": " + m.violation().lines().findFirst().orElse(""));
                }
            }
            System.out.println(failed + " failed");
            return;
        }
        SiteModel m = faultyRun(Integer.parseInt(a[0]), Double.parseDouble(a[1]), Double.parseDouble(a[2]),
                Double.parseDouble(a[3]), Boolean.parseBoolean(a[4]), Boolean.parseBoolean(a[5]), Long.parseLong(a[6]));
        System.out.println(m.violation() == null ? "ok, " + m.events() + " events" : m.violation());
    }
}
