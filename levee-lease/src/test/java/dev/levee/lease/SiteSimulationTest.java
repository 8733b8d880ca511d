package dev.levee.lease;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The simulated site of {@link SiteSimulation}, small by default (20 gateways). The figures of
 * docs/BENCHMARKS.md come from {@code -Dlevee.site.simulation="200 estimated 1 0.5 2 10"} (the
 * arguments of {@link SiteSimulation#main}: gateways, oracle|estimated, seed, least and largest
 * one-way delay in ms, start spread in ms), which prints that one run's report.
 */
class SiteSimulationTest {

    @Test
    void manyGatewaysConvergeAndKeepStoreRequestsLowAtSteadyState() {
        String args = System.getProperty("levee.site.simulation");
        if (args != null && !args.isBlank()) {
            SiteSimulation.main(args.trim().split("\\s+"));
            return;
        }
        int n = 20;
        for (boolean estimated : new boolean[] {false, true}) {
            SiteSimulation.Report r = SiteSimulation.run(n, estimated, 1);
            System.out.print(r.render());
            assertThat(r.coldConvergedS()).as("cold start converged (s)").isBetween(0.0, 10.0);
            assertThat(r.shiftConvergedS()).as("shift converged (s)").isBetween(0.0, 10.0);
            double writes = r.steadyPerSecond().getOrDefault("write", 0.0)
                    + r.steadyPerSecond().getOrDefault("write-guarded", 0.0);
            assertThat(writes / n).as("writes per gateway per second at steady state").isLessThanOrEqualTo(1.0);
            assertThat(r.steadyPerSecond().get("keepAlive") / n).as("keep-alives per gateway per second")
                    .isBetween(0.9, 1.1);
        }
    }
}
