package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.client.ClientService;
import dev.levee.client.LeveeClient;
import dev.levee.config.QuotaConfigLoader;
import dev.levee.config.StaticQuotaSource;
import dev.levee.limiter.LimiterService;
import dev.levee.core.Member;
import dev.levee.core.MembershipView;
import dev.levee.observer.ObserverService;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Accuracy of one quota across the cluster (issue 12): 5 000 req/s for one bucket over four limiters (factor 4,
 * each deciding with rate / 4), driven through levee-client's {@code GET /v1/s3check} by 100 connections in a
 * closed loop. Over the run the admitted count stays within docs/design.md §5's bound {@code rate × t + g × burst + g}
 * and, when more than the rate could be offered, at or above 97 % of {@code rate × t} (a machine too slow to
 * offer the rate aborts that part of the test with the rate it reached).
 */
class QuotaAccuracyIT {

    static final double RATE = 5000;
    static final int BURST = 125; // the operator's formula: rate / DF × 0.1
    static final int G = 4;
    static final int CONNECTIONS = 100;
    static final String QUOTAS = """
            factor: 4
            default: {rate: 1000000, burst: 100000}
            resources:
              accuracy: {quota: {rate: 5000, burst: 125}}
            """;

    @org.junit.jupiter.api.io.TempDir
    java.nio.file.Path logs;

    Vertx vertx;
    final List<LimiterService> limiters = new ArrayList<>();
    ObserverService observer;
    LeveeClient client;
    ClientService endpoint;

    static <T> T done(Future<T> f) throws Exception {
        return f.await(10, TimeUnit.SECONDS);
    }

    @BeforeEach
    void start() throws Exception {
        // decisions at INFO as in production, to a file of this test's own: two lines a check at 15 000 checks/s
        // would put ~100 MB into the shared IT log that other tests read
        Logging.configure(new LogTarget("file", null, 0, logs.resolve("accuracy.log")), "levee-it", "INFO");
        vertx = Vertx.vertx();
        List<Member> members = new ArrayList<>();
        for (String id : List.of("a1", "a2", "a3", "a4")) {
            LimiterService l = done(LimiterService.start(vertx, new LimiterService.Options(id,
                            new HostPort("127.0.0.1", 0), null, null, Duration.ofSeconds(1), 10_000),
                    new StaticQuotaSource(QuotaConfigLoader.parse(QUOTAS, "test quotas")), SystemTicker.INSTANCE,
                    Metrics.newRegistry()));
            limiters.add(l);
            members.add(new Member(id, l.address().toString()));
        }
        MembershipView view = new MembershipView(1, 4, members);
        observer = done(ObserverService.start(vertx, new HostPort("127.0.0.1", 0), () -> view, () -> true,
                Metrics.newRegistry()));
        client = done(LeveeClient.start(vertx, LeveeClient.Options.builder(new HostPort("127.0.0.1", observer.port()))
                .refresh(Duration.ofMillis(500)).checkTimeout(Duration.ofMillis(250)).backoff(Duration.ofSeconds(2))
                .build(),
                SystemTicker.INSTANCE, Metrics.newRegistry()));
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> client.view().limiters().size() == 4);
        endpoint = done(ClientService.start(vertx, new HostPort("127.0.0.1", 0), client, Metrics.newRegistry()));
    }

    @AfterEach
    void stop() throws Exception {
        if (endpoint != null) {
            done(endpoint.stop());
        }
        if (client != null) {
            done(client.stop());
        }
        if (observer != null) {
            done(observer.stop());
        }
        vertx.close().await(20, TimeUnit.SECONDS);
        Logging.configure(new LogTarget("file", null, 0, Stack.LOG.toAbsolutePath()), "levee-it", "INFO");
    }

    /** {@code CONNECTIONS} closed-loop senders for {@code seconds} ({@link ClosedLoop}). */
    ClosedLoop.Run drive(String bucket, double seconds) throws Exception {
        return ClosedLoop.drive(List.of(ClosedLoop.Endpoint.of(endpoint)), bucket, CONNECTIONS, seconds);
    }

    @Test
    void aQuotaOf5000PerSecondOverFourLimitersHoldsWithinTheBoundAndAbove97PercentOfTheRate() throws Exception {
        drive("warm", 3); // JIT and connections (another bucket: its own counters)
        ClosedLoop.Run run = drive("accuracy", 10);
        long[] r = {run.admittedAt().length, run.rejected(), run.other()};
        double t = run.seconds();
        double upper = RATE * t + G * BURST + G;
        double offered = (r[0] + r[1] + r[2]) / t;
        System.out.printf("5000/s over 4 limiters, %d connections: %.0f/s offered, admitted %d in %.2f s (%.1f/s,"
                        + " %.1f %% of rate × t), rejected %d, other %d; bound %.0f%n", CONNECTIONS, offered, r[0], t,
                r[0] / t, 100 * r[0] / (RATE * t), r[1], r[2], upper);
        assertThat(r[2]).as("checks failed").isZero();
        assertThat((double) r[0]).as("admitted ≤ rate × t + g × burst + g (docs/design.md §5)").isLessThanOrEqualTo(upper);
        // the floor needs load clearly over the rate in every second: closed loop at 1.02 x the rate on average
        // (fresh-clone run, 2026-12-01: 5117/s offered) still dips below it in some seconds, on some group member,
        // and that allowance is lost (94.1 % admitted). A machine that cannot offer 1.5 x says so (aborted, not passed)
        org.junit.jupiter.api.Assumptions.assumeTrue(offered >= RATE * 1.5, String.format(
                "this machine offered only %.0f checks/s through the stack, not 1.5 x the quota of %.0f/s: floor not tested",
                offered, RATE));
        assertThat((double) r[0]).as("admitted ≥ 97 % of rate × t").isGreaterThanOrEqualTo(0.97 * RATE * t);
    }
}
