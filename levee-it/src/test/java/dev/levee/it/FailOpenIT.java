package dev.levee.it;

import static dev.levee.it.ItFixtures.done;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.levee.core.Member;
import dev.levee.core.MembershipView;
import dev.levee.observer.ObserverService;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Roles started as a user types them (issue 13 items 2 and 3): each says in one line where its log goes, and
 * a role that fails open — a client or gateway with no limiter, an unreachable observer — or a limiter whose
 * heartbeats reach no observer says so: a WARN at start and at most once per {@code --warn-interval} while it
 * lasts, {@code /health} 503, a metric; and stops saying so once it is over.
 */
class FailOpenIT {

    @RegisterExtension
    static final ItFixtures IT = ItFixtures.withVertx();

    @TempDir
    Path dir;

    final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    HttpResponse<String> get(int port, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(5))
                .build(), HttpResponse.BodyHandlers.ofString());
    }

    static long count(String text, String what) {
        return text.lines().filter(l -> l.contains(what)).count();
    }

    @Test
    void observerStartedWithNoLogFlagsSaysInOneLineWhereItsLogGoes() throws Exception {
        int port = RoleProcess.freePort();
        try (RoleProcess p = RoleProcess.start(dir, "observer", List.of("observer", "--listen", "127.0.0.1:" + port))) {
            p.awaitOutput("listening", Duration.ofSeconds(60));
            // standard error is a file here: auto gives RFC 5424 lines on it, and says so and why
            assertThat(count(p.output(), "levee-observer: log to ")).isEqualTo(1);
            assertThat(p.output()).contains(System.getenv("JOURNAL_STREAM") != null
                    ? "levee-observer: log to the systemd journal" // this test itself runs under systemd
                    : "levee-observer: log to RFC 5424 lines on standard error at INFO"
                            + " (standard error is redirected; --log-target to change)");
            // and in that one form, the start lines too: a program reading standard error meets no plain line
            assertThat(p.output().lines()).as(p.output()).isNotEmpty().allMatch(l -> System.getenv("JOURNAL_STREAM") != null
                    ? l.matches("^<[0-7]>\\S+: .*") : l.matches("^<\\d{1,3}>1 \\S+ \\S+ levee-observer \\d+ - - .*"));
        }
    }

    @Test
    void clientWithNoObserverWarnsAtStartAndOncePerIntervalIsNotReadyAndRecoversOnceALimiterIsListed() throws Exception {
        int port = RoleProcess.freePort();
        int observerPort = RoleProcess.freePort();
        try (RoleProcess p = RoleProcess.start(dir, "client", List.of("client", "--listen", "127.0.0.1:" + port,
                "--observer", "127.0.0.1:" + observerPort, "--refresh", "200ms", "--warn-interval", "1s",
                // no warm-up: its self-checks against the unreachable limiter would hold /health at 503 for 3+ s
                "--warmup", "0"))) {
            p.awaitOutput("levee client listening", Duration.ofSeconds(60));
            assertThat(p.output()).contains("levee-client: log to ");
            long t0 = System.nanoTime();
            p.awaitOutput("unreachable and no limiter known", Duration.ofSeconds(5));
            HttpResponse<String> health = get(port, "/health");
            assertThat(health.statusCode()).isEqualTo(503);
            assertThat(health.body()).contains("\"failOpen\":true").contains("no limiters known");
            assertThat(get(port, "/metrics").body()).contains("levee_client_fail_open 1.0")
                    .contains("levee_client_observer_unreachable 1.0");
            // refreshed every 200 ms, warned at most once a second: about 4 in 3.5 s, never one per refresh
            await().pollDelay(Duration.ofMillis(3500)).atMost(Duration.ofSeconds(5)).until(() -> true);
            double s = (System.nanoTime() - t0) / 1e9;
            long warnings = count(p.output(), "no limiter known: every check answers 'failed'");
            System.out.printf("client failing open for %.1f s with --warn-interval 1s, --refresh 200ms: %d warnings%n",
                    s, warnings);
            assertThat(warnings).isBetween(2L, (long) Math.ceil(s) + 1);
            // an observer with one limiter appears: ready, the gauges drop, and the end is said once
            MembershipView view = new MembershipView(1, 1, List.of(new Member("l1", "127.0.0.1:9")));
            ObserverService observer = done(ObserverService.start(IT.vertx(), new HostPort("127.0.0.1", observerPort),
                    () -> view, () -> true, Metrics.newRegistry()));
            try {
                await().atMost(Duration.ofSeconds(5)).until(() -> get(port, "/health").statusCode() == 200);
                assertThat(get(port, "/metrics").body()).contains("levee_client_fail_open 0.0")
                        .contains("levee_client_observer_unreachable 0.0");
                p.awaitOutput("checks decided by limiters again", Duration.ofSeconds(5));
                long after = count(p.output(), "no limiter known");
                await().pollDelay(Duration.ofMillis(1500)).atMost(Duration.ofSeconds(3)).until(() -> true);
                assertThat(count(p.output(), "no limiter known")).as("no warning once it is over").isEqualTo(after);
            } finally {
                done(observer.stop());
            }
        }
    }

    @Test
    void limiterWhoseHeartbeatsReachNoObserverWarnsIsNotReadyAndRecovers() throws Exception {
        int port = RoleProcess.freePort();
        int observerPort = RoleProcess.freePort();
        try (RoleProcess p = RoleProcess.start(dir, "limiter", List.of("limiter", "--id", "lonely", "--listen",
                "127.0.0.1:" + port, "--observer", "127.0.0.1:" + observerPort, "--heartbeat", "200ms", "--warmup", "0",
                "--warn-interval", "1s"))) {
            p.awaitOutput("levee limiter lonely listening", Duration.ofSeconds(60));
            p.awaitOutput("do not reach the observer", Duration.ofSeconds(5));
            await().atMost(Duration.ofSeconds(5)).until(() -> get(port, "/health").statusCode() == 503);
            assertThat(get(port, "/health").body()).contains("observer unreachable");
            assertThat(get(port, "/metrics").body()).contains("levee_limiter_observer_unreachable{limiter=\"lonely\"} 1.0");
            await().pollDelay(Duration.ofMillis(2500)).atMost(Duration.ofSeconds(4)).until(() -> true);
            long warnings = count(p.output(), "do not reach the observer");
            System.out.printf("limiter without observer, heartbeat 200 ms, --warn-interval 1s: %d warnings in ~3 s%n", warnings);
            assertThat(warnings).isBetween(2L, 5L);
            ObserverService observer = done(ObserverService.start(IT.vertx(), new ObserverService.Options(
                    new HostPort("127.0.0.1", observerPort), Duration.ofSeconds(3), 1, 1024),
                    dev.levee.runtime.SystemTicker.INSTANCE, Metrics.newRegistry()));
            try {
                await().atMost(Duration.ofSeconds(5)).until(() -> get(port, "/health").statusCode() == 200);
                assertThat(get(port, "/metrics").body()).contains("levee_limiter_observer_unreachable{limiter=\"lonely\"} 0.0");
                p.awaitOutput("reach the observer 127.0.0.1:" + observerPort + " again", Duration.ofSeconds(5));
            } finally {
                done(observer.stop());
            }
        }
    }

    @Test
    void enforcingGatewayWithNoLimiterWarnsAndItsReadinessSaysFailingOpen() throws Exception {
        int port = RoleProcess.freePort();
        int admin = RoleProcess.freePort();
        Path token = Files.writeString(dir.resolve("token"), "0123456789abcdef0123\n");
        try (RoleProcess p = RoleProcess.start(dir, "gateway", List.of("gateway", "--listen", "127.0.0.1:" + port,
                "--admin", "127.0.0.1:" + admin, "--backend", "127.0.0.1:9", "--observer", "127.0.0.1:" + RoleProcess.freePort(),
                "--health-token-file", token.toString(), "--warn-interval", "1s"))) {
            p.awaitOutput("levee gateway listening", Duration.ofSeconds(60));
            assertThat(p.output()).contains("levee-gateway: log to ");
            p.awaitOutput("unreachable and no limiter known", Duration.ofSeconds(5));
            HttpResponse<String> ready = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + admin + "/health/ready"))
                    .header("Authorization", "Bearer 0123456789abcdef0123").build(), HttpResponse.BodyHandlers.ofString());
            assertThat(ready.statusCode()).isEqualTo(503);
            assertThat(ready.body()).contains("\"status\":\"failing_open\"");
            assertThat(get(admin, "/metrics").body()).contains("levee_client_fail_open 1.0");
        }
    }
}
