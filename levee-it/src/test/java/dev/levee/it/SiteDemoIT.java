package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code levee demo --gateways 3} as a user types it (issue 11): three gateways share one download
 * budget through etcd, one is cut off from etcd and fails closed, and rejoins after the heal.
 */
class SiteDemoIT {

    static final Path DIR = Path.of("target", "it-logs", "site", "demo").toAbsolutePath();

    @Test
    void threeGatewaysShareTheBudgetAndTheCutOffOneFailsClosedAndRejoins() {
        try (RoleProcess demo = RoleProcess.start(DIR, "demo", List.of("demo", "--gateways", "3", "--duration", "14s",
                "--log-target", "file:" + DIR.resolve("demo.log")))) {
            int status = demo.awaitExit(Duration.ofSeconds(120));
            String out = demo.output();
            System.out.println(out);
            assertThat(status).as(out).isZero();
            assertThat(out).contains("3 gateways share a site download budget of 30 MiB/s")
                    .contains("<- gw-3 cut off from etcd").contains("<- link healed").contains("summary:");
            List<String> rows = Arrays.stream(out.split("\n")).filter(l -> l.matches("\\s+\\d+ .*")).toList();
            assertThat(rows).as("one row per second").hasSize(14);
            assertThat(rows).as("gw-3 fails closed while cut off").anyMatch(l -> l.contains("CLOSED"));
            String last = rows.getLast();
            assertThat(last).as("gw-3 has rejoined by the end").doesNotContain("CLOSED");
            for (String row : rows) {
                String[] f = row.trim().split("\\s+");
                // t, (MiB/s, share) × 3, Σ MiB/s, Σ share
                double sumShares = Double.parseDouble(f[8]);
                assertThat(sumShares).as("Σ shares in use ≤ budget in row '%s'", row).isLessThanOrEqualTo(30.0 + 0.05);
            }
        }
    }
}
