package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.cli.Main;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code levee bandwidth set} against a real etcd: commands run at once each keep their fields (a compare-and-swap
 * on the budget key's mod revision; until 12-02 a read-change-write without it lost the others' fields, while every
 * command reported success — found by a break-it round).
 */
class BandwidthCommandIT {

    @RegisterExtension
    static final ItFixtures IT = ItFixtures.withVertxAndEtcd();

    @Test
    void setsRunAtOnceAllTakeEffect() throws Exception {
        String etcd = IT.etcd().endpoint();
        String prefix = "/levee-it-bandwidth-set";
        List<String[]> commands = new ArrayList<>();
        commands.add(new String[] {"--download", "10MiB/s"});
        commands.add(new String[] {"--upload", "5MiB/s"});
        for (int i = 0; i < 6; i++) {
            commands.add(new String[] {"--principal", "svc-" + i + ":download=" + (i + 1) + "MiB/s"});
        }
        ExecutorService pool = Executors.newFixedThreadPool(commands.size());
        try {
            for (int round = 0; round < 3; round++) {
                Main.run("bandwidth", "delete", "--etcd", etcd, "--etcd-prefix", prefix);
                List<Future<Integer>> runs = new ArrayList<>();
                for (String[] c : commands) {
                    List<String> line = new ArrayList<>(List.of("bandwidth", "set", "--etcd", etcd, "--etcd-prefix", prefix));
                    line.addAll(List.of(c));
                    runs.add(pool.submit(() -> Main.run(line.toArray(String[]::new))));
                }
                for (Future<Integer> r : runs) {
                    assertThat(r.get(60, TimeUnit.SECONDS)).isZero();
                }
                var kv = IT.client().getKVClient().get(io.etcd.jetcd.ByteSequence.from(prefix + "/bandwidth/budget",
                        java.nio.charset.StandardCharsets.UTF_8)).get(10, TimeUnit.SECONDS);
                String doc = kv.getKvs().get(0).getValue().toString(java.nio.charset.StandardCharsets.UTF_8);
                var budget = dev.levee.lease.SiteBudget.parse("the budget", doc);
                assertThat(budget.download()).as("round %d:\n%s", round, doc).isEqualTo(10L << 20);
                assertThat(budget.upload()).as("round %d:\n%s", round, doc).isEqualTo(5L << 20);
                assertThat(budget.principals()).as("round %d:\n%s", round, doc).hasSize(6);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aBudgetOverTheLargestValueIsNotWritten() throws Exception {
        String etcd = IT.etcd().endpoint();
        String prefix = "/levee-it-bandwidth-size";
        assertThat(Main.run("bandwidth", "set", "--download", "4MiB/s", "--etcd", etcd, "--etcd-prefix", prefix)).isZero();
        var key = io.etcd.jetcd.ByteSequence.from(prefix + "/bandwidth/budget", java.nio.charset.StandardCharsets.UTF_8);
        long revision = IT.client().getKVClient().get(key).get(10, TimeUnit.SECONDS).getKvs().get(0).getModRevision();
        assertThat(Main.run("bandwidth", "set", "--upload", "1MiB/s", "--etcd-max-value-size", "10", "--etcd", etcd,
                "--etcd-prefix", prefix)).isEqualTo(1);
        assertThat(IT.client().getKVClient().get(key).get(10, TimeUnit.SECONDS).getKvs().get(0).getModRevision())
                .as("nothing written").isEqualTo(revision);
    }
}
