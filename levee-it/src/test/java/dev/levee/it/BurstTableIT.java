package dev.levee.it;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * The measurements behind docs/BENCHMARKS.md, "Admission per burst" (issue 22 item 7, issue 26 item 2): the fraction
 * of a quota's rate admitted for bursts 0, 1, 2, … Not a check (it asserts nothing): run it on purpose with
 * {@code -Dlevee.burst.table=true}.
 */
@EnabledIfSystemProperty(named = "levee.burst.table", matches = "true")
class BurstTableIT {

    static final int[] BURSTS = {0, 1, 2, 10, 51, 125, 201, 500};

    /** One limiter, factor 1, 5 000 req/s, 100 connections in a closed loop: through levee-client and straight. */
    @Test
    void factorOneAt5000PerSecond() throws Exception {
        StringBuilder q = new StringBuilder("factor: 1\ndefault: {rate: 1000000, burst: 100000}\nresources:\n");
        for (int b : BURSTS) {
            q.append("  c-b").append(b).append(": {quota: {rate: 5000, burst: ").append(b).append("}}\n");
            q.append("  d-b").append(b).append(": {quota: {rate: 5000, burst: ").append(b).append("}}\n");
        }
        StringBuilder table = new StringBuilder(
                "| burst | via levee-client: offered/s | admitted/s | % of rate | straight at the limiter: offered/s | admitted/s | % of rate |\n"
                        + "|---:|---:|---:|---:|---:|---:|---:|\n");
        try (BurstAdmission s = new BurstAdmission(1, q.toString())) {
            s.closedLoop("warm", 3, 100, false);
            s.closedLoop("warm", 2, 100, true);
            for (int b : BURSTS) {
                BurstAdmission.Counts c = s.closedLoop("c-b" + b, 5, 100, false);
                BurstAdmission.Counts d = s.closedLoop("d-b" + b, 5, 100, true);
                table.append(String.format(Locale.ROOT, "| %d | %.0f | %.0f | %.1f | %.0f | %.0f | %.1f |%n", b,
                        c.offeredPerSecond(), c.accepted() / c.seconds(), 100 * c.accepted() / c.seconds() / 5000,
                        d.offeredPerSecond(), d.accepted() / d.seconds(), 100 * d.accepted() / d.seconds() / 5000));
                System.out.println(table);
            }
        }
        System.out.println("BURST TABLE factor 1 at 5000/s\n" + table);
    }

    /**
     * One limiter, factor 1, {@code levee.burst.rate} req/s (default 50: {@code T} = 20 ms, minimum burst 3), each
     * bucket offered 1.2 x paced through levee-client: what a host too loaded for the 5 000 req/s closed loop can
     * still offer.
     */
    @Test
    void factorOneAtAModerateRate() throws Exception {
        int[] bursts = {0, 1, 2, 3, 5};
        double rate = Double.parseDouble(System.getProperty("levee.burst.rate", "50"));
        double seconds = Double.parseDouble(System.getProperty("levee.burst.seconds", "40"));
        StringBuilder q = new StringBuilder("factor: 1\ndefault: {rate: 1000000, burst: 100000}\nresources:\n");
        Map<String, Double> offered = new LinkedHashMap<>();
        for (int b : bursts) {
            q.append("  f-b").append(b).append(": {quota: {rate: ").append(rate).append(", burst: ").append(b)
                    .append("}}\n");
            offered.put("f-b" + b, rate * 1.2);
        }
        try (BurstAdmission s = new BurstAdmission(1, q.toString())) {
            s.closedLoop("warm", 3, 50, false);
            Map<String, BurstAdmission.Counts> got = s.paced(offered, seconds + 5, 5);
            StringBuilder table = new StringBuilder(String.format(Locale.ROOT,
                    "factor 1, rate %s/s, offered 1.2 x, %.0f s counted%n| burst | admitted/s | %% of rate | rejected/s | failed |%n"
                            + "|---:|---:|---:|---:|---:|%n", rate, seconds));
            for (int b : bursts) {
                BurstAdmission.Counts c = got.get("f-b" + b);
                table.append(String.format(Locale.ROOT, "| %d | %.1f | %.1f %% | %.1f | %d |%n", b,
                        c.accepted() / c.seconds(), 100 * c.accepted() / c.seconds() / rate, c.rejected() / c.seconds(),
                        c.other()));
            }
            System.out.println("BURST TABLE factor 1 at " + rate + "/s\n" + table);
        }
    }

    /** Factor 4 over 4 limiters, the rates of `quota calc --rps 3..40`, offered at 2 x and 1.2 x the rate. */
    @Test
    void factorFourAtLowRates() throws Exception {
        double[] rates = {3.3, 8.8, 16.5, 44};
        int[] bursts = {0, 1, 2, 3, 4};
        double seconds = Double.parseDouble(System.getProperty("levee.burst.seconds", "40"));
        for (double load : new double[] {2.0, 1.2}) {
            StringBuilder q = new StringBuilder("factor: 4\ndefault: {rate: 1000000, burst: 100000}\nresources:\n");
            Map<String, Double> offered = new LinkedHashMap<>();
            for (double r : rates) {
                for (int b : bursts) {
                    String name = String.format(Locale.ROOT, "r%d-b%d", (int) r, b);
                    q.append("  ").append(name).append(": {quota: {rate: ").append(r).append(", burst: ").append(b)
                            .append("}}\n");
                    offered.put(name, r * load);
                }
            }
            try (BurstAdmission s = new BurstAdmission(4, q.toString())) {
                s.closedLoop("warm", 3, 50, false);
                Map<String, BurstAdmission.Counts> got = s.paced(offered, seconds + 5, 5);
                StringBuilder table = new StringBuilder(String.format(Locale.ROOT,
                        "offered %.1f x the rate, %.0f s counted%n| rate | per limiter | burst 0 | 1 | 2 | 3 | 4 |%n"
                                + "|---:|---:|---:|---:|---:|---:|---:|%n", load, seconds));
                for (double r : rates) {
                    table.append(String.format(Locale.ROOT, "| %s | %.2f/s |", r, r / 4));
                    for (int b : bursts) {
                        BurstAdmission.Counts c = got.get(String.format(Locale.ROOT, "r%d-b%d", (int) r, b));
                        table.append(String.format(Locale.ROOT, " %.1f %% |", 100 * c.accepted() / c.seconds() / r));
                    }
                    table.append('\n');
                }
                System.out.println("BURST TABLE factor 4\n" + table);
            }
        }
    }
}
