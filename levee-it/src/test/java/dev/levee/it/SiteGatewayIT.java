package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The site-test fixtures together, with one gateway (the lease feature does not exist yet): a
 * {@link SiteGateway} process governed at {@code --download-rate 4MiB/s} in front of {@link S3Backend},
 * {@link DemandClient} pulling as fast as it can through the gateway's egress {@link TcpProxy},
 * {@link ByteWindows} counting the bytes leaving the gateway per 1 s window and observing
 * {@code /health/ready}; then the gateway is killed with SIGKILL and started again on its ports.
 *
 * <p>Run: {@code ./mvnw -B -ntp -pl levee-it -am verify -Dit.test=SiteGatewayIT -Dtest=none
 * -Dsurefire.failIfNoSpecifiedTests=false} (about 30 s, mostly two JVM starts).
 */
class SiteGatewayIT {

    static final Path DIR = Path.of("target", "it-logs", "site", "fixtures").toAbsolutePath();
    static final long MiB = 1L << 20;
    static final String KEY = "AKIASITEA";
    static final String SECRET = "secret-of-site-a";

    @Test
    void egressIsCountedPerWindowAndAKilledGatewayRestartsOnItsPorts() throws Exception {
        Files.createDirectories(DIR);
        ItFixtures.logToItLog();
        Path principals = SiteGateway.writePrincipals(DIR.resolve("principals.yaml"), Map.of("a", KEY));
        try (S3Backend s3 = S3Backend.start(Map.of(KEY, SECRET));
                SiteGateway g = SiteGateway.start(DIR, "g1", s3.address(), principals, List.of("--download-rate", "4MiB/s"))) {
            s3.putRandom("site", "big", 16 << 20, 11);
            g.awaitListening();
            try (S3Client c = DemandClient.s3Client(g.endpoint(), KEY, SECRET, 4);
                    DemandClient d = DemandClient.on(c, "site", "big").name("g1").threads(2).maxDuration(Duration.ofSeconds(30)).start();
                    ByteWindows w = ByteWindows.perSecond().counter("g1", g::egressBytes)
                            .observe("openStreams", () -> g.ready().at("/governance/bandwidth/download/openStreams").asInt())
                            .start()) {
                await("5 windows").atMost(Duration.ofSeconds(15)).until(() -> w.windows("g1").size() >= 5);
                d.stop();
                List<Long> windows = w.windows("g1");
                System.out.println("SiteGatewayIT egress windows (MiB): "
                        + windows.stream().map(b -> String.format("%.2f", b / (double) MiB)).toList() + "; " + d);
                for (long b : windows.subList(1, windows.size())) {
                    assertThat(b).as("a window of egress at --download-rate 4MiB/s").isBetween(4 * MiB * 7 / 10, 4 * MiB * 11 / 10 + MiB / 4);
                }
                assertThat(g.egressBytes()).as("egress counts at least what the client read").isGreaterThanOrEqualTo(d.bytesRead());
                assertThat(d.errors()).as(d.toString()).isZero();
                assertThat(w.<Integer>observations("openStreams")).anyMatch(o -> o.ok() && o.value() == 2);
            }

            g.kill9();
            assertThat(g.process().alive()).isFalse();
            g.restart();
            JsonNode ready = g.ready();
            assertThat(ready.at("/governance/bandwidth/download/openStreams").asInt()).isZero();
            assertThat(DIR.resolve("g1-1.out")).exists();
            try (S3Client c = DemandClient.s3Client(g.endpoint(), KEY, SECRET, 2);
                    DemandClient d = DemandClient.on(c, "site", "big").threads(1).maxRequests(1).start()) {
                assertThat(d.awaitDone(Duration.ofSeconds(20))).isTrue();
                assertThat(d.completed()).as(d.toString()).isEqualTo(1);
            }
        }
    }
}
