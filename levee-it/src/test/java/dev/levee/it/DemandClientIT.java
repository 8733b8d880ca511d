package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The {@link DemandClient} fixture straight against S3Proxy ({@link S3Backend}, no gateway): the client
 * as a whole reads at its rate, measured in 1 s windows by {@link ByteWindows}, and a changed rate takes
 * effect at once; a request bound is kept; {@code 503 SlowDown} answers (from a fake S3 endpoint) are
 * counted apart from errors.
 *
 * <p>Run: {@code ./mvnw -B -ntp -pl levee-it -am verify -Dit.test=DemandClientIT -Dtest=none
 * -Dsurefire.failIfNoSpecifiedTests=false} (about 10 s).
 */
class DemandClientIT {

    static final long MiB = 1L << 20;
    static final String KEY = "AKIADEMAND";
    static final String SECRET = "secret-of-demand";
    static final int SIZE = 8 << 20;
    static S3Backend s3;

    @BeforeAll
    static void start() {
        ItFixtures.logToItLog();
        s3 = S3Backend.start(Map.of(KEY, SECRET));
        s3.putRandom("demand", "big", SIZE, 7);
    }

    @AfterAll
    static void stop() {
        if (s3 != null) {
            s3.close();
        }
    }

    @Test
    void theClientReadsAtItsRateAndARateChangeTakesEffectAtOnce() {
        try (S3Client c = DemandClient.s3Client(s3.endpoint(), KEY, SECRET, 8);
                DemandClient d = DemandClient.on(c, "demand", "big").name("rate").threads(3).rate(6 * MiB)
                        .maxDuration(Duration.ofSeconds(30)).start();
                ByteWindows w = ByteWindows.perSecond().counter("rate", d::bytesRead).start()) {
            await("4 windows at 6 MiB/s").atMost(Duration.ofSeconds(15)).until(() -> w.windows("rate").size() >= 4);
            d.setRate(2 * MiB);
            assertThat(d.rate()).isEqualTo(2 * MiB);
            int shiftAt = w.windows("rate").size();
            await("3 windows at 2 MiB/s").atMost(Duration.ofSeconds(10)).until(() -> w.windows("rate").size() >= shiftAt + 4);
            List<Long> windows = w.windows("rate");
            System.out.println("DemandClientIT windows (MiB): " + windows.stream().map(b -> String.format("%.2f", b / (double) MiB)).toList());
            // the first two windows hold the first GETs' start-up (seconds on a starved machine), the window of the
            // change is mixed; no window exceeds the rate, and the mean of the others is near it
            assertRate(windows.subList(2, shiftAt), 6 * MiB);
            assertRate(windows.subList(shiftAt + 1, windows.size()), 2 * MiB);
            assertThat(w.maxSlidingWindowSum()).isLessThanOrEqualTo(6 * MiB * 11 / 10 + 3 * DemandClient.CHUNK_BYTES);
            assertThat(d.errors()).as(d.toString()).isZero();
            d.stop();
            assertThat(d.running()).isFalse();
        }
    }

    static void assertRate(List<Long> windows, long rate) {
        for (long b : windows) {
            assertThat(b).as("a window at %d B/s", rate).isLessThanOrEqualTo(rate * 11 / 10);
        }
        assertThat(windows.stream().mapToLong(Long::longValue).average().orElseThrow()).as("the mean of windows at %d B/s", rate)
                .isGreaterThan(rate * 0.7);
    }

    @Test
    void aRequestBoundIsKeptAndWholeBodiesAreCounted() {
        try (S3Client c = DemandClient.s3Client(s3.endpoint(), KEY, SECRET, 4);
                DemandClient d = DemandClient.on(c, "demand", "big").threads(2).maxRequests(3).start()) {
            assertThat(d.awaitDone(Duration.ofSeconds(20))).isTrue();
            assertThat(d.requests()).isEqualTo(3);
            assertThat(d.completed()).isEqualTo(3);
            assertThat(d.bytesRead()).isEqualTo(3L * SIZE);
            assertThat(d.errors()).isZero();
        }
    }

    @Test
    void slowDownIsCountedApartFromErrors() throws IOException {
        HttpServer fake = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
        fake.createContext("/", ex -> {
            boolean slow = ex.getRequestURI().getPath().endsWith("/slow");
            byte[] body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>" + (slow ? "SlowDown" : "InternalError")
                    + "</Code><Message>m</Message></Error>").getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().add("Content-Type", "application/xml");
            if (slow) {
                ex.getResponseHeaders().add("Retry-After", "1");
            }
            ex.sendResponseHeaders(slow ? 503 : 500, body.length);
            ex.getResponseBody().write(body);
            ex.close();
        });
        fake.start();
        URI endpoint = URI.create("http://127.0.0.1:" + fake.getAddress().getPort());
        try (S3Client c = DemandClient.s3Client(endpoint, KEY, SECRET, 2);
                DemandClient slow = DemandClient.on(c, "b", "slow").threads(1).maxRequests(3).start();
                DemandClient failing = DemandClient.on(c, "b", "fail").threads(1).maxRequests(2).start()) {
            assertThat(slow.awaitDone(Duration.ofSeconds(10))).isTrue();
            assertThat(failing.awaitDone(Duration.ofSeconds(10))).isTrue();
            assertThat(slow.slowDowns()).as(slow.toString()).isEqualTo(3);
            assertThat(slow.errors()).isZero();
            assertThat(failing.errors()).isEqualTo(2);
            assertThat(failing.slowDowns()).isZero();
            assertThat(failing.recentErrors()).allMatch(e -> e.startsWith("500 InternalError"));
        } finally {
            fake.stop(0);
        }
    }
}
