package dev.levee.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A client given several observers (issue 22, item 9): it asks each every round, takes a ready list, the newest
 * etcd revision first, and is not degraded while one observer answers. Two stand-in observers whose answers the
 * tests set (null: HTTP 503, as an observer that cannot serve); time is the test's ticker.
 */
class SeveralObserversTest {

    static Vertx vertx;
    static final AtomicReference<String> ANSWER_A = new AtomicReference<>();
    static final AtomicReference<String> ANSWER_B = new AtomicReference<>();
    static HttpServer a;
    static HttpServer b;

    /** Starts 5 s before the ticker wraps (STYLE: time). */
    final AtomicLong now = new AtomicLong(Long.MAX_VALUE - 5_000_000_000L);
    MeterRegistry registry;
    LeveeClient client;

    @BeforeAll
    static void startObservers() throws Exception {
        vertx = Vertx.vertx();
        a = observer(ANSWER_A);
        b = observer(ANSWER_B);
    }

    static HttpServer observer(AtomicReference<String> answer) throws Exception {
        return vertx.createHttpServer().requestHandler(req -> {
            String body = answer.get();
            if (body == null) {
                req.response().setStatusCode(503).end();
            } else {
                req.response().putHeader("Content-Type", "application/json").end(body);
            }
        }).listen(0, "127.0.0.1").await(10, TimeUnit.SECONDS);
    }

    @AfterAll
    static void stopObservers() throws Exception {
        vertx.close().await(10, TimeUnit.SECONDS);
    }

    @AfterEach
    void stopClient() throws Exception {
        if (client != null) {
            client.stop().await(10, TimeUnit.SECONDS);
        }
    }

    static HostPort at(HttpServer s) {
        return new HostPort("127.0.0.1", s.actualPort());
    }

    /** A loopback port nothing listens on: an observer that is down. */
    static HostPort down() throws Exception {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return new HostPort("127.0.0.1", s.getLocalPort());
        }
    }

    void start(List<HostPort> observers) throws Exception {
        registry = Metrics.newRegistry();
        client = LeveeClient.start(vertx, LeveeClient.Options.builder(observers).refresh(Duration.ofHours(1))
                .checkTimeout(Duration.ofMillis(250)).backoff(Duration.ofSeconds(1)).maxInFlight(4).maxBatch(256)
                .warnInterval(Duration.ofSeconds(10)).build(), now::get, registry)
                .await(10, TimeUnit.SECONDS);
    }

    /** A round as the refresh timer makes it. */
    void round() throws Exception {
        io.vertx.core.Promise<Void> done = io.vertx.core.Promise.promise();
        vertx.getOrCreateContext().runOnContext(v -> client.poll().onComplete(ar -> done.complete()));
        done.future().await(10, TimeUnit.SECONDS);
    }

    static String list(long revision, boolean ready, String membership, int n) {
        return LimiterListTest.list(revision, "inc-" + membership, ready, n).replace("{\"revision\"",
                "{\"membership\":\"" + membership + "\",\"revision\"");
    }

    @Test
    void aClientStartedWhileItsFirstObserverIsDownHasAListAtOnce() throws Exception {
        ANSWER_B.set(list(7, true, "etcd", 3));
        HostPort gone = down();
        start(List.of(gone, at(b)));
        // the list is in when start() returns: no check of this client fails open
        assertThat(client.view().limiters()).hasSize(3);
        assertThat(client.failingOpen()).isFalse();
        assertThat(client.observerReachable()).isTrue();
        assertThat(client.degradedReason()).isNull();
        assertThat(client.observerInUse()).isEqualTo(at(b));
        assertThat(client.observersDownReason()).isEqualTo("observer " + gone + " unreachable: limiter lists from observer "
                + at(b));
        assertThat(Metrics.scrape(registry)).contains("levee_client_observers_unreachable 1.0")
                .contains("levee_client_observer_unreachable 0.0");
    }

    @Test
    void theNewestEtcdRevisionIsTakenAndANotReadyListIsSkipped() throws Exception {
        ANSWER_A.set(list(10, true, "etcd", 3));
        ANSWER_B.set(list(12, true, "etcd", 4));
        start(List.of(at(a), at(b)));
        assertThat(client.view().revision()).isEqualTo(12);
        assertThat(client.observerInUse()).isEqualTo(at(b));
        // B's etcd cut off: its list (newer, but not ready) is skipped for A's, which is ready
        ANSWER_A.set(list(14, true, "etcd", 4));
        ANSWER_B.set(list(15, false, "etcd", 1));
        round();
        assertThat(client.view().revision()).isEqualTo(14);
        assertThat(client.observerInUse()).isEqualTo(at(a));
        assertThat(client.listHeld()).isFalse();
        assertThat(client.observersDownReason()).contains("observer " + at(b) + " not ready");
        // B back and level with A: the observer in use stays
        ANSWER_B.set(list(14, true, "etcd", 4));
        round();
        assertThat(client.observerInUse()).isEqualTo(at(a));
        assertThat(client.observersDownReason()).isNull();
    }

    @Test
    void oneObserverGivenIsNotAlsoReportedAsAnObserverDown() throws Exception {
        ANSWER_A.set(list(3, true, "heartbeat", 2));
        start(List.of(at(a)));
        ANSWER_A.set(list(1, false, "heartbeat", 2)); // restarted: its own hold says so, and nothing more
        round();
        assertThat(client.listHeld()).isTrue();
        assertThat(client.observersDownReason()).isNull();
    }

    @Test
    void heartbeatListsAreNotComparedByRevision() throws Exception {
        ANSWER_A.set(list(3, true, "heartbeat", 2));
        ANSWER_B.set(list(90, true, "heartbeat", 2));
        start(List.of(at(a), at(b)));
        assertThat(client.observerInUse()).isEqualTo(at(a));
        assertThat(client.view().revision()).isEqualTo(3);
    }

    @Test
    void oneObserverDownIsNotDegradedAndAllDownKeepsTheLastList() throws Exception {
        ANSWER_A.set(list(5, true, "etcd", 3));
        ANSWER_B.set(list(5, true, "etcd", 3));
        start(List.of(at(a), at(b)));
        assertThat(client.observerInUse()).isEqualTo(at(a));
        ANSWER_A.set(null);
        round();
        assertThat(client.observerInUse()).isEqualTo(at(b));
        assertThat(client.degradedReason()).isNull();
        assertThat(client.observersDownReason()).startsWith("observer " + at(a) + " unreachable");
        now.addAndGet(Duration.ofMinutes(5).toNanos()); // however long it lasts: the list stays current from B
        round();
        assertThat(client.degradedReason()).isNull();
        assertThat(client.view().limiters()).hasSize(3);
        ANSWER_B.set(null);
        round();
        assertThat(client.observerReachable()).isFalse();
        assertThat(client.view().limiters()).hasSize(3);
        assertThat(client.degradedReason()).startsWith("observers " + at(a) + ", " + at(b) + " unreachable: checks use"
                + " the last list (3 limiters");
        assertThat(client.observersDownReason()).isNull(); // said by the degraded state instead
    }

    @Test
    void aListThatShrankSharplyIsHeldForTheGraceWhicheverObserverSentIt() throws Exception {
        ANSWER_A.set(list(5, true, "etcd", 4));
        ANSWER_B.set(list(5, true, "etcd", 4));
        start(List.of(at(a), at(b)));
        ANSWER_A.set(null);
        ANSWER_B.set(list(6, true, "etcd", 0)); // leases ended together, seen through the other observer
        round();
        assertThat(client.view().limiters()).hasSize(4);
        assertThat(client.listHeld()).isTrue();
        now.addAndGet(Duration.ofMillis(3100).toNanos());
        round();
        assertThat(client.view().limiters()).isEmpty();
    }
}
