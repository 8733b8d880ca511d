package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 22, item 4: one invalid (or oversized) value in etcd stopped every {@code levee limiter --etcd} and
 * {@code levee observer --etcd} from starting (exit 1). Both roles are started here as processes, from the command
 * line, over a real etcd that already holds bad values: they must stay up, name the key and field (log,
 * {@code /health} 503, metrics), serve the valid rest (docs/quotas.md "Invalid values in etcd"), keep a key's last
 * good value when a running role sees it go bad, and become ready by themselves once the values are fixed.
 */
class EtcdInvalidValueIT {

    @RegisterExtension
    static final ItFixtures IT = ItFixtures.withVertxAndEtcd();

    static final Path DIR = Path.of("target", "it-logs", "etcd-invalid");
    static final AtomicInteger PREFIXES = new AtomicInteger();

    final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    void put(String key, String value) throws Exception {
        IT.client().getKVClient().put(ByteSequence.from(key, StandardCharsets.UTF_8),
                ByteSequence.from(value, StandardCharsets.UTF_8)).get(10, TimeUnit.SECONDS);
    }

    HttpResponse<String> get(int port, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> check(int port, String resource) throws Exception {
        String body = "{\"resource\":\"" + resource + "\",\"key\":\"k\",\"operation\":\"GetObject\",\"g\":1}";
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/check"))
                .timeout(Duration.ofSeconds(5)).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    RoleProcess limiter(String prefix, String id, int port) {
        return RoleProcess.start(DIR, id, List.of("limiter", "--id", id, "--listen", "127.0.0.1:" + port,
                "--etcd", IT.etcd().endpoint(), "--etcd-prefix", prefix, "--etcd-max-value-size", "1KiB",
                "--warmup", "0", "--lease-ttl", "2s"));
    }

    RoleProcess observer(String prefix, String name, int port) {
        return RoleProcess.start(DIR, name, List.of("observer", "--listen", "127.0.0.1:" + port,
                "--etcd", IT.etcd().endpoint(), "--etcd-prefix", prefix, "--etcd-max-value-size", "1KiB"));
    }

    @Test
    void rolesStartOverABadAndAnOversizedBucketValueServeTheRestNameTheKeysAndRecoverWhenFixed() throws Exception {
        String prefix = "/levee-bad-" + PREFIXES.incrementAndGet() + "/";
        put(prefix + "factor", "2");
        put(prefix + "quotas/default", "{rate: 1000, burst: 100}");
        put(prefix + "resources/good", "quota: {rate: 5, burst: 1}");
        put(prefix + "resources/x", "quota: {rate: -5, burst: 1}");
        put(prefix + "resources/big", "quota: {rate: 3, burst: 1}\n#" + "z".repeat(2048) + "\n");
        int lp = RoleProcess.freePort();
        int op = RoleProcess.freePort();
        try (RoleProcess l = limiter(prefix, "bad-1", lp); RoleProcess o = observer(prefix, "bad-observer", op)) {
            l.awaitOutput("levee limiter bad-1 listening", Duration.ofSeconds(60));
            o.awaitOutput("levee observer listening", Duration.ofSeconds(60));

            // stays up and says which key is wrong, and why: /health, metrics, log
            for (int port : new int[] {lp, op}) {
                HttpResponse<String> h = get(port, "/health");
                assertThat(h.statusCode()).as(h.body()).isEqualTo(503);
                assertThat(h.body()).contains(prefix + "resources/x").contains("quota.rate")
                        .contains(prefix + "resources/big").contains("exceeds the limit of 1024 bytes")
                        .doesNotContain(prefix + "resources/good");
            }
            assertThat(get(lp, "/metrics").body()).contains("levee_config_invalid_keys{limiter=\"bad-1\"} 2.0")
                    .contains("levee_config_rejected_updates_total{limiter=\"bad-1\"} 2.0")
                    .contains("levee_config_usable{limiter=\"bad-1\"} 1.0");
            assertThat(get(op, "/metrics").body()).contains("levee_config_invalid_keys 2.0")
                    .contains("levee_config_rejected_updates_total 2.0");
            for (RoleProcess p : List.of(l, o)) {
                p.awaitOutput("etcd key " + prefix + "resources/x refused", Duration.ofSeconds(5));
                assertThat(p.output()).containsPattern("etcd key " + prefix + "resources/x refused at revision \\d+: .*"
                        + "quota\\.rate.*the bucket gets the fallback quotas");
                assertThat(p.output()).contains("etcd key " + prefix + "resources/big refused");
                assertThat(p.alive()).isTrue();
            }

            // serves with the valid rest: 'good' by its own quota, 'x' and 'big' by the fallback (default)
            assertThat(check(lp, "good").body()).contains("\"level\":\"resource\"").contains("\"rate\":5.0");
            assertThat(check(lp, "x").body()).contains("\"level\":\"default\"");
            assertThat(check(lp, "big").body()).contains("\"level\":\"default\"");
            // it joined the membership; the observer serves the list with etcd's factor
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() ->
                    assertThat(get(op, "/v1/limiters").body()).contains("\"id\":\"bad-1\"").contains("\"factor\":2"));

            // a running role that sees a good value go bad keeps that key's last good value
            put(prefix + "resources/good", "quota: {rate: 5, burst: -1}");
            await().atMost(Duration.ofSeconds(5)).untilAsserted(() ->
                    assertThat(get(lp, "/health").body()).contains(prefix + "resources/good").contains("quota.burst"));
            assertThat(check(lp, "good").body()).contains("\"level\":\"resource\"").contains("\"rate\":5.0");
            l.awaitOutput("its last good value stays in force", Duration.ofSeconds(5));

            // fixed: ready by itself, no restart
            long t0 = System.nanoTime();
            put(prefix + "resources/x", "quota: {rate: 7, burst: 1}");
            put(prefix + "resources/big", "quota: {rate: 3, burst: 1}");
            put(prefix + "resources/good", "quota: {rate: 6, burst: 1}");
            long[] readyMs = new long[2];
            for (int i = 0; i < 2; i++) {
                int port = i == 0 ? lp : op;
                await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10))
                        .until(() -> get(port, "/health").statusCode() == 200);
                readyMs[i] = (System.nanoTime() - t0) / 1_000_000;
            }
            System.out.printf("invalid etcd values: limiter ready %d ms, observer ready %d ms after the last fix was"
                    + " written (probe every 10 ms)%n", readyMs[0], readyMs[1]);
            assertThat(check(lp, "x").body()).contains("\"level\":\"resource\"").contains("\"rate\":7.0");
            assertThat(check(lp, "good").body()).contains("\"rate\":6.0");
            assertThat(get(lp, "/metrics").body()).contains("levee_config_invalid_keys{limiter=\"bad-1\"} 0.0");
            l.awaitOutput("etcd key " + prefix + "resources/x valid again", Duration.ofSeconds(5));
            assertThat(l.alive()).isTrue();
            assertThat(o.alive()).isTrue();
        }
    }

    @Test
    void aBadDefaultQuotaAtStartLeavesNoConfigurationTheLimiterStaysUpOutOfTheMembershipAndJoinsWhenFixed()
            throws Exception {
        String prefix = "/levee-bad-" + PREFIXES.incrementAndGet() + "/";
        put(prefix + "factor", "2");
        put(prefix + "quotas/default", "{rate: 1000, burst: many}");
        int lp = RoleProcess.freePort();
        int op = RoleProcess.freePort();
        try (RoleProcess l = limiter(prefix, "nodefault-1", lp); RoleProcess o = observer(prefix, "nodefault-observer", op)) {
            l.awaitOutput("levee limiter nodefault-1 listening", Duration.ofSeconds(60));
            o.awaitOutput("levee observer listening", Duration.ofSeconds(60));
            HttpResponse<String> h = get(lp, "/health");
            assertThat(h.statusCode()).isEqualTo(503);
            assertThat(h.body()).contains("no configuration can be built, not serving").contains(prefix + "quotas/default")
                    .contains("burst");
            assertThat(get(lp, "/metrics").body()).contains("levee_config_usable{limiter=\"nodefault-1\"} 0.0");
            assertThat(l.output()).contains("not joining the membership until it is fixed");
            // the factor is valid: the observer serves its (empty) list, /health names the key
            assertThat(get(op, "/health").body()).contains(prefix + "quotas/default");
            assertThat(get(op, "/v1/limiters").body()).contains("\"limiters\":[]").contains("\"factor\":2");
            // a stray check (a client's stale list) is refused, never decided on a guessed quota
            assertThat(check(lp, "any").statusCode()).isEqualTo(429);

            long t0 = System.nanoTime();
            put(prefix + "quotas/default", "{rate: 1000, burst: 100}");
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10))
                    .until(() -> get(op, "/v1/limiters").body().contains("\"id\":\"nodefault-1\""));
            long joinedMs = (System.nanoTime() - t0) / 1_000_000;
            await().atMost(Duration.ofSeconds(5)).until(() -> get(lp, "/health").statusCode() == 200);
            System.out.printf("invalid default quota: limiter listed by the observer %d ms after the fix was written%n",
                    joinedMs);
            assertThat(check(lp, "any").body()).contains("\"level\":\"default\"").contains("\"rate\":1000.0");
        }
    }

    @Test
    void aBadFactorAtStartIsNeverHandedToClients() throws Exception {
        String prefix = "/levee-bad-" + PREFIXES.incrementAndGet() + "/";
        put(prefix + "factor", "0");
        put(prefix + "quotas/default", "{rate: 1000, burst: 100}");
        int op = RoleProcess.freePort();
        try (RoleProcess o = observer(prefix, "nofactor-observer", op)) {
            o.awaitOutput("levee observer listening", Duration.ofSeconds(60));
            HttpResponse<String> list = get(op, "/v1/limiters");
            assertThat(list.statusCode()).isEqualTo(503);
            assertThat(list.body()).contains("no group factor is known").contains(prefix + "factor");
            put(prefix + "factor", "3");
            await().atMost(Duration.ofSeconds(10)).until(() -> get(op, "/v1/limiters").statusCode() == 200);
            assertThat(get(op, "/v1/limiters").body()).contains("\"factor\":3");
            await().atMost(Duration.ofSeconds(5)).until(() -> get(op, "/health").statusCode() == 200);
        }
    }
}
