package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.stack.LocalStack;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Regression for issue 10, item 1: {@code levee gateway --no-enforce} asked the limiter cluster for every
 * request and {@code --enforce} did not (picocli toggled the default-true option), so behind NGINX every
 * request was checked twice. The gateway runs here as a user starts it, in its own JVM from the command
 * line, in front of a real observer, limiters and S3 backend; the limiters' decision counters say
 * whether it checked.
 */
class GatewayEnforceFlagIT {

    static final Path DIR = Path.of("target", "it-logs", "enforce-flag");
    static Stack stack;

    @BeforeAll
    static void start() {
        stack = new Stack("factor: 2\ndefault: {rate: 10000, burst: 1000}\n", new LocalStack.Settings(2,
                Duration.ofSeconds(2), Duration.ofMillis(300), Duration.ofMillis(300), true,
                dev.levee.gateway.GatewayOptions.OnFailure.ALLOW));
        stack.direct.createBucket(b -> b.bucket("flags"));
    }

    @AfterAll
    static void stop() {
        stack.close();
    }

    @ParameterizedTest(name = "levee gateway {0} -> {1} limiter decisions for 10 GETs")
    @CsvSource(delimiter = '|', textBlock = """
            (no flag)    | 10
            --enforce    | 10
            --no-enforce | 0
            """)
    void theFlagDecidesWhetherTheGatewayAsksTheLimiters(String flag, int expected) throws Exception {
        int port = RoleProcess.freePort();
        List<String> args = new ArrayList<>(List.of("gateway", "--listen", "127.0.0.1:" + port,
                "--admin", "127.0.0.1:" + RoleProcess.freePort(),
                "--backend", "127.0.0.1:" + stack.s3.port(),
                "--observer", "127.0.0.1:" + stack.stack.observer().port(), "--log-target", "stderr"));
        if (!flag.startsWith("(")) {
            args.add(flag);
        }
        try (RoleProcess gw = RoleProcess.start(DIR, "gateway" + flag.replace(' ', '_'), args)) {
            gw.awaitOutput("levee gateway listening", Duration.ofSeconds(30));
            HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
            long before = decisions();
            for (int i = 0; i < 10; i++) {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + port + "/flags/key-" + i)).timeout(Duration.ofSeconds(10))
                        .build(), HttpResponse.BodyHandlers.ofString());
                assertThat(r.statusCode()).as("GET through the gateway").isIn(200, 403, 404);
            }
            assertThat(decisions() - before).as("limiter decisions for 10 GETs with %s", flag).isEqualTo(expected);
            assertThat(gw.output()).as("the start line says what the gateway does")
                    .contains("enforce=" + (expected > 0));
        }
    }

    /**
     * Sum of {@code levee_limiter_decisions_total} over every series the limiters' /metrics show (the
     * limiters of this in-process stack share one registry, so a series is counted once).
     */
    static long decisions() throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        java.util.Map<String, Long> series = new java.util.HashMap<>();
        for (var l : stack.stack.limiters()) {
            String body = http.send(HttpRequest.newBuilder(URI.create("http://" + l.address() + "/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
            for (String line : body.lines().toList()) {
                if (line.startsWith("levee_limiter_decisions_total{")) {
                    int space = line.lastIndexOf(' ');
                    series.put(line.substring(0, space), (long) Double.parseDouble(line.substring(space + 1)));
                }
            }
        }
        return series.values().stream().mapToLong(Long::longValue).sum();
    }
}
