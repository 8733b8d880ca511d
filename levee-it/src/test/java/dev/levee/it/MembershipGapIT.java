package dev.levee.it;

import static dev.levee.it.ItFixtures.done;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.levee.client.ClientDecision;
import dev.levee.client.LeveeClient;
import dev.levee.config.QuotaConfigLoader;
import dev.levee.config.StaticQuotaSource;
import dev.levee.etcd.Etcd;
import dev.levee.etcd.EtcdMembership;
import dev.levee.etcd.EtcdRegistration;
import dev.levee.limiter.LimiterService;
import dev.levee.observer.ObserverService;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import dev.levee.s3.S3Request;
import dev.levee.stack.EmbeddedEtcd;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A membership that is briefly empty — a restarted observer before the first heartbeats, or etcd
 * leases expiring together and re-registered — must not empty the clients' lists and fail every
 * check meanwhile (issue 10, defect 2).
 */
class MembershipGapIT {

    @RegisterExtension
    static final ItFixtures IT = ItFixtures.withVertx();

    static final StaticQuotaSource QUOTAS = new StaticQuotaSource(QuotaConfigLoader.parse(
            "factor: 2\ndefault: {rate: 1000000, burst: 100000}\n", "test quotas"));

    /** Checks through {@code client} from 4 virtual threads until stopped; counts each result. */
    static final class Checks implements AutoCloseable {
        final AtomicLong accepted = new AtomicLong();
        final AtomicLong failed = new AtomicLong();
        final AtomicLong other = new AtomicLong();
        final AtomicBoolean stop = new AtomicBoolean();
        final ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor();

        Checks(LeveeClient client) {
            for (int t = 0; t < 4; t++) {
                int thread = t;
                pool.submit(() -> {
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                    for (long i = 0; !stop.get() && System.nanoTime() - deadline < 0; i++) {
                        ClientDecision d = client.check(S3Request.fromRequestUri("GET", "127.0.0.1",
                                "/gap-" + (i % 16) + "/k" + thread, null)).await(5, TimeUnit.SECONDS);
                        (switch (d.result()) {
                            case ACCEPTED -> accepted;
                            case FAILED -> failed;
                            default -> other;
                        }).incrementAndGet();
                        TimeUnit.MILLISECONDS.sleep(2); // pacing of the load, not synchronisation
                    }
                    return null;
                });
            }
        }

        @Override
        public void close() {
            stop.set(true);
            pool.shutdown();
            try {
                pool.awaitTermination(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) { // close() throws no InterruptedException (AutoCloseable's advice)
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while the checks stop", e);
            }
        }
    }

    @Test
    @SuppressWarnings("try") // the load is stopped before its block ends, to see what follows
    void restartedObserverServingAnEmptyListFailsNoCheck() throws Exception {
        int port = RoleProcess.freePort();
        HostPort obs = new HostPort("127.0.0.1", port);
        ObserverService.Options oo = new ObserverService.Options(obs, Duration.ofSeconds(2), 2, 1024);
        ObserverService observer = done(ObserverService.start(IT.vertx(), oo, SystemTicker.INSTANCE, Metrics.newRegistry()));
        List<LimiterService> limiters = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            limiters.add(done(LimiterService.start(IT.vertx(), new LimiterService.Options("gap-" + i,
                    new HostPort("127.0.0.1", 0), null, obs, Duration.ofMillis(500), 10_000), QUOTAS,
                    SystemTicker.INSTANCE, Metrics.newRegistry())));
        }
        LeveeClient client = done(LeveeClient.start(IT.vertx(), LeveeClient.Options.builder(obs)
                .refresh(Duration.ofMillis(100)).checkTimeout(Duration.ofMillis(250)).backoff(Duration.ofSeconds(1))
                .build(), SystemTicker.INSTANCE, Metrics.newRegistry()));
        try {
            await().atMost(Duration.ofSeconds(5)).until(() -> client.view().limiters().size() == 3);
            ObserverService restarted;
            try (Checks checks = new Checks(client)) {
                await().atMost(Duration.ofSeconds(5)).until(() -> checks.accepted.get() > 100);
                done(observer.stop());
                restarted = done(ObserverService.start(IT.vertx(), oo, SystemTicker.INSTANCE, Metrics.newRegistry()));
                long restartedAt = System.nanoTime();
                // the heartbeats refill the new observer within one interval; go on for a TTL and a half
                await().atMost(Duration.ofSeconds(10)).until(() -> restarted.membership().view().limiters().size() == 3
                        && System.nanoTime() - restartedAt > TimeUnit.MILLISECONDS.toNanos(3000));
                checks.close();
                System.out.printf("observer restart under load: %d accepted, %d failed, %d other%n",
                        checks.accepted.get(), checks.failed.get(), checks.other.get());
                assertThat(checks.failed.get()).as("checks failed while the restarted observer filled up").isZero();
            }
            assertThat(client.view().limiters()).hasSize(3);
            done(restarted.stop());
        } finally {
            done(client.stop());
            for (LimiterService l : limiters) {
                done(l.kill());
            }
        }
    }

    @Test
    @SuppressWarnings("try") // the load is stopped before its block ends, to see what follows
    void etcdLeasesExpiringTogetherFailNoCheck() throws Exception {
        try (EmbeddedEtcd etcd = EmbeddedEtcd.start(); Client etcdClient = Etcd.client(List.of(etcd.endpoint()))) {
            String prefix = "/levee-gap/";
            List<LimiterService> limiters = new ArrayList<>();
            List<EtcdRegistration> regs = new ArrayList<>();
            try (EtcdMembership membership = EtcdMembership.start(etcdClient, prefix, () -> 2, SystemTicker.INSTANCE)) {
                for (int i = 1; i <= 3; i++) {
                    LimiterService l = done(LimiterService.start(IT.vertx(), new LimiterService.Options("lease-" + i,
                            new HostPort("127.0.0.1", 0), null, null, Duration.ofSeconds(1), 10_000), QUOTAS,
                            SystemTicker.INSTANCE, Metrics.newRegistry()));
                    limiters.add(l);
                    regs.add(EtcdRegistration.start(etcdClient, prefix, l.id(), l.address().toString(), 2));
                }
                ObserverService observer = done(ObserverService.start(IT.vertx(), new HostPort("127.0.0.1", 0), membership,
                        () -> true, Metrics.newRegistry()));
                LeveeClient client = done(LeveeClient.start(IT.vertx(),
                        LeveeClient.Options.builder(new HostPort("127.0.0.1", observer.port()))
                                .refresh(Duration.ofMillis(100)).checkTimeout(Duration.ofMillis(250))
                                .backoff(Duration.ofSeconds(1)).build(), SystemTicker.INSTANCE, Metrics.newRegistry()));
                try {
                    await().atMost(Duration.ofSeconds(10)).until(() -> client.view().limiters().size() == 3);
                    try (Checks checks = new Checks(client)) {
                        await().atMost(Duration.ofSeconds(5)).until(() -> checks.accepted.get() > 100);
                        // what a SIGSTOP of etcd longer than the TTL does: every limiter lease ends at once
                        ByteSequence key = ByteSequence.from(prefix + "limiters/", StandardCharsets.UTF_8);
                        for (KeyValue kv : etcdClient.getKVClient().get(key, GetOption.builder().isPrefix(true).build())
                                .get(10, TimeUnit.SECONDS).getKvs()) {
                            etcdClient.getLeaseClient().revoke(kv.getLease()).get(10, TimeUnit.SECONDS);
                        }
                        long emptiedAt = System.nanoTime();
                        await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(5))
                                .until(() -> membership.view().limiters().isEmpty());
                        await().atMost(Duration.ofSeconds(10)).until(() -> membership.view().limiters().size() == 3);
                        System.out.printf("etcd membership empty, back to 3 after %.0f ms%n",
                                (System.nanoTime() - emptiedAt) / 1e6);
                        await().pollDelay(Duration.ofMillis(500)).until(() -> true); // a few more refreshes under load
                        checks.close();
                        System.out.printf("etcd leases ended together under load: %d accepted, %d failed, %d other%n",
                                checks.accepted.get(), checks.failed.get(), checks.other.get());
                        assertThat(checks.failed.get()).as("checks failed while the membership was empty").isZero();
                    }
                } finally {
                    done(client.stop());
                    done(observer.stop());
                }
            } finally {
                regs.forEach(EtcdRegistration::close);
                for (LimiterService l : limiters) {
                    done(l.kill());
                }
            }
        }
    }
}
