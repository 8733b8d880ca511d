package dev.levee.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The line endpoint of a real {@link ClientService} over a stand-in limiter: the same decision, Retry-After and
 * RateLimit fields as {@code GET /v1/s3check} for the same request facts, counted alike; pipelining over one
 * connection; a malformed request answered {@code error} and the connection closed; the idle timeout; and a
 * graceful stop that answers the checks already received.
 */
class LineEndpointTest {

    Vertx vertx;
    HttpServer limiter;
    LeveeClient client;
    MeterRegistry registry;
    ClientService service;
    HttpClient http;
    /** How long the stand-in limiter waits before it answers, ms. */
    volatile long limiterDelay;
    /** Checks the stand-in limiter received. */
    final java.util.concurrent.atomic.AtomicInteger received = new java.util.concurrent.atomic.AtomicInteger();

    @BeforeEach
    void start() throws Exception {
        vertx = Vertx.vertx();
        // buckets named "rej…" are refused (retry after 3 s), others admitted; quota 27.5/s, burst 3, reset 2 s
        limiter = vertx.createHttpServer().requestHandler(req -> req.body().onSuccess(b -> {
            if (b.length() == 0) { // the client's offer of the check wire: this stand-in speaks JSON only
                req.response().setStatusCode(400).end();
                return;
            }
            JsonObject body = b.toJsonObject();
            JsonArray in = req.path().equals("/v1/checks") ? body.getJsonArray("checks") : new JsonArray().add(body);
            received.addAndGet(in.size());
            JsonArray out = new JsonArray();
            for (int i = 0; i < in.size(); i++) {
                boolean rej = in.getJsonObject(i).getString("resource").startsWith("rej");
                out.add(new JsonObject().put("result", rej ? "rejected" : "accepted").put("level", "prefix")
                        .put("limitKey", "p:" + in.getJsonObject(i).getString("resource")).put("remaining", rej ? 0 : 2)
                        .put("retryAfter", rej ? 3 : 0).put("limiter", "stub").put("rate", 27.5).put("burst", 3)
                        .put("reset", 2));
            }
            String answer = req.path().equals("/v1/checks") ? new JsonObject().put("decisions", out).encode()
                    : out.getJsonObject(0).encode();
            vertx.setTimer(Math.max(1, limiterDelay), t -> req.response().putHeader("Content-Type", "application/json")
                    .end(answer));
        })).listen(0, "127.0.0.1").await(10, TimeUnit.SECONDS);
        HttpServer observer = StandIns.observer(vertx, limiter.actualPort());
        registry = Metrics.newRegistry();
        client = StandIns.client(vertx, observer, registry);
        service = startService(Duration.ofSeconds(60));
        http = vertx.createHttpClient();
    }

    ClientService startService(Duration idle) throws Exception {
        return ClientService.start(vertx, new HostPort("127.0.0.1", 0),
                new ClientService.Line(new HostPort("127.0.0.1", 0), idle), client, registry).await(10, TimeUnit.SECONDS);
    }

    @AfterEach
    void stop() throws Exception {
        vertx.close().await(10, TimeUnit.SECONDS);
    }

    /** A plain TCP connection to the line endpoint. */
    static final class Line implements AutoCloseable {
        final Socket socket;
        final InputStream in;
        final OutputStream out;

        Line(int port) throws IOException {
            socket = new Socket(InetAddress.getLoopbackAddress(), port);
            socket.setSoTimeout(10_000);
            in = socket.getInputStream();
            out = socket.getOutputStream();
        }

        Line send(byte[] bytes) throws IOException {
            out.write(bytes);
            out.flush();
            return this;
        }

        /** Reads one answer line without its LF; null when the connection closed first. */
        String read() throws IOException {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            for (int c; (c = in.read()) >= 0; ) {
                if (c == '\n') {
                    return b.toString(StandardCharsets.ISO_8859_1);
                }
                b.write(c);
            }
            return null;
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    /** The HTTP endpoint's answer in the line form: result, Retry-After, RateLimit-Policy, RateLimit. */
    String viaHttp(String method, String host, String uri, String copy, boolean onAccept) throws Exception {
        return http.request(HttpMethod.GET, service.port(), "127.0.0.1", "/v1/s3check" + (onAccept ? "?ratelimit=1" : ""))
                .compose(r -> {
                    r.putHeader("X-Levee-Method", method).putHeader("X-Levee-Uri", uri);
                    if (!host.isEmpty()) {
                        r.putHeader("X-Levee-Host", host);
                    }
                    if (!copy.isEmpty()) {
                        r.putHeader("X-Levee-Copy-Source", copy);
                    }
                    return r.send();
                }).map(resp -> resp.getHeader("X-Levee-Result") + "\t"
                        + (resp.getHeader("Retry-After") == null ? "0" : resp.getHeader("Retry-After")) + "\t"
                        + nonNull(resp.getHeader("RateLimit-Policy")) + "\t" + nonNull(resp.getHeader("RateLimit")))
                .await(10, TimeUnit.SECONDS);
    }

    static String nonNull(String s) {
        return s == null ? "" : s;
    }

    static byte[] req(boolean onAccept, String method, String host, String uri, String copy) {
        return LineConnectionTest.req(onAccept, LineConnectionTest.latin1(method), LineConnectionTest.latin1(host),
                LineConnectionTest.latin1(uri), LineConnectionTest.latin1(copy));
    }

    double results(String result) {
        var c = registry.find("levee_client_results_total").tag("result", result).counter();
        return c == null ? 0 : c.count();
    }

    @Test
    void theLineEndpointAnswersAsTheHttpEndpointDoes() throws Exception {
        assertThat(service.linePort()).isPositive().isNotEqualTo(service.port());
        String[][] cases = {
            {"GET", "127.0.0.1", "/acc/k", ""},
            {"GET", "127.0.0.1", "/rej/k?versionId=2", ""},
            {"PUT", "acc.s3.example.test", "/k%20ey?partNumber=1&uploadId=x", "/src/k"},
            {"DELETE", "", "/rej-b/a/b//c", ""},
            {"HEAD", "127.0.0.1:8080", "/acc", ""},
            {"POST", "127.0.0.1", "/rej?delete", ""},
        };
        try (Line line = new Line(service.linePort())) {
            for (String[] c : cases) {
                for (boolean onAccept : new boolean[] {false, true}) {
                    String expected = viaHttp(c[0], c[1], c[2], c[3], onAccept);
                    String got = line.send(req(onAccept, c[0], c[1], c[2], c[3])).read();
                    assertThat(got).as("%s %s %s on_accept=%s", c[0], c[1], c[2], onAccept).isEqualTo(expected);
                }
            }
        }
        assertThat(viaHttp("GET", "h", "/rej/k", "", false)).isEqualTo("rejected\t3\t\"prefix\";q=55;w=2\t\"prefix\";r=0;t=3");
        assertThat(viaHttp("GET", "h", "/acc/k", "", true)).isEqualTo("accepted\t0\t\"prefix\";q=55;w=2\t\"prefix\";r=2;t=2");
        // both listeners count alike: one result per check
        assertThat(results("accepted") + results("rejected")).isEqualTo(2 * 2 * cases.length + 2);
    }

    @Test
    void pipelinedRequestsAreAnsweredInOrder() throws Exception {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        for (int i = 0; i < 50; i++) {
            all.writeBytes(req(false, "GET", "h", (i % 3 == 0 ? "/rej" : "/acc") + i + "/k", ""));
        }
        try (Line line = new Line(service.linePort())) {
            line.send(all.toByteArray());
            for (int i = 0; i < 50; i++) {
                assertThat(line.read()).as("answer %d", i).startsWith(i % 3 == 0 ? "rejected\t3\t" : "accepted\t0\t");
            }
        }
    }

    @Test
    void aMalformedRequestIsAnsweredErrorAndTheConnectionClosed() throws Exception {
        try (Line line = new Line(service.linePort())) {
            line.send("GET /v1/s3check HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
            assertThat(line.read()).isEqualTo("error\trequest must start with 'C'");
            assertThat(line.read()).as("closed").isNull();
        }
        try (Line line = new Line(service.linePort())) {
            line.send(req(false, "GET", "h", "/acc/1", ""));
            line.send("C 0 3:GET1:h20000:".getBytes(StandardCharsets.ISO_8859_1));
            assertThat(line.read()).startsWith("accepted\t");
            assertThat(line.read()).isEqualTo("error\turi length 20000 exceeds 16384 bytes");
            assertThat(line.read()).isNull();
        }
        // the endpoint goes on serving
        try (Line line = new Line(service.linePort())) {
            assertThat(line.send(req(false, "GET", "h", "/acc/2", "")).read()).startsWith("accepted\t");
        }
    }

    @Test
    void aPeerThatShutsDownItsOutputStillGetsItsAnswersThenTheClose() throws Exception {
        limiterDelay = 200; // the checks are still being decided when the end of input arrives
        try (Line line = new Line(service.linePort())) {
            line.send(req(false, "GET", "h", "/acc/1", "")).send(req(false, "GET", "h", "/rej/2", ""));
            line.socket.shutdownOutput();
            assertThat(line.read()).startsWith("accepted\t");
            assertThat(line.read()).startsWith("rejected\t3\t");
            assertThat(line.read()).as("closed after its answers").isNull();
        }
        limiterDelay = 0;
        // a request cut short by the end of input: the answers due, then an error naming it, then the close
        try (Line line = new Line(service.linePort())) {
            line.send(req(false, "GET", "h", "/acc/3", "")).send("C 0 3:GET1:h".getBytes(StandardCharsets.ISO_8859_1));
            line.socket.shutdownOutput();
            assertThat(line.read()).startsWith("accepted\t");
            assertThat(line.read()).isEqualTo("error\tinput ended inside a request");
            assertThat(line.read()).isNull();
        }
        // nothing sent: closed at once
        try (Line line = new Line(service.linePort())) {
            line.socket.shutdownOutput();
            assertThat(line.read()).isNull();
        }
    }

    @Test
    void anIdleConnectionIsClosed() throws Exception {
        ClientService shortIdle = startService(Duration.ofMillis(300));
        try (Line line = new Line(shortIdle.linePort())) {
            long t0 = System.nanoTime();
            assertThat(line.send(req(false, "GET", "h", "/acc/1", "")).read()).startsWith("accepted\t");
            assertThat(line.read()).as("closed by the endpoint").isNull();
            // no earlier than 300 ms after the request, the last byte it got
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).isBetween(290L, 5000L);
        } finally {
            shortIdle.stop().await(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aGracefulStopAnswersTheChecksAlreadyReceivedThenCloses() throws Exception {
        limiterDelay = 400;
        try (Line busy = new Line(service.linePort()); Line idle = new Line(service.linePort())) {
            assertThat(idle.send(req(false, "GET", "h", "/acc/0", "")).read()).startsWith("accepted\t");
            busy.send(req(false, "GET", "h", "/acc/1", "")).send(req(false, "GET", "h", "/rej/2", ""));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (received.get() < 3 && System.nanoTime() - deadline < 0) {
                Thread.sleep(5); // until both checks reached the limiter, which answers 400 ms after each
            }
            assertThat(received.get()).isEqualTo(3);
            Future<Void> stopped = service.stop(Duration.ofSeconds(5));
            assertThat(busy.read()).startsWith("accepted\t");
            assertThat(busy.read()).startsWith("rejected\t3\t");
            assertThat(busy.read()).as("closed after its answers").isNull();
            assertThat(idle.read()).as("an idle connection closes at once").isNull();
            stopped.await(10, TimeUnit.SECONDS);
            assertThat(stopped.succeeded()).isTrue();
        }
        try (Socket s = new Socket()) {
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> s.connect(
                    new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), service.linePort()), 1000))
                    .as("no longer listening").isInstanceOf(IOException.class);
        }
    }
}
