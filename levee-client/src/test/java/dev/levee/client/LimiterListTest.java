package dev.levee.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Which limiter list levee-client believes (issue 10, defect 2): a list the observer marks not ready
 * is not adopted, a list that is empty or lost more than half its members is adopted only after the
 * list grace, and an older observer's answer (no incarnation, no readiness) is still read.
 */
class LimiterListTest {

    static Vertx vertx;
    static HttpServer observer;
    static final AtomicReference<String> ANSWER = new AtomicReference<>();

    /** Starts 5 s before the ticker wraps: every grace below is measured across the wrap (STYLE: time). */
    final AtomicLong now = new AtomicLong(Long.MAX_VALUE - 5_000_000_000L);
    MeterRegistry registry;
    LeveeClient client;

    @BeforeAll
    static void startObserver() throws Exception {
        vertx = Vertx.vertx();
        // the observer, and a limiter that accepts every check
        observer = vertx.createHttpServer().requestHandler(req -> req.body().onSuccess(b -> req.response()
                .putHeader("Content-Type", "application/json").end(req.path().equals("/v1/check")
                        ? "{\"result\":\"accepted\",\"level\":\"default\",\"limitKey\":\"k\",\"remaining\":1,"
                        + "\"retryAfter\":0,\"limiter\":\"l1\"}" : ANSWER.get()))).listen(0, "127.0.0.1")
                .await(10, TimeUnit.SECONDS);
    }

    @AfterAll
    static void stopObserver() throws Exception {
        vertx.close().await(10, TimeUnit.SECONDS);
    }

    @BeforeEach
    void startClient() throws Exception {
        startClient(LeveeClient.Options.DEFAULT_LIST_GRACE);
    }

    void startClient(Duration grace) throws Exception {
        if (client != null) {
            client.stop().await(10, TimeUnit.SECONDS);
        }
        ANSWER.set(list(1, "a", true, 0));
        registry = Metrics.newRegistry();
        client = LeveeClient.start(vertx, LeveeClient.Options.builder(new HostPort("127.0.0.1", observer.actualPort()))
                .refresh(Duration.ofHours(1)).checkTimeout(Duration.ofMillis(250)).backoff(Duration.ofSeconds(1))
                .maxInFlight(4).maxBatch(256).listGrace(grace).build(),
                now::get, registry).await(10, TimeUnit.SECONDS);
    }

    @AfterEach
    void stopClient() throws Exception {
        client.stop().await(10, TimeUnit.SECONDS);
    }

    /** An observer's answer with {@code n} limiters. */
    static String list(long revision, String incarnation, boolean ready, int n) {
        StringBuilder b = new StringBuilder("{\"revision\":" + revision + ",\"factor\":2,\"incarnation\":\"" + incarnation
                + "\",\"ready\":" + ready + ",\"limiters\":[");
        for (int i = 1; i <= n; i++) {
            b.append(i > 1 ? "," : "").append("{\"id\":\"l").append(i).append("\",\"address\":\"127.0.0.1:").append(9000 + i)
                    .append("\"}");
        }
        return b.append("]}").toString();
    }

    void serve(String answer) throws Exception {
        ANSWER.set(answer);
        // as the refresh timer does: on an event loop of the client's Vert.x
        io.vertx.core.Promise<Void> done = io.vertx.core.Promise.promise();
        vertx.getOrCreateContext().runOnContext(v -> client.refresh().onComplete(done));
        done.future().await(10, TimeUnit.SECONDS);
    }

    int size() {
        return client.view().limiters().size();
    }

    void advance(Duration d) {
        now.addAndGet(d.toNanos());
    }

    @Test
    void refreshFromAThreadOutsideVertxReadsTheWholeAnswer() throws Exception {
        int failed = 0;
        for (int i = 0; i < 30; i++) {
            client.stop().await(10, TimeUnit.SECONDS);
            ANSWER.set(list(10 + i, "a", true, 2));
            // the first refresh, from this (non-Vert.x) thread, on a new connection
            client = LeveeClient.start(vertx, LeveeClient.Options.builder(new HostPort("127.0.0.1", observer.actualPort()))
                    .refresh(Duration.ofHours(1)).checkTimeout(Duration.ofMillis(250))
                    .backoff(Duration.ofSeconds(1)).build(), now::get,
                    Metrics.newRegistry()).await(10, TimeUnit.SECONDS);
            failed += client.view().revision() == 10 + i ? 0 : 1;
        }
        assertThat(failed).as("first refreshes that lost the observer's answer").isZero();
    }

    @Test
    void checksFromAThreadOutsideVertxReadEveryAnswer() throws Exception {
        int failed = 0;
        for (int i = 0; i < 30; i++) {
            client.stop().await(10, TimeUnit.SECONDS);
            ANSWER.set("{\"revision\":1,\"factor\":1,\"limiters\":[{\"id\":\"l1\",\"address\":\"127.0.0.1:"
                    + observer.actualPort() + "\"}]}");
            client = LeveeClient.start(vertx, LeveeClient.Options.builder(new HostPort("127.0.0.1", observer.actualPort()))
                    .refresh(Duration.ofHours(1)).checkTimeout(Duration.ofSeconds(2)).backoff(Duration.ofSeconds(1))
                    .build(), now::get,
                    Metrics.newRegistry()).await(10, TimeUnit.SECONDS);
            for (int k = 0; k < 5; k++) { // from this (non-Vert.x) thread; the first on a new connection
                ClientDecision d = client.check(dev.levee.s3.S3Request.fromRequestUri("GET", "127.0.0.1", "/b/k" + k, null))
                        .await(10, TimeUnit.SECONDS);
                failed += d.result() == ClientDecision.Result.ACCEPTED ? 0 : 1;
            }
        }
        assertThat(failed).as("checks whose answer was lost").isZero();
    }

    @Test
    void firstListIsAdoptedEvenWhenTheObserverIsNotReadyYet() throws Exception {
        serve(list(2, "a", false, 2));
        assertThat(size()).isEqualTo(2);
        assertThat(client.listHeld()).isFalse();
    }

    @Test
    void restartedObserverNotReadyYetDoesNotReplaceTheList() throws Exception {
        serve(list(7, "a", true, 3));
        serve(list(1, "b", false, 0)); // a new incarnation, no heartbeat yet
        assertThat(size()).isEqualTo(3);
        assertThat(client.listHeld()).isTrue();
        advance(Duration.ofMinutes(5)); // kept as long as the observer says it is not ready (docs/design.md §7)
        serve(list(2, "b", false, 1));
        assertThat(size()).isEqualTo(3);
        serve(list(4, "b", true, 3));
        assertThat(size()).isEqualTo(3);
        assertThat(client.view().incarnation()).isEqualTo("b");
        assertThat(client.view().revision()).isEqualTo(4);
        assertThat(client.listHeld()).isFalse();
        assertThat(Metrics.scrape(registry)).contains("levee_client_list_holds_total{reason=\"not_ready\"} 1.0")
                .contains("levee_client_list_held 0.0");
    }

    @Test
    void emptiedListIsKeptForTheGraceThenBelieved() throws Exception {
        serve(list(5, "a", true, 3));
        serve(list(6, "a", true, 0)); // leases expired together
        assertThat(size()).isEqualTo(3);
        assertThat(Metrics.scrape(registry)).contains("levee_client_list_held 1.0");
        advance(Duration.ofMillis(2900));
        serve(list(6, "a", true, 0));
        assertThat(size()).isEqualTo(3);
        advance(Duration.ofMillis(200));
        serve(list(6, "a", true, 0));
        assertThat(size()).isZero();
        assertThat(client.listHeld()).isFalse();
        assertThat(Metrics.scrape(registry)).contains("levee_client_list_holds_total{reason=\"shrunk\"} 1.0");
    }

    @Test
    void listBackWithinTheGraceEndsTheHold() throws Exception {
        serve(list(5, "a", true, 3));
        serve(list(6, "a", true, 0));
        advance(Duration.ofMillis(500));
        serve(list(9, "a", true, 3));
        assertThat(size()).isEqualTo(3);
        assertThat(client.view().revision()).isEqualTo(9);
        assertThat(client.listHeld()).isFalse();
        advance(Duration.ofSeconds(10)); // a later gap gets a grace of its own
        serve(list(10, "a", true, 1));
        assertThat(size()).isEqualTo(3);
    }

    @Test
    void losingHalfTheLimitersOrFewerIsBelievedAtOnce() throws Exception {
        serve(list(5, "a", true, 4));
        serve(list(6, "a", true, 2));
        assertThat(size()).isEqualTo(2);
        serve(list(7, "a", true, 1));
        assertThat(size()).isEqualTo(1);
        serve(list(8, "a", true, 3));
        assertThat(size()).isEqualTo(3);
        serve(list(9, "a", true, 1)); // 3 -> 1: fewer than half
        assertThat(size()).isEqualTo(3);
    }

    @Test
    void zeroGraceBelievesAnEmptiedListAtOnce() throws Exception {
        startClient(Duration.ZERO);
        serve(list(5, "a", true, 3));
        serve(list(6, "a", true, 0));
        assertThat(size()).isZero();
    }

    @Test
    void olderObserverAnswerWithoutIncarnationOrReadinessIsRead() throws Exception {
        serve("{\"revision\":3,\"factor\":2,\"limiters\":[{\"id\":\"l1\",\"address\":\"127.0.0.1:9001\"},"
                + "{\"id\":\"l2\",\"address\":\"127.0.0.1:9002\"}]}");
        assertThat(size()).isEqualTo(2);
        assertThat(client.view().isReady()).isTrue();
        assertThat(client.view().incarnation()).isNull();
        // and an older observer restarted (revision 1, empty) is covered by the grace
        serve("{\"revision\":1,\"factor\":2,\"limiters\":[]}");
        assertThat(size()).isEqualTo(2);
    }
}
