package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Issue 22, item 8: a restarted limiter began with empty GCRA state and nothing said so (0.1 r/s burst 5: a key that
 * had spent its burst got a fresh one after the restart, silently). The limiter, started as a process from the command
 * line, now says at start that its state is empty, and counts in {@code levee_limiter_state_lost_keys_total} the keys
 * first seen within one refill horizon of its start (whose earlier state, if any, was lost).
 */
class LimiterRestartStateIT {

    static final Path DIR = Path.of("target", "it-logs", "limiter-restart");
    static final String START_LINE = "limiter r1 starts with empty GCRA state";

    final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    HttpResponse<String> check(int port, String resource) throws Exception {
        String body = "{\"resource\":\"" + resource + "\",\"key\":\"k\",\"operation\":\"GetObject\",\"g\":1}";
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/check"))
                .timeout(Duration.ofSeconds(5)).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    String metrics(int port) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString()).body();
    }

    RoleProcess limiter(Path quotas, int port, int observerPort, String name) {
        return RoleProcess.start(DIR, name, List.of("limiter", "--id", "r1", "--listen", "127.0.0.1:" + port,
                "--observer", "127.0.0.1:" + observerPort, "--quotas", quotas.toString(), "--drain-grace", "0"));
    }

    @Test
    void aRestartedLimiterSaysItsStateIsEmptyAndCountsTheKeysWhoseStateItLost() throws Exception {
        Files.createDirectories(DIR);
        Path quotas = DIR.resolve("quotas.yaml").toAbsolutePath();
        Files.writeString(quotas, "default: {rate: 0.1, burst: 5}\n");
        int port = RoleProcess.freePort();
        int observerPort = RoleProcess.freePort(); // no observer: heartbeats fail, which does not matter here
        try (RoleProcess first = limiter(quotas, port, observerPort, "first")) {
            first.awaitOutput("levee limiter r1 listening", Duration.ofSeconds(60));
            assertThat(first.output()).contains(START_LINE);
            int admitted = 0;
            for (int i = 0; i < 10; i++) {
                admitted += check(port, "spent").statusCode() == 200 ? 1 : 0;
            }
            assertThat(admitted).as("the burst, then refusals").isEqualTo(5);
            check(port, "other");
            assertThat(metrics(port)).as("warm-up keys are not counted")
                    .contains("levee_limiter_state_lost_keys_total{limiter=\"r1\"} 2.0");
            first.signal("TERM");
            assertThat(first.awaitExit(Duration.ofSeconds(20))).isEqualTo(143);
        }
        try (RoleProcess second = limiter(quotas, port, observerPort, "second")) {
            second.awaitOutput("levee limiter r1 listening", Duration.ofSeconds(60));
            assertThat(second.output()).contains(START_LINE).contains("levee_limiter_state_lost_keys_total");
            assertThat(metrics(port)).contains("levee_limiter_state_lost_keys_total{limiter=\"r1\"} 0.0");
            // the key had spent its burst 10 s ago (a debt of ~40 s at 0.1 r/s): the new incarnation admits it again
            // (the known, bounded loss), and now counts it
            assertThat(check(port, "spent").statusCode()).isEqualTo(200);
            assertThat(metrics(port)).contains("levee_limiter_state_lost_keys_total{limiter=\"r1\"} 1.0");
        }
    }
}
