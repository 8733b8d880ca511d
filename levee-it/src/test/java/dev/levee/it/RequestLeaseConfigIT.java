package dev.levee.it;

import static dev.levee.it.ItFixtures.done;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.levee.config.QuotaConfigLoader;
import dev.levee.core.Member;
import dev.levee.core.MembershipView;
import dev.levee.etcd.EtcdQuotaSource;
import dev.levee.observer.ObserverService;
import dev.levee.quota.QuotaConfig;
import dev.levee.roles.RoleAssembler;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import io.etcd.jetcd.ByteSequence;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 23 item 2, what is built so far: the quota file's and etcd's {@code lease} through what users type — the
 * quota commands into etcd and back, a bad value named by file or etcd key, {@code levee quota explain} from etcd —
 * and {@code levee client --leases} reading the quotas in etcd as the limiters do and detecting a hot key, while
 * with {@code --no-leases} the client opens no quota source at all; leases on by default, and a client whose quotas
 * differ from its limiters' leasing nothing.
 */
class RequestLeaseConfigIT {

    @RegisterExtension
    static final ItFixtures IT = ItFixtures.withVertxAndEtcd();

    static final Path DIR = Path.of("target", "it-logs", "request-lease-config");
    static final AtomicInteger PREFIXES = new AtomicInteger();

    @TempDir
    Path dir;

    final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    static String prefix() {
        return "/lease-it-" + PREFIXES.incrementAndGet();
    }

    void put(String key, String value) throws Exception {
        IT.client().getKVClient().put(ByteSequence.from(key, StandardCharsets.UTF_8),
                ByteSequence.from(value, StandardCharsets.UTF_8)).get(10, TimeUnit.SECONDS);
    }

    static final String QUOTAS = """
            factor: 2
            lease: false
            default: {rate: 1000, burst: 100}
            resources:
              hot:
                quota: {rate: 5000, burst: 500, lease: true}
              audit:
                quota: {rate: 10, burst: 1}
            """;

    @Test
    void theLeaseFieldGoesIntoEtcdAndBackAndExplainReadsIt() throws Exception {
        String p = prefix();
        String etcd = IT.etcd().endpoint();
        Path file = Files.writeString(dir.resolve("q.yaml"), QUOTAS);
        QuotaExplainIT.Run imported = QuotaExplainIT.run("quota", "import", file.toString(), "--etcd", etcd, "--etcd-prefix", p);
        assertThat(imported.status()).as(imported.err()).isZero();

        QuotaExplainIT.Run get = QuotaExplainIT.run("quota", "get", "--etcd", etcd, "--etcd-prefix", p);
        assertThat(get.out()).contains("# " + p + "/lease\nfalse\n").contains("lease: true");
        QuotaExplainIT.Run exported = QuotaExplainIT.run("quota", "export", "--etcd", etcd, "--etcd-prefix", p);
        assertThat(exported.status()).as(exported.err()).isZero();
        QuotaConfig back = QuotaConfigLoader.parse(exported.out(), "export");
        assertThat(back).isEqualTo(QuotaConfigLoader.load(file));
        assertThat(back.defaultLease()).isFalse();

        QuotaExplainIT.Run hot = QuotaExplainIT.run("quota", "explain", "--etcd", etcd, "--etcd-prefix", p,
                "--lease-threshold", "40", "GET", "s3://hot/k");
        assertThat(hot.status()).as(hot.err()).isZero();
        assertThat(hot.out()).contains("lease       eligible: lease: true on the matched quota\n"
                + "            leased when hot: above 40 req/s at a levee client\n");
        assertThat(QuotaExplainIT.run("quota", "explain", "--etcd", etcd, "--etcd-prefix", p, "GET", "s3://audit/k")
                .out()).contains("lease       never: top-level lease: false\n");

        // a bucket's value with a bad lease is refused before etcd is written, naming the file and the field
        Path bad = Files.writeString(dir.resolve("audit.yaml"), "quota: {rate: 10, burst: 1, lease: maybe}\n");
        QuotaExplainIT.Run set = QuotaExplainIT.run("quota", "set", "audit", bad.toString(), "--etcd", etcd, "--etcd-prefix", p);
        assertThat(set.status()).isNotZero();
        assertThat(set.err()).contains(bad.toString()).contains("quota.lease: expected true or false").contains("'maybe'")
                .doesNotContain("\tat ");
        assertThat(QuotaExplainIT.run("quota", "get", "audit", "--etcd", etcd, "--etcd-prefix", p).out())
                .doesNotContain("maybe");
    }

    @Test
    void aBadLeaseKeyInEtcdIsNamedStopsNoRoleAndAGoodOneAppliesLive() throws Exception {
        String p = prefix();
        put(p + "/quotas/default", "{rate: 1000, burst: 100}");
        put(p + "/lease", "maybe");
        try (EtcdQuotaSource source = RoleAssembler.etcdQuotaSource(IT.client(), p, 64 * 1024,
                dev.levee.runtime.SystemTicker.INSTANCE)) {
            assertThat(source.usable()).as("not a key every decision needs").isTrue();
            assertThat(source.invalidKeys()).containsOnlyKeys(p + "/lease");
            assertThat(source.invalidKeys().get(p + "/lease")).contains("expected true or false").contains("'maybe'");
            assertThat(source.current().defaultLease()).as("the default meanwhile").isTrue();

            put(p + "/lease", "false");
            await().atMost(Duration.ofSeconds(10)).until(() -> !source.current().defaultLease());
            assertThat(source.invalidKeys()).isEmpty();
            put(p + "/lease", "yes");
            await().atMost(Duration.ofSeconds(10)).until(() -> !source.invalidKeys().isEmpty());
            assertThat(source.current().defaultLease()).as("the last good value stays").isFalse();
        }
        QuotaExplainIT.Run explain = QuotaExplainIT.run("quota", "explain", "--etcd", IT.etcd().endpoint(),
                "--etcd-prefix", p, "GET", "s3://b/k");
        assertThat(explain.status()).isNotZero();
        assertThat(explain.err()).contains(p + "/lease").contains("got 'yes' (read as a boolean)").doesNotContain("\tat ");
    }

    @Test
    void aClientWithLeasesReadsTheQuotasInEtcdAndDetectsAHotKey() throws Exception {
        String p = prefix();
        put(p + "/quotas/default", "{rate: 1000, burst: 100}");
        put(p + "/resources/hot", "quota: {rate: 5000, burst: 500}");
        put(p + "/resources/audit", "quota: {rate: 10, burst: 1, lease: false}");
        int observerPort = RoleProcess.freePort();
        int port = RoleProcess.freePort();
        // one limiter listed where nothing listens: every check is asked of it and fails; detection runs before
        MembershipView view = new MembershipView(1, 1, List.of(new Member("l1", "127.0.0.1:9")));
        ObserverService observer = done(ObserverService.start(IT.vertx(), new HostPort("127.0.0.1", observerPort),
                () -> view, () -> true, Metrics.newRegistry()));
        try (RoleProcess client = RoleProcess.start(DIR, "client-leases", List.of("client", "--listen", "127.0.0.1:" + port,
                "--observer", "127.0.0.1:" + observerPort, "--warmup", "0", "--leases", "--lease-threshold", "20",
                "--etcd", IT.etcd().endpoint(), "--etcd-prefix", p))) {
            client.awaitOutput("levee client listening", Duration.ofSeconds(60));
            for (int i = 0; i < 200; i++) {
                check(port, "/hot/k" + i);
            }
            for (int i = 0; i < 50; i++) {
                check(port, "/audit/k");
            }
            client.awaitOutput("lease: key resource:hot is hot", Duration.ofSeconds(10));
            String metrics = get(port, "/metrics");
            assertThat(metrics).contains("levee_client_lease_checks_total{key=\"not_eligible\"} 50.0");
            assertThat(client.output()).doesNotContain("resource:audit is hot");
        } finally {
            done(observer.stop());
        }
    }

    /**
     * Leases on by default (docs/decisions.md, "Leases and batches on by default"): a {@code levee client} typed with
     * no lease flag leases from limiters that read the quotas it reads, and from limiters whose quotas for the bucket
     * differ from its own — here a prefix entry it does not know, with the bucket's quota otherwise the same, so its
     * grants would have passed every other check — it leases nothing: {@code quotas_differ}, a WARN, every check to a
     * limiter.
     */
    @Test
    void byDefaultAClientLeasesOnlyFromLimitersWithItsQuotas() throws Exception {
        String limiterQuotas = """
                factor: 1
                default: {rate: 1000, burst: 100}
                resources:
                  hot:
                    quota: {rate: 5000, burst: 500}
                    prefixes:
                      - {prefix: "audit/", quota: {rate: 5, burst: 1}}
                """;
        Path same = dir.resolve("same.yaml");
        Files.writeString(same, limiterQuotas);
        Path other = dir.resolve("other.yaml");
        Files.writeString(other, limiterQuotas.replace("    prefixes:\n      - {prefix: \"audit/\", quota: {rate: 5, burst: 1}}\n", ""));
        assertThat(Files.readString(other)).doesNotContain("audit");
        try (dev.levee.stack.LocalStack stack = dev.levee.stack.LocalStack.start(1,
                new dev.levee.config.StaticQuotaSource(QuotaConfigLoader.parse(limiterQuotas, "limiter quotas")),
                new dev.levee.stack.LocalStack.Settings(1, Duration.ofSeconds(2), Duration.ofMillis(500),
                        Duration.ofMillis(500), false, dev.levee.gateway.GatewayOptions.OnFailure.ALLOW),
                Metrics.newRegistry())) {
            String observer = "127.0.0.1:" + stack.observer().port();
            String differ = leaseAsks("client-other-quotas", observer, other,
                    "quotas_differ: \"the limiter resolves this bucket with other quotas than this client");
            assertThat(differ).contains("levee_client_lease_asks_total{result=\"quotas_differ\"}")
                    .doesNotContain("levee_client_lease_asks_total{result=\"quotas_differ\"} 0.0")
                    .contains("levee_client_lease_asks_total{result=\"granted\"} 0.0")
                    .contains("levee_client_lease_admissions_total{result=\"admitted\"} 0.0");
            String sameQuotas = leaseAsks("client-same-quotas", observer, same, null);
            assertThat(sameQuotas).contains("levee_client_lease_asks_total{result=\"quotas_differ\"} 0.0")
                    .doesNotContain("levee_client_lease_asks_total{result=\"granted\"} 0.0")
                    .doesNotContain("levee_client_lease_admissions_total{result=\"admitted\"} 0.0");
        }
    }

    /**
     * Starts {@code levee client} with no lease flag and {@code --quotas quotas}, sends 600 checks of one hot key,
     * waits for {@code line} in its output when given, and returns its metrics.
     */
    String leaseAsks(String name, String observer, Path quotas, String line) throws Exception {
        int port = RoleProcess.freePort();
        try (RoleProcess client = RoleProcess.start(DIR, name, List.of("client", "--listen", "127.0.0.1:" + port,
                "--observer", observer, "--warmup", "0", "--quotas", quotas.toString()))) {
            client.awaitOutput("levee client listening", Duration.ofSeconds(60));
            assertThat(client.output()).contains("request leases on: quotas from " + quotas);
            for (int i = 0; i < 600; i++) {
                check(port, "/hot/k" + i);
            }
            await().atMost(Duration.ofSeconds(10)).until(() -> get(port, "/metrics").contains(
                    "levee_client_lease_checks_total{key=\"hot\"}"));
            String metrics = get(port, "/metrics");
            if (line != null) {
                client.awaitOutput(line, Duration.ofSeconds(10));
            }
            return metrics;
        }
    }

    @Test
    void withNoLeasesTheClientOpensNoQuotaSource() throws Exception {
        int port = RoleProcess.freePort();
        // --etcd where nothing listens: with --no-leases the client never asks it
        try (RoleProcess client = RoleProcess.start(DIR, "client-no-leases", List.of("client", "--listen",
                "127.0.0.1:" + port, "--observer", "127.0.0.1:" + RoleProcess.freePort(), "--warmup", "0", "--no-leases",
                "--etcd", "http://127.0.0.1:1", "--quotas", dir.resolve("absent.yaml").toString()))) {
            client.awaitOutput("levee client listening", Duration.ofSeconds(60));
            assertThat(get(port, "/metrics")).doesNotContain("levee_client_lease");
        }
    }

    void check(int port, String uri) throws Exception {
        http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/s3check"))
                .timeout(Duration.ofSeconds(5)).header("X-Levee-Method", "GET").header("X-Levee-Host", "s3.local")
                .header("X-Levee-Uri", uri).build(), HttpResponse.BodyHandlers.discarding());
    }

    String get(int port, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString()).body();
    }
}
