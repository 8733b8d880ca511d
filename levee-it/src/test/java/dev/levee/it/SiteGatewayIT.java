package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The site-test fixtures together, before the lease feature exists: a {@link Site} of a three-member
 * etcd, S3Proxy and two {@code levee gateway} processes, each governed on its own at
 * {@code --download-rate 2MiB/s} (no shared budget yet); a {@link DemandClient} per gateway pulls as fast
 * as it can through the gateway's egress proxy, {@link ByteWindows} counts the bytes leaving each gateway
 * per 1 s window and observes {@code /health/ready}; then one gateway is killed with SIGKILL and started
 * again on its ports.
 *
 * <p>Run: {@code ./mvnw -B -ntp -pl levee-it -am verify -Dit.test=SiteGatewayIT -Dtest=none
 * -Dsurefire.failIfNoSpecifiedTests=false} (about 30 s, mostly three JVM starts).
 */
class SiteGatewayIT {

    static final Path DIR = Path.of("target", "it-logs", "site", "fixtures").toAbsolutePath();
    static final long MiB = 1L << 20;
    static final long RATE = 2 * MiB;
    static final String KEY = "AKIASITEA";
    static final String SECRET = "secret-of-site-a";

    @Test
    void egressIsCountedPerGatewayAndWindowAndAKilledGatewayRestartsOnItsPorts() throws Exception {
        ItFixtures.logToItLog();
        try (Site site = Site.start(DIR, 3, 2, Map.of("a", KEY), Map.of(KEY, SECRET),
                (i, links) -> List.of("--download-rate", "2MiB/s"))) {
            site.backend().putRandom("site", "big", 16 << 20, 11);
            assertThat(site.links(0).endpoints()).isNotEqualTo(site.etcd().endpoints()).contains("127.0.0.1");
            SiteGateway g0 = site.gateway(0);
            SiteGateway g1 = site.gateway(1);
            try (S3Client c0 = DemandClient.s3Client(g0.endpoint(), KEY, SECRET, 4);
                    S3Client c1 = DemandClient.s3Client(g1.endpoint(), KEY, SECRET, 4);
                    DemandClient d0 = DemandClient.on(c0, "site", "big").name("g0").threads(2).maxDuration(Duration.ofSeconds(30)).start();
                    DemandClient d1 = DemandClient.on(c1, "site", "big").name("g1").threads(2).maxDuration(Duration.ofSeconds(30)).start();
                    ByteWindows w = site.egressWindows()
                            .observe("openStreams", () -> g0.ready().at("/governance/bandwidth/download/openStreams").asInt()
                                    + g1.ready().at("/governance/bandwidth/download/openStreams").asInt())
                            .start()) {
                await("6 windows").atMost(Duration.ofSeconds(15)).until(() -> w.windows("g0").size() >= 6);
                d0.stop();
                d1.stop();
                List<Long> sum = w.sumWindows();
                System.out.print("SiteGatewayIT egress per window (MiB):\n" + w.table());
                System.out.println("SiteGatewayIT: " + d0 + "; " + d1 + "; max sliding 1 s sum "
                        + String.format("%.2f MiB", w.maxSlidingWindowSum() / (double) MiB));
                // the first two windows hold the JVMs' warm-up and the first GETs' start; a starved machine (the
                // load average reached 14 on 2 cores) slows a gateway in a window, so the lower bound is on the mean
                for (String g : List.of("g0", "g1")) {
                    List<Long> steady = w.windows(g).subList(2, 6);
                    for (long b : steady) {
                        assertThat(b).as("a window of %s's egress at --download-rate 2MiB/s", g).isLessThanOrEqualTo(RATE * 11 / 10 + MiB / 4);
                    }
                    assertThat(steady.stream().mapToLong(Long::longValue).average().orElseThrow())
                            .as("%s's mean egress per window", g).isGreaterThan(RATE / 2.0);
                }
                for (long b : sum.subList(2, 6)) {
                    assertThat(b).as("a window of both gateways' egress").isLessThanOrEqualTo(2 * RATE * 11 / 10 + MiB / 2);
                }
                assertThat(g0.egressBytes()).as("egress counts at least what the client read").isGreaterThanOrEqualTo(d0.bytesRead());
                assertThat(d0.errors() + d1.errors()).as(d0 + "; " + d1).isZero();
                assertThat(w.<Integer>observations("openStreams")).anyMatch(o -> o.ok() && o.value() == 4);
            }

            g1.kill9();
            assertThat(g1.process().alive()).isFalse();
            g1.restart();
            JsonNode ready = g1.ready();
            assertThat(ready.at("/governance/bandwidth/download/openStreams").asInt()).isZero();
            assertThat(DIR.resolve("g1-1.out")).exists();
            try (S3Client c = DemandClient.s3Client(g1.endpoint(), KEY, SECRET, 2);
                    DemandClient d = DemandClient.on(c, "site", "big").threads(1).maxRequests(1).start()) {
                assertThat(d.awaitDone(Duration.ofSeconds(20))).isTrue();
                assertThat(d.completed()).as(d.toString()).isEqualTo(1);
            }
        }
    }
}
