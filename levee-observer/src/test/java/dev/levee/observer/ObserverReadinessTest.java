package dev.levee.observer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.core.Member;
import dev.levee.core.MembershipView;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import io.vertx.core.Vertx;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A freshly started heartbeat observer has not heard every live limiter yet: for one TTL its list is
 * marked not ready and {@code /health} answers 503; each start has its own incarnation (issue 10).
 */
class ObserverReadinessTest {

    static Vertx vertx;
    static final HttpClient HTTP = HttpClient.newHttpClient();

    @BeforeAll
    static void start() {
        vertx = Vertx.vertx();
    }

    @AfterAll
    static void stop() throws Exception {
        vertx.close().await(10, TimeUnit.SECONDS);
    }

    static HttpResponse<String> get(ObserverService o, String path) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + o.port() + path)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    static HttpResponse<String> heartbeat(ObserverService o, String id) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + o.port() + "/v1/heartbeat"))
                .POST(HttpRequest.BodyPublishers.ofString("{\"id\":\"" + id + "\",\"address\":\"127.0.0.1:9001\"}"))
                .build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void freshObserverListIsNotReadyForOneTtl() throws Exception {
        AtomicLong now = new AtomicLong(5_000_000_000L);
        ObserverService o = ObserverService.start(vertx, new ObserverService.Options(new HostPort("127.0.0.1", 0),
                Duration.ofSeconds(3), 2, 16), now::get, Metrics.newRegistry()).await(10, TimeUnit.SECONDS);
        try {
            assertThat(heartbeat(o, "l1").statusCode()).isEqualTo(204);
            assertThat(get(o, "/v1/limiters").body()).contains("\"ready\":false").contains("\"incarnation\":\"")
                    .contains("\"l1\"").contains("\"membership\":\"heartbeat\""); // revisions not comparable
            HttpResponse<String> health = get(o, "/health");
            assertThat(health.statusCode()).isEqualTo(503);
            assertThat(health.body()).contains("collecting heartbeats");
            now.addAndGet(Duration.ofMillis(2999).toNanos());
            heartbeat(o, "l1");
            assertThat(get(o, "/v1/limiters").body()).contains("\"ready\":false");
            now.addAndGet(Duration.ofMillis(1).toNanos());
            assertThat(get(o, "/v1/limiters").body()).contains("\"ready\":true");
            assertThat(get(o, "/health").statusCode()).isEqualTo(200);
        } finally {
            o.stop().await(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void observerStoppedGracefullyAnswersAHeartbeatInFlight() throws Exception {
        ObserverService o = ObserverService.start(vertx, new ObserverService.Options(new HostPort("127.0.0.1", 0),
                Duration.ofSeconds(3), 2, 16), () -> 0L, Metrics.newRegistry()).await(10, TimeUnit.SECONDS);
        byte[] body = "{\"id\":\"l1\",\"address\":\"127.0.0.1:9001\"}".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        try (java.net.Socket s = new java.net.Socket("127.0.0.1", o.port())) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write(("POST /v1/heartbeat HTTP/1.1\r\nHost: x\r\nContent-Length: " + body.length
                    + "\r\n\r\n").getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            s.getOutputStream().flush();
            // the observer's one event loop reads this head before it answers a later request on another connection
            for (int i = 0; i < 2; i++) {
                get(o, "/v1/limiters");
            }
            var stopped = o.stop(Duration.ofSeconds(5)); // SIGTERM: the heartbeat's head is read, its body not yet
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> {
                try {
                    new java.net.Socket("127.0.0.1", o.port()).close();
                    return false;
                } catch (java.io.IOException refused) {
                    return true; // no longer accepting
                }
            });
            s.getOutputStream().write(body);
            s.getOutputStream().flush();
            String answer = new String(s.getInputStream().readNBytes(12), java.nio.charset.StandardCharsets.US_ASCII);
            assertThat(answer).as("answer to the request in flight").isEqualTo("HTTP/1.1 204");
            stopped.await(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void eachStartHasItsOwnIncarnation() throws Exception {
        List<String> incarnations = new java.util.ArrayList<>();
        for (int i = 0; i < 2; i++) {
            ObserverService o = ObserverService.start(vertx, new ObserverService.Options(new HostPort("127.0.0.1", 0),
                    Duration.ofSeconds(3), 2, 16), () -> 0L, Metrics.newRegistry()).await(10, TimeUnit.SECONDS);
            String body = get(o, "/v1/limiters").body();
            incarnations.add(body.replaceAll(".*\"incarnation\":\"([0-9a-f]+)\".*", "$1"));
            o.stop().await(10, TimeUnit.SECONDS);
        }
        assertThat(incarnations.get(0)).hasSize(16).isNotEqualTo(incarnations.get(1));
    }

    @Test
    void etcdBackedObserverIsReadyAsItsSourceIs() throws Exception {
        boolean[] reachable = {false};
        MembershipView view = new MembershipView(4, 2, List.of(new Member("l1", "127.0.0.1:9001")));
        ObserverService o = ObserverService.start(vertx, new HostPort("127.0.0.1", 0), () -> view, () -> reachable[0],
                Metrics.newRegistry()).await(10, TimeUnit.SECONDS);
        try {
            assertThat(get(o, "/v1/limiters").body()).contains("\"ready\":false").contains("\"revision\":4");
            assertThat(get(o, "/health").statusCode()).isEqualTo(503);
            reachable[0] = true;
            assertThat(get(o, "/v1/limiters").body()).contains("\"ready\":true");
            assertThat(get(o, "/health").statusCode()).isEqualTo(200);
        } finally {
            o.stop().await(10, TimeUnit.SECONDS);
        }
    }
}
