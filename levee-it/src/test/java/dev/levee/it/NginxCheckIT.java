package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.levee.it.NginxRawHttp.Answer;
import dev.levee.it.NginxRawHttp.Conn;
import dev.levee.it.NginxRawHttp.Request;
import dev.levee.it.NginxRawHttp.Response;
import dev.levee.runtime.HostPort;
import dev.levee.stack.EmbeddedNginx;
import dev.levee.nginx.NginxConfig;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.http.RequestOptions;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.params.AfterParameterizedClassInvocation;
import org.junit.jupiter.params.BeforeParameterizedClassInvocation;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * rate.lua and the generated configuration on a real NGINX, between two recording servers on
 * loopback: one stands in for levee-client (it decides by a marker in the URI, so every result and
 * failure is reproducible), the other for the S3 backend. Each test sees the exact bytes NGINX sent
 * to both, and the exact bytes the client got back.
 *
 * <p>Every case runs for both transports of rate.lua (docs/nginx.md, "Transports: subrequest and
 * cosocket"): the subrequest to the check location, answered by an HTTP stand-in, and the cosocket,
 * answered by a stand-in of the line endpoint that records each request as the HTTP check it stands
 * for and answers by the same markers. Cases of one transport only say so.
 */
@ParameterizedClass(name = "transport {0}")
@ValueSource(strings = {"subrequest", "cosocket"})
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class NginxCheckIT {

    static NginxRawHttp.Recording client;
    static NginxRawHttp.Server backend;
    static EmbeddedNginx nginx;
    static String transport;
    static final AtomicInteger SEQ = new AtomicInteger();

    @Parameter
    String transportOfThisRun;

    /** The options that select this run's transport, after the others in an attempt() call. */
    static String via() {
        return cosocket() ? ", transport = \"cosocket\", host = \"127.0.0.1\", port = " + client.port()
                + ", timeout = 500" : "";
    }

    static boolean cosocket() {
        return transport.equals("cosocket");
    }

    /** Returns the attempt() call with {@code options} and this run's transport (no table when there are neither). */
    static String attempt(String location, String options) {
        String all = options.isEmpty() ? via().replaceFirst("^, ", "") : options + via();
        return "require(\"rate\").attempt(" + location + (all.isEmpty() ? ")" : ", { " + all + " })");
    }

    @BeforeParameterizedClassInvocation
    static void start(String transportOfThisRun) throws IOException {
        assertThat(EmbeddedNginx.unavailable()).as("nginx with the lua module (scripts/test installs it)").isEmpty();
        transport = transportOfThisRun;
        client = cosocket() ? new NginxRawHttp.LineServer(NginxCheckIT::decideLine) : new NginxRawHttp.Server(NginxCheckIT::decide);
        backend = new NginxRawHttp.Server(r -> Answer.of(200, "stored " + r.body().length, "X-Backend", "raw"));
        NginxConfig.Builder b = NginxConfig.builder()
                .client(new HostPort("127.0.0.1", cosocket() ? backend.port() : client.port())) // cosocket: unused
                .transport(cosocket() ? NginxConfig.Transport.COSOCKET : NginxConfig.Transport.SUBREQUEST)
                .clientLine(new HostPort("127.0.0.1", client.port()))
                .backend(new HostPort("127.0.0.1", backend.port()))
                .timeout(Duration.ofMillis(500))
                .workers("1");
        String check = b.build().render(NginxConfig.Part.CHECK);
        String extra = NginxRawHttp.server("127.0.0.1:{{port:deny}}", "s3_backend",
                        attempt("\"/.levee\"", "on_failure = \"deny\""), check)
                + NginxRawHttp.server("127.0.0.1:{{port:h2}} http2", "s3_backend", attempt("\"/.levee\"", ""), check)
                + NginxRawHttp.server("127.0.0.1:{{port:h2deny}} http2", "s3_backend",
                        attempt("\"/.levee\"", "on_failure = \"deny\""), check)
                // a Lua error inside attempt(): the check location is not a path
                + NginxRawHttp.server("127.0.0.1:{{port:luaerr}}", "s3_backend",
                        attempt("nil", "on_failure = \"allow\""), check)
                + NginxRawHttp.server("127.0.0.1:{{port:luaerrdeny}}", "s3_backend",
                        attempt("nil", "on_failure = \"deny\""), check)
                // a bad option after on_failure: the policy asked for still applies
                + NginxRawHttp.server("127.0.0.1:{{port:badflagdeny}}", "s3_backend",
                        attempt("\"/.levee\"", "on_failure = \"deny\", ratelimit_on_accept = \"yes\""), check)
                // the call as the original design writes it: location name without the slash
                + NginxRawHttp.server("127.0.0.1:{{port:seedform}}", "s3_backend",
                        attempt("\".levee\"", "on_failure = \"deny\""), check);
        if (cosocket()) {
            // nothing listens on the port "dead" (EmbeddedNginx picked it free); a bad option is a Lua error
            extra += NginxRawHttp.server("127.0.0.1:{{port:dead}}", "s3_backend", "require(\"rate\").attempt(\"/.levee\","
                            + " { transport = \"cosocket\", port = {{port:nothing}}, timeout = 500 })", check)
                    + NginxRawHttp.server("127.0.0.1:{{port:deaddeny}}", "s3_backend", "require(\"rate\").attempt(\"/.levee\","
                            + " { on_failure = \"deny\", transport = \"cosocket\", port = {{port:nothing}}, timeout = 500 })", check)
                    + NginxRawHttp.server("127.0.0.1:{{port:badopt}}", "s3_backend", "require(\"rate\").attempt(\"/.levee\","
                            + " { on_failure = \"deny\", transport = \"cosocket\", port = 0 })", check)
                    + NginxRawHttp.server("127.0.0.1:{{port:forgot}}", "s3_backend", "require(\"rate\").attempt(\"/.levee\","
                            + " { on_failure = \"deny\", port = " + client.port() + " })", check);
        }
        nginx = EmbeddedNginx.start(b.extraHttp(extra));
    }

    @AfterParameterizedClassInvocation
    static void stop() throws IOException {
        if (nginx != null) {
            nginx.close();
            nginx = null;
        }
        if (client != null) {
            client.close();
            client = null;
        }
        if (backend != null) {
            backend.close();
            backend = null;
        }
    }

    /** The stand-in levee-client: the URI says what to answer. */
    static Answer decide(Request r) {
        String uri = r.header("X-Levee-Uri");
        if (uri == null || !r.target().equals("/v1/s3check")) {
            return Answer.of(400, "{\"error\":\"not a check\"}");
        }
        if (uri.contains("reject")) {
            return Answer.of(429, "{\"result\":\"rejected\"}", "X-Levee-Result", "rejected", "Retry-After", "7");
        }
        if (uri.contains("fail500")) {
            return Answer.of(500, "{\"result\":\"failed\"}", "X-Levee-Result", "failed");
        }
        if (uri.contains("unlabelled")) {
            return Answer.of(200, "{}"); // a service that is not levee-client: 200 without a result
        }
        if (uri.contains("slow")) {
            try {
                TimeUnit.MILLISECONDS.sleep(1500); // simulates a levee-client slower than the 500 ms timeout
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return Answer.of(200, "{\"result\":\"accepted\"}", "X-Levee-Result", "accepted");
    }

    /** Markers a line answer may be broken by, each failing the check for its own reason. */
    static final Map<String, String> BROKEN_ANSWERS = Map.of(
            "fields5", "accepted\t0\t\t\tx",
            "nofields", "accepted",
            "unknownword", "admitted\t0\t\t",
            "rejzero", "rejected\t0\t\t",
            "accretry", "accepted\t3\t\t",
            "onefield", "rejected\t2\t\"resource\";q=4;w=1\t",
            "errans", "error\turi length 99999 exceeds 16384 bytes");

    /** Keys of "drop-once" requests closed once without an answer. */
    static final Set<String> DROPPED = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /**
     * The stand-in line endpoint: the same markers as {@link #decide}, as levee-line/1 answers; and markers of
     * its own for what only a socket can do: close without answering ({@code drop-once}, {@code drop-always})
     * and broken answers ({@link #BROKEN_ANSWERS}).
     */
    static String decideLine(Request r) {
        String uri = r.header("X-Levee-Uri");
        if (uri.contains("drop-always")) {
            return null;
        }
        if (uri.contains("drop-once") && DROPPED.add(uri)) {
            return null;
        }
        for (Map.Entry<String, String> e : BROKEN_ANSWERS.entrySet()) {
            if (uri.contains("broken-" + e.getKey())) {
                return e.getValue();
            }
        }
        Answer a = decide(r);
        String result = a.headers().stream().filter(h -> h.getKey().equals("X-Levee-Result")).map(Map.Entry::getValue)
                .findFirst().orElse(null);
        String retry = a.headers().stream().filter(h -> h.getKey().equals("Retry-After")).map(Map.Entry::getValue)
                .findFirst().orElse("0");
        if (a.status() == 200 && "accepted".equals(result)) {
            return "accepted\t0\t\t";
        }
        if (a.status() == 429 && "rejected".equals(result)) {
            return "rejected\t" + retry + "\t\t";
        }
        if (a.status() == 500 && "failed".equals(result)) {
            return "failed\t0\t\t";
        }
        return a.status() + " " + new String(a.body(), StandardCharsets.UTF_8); // not levee-client's answer
    }

    static String marker(String what) {
        return what + "-" + SEQ.incrementAndGet();
    }

    static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    static String accessLog() throws IOException {
        return Files.exists(nginx.accessLog()) ? Files.readString(nginx.accessLog(), StandardCharsets.UTF_8) : "";
    }

    /** Waits for the access-log line of the request whose URI holds {@code marker} and returns its result. */
    static String resultInAccessLog(String marker) {
        Pattern p = Pattern.compile("^.*" + Pattern.quote(marker) + "[ ?/\"].* levee=(\\S*)$", Pattern.MULTILINE);
        String[] found = new String[1];
        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20)).until(() -> {
            Matcher m = p.matcher(accessLog());
            if (m.find()) {
                found[0] = m.group(1);
                return true;
            }
            return false;
        });
        return found[0];
    }

    static final Set<String> CHECK_HEADERS = Set.of("host", "x-levee-method", "x-levee-host", "x-levee-uri",
            "x-levee-copy-source");

    @Test
    @Order(1)
    void checkGetsTheRawRequestFactsAndNothingOfTheBody() throws IOException {
        String m = marker("facts");
        String target = "/bkt/" + m + "/a%20b//c+d%2Fe~%C3%BC?partNumber=3&uploadId=x%2By";
        byte[] body = random(3 * 1024 * 1024 + 17, 1);
        try (Conn c = new Conn(nginx.port())) {
            c.send("PUT " + target + " HTTP/1.1\r\nHost: bkt.s3.example.test:8080\r\n"
                    + "x-amz-copy-source: /src/k%20ey?versionId=1\r\nx-amz-meta-under_score: v\r\n"
                    + "Content-Length: " + body.length + "\r\nExpect: 100-continue\r\n\r\n");
            Response cont = c.read(false);
            assertThat(cont.status()).isEqualTo(100);
            c.send(body);
            Response r = c.read(false);
            assertThat(r.status()).isEqualTo(200);
            assertThat(r.header("X-Backend")).isEqualTo("raw");
        }
        List<Request> checks = client.requestsFor(m);
        assertThat(checks).hasSize(1);
        Request check = checks.get(0);
        assertThat(check.method()).isEqualTo("GET");
        assertThat(check.target()).isEqualTo("/v1/s3check");
        assertThat(check.header("X-Levee-Method")).isEqualTo("PUT");
        assertThat(check.header("X-Levee-Uri")).isEqualTo(target);
        assertThat(check.header("X-Levee-Host")).isEqualTo("bkt.s3.example.test:8080");
        assertThat(check.header("X-Levee-Copy-Source")).isEqualTo("/src/k%20ey?versionId=1");
        assertThat(check.body()).isEmpty();
        assertThat(check.headerNames()).as("headers of the check").allMatch(CHECK_HEADERS::contains);

        List<Request> stored = backend.requestsFor(m);
        assertThat(stored).hasSize(1);
        Request s = stored.get(0);
        assertThat(s.method()).isEqualTo("PUT");
        assertThat(s.target()).isEqualTo(target);
        assertThat(s.header("Host")).isEqualTo("bkt.s3.example.test:8080");
        assertThat(s.header("x-amz-copy-source")).isEqualTo("/src/k%20ey?versionId=1");
        assertThat(s.header("x-amz-meta-under_score")).isEqualTo("v");
        assertThat(s.header("Content-Length")).isEqualTo(Integer.toString(body.length));
        assertThat(s.body()).isEqualTo(body);
        assertThat(resultInAccessLog(m)).isEqualTo("accepted");
    }

    @Test
    @Order(2)
    void chunkedPutReachesTheBackendWholeAndTheCheckWithoutFraming() throws IOException {
        String m = marker("chunked");
        byte[] payload = random(700_001, 2);
        ByteArrayOutputStream wire = new ByteArrayOutputStream();
        wire.writeBytes(("PUT /bkt/" + m + " HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n")
                .getBytes(StandardCharsets.ISO_8859_1));
        for (int off = 0; off < payload.length; ) {
            int n = Math.min(payload.length - off, 1 + new Random(off).nextInt(150_000));
            wire.writeBytes((Integer.toHexString(n) + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
            wire.write(payload, off, n);
            wire.writeBytes("\r\n".getBytes(StandardCharsets.ISO_8859_1));
            off += n;
        }
        wire.writeBytes("0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
        try (Conn c = new Conn(nginx.port())) {
            Response r = c.send(wire.toByteArray()).read(false);
            assertThat(r.status()).isEqualTo(200);
            // the same keep-alive connection serves the next request
            Response next = c.send("GET /bkt/" + m + "-next HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false);
            assertThat(next.status()).isEqualTo(200);
        }
        Request check = client.requestsFor(m).stream().filter(r -> "PUT".equals(r.header("X-Levee-Method")))
                .findFirst().orElseThrow();
        assertThat(check.header("X-Levee-Method")).isEqualTo("PUT");
        assertThat(check.header("Transfer-Encoding")).isNull();
        assertThat(check.header("Content-Length")).isNull();
        assertThat(check.body()).isEmpty();
        assertThat(client.requestsFor(m)).hasSize(2);
        Request stored = backend.requestsFor(m).get(0);
        assertThat(stored.body()).isEqualTo(payload);
        assertThat(backend.requestsFor(m)).hasSize(2);
    }

    @Test
    @Order(3)
    void largePutStreamsThroughUnchanged() throws IOException {
        String m = marker("large");
        byte[] body = random(48 * 1024 * 1024, 3);
        try (Conn c = new Conn(nginx.port())) {
            c.send("PUT /bkt/" + m + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + body.length + "\r\n\r\n");
            c.send(body);
            Response r = c.read(false);
            assertThat(r.status()).isEqualTo(200);
            assertThat(r.bodyText()).isEqualTo("stored " + body.length);
            Response next = c.send("DELETE /bkt/" + m + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false);
            assertThat(next.status()).isEqualTo(200);
        }
        assertThat(client.requestsFor(m)).hasSize(2).allSatisfy(chk -> {
            assertThat(chk.body()).isEmpty();
            assertThat(chk.header("Content-Length")).isNull();
        });
        assertThat(backend.requestsFor(m).get(0).body()).isEqualTo(body);
    }

    @Test
    @Order(4)
    void refusedRequestWithoutBodyKeepsTheConnectionForTheNextOne() throws IOException {
        String m = marker("reject-keep");
        String after = marker("after-keep");
        try (Conn c = new Conn(nginx.port())) {
            Response refused = c.send("GET /bkt/" + m + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false);
            assertThat(refused.statusLine()).isEqualTo("HTTP/1.1 503 Slow Down");
            if ("close".equalsIgnoreCase(refused.header("Connection"))) {
                // a lua module without ngx.resp.set_status (Debian 12's 0.10.23): the reason phrase needs the raw
                // connection, which NGINX closes after it (docs/nginx.md, "The refusal's status line")
                assertThat(luaModuleSetsTheReason()).as("a module with ngx.resp.set_status keeps the connection").isFalse();
                try (Conn fresh = new Conn(nginx.port())) {
                    Response next = fresh.send("GET /bkt/" + after + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false);
                    assertThat(next.status()).isEqualTo(200);
                }
            } else {
                assertThat(refused.header("Connection")).isEqualToIgnoringCase("keep-alive");
                Response next = c.send("GET /bkt/" + after + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false);
                assertThat(next.status()).isEqualTo(200);
            }
        }
        assertThat(backend.requestsFor(m)).isEmpty();
        assertThat(backend.requestsFor(after)).hasSize(1);
    }

    @Test
    @Order(5)
    void refusalIsAnS3SlowDownErrorWithRetryAfterAndRequestId() throws IOException {
        String m = marker("reject-body");
        try (Conn c = new Conn(nginx.port())) {
            Response r = c.send("GET /bkt/" + m + "/a&b%3C HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false);
            assertThat(r.status()).isEqualTo(503);
            assertThat(r.header("Content-Type")).isEqualTo("application/xml");
            assertThat(r.header("Retry-After")).isEqualTo("7");
            String rid = r.header("x-amz-request-id");
            assertThat(rid).matches("[0-9a-f]{32}");
            assertThat(r.bodyText()).startsWith("<?xml version=\"1.0\" encoding=\"UTF-8\"?>")
                    .contains("<Code>SlowDown</Code>")
                    .contains("<Resource>/bkt/" + m + "/a&amp;b%3C</Resource>")
                    .contains("<RequestId>" + rid + "</RequestId>");
            assertThat(Integer.parseInt(r.header("Content-Length"))).isEqualTo(r.body().length);
        }
        assertThat(resultInAccessLog(m)).isEqualTo("rejected");
    }

    @Test
    @Order(6)
    void refusedUploadWithExpectContinueGetsOneFinal503AndNoContinue() throws IOException {
        String m = marker("reject-expect");
        String text;
        try (Conn c = new Conn(nginx.port())) {
            c.send("PUT /bkt/" + m + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1048576\r\n"
                    + "Expect: 100-continue\r\n\r\n");
            // the body is never sent: NGINX must answer and close without asking for it
            text = new String(c.readRest(8000), StandardCharsets.ISO_8859_1);
        }
        assertThat(text).startsWith("HTTP/1.1 503 ").doesNotContain("100 Continue").doesNotContain("<still open>");
        assertThat(Pattern.compile("HTTP/1\\.1 \\d{3} ").matcher(text).results().count()).as(text).isEqualTo(1);
        assertThat(text).containsIgnoringCase("\r\nConnection: close\r\n").contains("<Code>SlowDown</Code>");
        assertThat(backend.requestsFor(m)).isEmpty();
        assertThat(client.requestsFor(m)).hasSize(1);
    }

    @Test
    @Order(7)
    void refusedUploadSentWholeIsAnsweredOnceThenTheConnectionCloses() throws IOException {
        String m = marker("reject-sent");
        String text;
        try (Conn c = new Conn(nginx.port())) {
            byte[] body = random(200_000, 7);
            c.send("PUT /bkt/" + m + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + body.length + "\r\n\r\n");
            c.send(body);
            c.send("GET /bkt/" + m + "-pipelined HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
            text = new String(c.readRest(8000), StandardCharsets.ISO_8859_1);
        }
        assertThat(text).startsWith("HTTP/1.1 503 ").doesNotContain("<still open>");
        assertThat(Pattern.compile("HTTP/1\\.1 \\d{3} ").matcher(text).results().count()).as(text).isEqualTo(1);
        assertThat(text).containsIgnoringCase("\r\nConnection: close\r\n");
        // neither the refused upload nor what followed it on the connection reached the backend
        assertThat(backend.requestsFor(m)).isEmpty();
    }

    @Test
    @Order(8)
    void refusedHeadHasTheHeadersOfARefusedGetAndNoBody() throws IOException {
        String m = marker("reject-head");
        Response head;
        Response get;
        if (luaModuleSetsTheReason()) {
            try (Conn c = new Conn(nginx.port())) {
                c.send("HEAD /bkt/" + m + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                        + "GET /bkt/" + m + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
                head = c.read(true);
                // had the HEAD answer carried a body, this would read it as a status line and fail
                get = c.read(false);
            }
        } else {
            // the refusal goes on the raw connection, which NGINX closes after it (docs/nginx.md): nothing may
            // follow the HEAD answer's header section before the close
            try (Conn c = new Conn(nginx.port())) {
                head = c.send("HEAD /bkt/" + m + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(true);
                assertThat(c.readRest(2000)).as("bytes after a refused HEAD's headers").isEmpty();
            }
            try (Conn c = new Conn(nginx.port())) {
                get = c.send("GET /bkt/" + m + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false);
            }
        }
        assertThat(head.statusLine()).isEqualTo("HTTP/1.1 503 Slow Down");
        assertThat(head.status()).isEqualTo(503);
        assertThat(get.status()).isEqualTo(503);
        assertThat(head.body()).isEmpty();
        assertThat(get.body()).isNotEmpty();
        Set<String> varying = Set.of("date", "x-amz-request-id");
        Map<String, String> headHeaders = head.headers().stream().filter(h -> !varying.contains(h.getKey().toLowerCase()))
                .collect(Collectors.toMap(h -> h.getKey().toLowerCase(), Map.Entry::getValue));
        Map<String, String> getHeaders = get.headers().stream().filter(h -> !varying.contains(h.getKey().toLowerCase()))
                .collect(Collectors.toMap(h -> h.getKey().toLowerCase(), Map.Entry::getValue));
        assertThat(headHeaders).isEqualTo(getHeaders).containsKeys("retry-after", "content-type", "content-length");
        assertThat(head.header("x-amz-request-id")).isNotBlank();
    }

    @ParameterizedTest
    @Order(9)
    @ValueSource(strings = {"fail500", "unlabelled", "slow"})
    void failedCheckFollowsOnFailure(String cause) throws IOException {
        String allow = marker(cause + "-allow");
        String deny = marker(cause + "-deny");
        try (Conn c = new Conn(nginx.port())) {
            Response r = c.send("GET /bkt/" + allow + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false);
            assertThat(r.status()).isEqualTo(200);
            assertThat(r.header("X-Backend")).isEqualTo("raw");
        }
        try (Conn c = new Conn(nginx.port("deny"))) {
            Response r = c.send("GET /bkt/" + deny + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false);
            assertThat(r.status()).isEqualTo(503);
            assertThat(r.header("Retry-After")).isEqualTo("1");
            assertThat(r.bodyText()).contains("<Code>SlowDown</Code>");
        }
        assertThat(resultInAccessLog(allow)).isEqualTo("failed");
        assertThat(resultInAccessLog(deny)).isEqualTo("failed");
        assertThat(backend.requestsFor(allow)).hasSize(1);
        assertThat(backend.requestsFor(deny)).isEmpty();
        await().atMost(Duration.ofSeconds(5)).until(() -> Files.readString(nginx.errorLog()).contains("levee: check failed"));
    }

    @Test
    @Order(10)
    void luaErrorTakesTheOnFailurePathNeverABare500() throws IOException {
        String allow = marker("luaerr-allow");
        String deny = marker("luaerr-deny");
        try (Conn c = new Conn(nginx.port("luaerr"))) {
            Response r = c.send("GET /bkt/" + allow + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false);
            assertThat(r.status()).isEqualTo(200);
        }
        try (Conn c = new Conn(nginx.port("luaerrdeny"))) {
            Response r = c.send("GET /bkt/" + deny + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false);
            assertThat(r.status()).isEqualTo(503);
            assertThat(r.bodyText()).contains("<Code>SlowDown</Code>");
        }
        String badFlag = marker("luaerr-badflag");
        try (Conn c = new Conn(nginx.port("badflagdeny"))) {
            Response r = c.send("GET /bkt/" + badFlag + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false);
            assertThat(r.status()).as("on_failure = deny though a later option is bad").isEqualTo(503);
        }
        assertThat(resultInAccessLog(allow)).isEqualTo("failed");
        assertThat(resultInAccessLog(deny)).isEqualTo("failed");
        assertThat(resultInAccessLog(badFlag)).isEqualTo("failed");
        assertThat(client.requestsFor(allow)).isEmpty();
        assertThat(client.requestsFor(badFlag)).isEmpty();
        await().atMost(Duration.ofSeconds(5)).until(() -> Files.readString(nginx.errorLog()).contains("lua error")
                && Files.readString(nginx.errorLog()).contains("ratelimit_on_accept must be true or false, got yes"));
    }

    @Test
    @Order(11)
    void http2ListenerTakesTheOnFailurePathNeverABare500() throws Exception {
        Assumptions.assumeFalse(cosocket(), "the subrequest transport: the lua module makes no subrequests from HTTP/2");
        String allow = marker("h2-allow");
        String deny = marker("h2-deny");
        Vertx vertx = Vertx.vertx();
        try {
            var http = vertx.createHttpClient(new HttpClientOptions().setProtocolVersion(HttpVersion.HTTP_2)
                    .setHttp2ClearTextUpgrade(false));
            int[] allowStatus = h2(http, nginx.port("h2"), "/bkt/" + allow);
            int[] denyStatus = h2(http, nginx.port("h2deny"), "/bkt/" + deny);
            assertThat(allowStatus[1]).as("protocol").isEqualTo(2);
            assertThat(allowStatus[0]).isEqualTo(200);
            assertThat(denyStatus[0]).isEqualTo(503);
        } finally {
            vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
        assertThat(resultInAccessLog(allow)).isEqualTo("failed");
        assertThat(resultInAccessLog(deny)).isEqualTo("failed");
        await().atMost(Duration.ofSeconds(5)).until(() -> Files.readString(nginx.errorLog()).contains("HTTP/2 request"));
    }

    @Test
    @Order(11)
    void http2RequestsAreCheckedByTheCosocketTransport() throws Exception {
        Assumptions.assumeTrue(cosocket(), "cosockets work in HTTP/2 requests");
        String ok = marker("h2-ok");
        String refused = marker("h2-reject");
        Vertx vertx = Vertx.vertx();
        try {
            var http = vertx.createHttpClient(new HttpClientOptions().setProtocolVersion(HttpVersion.HTTP_2)
                    .setHttp2ClearTextUpgrade(false));
            int[] okStatus = h2(http, nginx.port("h2"), "/bkt/" + ok);
            int[] refusedStatus = h2(http, nginx.port("h2deny"), "/bkt/" + refused);
            assertThat(okStatus[1]).as("protocol").isEqualTo(2);
            assertThat(okStatus[0]).isEqualTo(200);
            assertThat(refusedStatus[0]).isEqualTo(503);
        } finally {
            vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
        assertThat(resultInAccessLog(ok)).isEqualTo("accepted");
        assertThat(resultInAccessLog(refused)).isEqualTo("rejected");
        assertThat(client.requestsFor(ok)).singleElement()
                .satisfies(chk -> assertThat(chk.header("X-Levee-Method")).isEqualTo("GET"));
        assertThat(backend.requestsFor(ok)).hasSize(1);
        assertThat(backend.requestsFor(refused)).isEmpty();
    }

    private static int[] h2(io.vertx.core.http.HttpClient http, int port, String uri) throws Exception {
        return http.request(new RequestOptions().setMethod(HttpMethod.GET).setHost("127.0.0.1").setPort(port).setURI(uri))
                .compose(req -> req.send().compose(resp -> resp.body().map(b -> new int[] {resp.statusCode(),
                        resp.version() == HttpVersion.HTTP_2 ? 2 : 1})))
                .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    @ParameterizedTest
    @Order(12)
    @ValueSource(strings = {"GET", "HEAD", "PUT", "POST", "DELETE", "OPTIONS", "PATCH"})
    void everyMethodClassPassesThroughTheCheck(String method) throws IOException {
        String ok = marker("method-" + method.toLowerCase());
        String refused = marker("method-reject-" + method.toLowerCase());
        boolean head = method.equals("HEAD");
        String body = method.equals("PUT") || method.equals("POST") || method.equals("PATCH") ? "payload" : "";
        try (Conn c = new Conn(nginx.port())) {
            Response r = c.send(method + " /bkt/" + ok + "?uploads HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: "
                    + body.length() + "\r\n\r\n" + body).read(head);
            assertThat(r.status()).isEqualTo(200);
        }
        try (Conn c = new Conn(nginx.port())) {
            Response r = c.send(method + " /bkt/" + refused + "?delete HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: "
                    + body.length() + "\r\n\r\n" + body).read(head);
            assertThat(r.status()).isEqualTo(503);
        }
        assertThat(client.requestsFor(ok)).singleElement()
                .satisfies(chk -> assertThat(chk.header("X-Levee-Method")).isEqualTo(method));
        assertThat(client.requestsFor(refused)).singleElement()
                .satisfies(chk -> assertThat(chk.header("X-Levee-Method")).isEqualTo(method));
        assertThat(backend.requestsFor(ok)).singleElement().satisfies(s -> assertThat(s.method()).isEqualTo(method));
        assertThat(backend.requestsFor(refused)).isEmpty();
    }

    @Test
    @Order(12)
    void theDesignsFormOfTheCallNamesTheSameLocation() throws IOException {
        String ok = marker("seedform");
        String refused = marker("seedform-reject");
        try (Conn c = new Conn(nginx.port("seedform"))) {
            assertThat(c.send("GET /bkt/" + ok + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false).status())
                    .isEqualTo(200);
            assertThat(c.send("GET /bkt/" + refused + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false).status())
                    .isEqualTo(503);
        }
        assertThat(resultInAccessLog(ok)).isEqualTo("accepted");
        assertThat(resultInAccessLog(refused)).isEqualTo("rejected");
    }

    @Test
    @Order(13)
    void theCheckLocationIsNotReachableFromOutside() throws IOException {
        int checksBefore = client.requests().size();
        try (Conn c = new Conn(nginx.port())) {
            Response r = c.send("GET /.levee HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false);
            assertThat(r.status()).isEqualTo(404);
        }
        assertThat(client.requests()).hasSize(checksBefore);
    }

    @Test
    @Order(20)
    void cosocketConnectionsComeFromThePool() throws IOException {
        Assumptions.assumeTrue(cosocket(), "the cosocket transport's connection pool");
        NginxRawHttp.LineServer line = (NginxRawHttp.LineServer) client;
        int before = line.connections();
        try (Conn c = new Conn(nginx.port())) {
            for (int i = 0; i < 20; i++) {
                assertThat(c.send("GET /bkt/" + marker("pooled") + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false)
                        .status()).isEqualTo(200);
            }
        }
        // one worker, one check at a time: at most one new connection for the 20 checks
        assertThat(line.connections() - before).isLessThanOrEqualTo(1);
    }

    @Test
    @Order(21)
    void aPooledConnectionClosedUnderTheCheckIsTriedOnceMoreOnAFreshOne() throws IOException {
        Assumptions.assumeTrue(cosocket(), "the cosocket transport's retry");
        String warm = marker("warm");
        String once = marker("drop-once");
        String always = marker("drop-always");
        try (Conn c = new Conn(nginx.port())) {
            // leaves a connection in the pool, which the next check takes
            assertThat(c.send("GET /bkt/" + warm + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false).status())
                    .isEqualTo(200);
            assertThat(c.send("GET /bkt/" + once + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false).status())
                    .isEqualTo(200);
            assertThat(c.send("GET /bkt/" + warm + "-2 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false).status())
                    .isEqualTo(200);
        }
        assertThat(resultInAccessLog(once)).isEqualTo("accepted");
        assertThat(client.requestsFor(once)).as("closed once, answered on a fresh connection").hasSize(2);
        try (Conn c = new Conn(nginx.port("deny"))) {
            Response r = c.send("GET /bkt/" + always + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false);
            assertThat(r.status()).isEqualTo(503);
            assertThat(r.header("Retry-After")).isEqualTo("1");
        }
        assertThat(resultInAccessLog(always)).isEqualTo("failed");
        assertThat(client.requestsFor(always)).as("one retry, not more").hasSize(2);
        await().atMost(Duration.ofSeconds(5)).until(() -> Files.readString(nginx.errorLog()).contains("(receive: closed)"));
    }

    @Test
    @Order(22)
    void aBrokenAnswerFailsTheCheckWithItsReason() throws IOException {
        Assumptions.assumeTrue(cosocket(), "answers of the line protocol");
        for (String kind : BROKEN_ANSWERS.keySet()) {
            String m = marker("broken-" + kind);
            try (Conn c = new Conn(nginx.port("deny"))) {
                Response r = c.send("GET /bkt/" + m + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false);
                assertThat(r.status()).as(kind).isEqualTo(503);
                assertThat(r.header("Retry-After")).as(kind).isEqualTo("1");
                assertThat(r.header("RateLimit")).as(kind).isNull();
            }
            assertThat(resultInAccessLog(m)).as(kind).isEqualTo("failed");
            assertThat(backend.requestsFor(m)).isEmpty();
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> {
            String log = Files.readString(nginx.errorLog());
            return log.contains("levee-client answered an unknown result \"admitted\"")
                    && log.contains("levee-client answered rejected with Retry-After \"0\"")
                    && log.contains("levee-client refused the request: uri length 99999 exceeds 16384 bytes")
                    && log.contains("not four fields") && log.contains("one RateLimit field without the other");
        });
    }

    @Test
    @Order(23)
    void noLineEndpointFollowsOnFailureNamingTheConnect() throws IOException {
        Assumptions.assumeTrue(cosocket(), "the cosocket transport's connect");
        String allow = marker("dead-allow");
        String deny = marker("dead-deny");
        try (Conn c = new Conn(nginx.port("dead"))) {
            assertThat(c.send("GET /bkt/" + allow + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false).status())
                    .isEqualTo(200);
        }
        try (Conn c = new Conn(nginx.port("deaddeny"))) {
            Response r = c.send("GET /bkt/" + deny + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false);
            assertThat(r.status()).isEqualTo(503);
            assertThat(r.bodyText()).contains("<Code>SlowDown</Code>");
        }
        assertThat(resultInAccessLog(allow)).isEqualTo("failed");
        assertThat(resultInAccessLog(deny)).isEqualTo("failed");
        await().atMost(Duration.ofSeconds(5)).until(() -> Files.readString(nginx.errorLog())
                .contains("(connect to 127.0.0.1:" + nginx.port("nothing") + ": connection refused)"));
    }

    @Test
    @Order(24)
    void badCosocketOptionsAreLuaErrorsThatFollowOnFailure() throws IOException {
        Assumptions.assumeTrue(cosocket(), "options of the cosocket transport");
        for (String server : List.of("badopt", "forgot")) {
            String m = marker("opt-" + server);
            try (Conn c = new Conn(nginx.port(server))) {
                Response r = c.send("GET /bkt/" + m + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false);
                assertThat(r.status()).as(server).isEqualTo(503);
            }
            assertThat(resultInAccessLog(m)).isEqualTo("failed");
            assertThat(client.requestsFor(m)).isEmpty();
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> {
            String log = Files.readString(nginx.errorLog());
            return log.contains("lua error: ") && log.contains("port must be a whole number from 1 to 65535, got 0")
                    && log.contains("port is an option of transport = \"cosocket\"");
        });
    }

    @Test
    @Order(100)
    void everyAccessLogLineCarriesExactlyOneResultAndTheCountersAgree() throws Exception {
        // every request above has been answered; its log line is written right after
        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50)).until(() ->
                accessLog().lines().anyMatch(l -> l.contains("method-reject-patch")));
        List<String> lines = accessLog().lines().filter(l -> !l.contains("\"GET /.levee ")).toList();
        assertThat(lines).hasSizeGreaterThan(20);
        Pattern one = Pattern.compile(" levee=(accepted|rejected|failed)$");
        for (String line : lines) {
            assertThat(line).matches(".* levee=(accepted|rejected|failed)$");
            assertThat(Stream.of("accepted", "rejected", "failed").filter(line::contains).count())
                    .as(line).isLessThanOrEqualTo(2); // the word may also appear in a marker of the URI
            assertThat(one.matcher(line).results().count()).isEqualTo(1);
        }
        Map<String, Long> byResult = lines.stream().map(l -> l.substring(l.lastIndexOf("levee=") + 6))
                .collect(Collectors.groupingBy(s -> s, Collectors.counting()));
        String stats;
        try (Conn c = new Conn(nginx.statusPort())) {
            stats = c.send("GET /levee/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").read(false).bodyText().strip();
        }
        assertThat(stats).isEqualTo("{\"accepted\":" + byResult.getOrDefault("accepted", 0L) + ",\"rejected\":"
                + byResult.getOrDefault("rejected", 0L) + ",\"failed\":" + byResult.getOrDefault("failed", 0L) + "}");
    }

    /** Whether the installed lua-resty-core has {@code ngx.resp.set_status} (Debian's path; OpenResty's differs). */
    static boolean luaModuleSetsTheReason() throws IOException {
        java.nio.file.Path resp = java.nio.file.Path.of("/usr/share/lua/5.1/ngx/resp.lua");
        return java.nio.file.Files.isRegularFile(resp) && java.nio.file.Files.readString(resp).contains("set_status");
    }
}
