package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.levee.cli.Main;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Issue 22, item 1, as it was found: a site budget {@code download: 30MiB/s} whose only principal ceiling is
 * an override ({@code principals: {svc-a: {download: 6MiB/s}}}, no default principal ceiling), imported with
 * {@code levee bandwidth import}; svc-a has no local rate in the principals file. Two {@code levee gateway}
 * processes with the default lease timing (TTL 5 s, renew 1 s) against a real etcd hold download shares
 * for principal a's traffic; svc-a reads through g0 until g0 holds all of its ceiling, then opens its first
 * streams on g1. svc-a's bytes are counted as its clients read them, per 1 s window (sampled every 20 ms).
 *
 * <p>Before the fix, svc-a's first stream on g1 took the default principal rate (none) and kept it while
 * g1 could not raise svc-a's share from 0 (g0 held the whole ceiling until its next round lowered it), and
 * its bucket then started full. Now svc-a's first stream on g1 is held until its share arrives, and its
 * bucket starts empty.
 *
 * <p>Run: {@code ./mvnw -B -ntp -pl levee-it -am verify -Dit.test=SitePrincipalCeilingIT -Dtest=none
 * -Dsurefire.failIfNoSpecifiedTests=false} (about a minute).
 */
class SitePrincipalCeilingIT {

    static final Path DIR = Path.of("target", "it-logs", "site", "principal-ceiling").toAbsolutePath();
    static final long MiB = 1L << 20;
    static final long QUANTUM = 64 * 1024;
    static final long CEILING = 6 * MiB;
    static final int THREADS = 2;
    static final String KEY_A = "AKIASITECEILA";
    static final String SECRET_A = "secret-of-site-ceiling-a";
    static final String KEY_S = "AKIASITECEILS";
    static final String SECRET_S = "secret-of-site-ceiling-s";

    @Test
    void aCeilingGivenOnlyAsAnOverrideHoldsPerWindowFromTheFirstStreamOnAGatewayThatAlreadyHoldsAShare()
            throws Exception {
        ItFixtures.logToItLog();
        try (Site site = Site.start(DIR, 1, 2, Map.of("a", KEY_A, "svc-a", KEY_S), Map.of(KEY_A, SECRET_A, KEY_S, SECRET_S),
                (i, links) -> List.of("--etcd", links.endpoints(), "--gateway-id", "g" + i))) {
            Path budget = DIR.resolve("budget.yaml");
            Files.writeString(budget, "download: 30MiB/s\nprincipals:\n  svc-a: {download: 6MiB/s}\n");
            assertThat(Main.run("bandwidth", "import", "--etcd", site.etcd().endpoints(), budget.toString())).isZero();
            site.backend().putRandom("site", "big", 96 << 20, 5);
            List<S3Client> clients = new ArrayList<>();
            List<DemandClient> as = new ArrayList<>();
            List<DemandClient> ss = new CopyOnWriteArrayList<>();
            ByteWindows read = ByteWindows.perSecond();
            for (int i = 0; i < 2; i++) {
                int g = i;
                read.counter("svc-a@g" + i, () -> ss.size() > g ? ss.get(g).bytesRead() : 0);
            }
            try {
                // a's traffic through both gateways, as fast as they let it: each holds a large download share
                for (int i = 0; i < 2; i++) {
                    S3Client c = DemandClient.s3Client(site.gateway(i).endpoint(), KEY_A, SECRET_A, 4, Duration.ofSeconds(60));
                    clients.add(c);
                    as.add(DemandClient.on(c, "site", "big").name("a" + i).threads(THREADS).maxDuration(Duration.ofSeconds(60))
                            .start());
                }
                await("both gateways hold a download share of at least 10 MiB/s").atMost(Duration.ofSeconds(30))
                        .pollInterval(Duration.ofMillis(200)).ignoreExceptions().untilAsserted(() -> {
                            for (int i = 0; i < 2; i++) {
                                assertThat(site.gateway(i).ready().at("/governance/site/directions/download/share").asLong())
                                        .isGreaterThanOrEqualTo(10 * MiB);
                            }
                        });
                read.start(Duration.ofMillis(20), Duration.ofSeconds(1));
                long t0 = System.nanoTime();
                // svc-a first through g0 alone, until g0 holds all of its ceiling; then its first stream through g1
                for (int i = 0; i < 2; i++) {
                    S3Client c = DemandClient.s3Client(site.gateway(i).endpoint(), KEY_S, SECRET_S, 4, Duration.ofSeconds(60));
                    clients.add(c);
                    ss.add(DemandClient.on(c, "site", "big").name("svc-a@g" + i).threads(THREADS)
                            .maxDuration(Duration.ofSeconds(30)).start());
                    if (i == 0) {
                        await("svc-a reads at its ceiling through g0").atMost(Duration.ofSeconds(20))
                                .pollInterval(Duration.ofMillis(200)).until(() -> read.recentRate("svc-a@g0",
                                        Duration.ofSeconds(1)) >= CEILING * 0.8);
                        await("2 s more").pollDelay(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(3)).until(() -> true);
                    }
                }
                await("6 s of svc-a's downloads through both").pollDelay(Duration.ofSeconds(6)).atMost(Duration.ofSeconds(7))
                        .until(() -> true);
                double t = (System.nanoTime() - t0) / 1e9;
                long total = ss.stream().mapToLong(DemandClient::bytesRead).sum();
                read.close();
                // the gateways' bursts (Σ shares ≤ ceiling, each burst share / 10), one quantum per stream, one sample period
                long bound = CEILING + CEILING / 10 + QUANTUM * THREADS * 2 + CEILING / 50;
                System.out.print("SitePrincipalCeilingIT: svc-a's bytes read per 1 s window (MiB):\n" + read.table());
                System.out.printf(Locale.ROOT, "SitePrincipalCeilingIT: svc-a read %.1f MiB in %.1f s = %.2f MiB/s (ceiling"
                                + " 6 MiB/s); busiest 1 s as read by its clients %.2f MiB (bound %.2f MiB); %s; %s%n",
                        total / (double) MiB, t, total / (double) MiB / t, read.maxSlidingWindowSum() / (double) MiB,
                        bound / (double) MiB, ss, as);
                assertThat(read.maxSlidingWindowSum()).as("svc-a's bytes read in any 1 s window (windows %s)",
                        read.sumWindows()).isLessThanOrEqualTo(bound);
                assertThat((double) total).as("svc-a is served: ≥ half its ceiling").isGreaterThan(CEILING * t / 2);
                assertThat(ss.stream().mapToLong(DemandClient::errors).sum()).as("svc-a's errors: %s", ss).isZero();
            } finally {
                read.close();
                ss.forEach(DemandClient::close);
                as.forEach(DemandClient::close);
                clients.forEach(S3Client::close);
            }
        }
    }
}
