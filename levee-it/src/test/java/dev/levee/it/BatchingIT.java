package dev.levee.it;

import static dev.levee.it.ItFixtures.done;
import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.client.ClientDecision;
import dev.levee.client.LeveeClient;
import dev.levee.config.QuotaConfigLoader;
import dev.levee.config.StaticQuotaSource;
import dev.levee.limiter.LimiterService;
import dev.levee.core.Member;
import dev.levee.core.MembershipView;
import dev.levee.observer.ObserverService;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import dev.levee.s3.S3Request;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.http.HttpServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * levee-client coalesces the checks bound for one limiter into {@code POST /v1/checks} batches while
 * its earlier requests are in flight: every check is still decided exactly once, batches fail over
 * check by check, and a limiter without {@code /v1/checks} (an older version) is asked one by one — with the
 * check wire off, as toward a limiter that does not take it; and on the wire, the checks of one turn go in frames of
 * at most {@code maxBatch}, each decided exactly once.
 */
class BatchingIT {

    @RegisterExtension
    static final ItFixtures IT = ItFixtures.withVertx();

    static LimiterService limiter(String id, String quotas) throws Exception {
        return done(LimiterService.start(IT.vertx(), new LimiterService.Options(id, new HostPort("127.0.0.1", 0), null, null,
                        Duration.ofSeconds(1), 10_000),
                new StaticQuotaSource(QuotaConfigLoader.parse(quotas, "test quotas")), SystemTicker.INSTANCE,
                Metrics.newRegistry()));
    }

    /** An observer that lists exactly {@code members}. */
    static ObserverService observer(int factor, Member... members) throws Exception {
        MembershipView view = new MembershipView(1, factor, List.of(members));
        return done(ObserverService.start(IT.vertx(), new HostPort("127.0.0.1", 0), () -> view, () -> true,
                Metrics.newRegistry()));
    }

    /** A stand-in limiter: answers {@code /v1/check} as {@code single} says and {@code /v1/checks} with {@code batch}. */
    static HttpServer stub(int single, int batch, String body, AtomicInteger calls) throws Exception {
        return done(IT.vertx().createHttpServer().requestHandler(req -> req.body().onSuccess(b -> {
            calls.incrementAndGet();
            int status = req.path().equals("/v1/checks") ? batch : single;
            req.response().setStatusCode(status).putHeader("Content-Type", "application/json")
                    .end(status == 200 ? body : "{\"error\":\"stub\"}");
        })).listen(0, "127.0.0.1"));
    }

    /** A client that sends checks as HTTP requests (the check wire off): the batching of {@code POST /v1/checks}. */
    static LeveeClient client(ObserverService obs, int maxInFlight, MeterRegistry registry) throws Exception {
        return client(obs, maxInFlight, registry, false);
    }

    static LeveeClient client(ObserverService obs, int maxInFlight, MeterRegistry registry, boolean wire)
            throws Exception {
        return done(LeveeClient.start(IT.vertx(), LeveeClient.Options.builder(new HostPort("127.0.0.1", obs.port()))
                .refresh(Duration.ofMillis(200)).checkTimeout(Duration.ofSeconds(2)).backoff(Duration.ofSeconds(30))
                .maxInFlight(maxInFlight).maxBatch(64).wire(wire).build(), SystemTicker.INSTANCE, registry));
    }

    static LeveeClient seeing(LeveeClient c, int limiters) {
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> c.view().limiters().size() == limiters);
        return c;
    }

    /** Sends {@code n} checks at once (from the client's event loop, as levee-client's endpoint does). */
    static List<ClientDecision> burst(LeveeClient client, String bucket, int n) throws Exception {
        List<Future<ClientDecision>> all = new ArrayList<>();
        done(IT.vertx().executeBlocking(() -> null)); // warm the worker pool
        io.vertx.core.Promise<Void> sent = io.vertx.core.Promise.promise();
        IT.vertx().runOnContext(v -> {
            for (int i = 0; i < n; i++) {
                all.add(client.check(S3Request.fromRequestUri("GET", "127.0.0.1", "/" + bucket + "/k" + i, null)));
            }
            sent.complete();
        });
        done(sent.future());
        List<ClientDecision> out = new ArrayList<>();
        for (Future<ClientDecision> f : all) {
            out.add(done(f));
        }
        return out;
    }

    static double count(MeterRegistry r, String result) {
        Counter c = r.find("levee_client_results_total").tag("result", result).counter();
        return c == null ? 0 : c.count();
    }

    @Test
    void concurrentChecksAreBatchedAndEachIsDecidedOnce() throws Exception {
        LimiterService l = limiter("b1", "factor: 1\ndefault: {rate: 1, burst: 100}\n");
        ObserverService obs = observer(1, new Member("b1", l.address().toString()));
        MeterRegistry reg = Metrics.newRegistry();
        LeveeClient c = seeing(client(obs, 1, reg), 1);
        try {
            List<ClientDecision> ds = burst(c, "batched", 500);
            long accepted = ds.stream().filter(d -> d.result() == ClientDecision.Result.ACCEPTED).count();
            long rejected = ds.stream().filter(d -> d.result() == ClientDecision.Result.REJECTED).count();
            long[] batches = l.batches();
            System.out.printf("500 checks: %d accepted, %d rejected; %d batches carried %d checks%n", accepted, rejected,
                    batches[0], batches[1]);
            // burst 100 at 1 req/s: the first 100 (+ what 1 req/s adds while the test runs) pass
            assertThat(accepted).isBetween(100L, 105L);
            assertThat(accepted + rejected).isEqualTo(500);
            assertThat(ds).allSatisfy(d -> assertThat(d.limiter()).isEqualTo(l.address().toString()));
            assertThat(ds.stream().filter(d -> d.result() == ClientDecision.Result.REJECTED))
                    .allSatisfy(d -> assertThat(d.retryAfter()).isGreaterThanOrEqualTo(1));
            // one request in flight at a time: all but the first few checks went in batches of up to 64
            assertThat(batches[0]).isGreaterThanOrEqualTo(500 / 64).isLessThan(100);
            assertThat(batches[1]).isGreaterThan(400).isLessThanOrEqualTo(500);
            assertThat(count(reg, "accepted") + count(reg, "rejected")).isEqualTo(500);
            assertThat(l.table().size()).isEqualTo(1);
        } finally {
            done(c.stop());
            done(obs.stop());
            done(l.stop());
        }
    }

    @Test
    void concurrentChecksGoInWireFramesAndEachIsDecidedOnce() throws Exception {
        LimiterService l = limiter("w1", "factor: 1\ndefault: {rate: 1, burst: 100}\n");
        ObserverService obs = observer(1, new Member("w1", l.address().toString()));
        MeterRegistry reg = Metrics.newRegistry();
        LeveeClient c = seeing(client(obs, 1, reg, true), 1);
        try {
            // until the wire is up (the first checks go over HTTP meanwhile): a frame reached the limiter
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> {
                burst(c, "warm", 1);
                return l.batches()[0] > 0;
            });
            long[] before = l.batches();
            List<ClientDecision> ds = burst(c, "framed", 500);
            long accepted = ds.stream().filter(d -> d.result() == ClientDecision.Result.ACCEPTED).count();
            long rejected = ds.stream().filter(d -> d.result() == ClientDecision.Result.REJECTED).count();
            long[] after = l.batches();
            System.out.printf("500 checks on the wire: %d accepted, %d rejected; %d frames carried %d checks%n", accepted,
                    rejected, after[0] - before[0], after[1] - before[1]);
            assertThat(accepted).isBetween(100L, 105L);
            assertThat(accepted + rejected).isEqualTo(500);
            assertThat(ds.stream().filter(d -> d.result() == ClientDecision.Result.REJECTED))
                    .allSatisfy(d -> assertThat(d.retryAfter()).isGreaterThanOrEqualTo(1));
            // sent in one turn: frames of at most 64 (maxBatch), all 500 on the wire
            assertThat(after[1] - before[1]).isEqualTo(500);
            assertThat(after[0] - before[0]).isBetween((long) Math.ceil(500 / 64.0), 20L);
            assertThat(count(reg, "limiter_failure")).isZero();
        } finally {
            done(c.stop());
            done(obs.stop());
            done(l.stop());
        }
    }

    @Test
    void batchesOfTheLargestChecksAreCutBySizeNotRefused() throws Exception {
        LimiterService l = limiter("big", "factor: 1\ndefault: {rate: 1000000, burst: 100000}\n");
        ObserverService obs = observer(1, new Member("big", l.address().toString()));
        MeterRegistry reg = Metrics.newRegistry();
        LeveeClient c = done(LeveeClient.start(IT.vertx(), LeveeClient.Options.builder(new HostPort("127.0.0.1", obs.port()))
                .refresh(Duration.ofMillis(200)).checkTimeout(Duration.ofSeconds(5)).backoff(Duration.ofSeconds(30))
                .maxInFlight(1).maxBatch(1024).wire(false).build(),
                SystemTicker.INSTANCE, reg));
        seeing(c, 1);
        try {
            // bucket and key of 1024 control characters: ~12 KiB of JSON per check once escaped, so
            // 1024 of them would be ~12 MiB, three times what a limiter accepts in one batch
            String name = "%01".repeat(1024);
            List<Future<ClientDecision>> all = new ArrayList<>();
            io.vertx.core.Promise<Void> sent = io.vertx.core.Promise.promise();
            IT.vertx().runOnContext(v -> {
                for (int i = 0; i < 600; i++) {
                    all.add(c.check(S3Request.fromRequestUri("GET", "127.0.0.1", "/" + name + "/" + name, null)));
                }
                sent.complete();
            });
            done(sent.future());
            for (Future<ClientDecision> f : all) {
                assertThat(done(f).result()).isEqualTo(ClientDecision.Result.ACCEPTED);
            }
            long[] batches = l.batches();
            System.out.printf("600 checks of 2 x 1024 control characters: %d batches carried %d checks%n", batches[0],
                    batches[1]);
            assertThat(batches[1]).isGreaterThan(500);
            // ≤ ~85 such checks fit in 1 MiB of JSON, ≤ ~505 in binary (2 × 1024 bytes + 11): the first batch goes in
            // JSON, the rest in binary once the limiter's answer offered it (issue 12)
            assertThat(batches[0]).isGreaterThanOrEqualTo(2);
            assertThat(count(reg, "limiter_refused") + count(reg, "failed")).isZero();
        } finally {
            done(c.stop());
            done(obs.stop());
            done(l.stop());
        }
    }

    @Test
    void aFailedBatchFailsOverCheckByCheckToTheNextMember() throws Exception {
        LimiterService good = limiter("good", "factor: 2\ndefault: {rate: 1000000, burst: 100000}\n");
        AtomicInteger calls = new AtomicInteger();
        HttpServer broken = stub(500, 500, "", calls);
        ObserverService obs = observer(2, new Member("good", good.address().toString()),
                new Member("broken", "127.0.0.1:" + broken.actualPort()));
        MeterRegistry reg = Metrics.newRegistry();
        LeveeClient c = seeing(client(obs, 1, reg), 2);
        try {
            List<ClientDecision> ds = burst(c, "failover", 300);
            assertThat(ds).allSatisfy(d -> {
                assertThat(d.result()).isEqualTo(ClientDecision.Result.ACCEPTED);
                assertThat(d.limiter()).isEqualTo(good.address().toString());
            });
            assertThat(calls.get()).isPositive();
            // every check that met the broken member first was counted as a failure there and retried once
            assertThat(count(reg, "limiter_failure")).isPositive();
            assertThat(ds.stream().filter(d -> d.attempts() == 2).count()).isEqualTo((long) count(reg, "limiter_failure"));
            assertThat(count(reg, "accepted")).isEqualTo(300);
        } finally {
            done(c.stop());
            done(obs.stop());
            done(broken.close());
            done(good.stop());
        }
    }

    @Test
    void aLimiterWithoutBatchesIsAskedOneByOne() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        String accepted = "{\"result\":\"accepted\",\"level\":\"default\",\"limitKey\":\"default:old\",\"remaining\":5,"
                + "\"retryAfter\":0,\"limiter\":\"old\",\"rate\":10.0,\"burst\":10}";
        HttpServer old = stub(200, 404, accepted, calls);
        ObserverService obs = observer(1, new Member("old", "127.0.0.1:" + old.actualPort()));
        MeterRegistry reg = Metrics.newRegistry();
        LeveeClient c = seeing(client(obs, 1, reg), 1);
        try {
            List<ClientDecision> ds = burst(c, "old", 50);
            assertThat(ds).allSatisfy(d -> assertThat(d.result()).isEqualTo(ClientDecision.Result.ACCEPTED));
            // one refused batch, then every check on its own
            assertThat(calls.get()).isEqualTo(50 + 1 + 0).as("calls");
            assertThat(count(reg, "limiter_failure")).isZero();
        } finally {
            done(c.stop());
            done(obs.stop());
            done(old.close());
        }
    }

}
