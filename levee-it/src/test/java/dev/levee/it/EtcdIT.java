package dev.levee.it;

import static dev.levee.it.ItFixtures.done;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.levee.cli.Main;
import dev.levee.client.LeveeClient;
import dev.levee.config.QuotaLayout;
import dev.levee.etcd.Etcd;
import dev.levee.etcd.EtcdMembership;
import dev.levee.etcd.EtcdQuotaSource;
import dev.levee.etcd.EtcdRegistration;
import dev.levee.limiter.CheckResponse;
import dev.levee.limiter.LimiterService;
import dev.levee.observer.ObserverService;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import dev.levee.s3.S3Operation;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Quotas and membership in a real etcd (Debian's etcd-server) started on free loopback ports with a
 * temporary data directory (issue 3). Each test uses its own key prefix.
 */
class EtcdIT {

    @RegisterExtension
    static final ItFixtures IT = ItFixtures.withVertxAndEtcd();

    static final AtomicInteger PREFIXES = new AtomicInteger();

    @TempDir
    Path dir;

    static String newPrefix() {
        return "/levee-it-" + PREFIXES.incrementAndGet() + "/";
    }

    void put(String key, String value) throws Exception {
        IT.client().getKVClient().put(ByteSequence.from(key, StandardCharsets.UTF_8), ByteSequence.from(value, StandardCharsets.UTF_8))
                .get(10, TimeUnit.SECONDS);
    }

    int cli(String... args) {
        List<String> all = new ArrayList<>(List.of(args));
        all.add("--etcd");
        all.add(IT.etcd().endpoint());
        return Main.run(all.toArray(String[]::new));
    }

    Path file(String text) throws Exception {
        Path p = Files.createTempFile(dir, "q", ".yaml");
        Files.writeString(p, text);
        return p;
    }

    LimiterService limiter(String id, EtcdQuotaSource source) throws Exception {
        return done(LimiterService.start(IT.vertx(), new LimiterService.Options(id, new HostPort("127.0.0.1", 0), null, null,
                Duration.ofSeconds(1), 100_000), source, SystemTicker.INSTANCE, Metrics.newRegistry()));
    }

    static Map<String, String> etcdValues(String prefix) throws Exception {
        Map<String, String> out = new TreeMap<>();
        for (KeyValue kv : IT.client().getKVClient().get(ByteSequence.from(prefix, StandardCharsets.UTF_8),
                GetOption.builder().isPrefix(true).build()).get(10, TimeUnit.SECONDS).getKvs()) {
            String rel = kv.getKey().toString(StandardCharsets.UTF_8).substring(prefix.length());
            if (QuotaLayout.isQuotaKey(rel)) {
                out.put(rel, kv.getValue().toString(StandardCharsets.UTF_8));
            }
        }
        return out;
    }

    @Test
    void hotReloadAfterQuotaSetReachesTheNextDecision() throws Exception {
        String prefix = newPrefix();
        assertThat(cli("quota", "import", file("factor: 1\ndefault: {rate: 1000, burst: 100}\n").toString(),
                "--etcd-prefix", prefix)).isZero();
        try (EtcdQuotaSource source = EtcdQuotaSource.start(IT.client(), prefix, 200, 10_000, SystemTicker.INSTANCE)) {
            LimiterService l = limiter("hot-1", source);
            assertThat(l.decide(source.current(), "hot", "k", S3Operation.GetObject, 1).level()).isEqualTo("default");
            Path bucket = file("quota: {rate: 7, burst: 3}\n");
            long t0 = System.nanoTime();
            assertThat(cli("quota", "set", "hot", bucket.toString(), "--etcd-prefix", prefix)).isZero();
            long firstNs = -1;
            for (int i = 0; i < 100_000 && firstNs < 0; i++) { // bounded: at most a few seconds
                CheckResponse r = l.decide(source.current(), "hot", "k", S3Operation.GetObject, 1);
                if (r.level().equals("resource")) {
                    firstNs = System.nanoTime() - t0;
                    assertThat(r.rate()).isEqualTo(7.0);
                    assertThat(r.burst()).isEqualTo(3);
                } else {
                    TimeUnit.MICROSECONDS.sleep(200); // decision cadence of the probe, not synchronisation
                }
            }
            System.out.printf("hot reload: first decision with the new quota %.1f ms after `levee quota set` returned"
                    + " (includes the CLI's own etcd round trip)%n", firstNs / 1e6);
            assertThat(firstNs).isPositive().isLessThan(TimeUnit.SECONDS.toNanos(1));
            done(l.stop());
        }
    }

    @Test
    void badValueWrittenStraightIntoEtcdIsRefusedAndTheLastGoodQuotaStays() throws Exception {
        String prefix = newPrefix();
        assertThat(cli("quota", "import", file("""
                factor: 1
                default: {rate: 1000, burst: 100}
                resources:
                  good: {quota: {rate: 5, burst: 1}}
                """).toString(), "--etcd-prefix", prefix)).isZero();
        try (EtcdQuotaSource source = EtcdQuotaSource.start(IT.client(), prefix, 200, 10_000, SystemTicker.INSTANCE)) {
            var registry = Metrics.newRegistry();
            LimiterService l = done(LimiterService.start(IT.vertx(), new LimiterService.Options("bad-1",
                    new HostPort("127.0.0.1", 0), null, null, Duration.ofSeconds(1), 1000), source, SystemTicker.INSTANCE,
                    registry));
            var good = source.current();
            put(prefix + "resources/good", "quota: {rate: -3, burst: 1}\n");
            await().atMost(Duration.ofSeconds(5)).until(() -> source.rejectedUpdates() == 1);
            assertThat(source.current()).as("the key keeps its last good value (issue 22)").isEqualTo(good);
            assertThat(source.lastRejection()).contains(prefix + "resources/good").contains("quota.rate");
            assertThat(source.invalidKeys()).containsOnlyKeys(prefix + "resources/good");
            // other keys' updates still apply meanwhile (issue 22: until then the whole update was refused)
            put(prefix + "resources/other", "quota: {rate: 4, burst: 1}\n");
            await().atMost(Duration.ofSeconds(5)).until(() -> source.current().resources().containsKey("other"));
            assertThat(source.current().resources().get("good").quota().rate()).isEqualTo(5.0);
            assertThat(source.rejectedUpdates()).as("each refused value counted once").isEqualTo(1);
            CheckResponse r = l.decide(source.current(), "good", "k", S3Operation.GetObject, 1);
            assertThat(r.level()).isEqualTo("resource");
            assertThat(r.rate()).isEqualTo(5.0);
            assertThat(dev.levee.runtime.Metrics.scrape(registry))
                    .containsPattern("levee_config_rejected_updates_total\\{limiter=\"bad-1\"\\} 1\\.0");
            // logged asynchronously: the line reaches the file within the async loggers' sleep (10 ms)
            await().atMost(Duration.ofSeconds(5)).untilAsserted(() ->
                    assertThat(Files.readString(Stack.LOG)).contains("refused").contains(prefix + "resources/good"));
            // a later fix is applied
            put(prefix + "resources/good", "quota: {rate: 9, burst: 2}\n");
            await().atMost(Duration.ofSeconds(5)).until(() -> source.current().resources().get("good").quota().rate() == 9.0);
            assertThat(source.lastRejection()).isNull();
            assertThat(dev.levee.runtime.Metrics.scrape(registry))
                    .containsPattern("levee_config_invalid_keys\\{limiter=\"bad-1\"\\} 0\\.0");
            done(l.stop());
        }
    }

    @Test
    void theModeKeySwitchesEveryQuotaWithoutAModeToShadowAndBackWithoutARestart() throws Exception {
        String prefix = newPrefix();
        assertThat(cli("quota", "import", file("""
                default: {rate: 1000, burst: 100}
                resources:
                  trial: {quota: {rate: 1, burst: 1}}
                  kept: {quota: {rate: 1, burst: 1, mode: enforce}}
                """).toString(), "--etcd-prefix", prefix)).isZero();
        try (EtcdQuotaSource source = EtcdQuotaSource.start(IT.client(), prefix, 200, 10_000, SystemTicker.INSTANCE)) {
            LimiterService l = limiter("mode-1", source);
            assertThat(l.decide(source.current(), "trial", "k", S3Operation.GetObject, 1).result()).isEqualTo("accepted");
            assertThat(l.decide(source.current(), "trial", "k", S3Operation.GetObject, 1).result()).isEqualTo("rejected");
            put(prefix + "mode", "shadow\n");
            await().atMost(Duration.ofSeconds(5)).until(() -> source.current().defaultMode() == dev.levee.quota.QuotaMode.SHADOW);
            for (int i = 0; i < 3; i++) {
                CheckResponse r = l.decide(source.current(), "trial", "k", S3Operation.GetObject, 1);
                assertThat(r.result()).as("only shadow quotas apply to 'trial' now").isEqualTo("accepted");
                assertThat(r.level()).isNull();
                // its own state: a fresh key, so one admission by the trial, then would-rejects
                assertThat(r.shadow()).isEqualTo(i == 0 ? "accepted" : CheckResponse.WOULD_REJECT);
            }
            l.decide(source.current(), "kept", "k", S3Operation.GetObject, 1);
            assertThat(l.decide(source.current(), "kept", "k", S3Operation.GetObject, 1).result())
                    .as("mode: enforce wins over the default mode").isEqualTo("rejected");
            put(prefix + "mode", "Shadow\n");
            await().atMost(Duration.ofSeconds(5)).until(() -> source.rejectedUpdates() == 1);
            assertThat(source.lastRejection()).contains(prefix + "mode").contains("expected enforce or shadow");
            assertThat(source.current().defaultMode()).isEqualTo(dev.levee.quota.QuotaMode.SHADOW);
            try (Client other = Etcd.client(List.of(IT.etcd().endpoint()))) {
                other.getKVClient().delete(ByteSequence.from(prefix + "mode", StandardCharsets.UTF_8)).get();
            }
            await().atMost(Duration.ofSeconds(5)).until(() -> source.current().defaultMode() == dev.levee.quota.QuotaMode.ENFORCE);
            done(l.stop());
        }
    }

    @Test
    void etcdDownForTenSecondsThenChangedReconnectsToEtcdsFinalState() throws Exception {
        String prefix = newPrefix();
        assertThat(cli("quota", "import", file("""
                factor: 2
                default: {rate: 100, burst: 10}
                resources:
                  a: {quota: {rate: 1, burst: 1}}
                """).toString(), "--etcd-prefix", prefix)).isZero();
        try (EtcdQuotaSource source = EtcdQuotaSource.start(IT.client(), prefix, 200, 10_000, SystemTicker.INSTANCE)) {
            LimiterService l = limiter("down-1", source);
            var http = java.net.http.HttpClient.newHttpClient();
            var health = java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://" + l.address() + "/health")).build();
            IT.etcd().stop();
            await().atMost(Duration.ofSeconds(5)).until(() -> !source.ready());
            assertThat(http.send(health, java.net.http.HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(503);
            // decisions keep the last good configuration meanwhile
            assertThat(l.decide(source.current(), "a", "k", S3Operation.GetObject, 1).rate()).isEqualTo(1.0);
            TimeUnit.SECONDS.sleep(10); // the scenario: etcd stays down for 10 s
            IT.etcd().launch();
            // changed through the restarted etcd, before Levee reconnects
            try (Client other = Etcd.client(List.of(IT.etcd().endpoint()))) {
                for (int i = 0; i < 20; i++) {
                    other.getKVClient().put(ByteSequence.from(prefix + "resources/b" + i, StandardCharsets.UTF_8),
                            ByteSequence.from("quota: {rate: " + (i + 1) + ", burst: 1}", StandardCharsets.UTF_8)).get();
                }
                other.getKVClient().put(ByteSequence.from(prefix + "resources/a", StandardCharsets.UTF_8),
                        ByteSequence.from("quota: {rate: 42, burst: 4}", StandardCharsets.UTF_8)).get();
                other.getKVClient().delete(ByteSequence.from(prefix + "resources/b3", StandardCharsets.UTF_8)).get();
                long rev = other.getKVClient().put(ByteSequence.from(prefix + "factor", StandardCharsets.UTF_8),
                        ByteSequence.from("3", StandardCharsets.UTF_8)).get().getHeader().getRevision();
                other.getKVClient().compact(rev).get(); // forces a full reload if the watch resumes from before
            }
            await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(100)).until(() ->
                    source.ready() && source.current().equals(QuotaLayout.fromValues(prefix, etcdValues(prefix))));
            assertThat(source.current().factor()).isEqualTo(3);
            assertThat(source.current().resources()).hasSize(20).doesNotContainKey("b3");
            assertThat(l.decide(source.current(), "a", "k", S3Operation.GetObject, 1).rate()).isEqualTo(42.0);
            await().atMost(Duration.ofSeconds(5)).until(() ->
                    http.send(health, java.net.http.HttpResponse.BodyHandlers.ofString()).statusCode() == 200);
            done(l.stop());
        }
    }

    @Test
    void quotaLoweredAndRaisedOnADrainedKeyFollowsTheNewQuota() throws Exception {
        String prefix = newPrefix();
        assertThat(cli("quota", "import", file("""
                factor: 1
                default: {rate: 1000, burst: 100}
                resources:
                  drain: {quota: {rate: 1.6666666666666667, burst: 100}}
                """).toString(), "--etcd-prefix", prefix)).isZero();
        try (EtcdQuotaSource source = EtcdQuotaSource.start(IT.client(), prefix, 200, 10_000, SystemTicker.INSTANCE)) {
            LimiterService l = limiter("drain-1", source);
            int admitted = 0;
            while (l.decide(source.current(), "drain", "k", S3Operation.GetObject, 1).result().equals("accepted")) {
                admitted++;
            }
            assertThat(admitted).isEqualTo(100);
            assertThat(cli("quota", "set", "drain", file("quota: {rate: 0.16666666666666666, burst: 10}\n").toString(),
                    "--etcd-prefix", prefix)).isZero();
            await().atMost(Duration.ofSeconds(2)).until(() -> source.current().resources().get("drain").quota().burst() == 10);
            CheckResponse lowered = l.decide(source.current(), "drain", "k", S3Operation.GetObject, 1);
            assertThat(lowered.result()).isEqualTo("rejected");
            assertThat(lowered.burst()).isEqualTo(10);
            assertThat(lowered.retryAfter()).isEqualTo(6); // 10/min: one emission interval, not 100/min's 0.6 s
            assertThat(cli("quota", "set", "drain", file("quota: {rate: 0.25, burst: 15}\n").toString(),
                    "--etcd-prefix", prefix)).isZero();
            await().atMost(Duration.ofSeconds(2)).until(() -> source.current().resources().get("drain").quota().burst() == 15);
            CheckResponse raised = l.decide(source.current(), "drain", "k", S3Operation.GetObject, 1);
            assertThat(raised.result()).isEqualTo("rejected");
            assertThat(raised.burst()).isEqualTo(15);
            assertThat(raised.retryAfter()).isBetween(3L, 4L); // 15/min: 4 s interval minus the time already passed
            done(l.stop());
        }
    }

    @Test
    void factorChangeChangesGroupSizesOnEveryClientWithinOneRefresh() throws Exception {
        String prefix = newPrefix();
        assertThat(cli("quota", "import", file("factor: 4\ndefault: {rate: 100, burst: 10}\n").toString(),
                "--etcd-prefix", prefix)).isZero();
        try (EtcdQuotaSource source = EtcdQuotaSource.start(IT.client(), prefix, 200, 10_000, SystemTicker.INSTANCE);
             EtcdMembership membership = EtcdMembership.start(IT.client(), prefix, () -> source.current().factor(),
                     SystemTicker.INSTANCE)) {
            List<EtcdRegistration> regs = new ArrayList<>();
            for (int i = 1; i <= 5; i++) {
                regs.add(EtcdRegistration.start(IT.client(), prefix, "f-" + i, "127.0.0.1:" + (20000 + i), 5));
            }
            ObserverService obs = done(ObserverService.start(IT.vertx(), new HostPort("127.0.0.1", 0), membership, source::ready,
                    Metrics.newRegistry()));
            Duration refresh = Duration.ofMillis(300);
            LeveeClient.Options opts = LeveeClient.Options.builder(new HostPort("127.0.0.1", obs.port()))
                    .refresh(refresh).checkTimeout(Duration.ofMillis(250)).backoff(Duration.ofSeconds(1)).build();
            LeveeClient c1 = done(LeveeClient.start(IT.vertx(), opts, SystemTicker.INSTANCE, Metrics.newRegistry()));
            LeveeClient c2 = done(LeveeClient.start(IT.vertx(), opts, SystemTicker.INSTANCE, Metrics.newRegistry()));
            await().atMost(Duration.ofSeconds(5)).until(() -> c1.view().limiters().size() == 5 && c2.view().limiters().size() == 5);
            assertThat(c1.group("bucket-x")).hasSize(4).isEqualTo(c2.group("bucket-x"));
            assertThat(cli("quota", "factor", "2", "--etcd-prefix", prefix)).isZero();
            long t0 = System.nanoTime();
            await().atMost(refresh.plusMillis(700)).pollInterval(Duration.ofMillis(10)).until(() ->
                    c1.group("bucket-x").size() == 2 && c2.group("bucket-x").size() == 2);
            System.out.printf("factor 4 -> 2 seen by both clients after %.0f ms (refresh %d ms)%n",
                    (System.nanoTime() - t0) / 1e6, refresh.toMillis());
            for (int i = 0; i < 50; i++) {
                assertThat(c1.group("b" + i)).isEqualTo(c2.group("b" + i));
            }
            regs.forEach(EtcdRegistration::close);
            done(c1.stop());
            done(c2.stop());
            done(obs.stop());
        }
    }

    /** {@code levee quota factor} without a value prints the factor in force (issue 26 item 9). */
    @Test
    void quotaFactorWithoutAValuePrintsTheFactorInForce() throws Exception {
        String prefix = newPrefix();
        java.io.PrintStream old = System.out;
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        try {
            System.setOut(new java.io.PrintStream(out, true, StandardCharsets.UTF_8));
            assertThat(cli("quota", "factor", "--etcd-prefix", prefix)).isZero();
            assertThat(cli("quota", "factor", "3", "--etcd-prefix", prefix)).isZero();
            assertThat(cli("quota", "factor", "--etcd-prefix", prefix)).isZero();
        } finally {
            System.setOut(old);
        }
        assertThat(out.toString(StandardCharsets.UTF_8).lines().toList()).hasSize(3).satisfies(l -> {
            assertThat(l.get(0)).isEqualTo("factor 1 (" + prefix + "factor is not set: the default)");
            assertThat(l.get(1)).isEqualTo("factor set to 3");
            assertThat(l.get(2)).startsWith("factor 3 (" + prefix + "factor at revision ");
        });
    }

    @Test
    void limiterKilledWithSigkillLeavesWithinTtlAndComesBackWithTheSameGroups() throws Exception {
        String prefix = newPrefix();
        assertThat(cli("quota", "import", file("factor: 2\ndefault: {rate: 100, burst: 10}\n").toString(),
                "--etcd-prefix", prefix)).isZero();
        try (EtcdQuotaSource source = EtcdQuotaSource.start(IT.client(), prefix, 200, 10_000, SystemTicker.INSTANCE);
             EtcdMembership membership = EtcdMembership.start(IT.client(), prefix, () -> source.current().factor(),
                     SystemTicker.INSTANCE)) {
            List<EtcdRegistration> regs = new ArrayList<>();
            for (int i = 1; i <= 2; i++) {
                regs.add(EtcdRegistration.start(IT.client(), prefix, "k-" + i, "127.0.0.1:" + (21000 + i), 5));
            }
            int port = RoleProcess.freePort();
            long ttlSeconds = 2;
            Process p = startLimiterProcess(prefix, "k-victim", port, ttlSeconds);
            try {
                await().atMost(Duration.ofSeconds(30)).until(() -> ids(membership).contains("k-victim"));
                ObserverService obs = done(ObserverService.start(IT.vertx(), new HostPort("127.0.0.1", 0), membership,
                        source::ready, Metrics.newRegistry()));
                LeveeClient.Options opts = LeveeClient.Options.builder(new HostPort("127.0.0.1", obs.port()))
                        .refresh(Duration.ofMillis(200)).checkTimeout(Duration.ofMillis(250))
                        .backoff(Duration.ofSeconds(1)).build();
                LeveeClient c1 = done(LeveeClient.start(IT.vertx(), opts, SystemTicker.INSTANCE, Metrics.newRegistry()));
                LeveeClient c2 = done(LeveeClient.start(IT.vertx(), opts, SystemTicker.INSTANCE, Metrics.newRegistry()));
                await().atMost(Duration.ofSeconds(3)).until(() -> c1.view().limiters().size() == 3 && c2.view().limiters().size() == 3);
                List<List<LeveeClient.Member>> before = groups(c1);
                assertThat(groups(c2)).isEqualTo(before);

                long killedAt = System.nanoTime();
                p.destroyForcibly(); // SIGKILL: no lease revoke
                p.waitFor(10, TimeUnit.SECONDS);
                await().atMost(Duration.ofSeconds(ttlSeconds + 1)).pollInterval(Duration.ofMillis(20))
                        .until(() -> !ids(membership).contains("k-victim"));
                System.out.printf("SIGKILLed limiter left the list after %.0f ms (lease TTL %d s)%n",
                        (System.nanoTime() - killedAt) / 1e6, ttlSeconds);

                p = startLimiterProcess(prefix, "k-victim", port, ttlSeconds);
                await().atMost(Duration.ofSeconds(30)).until(() -> ids(membership).contains("k-victim"));
                await().atMost(Duration.ofSeconds(3)).until(() -> c1.view().limiters().size() == 3 && c2.view().limiters().size() == 3);
                assertThat(groups(c1)).isEqualTo(before);
                assertThat(groups(c2)).isEqualTo(before);
                done(c1.stop());
                done(c2.stop());
                done(obs.stop());
            } finally {
                p.destroyForcibly();
                regs.forEach(EtcdRegistration::close);
            }
        }
    }

    static List<String> ids(EtcdMembership m) {
        return m.view().limiters().stream().map(dev.levee.core.Member::id).toList();
    }

    static List<List<LeveeClient.Member>> groups(LeveeClient c) {
        List<List<LeveeClient.Member>> out = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            out.add(c.group("bucket-" + i));
        }
        return out;
    }

    Process startLimiterProcess(String prefix, String id, int port, long ttlSeconds) throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = List.of(java, "-cp", System.getProperty("java.class.path"), "dev.levee.cli.Main", "limiter",
                "--id", id, "--listen", "127.0.0.1:" + port, "--etcd", IT.etcd().endpoint(), "--etcd-prefix", prefix,
                "--lease-ttl", ttlSeconds + "s", "--log-target", "file:" + Stack.LOG.toAbsolutePath().getParent()
                        .resolve("limiter-process.log"));
        return new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("limiter.out").toFile())).start();
    }
}
