package dev.levee.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code levee client} and its lease flags as a user types them (issue 23 item 2): the flags parse and validate, the
 * client starts with request leases on (the default, or {@code --leases}) — its quota file read, the lease meters
 * registered — and serves checks; with {@code --no-leases} it starts without any of it.
 */
class ClientLeasesStartTest {

    @TempDir
    Path dir;

    static ClientCommand parse(String... args) {
        CommandLine root = new CommandLine(Main.class);
        CommandLine.ParseResult parsed = root.parseArgs(args);
        return (ClientCommand) parsed.subcommand().commandSpec().userObject();
    }

    String metricsOf(String... leaseFlags) throws Exception {
        Path q = dir.resolve("quotas.yaml");
        Files.writeString(q, """
                default: {rate: 1000, burst: 100}
                resources:
                  hot:
                    quota: {rate: 5000, burst: 500}
                """);
        String[] base = {"client", "--listen", "127.0.0.1:0", "--observer", "127.0.0.1:1", "--warmup", "0",
                "--quotas", q.toString(), "--log-target", "stderr", "--log-level", "ERROR"};
        String[] args = java.util.stream.Stream.concat(java.util.Arrays.stream(base), java.util.Arrays.stream(leaseFlags))
                .toArray(String[]::new);
        ClientCommand cmd = parse(args);
        cmd.leases.settings(); // validates as call() does
        ClientCommand.Running running = cmd.start();
        try (HttpClient http = HttpClient.newHttpClient()) {
            int port = running.service().port();
            HttpResponse<Void> check = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
                    + "/v1/s3check")).header("X-Levee-Method", "GET").header("X-Levee-Host", "s3.local")
                    .header("X-Levee-Uri", "/hot/k").timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.discarding());
            assertThat(check.headers().firstValue("X-Levee-Result")).as("no limiter known: failed, as without leases")
                    .contains("failed");
            return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                    .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString()).body();
        } finally {
            running.stop().get().await(10, TimeUnit.SECONDS);
            running.vertx().close().await(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aClientWithLeasesStartsAndServes() throws Exception {
        String metrics = metricsOf("--leases", "--lease-threshold", "50", "--lease-window", "500ms");
        assertThat(metrics).contains("levee_client_lease_checks_total{key=\"hot\"} 0.0")
                .contains("levee_client_lease_admissions_total{result=\"admitted\"} 0.0")
                .contains("levee_client_lease_asks_total{result=\"granted\"} 0.0")
                .contains("levee_client_lease_keys");
    }

    @Test
    void leasesAreOnByDefault() throws Exception {
        assertThat(parse("client").leases.enabled).isTrue();
        assertThat(metricsOf()).contains("levee_client_lease_asks_total{result=\"quotas_differ\"} 0.0")
                .contains("levee_client_lease_keys");
    }

    @Test
    void withNoLeasesNothingOfItRuns() throws Exception {
        assertThat(metricsOf("--no-leases")).doesNotContain("levee_client_lease");
        assertThat(parse("client", "--no-leases").leases.enabled).isFalse();
    }
}
