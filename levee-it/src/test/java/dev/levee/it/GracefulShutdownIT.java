package dev.levee.it;

import static dev.levee.it.ItFixtures.done;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.levee.config.QuotaConfigLoader;
import dev.levee.config.StaticQuotaSource;
import dev.levee.limiter.LimiterService;
import dev.levee.core.Member;
import dev.levee.core.MembershipView;
import dev.levee.observer.ObserverService;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import io.vertx.core.Future;
import io.vertx.core.http.HttpServer;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A role that is stopped (SIGTERM) stops accepting, answers what is in flight and then closes
 * (issue 10, defect 4); a limiter leaves the membership first.
 */
class GracefulShutdownIT {

    @RegisterExtension
    static final ItFixtures IT = ItFixtures.withVertx();

    @TempDir
    Path dir;

    static final String ACCEPTED = "{\"result\":\"accepted\",\"level\":\"default\",\"limitKey\":\"k\",\"remaining\":1,"
            + "\"retryAfter\":0,\"limiter\":\"slow\"}";

    /** A limiter stand-in that answers every check after {@code delayMs}; counts checks received. */
    static HttpServer slowLimiter(long delayMs, AtomicInteger requests) throws Exception {
        return done(IT.vertx().createHttpServer().requestHandler(req -> req.body().onSuccess(b -> {
            String body;
            if (req.path().equals("/v1/checks")) {
                int n = new io.vertx.core.json.JsonObject(b).getJsonArray("checks").size();
                requests.addAndGet(n); // checks, not requests: a client sends the checks of one event-loop turn together
                body = "{\"decisions\":[" + String.join(",", java.util.Collections.nCopies(n, ACCEPTED)) + "]}";
            } else {
                requests.incrementAndGet();
                body = ACCEPTED;
            }
            IT.vertx().setTimer(delayMs, t -> req.response().putHeader("Content-Type", "application/json").end(body));
        })).listen(0, "127.0.0.1"));
    }

    Process startClientProcess(int port, int observerPort, String... extra) throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(List.of(java, "-cp", System.getProperty("java.class.path"),
                "dev.levee.cli.Main", "client", "--listen", "127.0.0.1:" + port, "--observer", "127.0.0.1:" + observerPort,
                "--check-timeout", "2s", "--log-target", "file:" + dir.resolve("client.log")));
        cmd.addAll(List.of(extra));
        return new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("client.out").toFile())).start();
    }

    @Test
    void clientProcessSigtermedWithSixteenChecksInFlightAnswersEveryOne() throws Exception {
        AtomicInteger received = new AtomicInteger();
        HttpServer limiter = slowLimiter(500, received);
        MembershipView view = new MembershipView(1, 1, List.of(new Member("slow", "127.0.0.1:" + limiter.actualPort())));
        ObserverService observer = done(ObserverService.start(IT.vertx(), new HostPort("127.0.0.1", 0), () -> view,
                () -> true, Metrics.newRegistry()));
        int port = RoleProcess.freePort();
        Process p = startClientProcess(port, observer.port());
        try {
            HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
            HttpRequest health = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health")).build();
            await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() ->
                    http.send(health, HttpResponse.BodyHandlers.discarding()).statusCode() == 200);
            List<CompletableFuture<Integer>> checks = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                HttpRequest check = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/s3check"))
                        .header("X-Levee-Method", "GET").header("X-Levee-Host", "127.0.0.1")
                        .header("X-Levee-Uri", "/bucket/k" + i).timeout(Duration.ofSeconds(20)).build();
                checks.add(http.sendAsync(check, HttpResponse.BodyHandlers.discarding())
                        .thenApply(HttpResponse::statusCode).exceptionally(e -> -1));
            }
            // checks reach the limiter (in up to --limiter-in-flight 4 requests, one turn's checks together); the others wait
            await().atMost(Duration.ofSeconds(10)).until(() -> received.get() >= 4);
            long sigterm = System.nanoTime();
            p.destroy(); // SIGTERM
            List<Integer> statuses = new ArrayList<>();
            for (CompletableFuture<Integer> c : checks) {
                statuses.add(c.get(30, TimeUnit.SECONDS));
            }
            assertThat(p.waitFor(20, TimeUnit.SECONDS)).isTrue();
            long answered = statuses.stream().filter(s -> s == 200 || s == 429).count();
            System.out.printf("client SIGTERM with 16 checks in flight: %d answered, %d without an answer;"
                    + " exited %d after %.0f ms%n", answered, 16 - answered, p.exitValue(), (System.nanoTime() - sigterm) / 1e6);
            assertThat(statuses).as("status of each in-flight check (-1: no answer)").containsOnly(200);
            assertThat(p.exitValue()).isEqualTo(143);
            assertThat(http.sendAsync(health, HttpResponse.BodyHandlers.discarding()).handle((r, e) -> e)
                    .get(10, TimeUnit.SECONDS)).as("new connections after the stop").isNotNull();
        } finally {
            p.destroyForcibly();
            done(observer.stop());
            done(limiter.close());
        }
    }

    @Test
    @SuppressWarnings("try") // the registration is held for the block, never read; the load stops before its block ends
    void limiterProcessSigtermedUnderClientLoadFailsNoCheck() throws Exception {
        try (dev.levee.stack.EmbeddedEtcd etcd = dev.levee.stack.EmbeddedEtcd.start();
             io.etcd.jetcd.Client etcdClient = dev.levee.etcd.Etcd.client(List.of(etcd.endpoint()))) {
            String prefix = "/levee-term/";
            String yaml = "factor: 2\ndefault: {rate: 100000, burst: 10000}\n";
            Path quotas = dir.resolve("quotas.yaml");
            java.nio.file.Files.writeString(quotas, yaml);
            assertThat(dev.levee.cli.Main.run("quota", "import", quotas.toString(), "--etcd", etcd.endpoint(),
                    "--etcd-prefix", prefix)).isZero();
            LimiterService stays = done(LimiterService.start(IT.vertx(), new LimiterService.Options("stays",
                    new HostPort("127.0.0.1", 0), null, null, Duration.ofSeconds(1), 10_000),
                    new StaticQuotaSource(QuotaConfigLoader.parse(yaml, "test quotas")), SystemTicker.INSTANCE,
                    Metrics.newRegistry()));
            int port = RoleProcess.freePort();
            String javaBin = ProcessHandle.current().info().command().orElse("java");
            Process p = new ProcessBuilder(javaBin, "-cp", System.getProperty("java.class.path"), "dev.levee.cli.Main",
                    "limiter", "--id", "term-1", "--listen", "127.0.0.1:" + port, "--etcd", etcd.endpoint(),
                    "--etcd-prefix", prefix, "--log-target", "file:" + dir.resolve("limiter.log"))
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("limiter.out").toFile())).start();
            try (dev.levee.etcd.EtcdRegistration reg = dev.levee.etcd.EtcdRegistration.start(etcdClient, prefix, "stays",
                    stays.address().toString(), 5);
                 dev.levee.etcd.EtcdMembership membership = dev.levee.etcd.EtcdMembership.start(etcdClient, prefix,
                         () -> 2, SystemTicker.INSTANCE)) {
                ObserverService observer = done(ObserverService.start(IT.vertx(), new HostPort("127.0.0.1", 0), membership,
                        () -> true, Metrics.newRegistry()));
                var registry = Metrics.newRegistry();
                dev.levee.client.LeveeClient client = done(dev.levee.client.LeveeClient.start(IT.vertx(),
                        dev.levee.client.LeveeClient.Options.builder(new HostPort("127.0.0.1", observer.port()))
                                .refresh(Duration.ofSeconds(1)).checkTimeout(Duration.ofMillis(250))
                                .backoff(Duration.ofSeconds(2)).build(),
                        SystemTicker.INSTANCE, registry));
                try {
                    await().atMost(Duration.ofSeconds(60)).until(() -> client.view().limiters().size() == 2);
                    try (MembershipGapIT.Checks checks = new MembershipGapIT.Checks(client)) {
                        await().atMost(Duration.ofSeconds(10)).until(() -> checks.accepted.get() > 200);
                        long sigterm = System.nanoTime();
                        p.destroy(); // SIGTERM
                        await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(5))
                                .until(() -> membership.view().limiters().size() == 1);
                        long leftAt = System.nanoTime();
                        assertThat(p.waitFor(20, TimeUnit.SECONDS)).isTrue();
                        long exitedAt = System.nanoTime();
                        await().pollDelay(Duration.ofMillis(300)).until(() -> true); // load goes on past the exit
                        checks.close();
                        String metrics = Metrics.scrape(registry);
                        System.out.printf("limiter SIGTERM under client load: left etcd after %.0f ms, exited %d after"
                                        + " %.0f ms; %d accepted, %d failed; client saw limiter failures: %s%n",
                                (leftAt - sigterm) / 1e6, p.exitValue(), (exitedAt - sigterm) / 1e6, checks.accepted.get(),
                                checks.failed.get(), metrics.lines().filter(l -> l.contains("limiter_failure")).toList());
                        assertThat(checks.failed.get()).as("checks that failed").isZero();
                        assertThat(metrics).as("checks that had to fail over").doesNotContain("result=\"limiter_failure\"");
                        assertThat(exitedAt - leftAt).as("answering after leaving, ns")
                                .isGreaterThan(TimeUnit.MILLISECONDS.toNanos(1500));
                        assertThat(p.exitValue()).isEqualTo(143);
                    }
                } finally {
                    done(client.stop());
                    done(observer.stop());
                }
            } finally {
                p.destroyForcibly();
                done(stays.kill());
            }
        }
    }

    @Test
    void limiterStoppedLeavesTheMembershipFirstAndAnswersACheckInFlight() throws Exception {
        ObserverService observer = done(ObserverService.start(IT.vertx(), new ObserverService.Options(
                new HostPort("127.0.0.1", 0), Duration.ofSeconds(3), 1, 1024), SystemTicker.INSTANCE, Metrics.newRegistry()));
        HostPort obs = new HostPort("127.0.0.1", observer.port());
        LimiterService l = done(LimiterService.start(IT.vertx(), new LimiterService.Options("leaving",
                new HostPort("127.0.0.1", 0), null, obs, Duration.ofMillis(200), 1000),
                new StaticQuotaSource(QuotaConfigLoader.parse("default: {rate: 1000, burst: 100}\n", "test quotas")),
                SystemTicker.INSTANCE, Metrics.newRegistry()));
        try {
            await().atMost(Duration.ofSeconds(5)).until(() -> observer.membership().view().limiters().size() == 1);
            byte[] body = "{\"resource\":\"b\",\"key\":\"k\",\"operation\":\"GetObject\",\"g\":1}".getBytes(StandardCharsets.UTF_8);
            try (Socket s = new Socket(l.address().host(), l.address().port())) {
                s.setSoTimeout(10_000);
                OutputStream out = s.getOutputStream();
                out.write(("POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                        + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                out.flush();
                Future<Void> stopped = l.stop(); // the check is in flight: its head is sent, its body not yet
                await().atMost(Duration.ofSeconds(5)).until(() -> observer.membership().view().limiters().isEmpty());
                out.write(body);
                out.flush();
                InputStream in = s.getInputStream();
                String answer = new String(in.readNBytes(12), StandardCharsets.US_ASCII);
                assertThat(answer).as("answer to the check in flight").isEqualTo("HTTP/1.1 200");
                done(stopped);
            }
            assertThat(observer.membership().view().limiters()).isEmpty();
        } finally {
            done(observer.stop());
        }
    }
}
