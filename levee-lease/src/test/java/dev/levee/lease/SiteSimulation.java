package dev.levee.lease;

import dev.levee.governor.Direction;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * A simulated site of many gateways (issue 11, "Performance"): {@link ShareKeeper}s with their
 * default timing against the model store of {@link SiteModel}, on a fake clock, without faults
 * (network delay 0.5–2 ms each way). Cold start, then a demand shift; reports the store requests
 * per second, the time to come within 5 % of max-min fair, and the conflicts of raising writes.
 *
 * <p>Demand: either the true demand ({@code oracle}), or the gateway's estimate of {@code
 * DemandEstimator} from what it could send (used = min(demand, share); limited while demand
 * exceeds the share).
 */
final class SiteSimulation {

    static final long GIB = 1024L * 1024 * 1024;
    static final Resource DOWN = Resource.of(Direction.DOWNLOAD);

    /** Figures of one run. */
    record Report(int gateways, boolean estimated, String network, double coldConvergedS, double shiftConvergedS,
                  Map<String, Double> steadyPerSecond, Map<String, Double> shiftPerSecond,
                  long raisingWrites, long conflicts, double utilisation, long events, double wallS) {

        String render() {
            StringBuilder b = new StringBuilder();
            b.append(String.format(Locale.ROOT, "%d gateways, demand %s, TTL 5 s, renew 1 s, 3 conflict retries, %s%n",
                    gateways, estimated ? "estimated (DemandEstimator)" : "oracle (true demand)", network));
            b.append(String.format(Locale.ROOT, "  cold start: within 5 %% of max-min fair after %s%n", fmt(coldConvergedS)));
            b.append(String.format(Locale.ROOT, "  demand shift: within 5 %% after %s%n", fmt(shiftConvergedS)));
            b.append(String.format(Locale.ROOT, "  utilisation at steady state: %.1f %% of min(budget, Σ demand)%n",
                    utilisation * 100));
            b.append("  store requests/s at steady state (total; per gateway):\n");
            steadyPerSecond.forEach((k, v) -> b.append(String.format(Locale.ROOT, "    %-14s %9.1f  %6.3f%n", k, v,
                    v / gateways)));
            b.append("  store requests/s in the 10 s after the shift (total; per gateway):\n");
            shiftPerSecond.forEach((k, v) -> b.append(String.format(Locale.ROOT, "    %-14s %9.1f  %6.3f%n", k, v,
                    v / gateways)));
            b.append(String.format(Locale.ROOT, "  raising (guarded) writes: %d, of which conflicted: %d (%.0f %%)%n",
                    raisingWrites + conflicts, conflicts, 100.0 * conflicts / Math.max(1, raisingWrites + conflicts)));
            b.append(String.format(Locale.ROOT, "  %d events, %.1f s wall%n", events, wallS));
            return b.toString();
        }

        private static String fmt(double s) {
            return s < 0 ? "not within the run" : String.format(Locale.ROOT, "%.1f s (%.1f renew intervals)", s, s);
        }
    }

    private SiteSimulation() {
    }

    static Report run(int n, boolean estimated, long seed) {
        return run(n, estimated, seed, 0.5, 2, 1000);
    }

    /**
     * @param minDelayMs  least one-way delay to the store, ms
     * @param maxDelayMs  largest one-way delay, ms (the store itself answers at once)
     * @param startSpreadMs gateways start at random within this window (1000 = rounds spread over the
     *                      interval; 10 = all rounds at once, as after a common outage)
     */
    static Report run(int n, boolean estimated, long seed, double minDelayMs, double maxDelayMs, int startSpreadMs) {
        long t0 = System.nanoTime();
        SiteModel m = new SiteModel(seed, SiteModel.Faults.none(SiteModel.ms(minDelayMs), SiteModel.ms(maxDelayMs)),
                false);
        m.notes = false;
        Random rnd = m.rnd;
        long budget = 2 * GIB;
        m.store.setBudget(new SiteBudget(budget, 0, 0, 0, Map.of()));
        long[] truth = new long[n];
        for (int i = 0; i < n; i++) {
            truth[i] = randomDemand(rnd, budget, n);
        }
        for (int i = 0; i < n; i++) {
            int idx = i;
            SiteModel.Node node = m.addNode(String.format("gw-%03d", i), (rnd.nextDouble() * 2 - 1) * 0.0099,
                    rnd.nextLong());
            ShareKeeper.Settings s = ShareKeeper.Settings.defaults(node.id);
            DemandEstimator[] est = {null};
            long[] sent = {0, 0}; // cumulative granted, waited
            long[] last = {0};
            ShareKeeper.DemandSource source = estimated
                    ? (b, shares, gateways, now) -> {
                        if (est[0] == null) {
                            est[0] = new DemandEstimator(now - s.renewInterval().toNanos(), 0, 0);
                            last[0] = now - s.renewInterval().toNanos();
                        }
                        long dt = now - last[0];
                        last[0] = now;
                        SiteModel.Node self = m.nodes.get(idx);
                        long share = self.keeper != null && self.keeper.owned(Direction.DOWNLOAD)
                                ? shares.getOrDefault(DOWN, 0L) : 0;
                        long want = truth[idx];
                        long used = Math.min(want, share);
                        long granted = (long) (used * (dt / 1e9));
                        boolean limited = want > share;
                        sent[0] += granted;
                        sent[1] += limited ? granted : 0;
                        long d = est[0].update(now, sent[0], sent[1], limited ? 1 : 0, share, b.budget(Direction.DOWNLOAD),
                                gateways);
                        return want == 0 && d == 0 ? Map.of() : Map.of(DOWN, d);
                    }
                    : (b, shares, gateways, now) -> truth[idx] == 0 ? Map.of() : Map.of(DOWN, truth[idx]);
            node.demands = null;
            m.at(rnd.nextInt(startSpreadMs) * 1_000_000L, () -> node.keeper = startKeeper(m, node, s, source));
        }
        long second = 1_000_000_000L;
        double cold = convergence(m, truth, budget, 0, 40 * second);
        Map<String, long[]> before = snapshot(m.store.requests);
        long conflictsBefore = m.store.conflicts;
        m.run(50 * second, Long.MAX_VALUE);
        Map<String, Double> steady = rates(before, m.store.requests, 10);
        double utilisation = utilisation(m, truth, budget);
        // the shift: a fifth go idle, a fifth ask for much more, the rest keep theirs
        for (int i = 0; i < n; i++) {
            int k = rnd.nextInt(5);
            truth[i] = k == 0 ? 0 : k == 1 ? budget / n * 4 : truth[i];
        }
        Map<String, long[]> atShift = snapshot(m.store.requests);
        double shift = convergence(m, truth, budget, 50 * second, 90 * second);
        Map<String, Double> shiftRates = rates(atShift, shiftWindow, 10);
        long guarded = count(m.store.requests, "write-guarded") - m.store.conflicts;
        String network = String.format(Locale.ROOT, "one-way delay %.1f–%.1f ms, starts within %d ms", minDelayMs,
                maxDelayMs, startSpreadMs);
        return new Report(n, estimated, network, cold, shift, steady, shiftRates, guarded, m.store.conflicts, utilisation,
                m.events(), (System.nanoTime() - t0) / 1e9);
    }

    /** Requests counted 10 s after the start of the last convergence() (single-threaded use). */
    private static Map<String, long[]> shiftWindow;

    private static ShareKeeper startKeeper(SiteModel m, SiteModel.Node node, ShareKeeper.Settings s,
                                           ShareKeeper.DemandSource source) {
        SiteModel.NodeLoop loop = m.new NodeLoop(node);
        ShareKeeper k = new ShareKeeper(s, m.new Link(node, loop), node, loop, source, l -> {
        });
        k.start();
        return k;
    }

    private static long randomDemand(Random rnd, long budget, int n) {
        int kind = rnd.nextInt(4);
        long equal = budget / n;
        return switch (kind) {
            case 0 -> (long) (rnd.nextDouble() * equal / 2); // small: keeps what it needs
            case 1 -> equal / 2 + (long) (rnd.nextDouble() * equal);
            default -> equal * 2 + (long) (rnd.nextDouble() * equal * 3); // large: bounded by the others
        };
    }

    /**
     * Runs from {@code from} to {@code until}, sampling every 100 ms; returns the time after {@code
     * from} at which every share came within 5 % of its max-min fair share and stayed so, or −1.
     */
    private static double convergence(SiteModel m, long[] truth, long budget, long from, long until) {
        long[] fair = MaxMinFair.allocate(budget, Arrays.stream(truth).map(d -> Math.min(d, budget)).toArray());
        long within = -1;
        shiftWindow = null;
        for (long t = from; t - until <= 0; t += 100_000_000L) {
            m.run(t, Long.MAX_VALUE);
            if (shiftWindow == null && t - from >= 10_000_000_000L) {
                shiftWindow = snapshot(m.store.requests);
            }
            boolean ok = true;
            for (int i = 0; i < truth.length && ok; i++) {
                ShareKeeper k = m.nodes.get(i).keeper;
                long s = k == null || !k.owned(Direction.DOWNLOAD) ? 0 : k.shares().getOrDefault(DOWN, 0L);
                ok = Math.abs(s - fair[i]) <= Math.max(1, fair[i] / 20);
            }
            if (ok && within < 0) {
                within = t;
            } else if (!ok) {
                within = -1;
            }
        }
        return within < 0 ? -1 : (within - from) / 1e9;
    }

    private static double utilisation(SiteModel m, long[] truth, long budget) {
        long sum = 0;
        for (SiteModel.Node node : m.nodes) {
            if (node.keeper != null && node.keeper.owned(Direction.DOWNLOAD)) {
                sum += node.keeper.shares().getOrDefault(DOWN, 0L);
            }
        }
        return (double) sum / Math.min(budget, Arrays.stream(truth).sum());
    }

    private static Map<String, long[]> snapshot(Map<String, long[]> c) {
        Map<String, long[]> out = new HashMap<>();
        c.forEach((k, v) -> out.put(k, v.clone()));
        return out;
    }

    private static long count(Map<String, long[]> c, String k) {
        long[] v = c.get(k);
        return v == null ? 0 : v[0];
    }

    private static Map<String, Double> rates(Map<String, long[]> a, Map<String, long[]> b, double seconds) {
        Map<String, Double> out = new java.util.TreeMap<>();
        double total = 0;
        for (String k : b.keySet()) {
            double r = (count(b, k) - count(a, k)) / seconds;
            out.put(k, r);
            total += r;
        }
        out.put("total", total);
        return out;
    }

    /** {@code SiteSimulation [gateways] [oracle|estimated] [seed] [minDelayMs maxDelayMs startSpreadMs]}. */
    public static void main(String[] a) {
        int n = a.length > 0 ? Integer.parseInt(a[0]) : 200;
        boolean est = a.length > 1 && a[1].equals("estimated");
        long seed = a.length > 2 ? Long.parseLong(a[2]) : 1;
        Report r = a.length > 5 ? run(n, est, seed, Double.parseDouble(a[3]), Double.parseDouble(a[4]),
                Integer.parseInt(a[5])) : run(n, est, seed);
        System.out.print(r.render());
    }
}
