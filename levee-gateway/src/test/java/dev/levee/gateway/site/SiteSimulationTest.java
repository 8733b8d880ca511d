package dev.levee.gateway.site;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The simulated site of {@link SiteSimulation}, small by default (20 gateways); the 200-gateway
 * figures of docs/BENCHMARKS.md come from {@code -Dlevee.site.simulation.gateways=200}.
 */
class SiteSimulationTest {

    @Test
    void manyGatewaysConvergeAndKeepStoreRequestsLowAtSteadyState() {
        int n = Integer.getInteger("levee.site.simulation.gateways", 20);
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
