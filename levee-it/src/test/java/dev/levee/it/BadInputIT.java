package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.stack.LocalStack;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Malformed input to the limiter API and odd S3 paths through the gateway: clear 4xx, never 500, never a crash. */
class BadInputIT {

    static Stack stack;
    static HttpClient http;

    @BeforeAll
    static void start() {
        stack = new Stack("""
                factor: 4
                default: {rate: 1000, burst: 100}
                """, new LocalStack.Settings(2, Duration.ofSeconds(2), Duration.ofMillis(300), Duration.ofMillis(300),
                true, dev.levee.gateway.GatewayOptions.OnFailure.ALLOW));
        stack.direct.createBucket(b -> b.bucket("odd"));
        http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterAll
    static void stop() {
        if (stack != null) {
            stack.close();
        }
    }

    static Stream<Arguments> malformedChecks() {
        String longKey = "k".repeat(1025);
        return Stream.of(
                Arguments.of("", "malformed JSON"),
                Arguments.of("not json", "malformed JSON"),
                Arguments.of("[]", "body must be a JSON object"),
                Arguments.of("null", "JSON object"),
                Arguments.of("{}", "'resource' is missing"),
                Arguments.of("{\"key\":\"a\",\"operation\":\"GetObject\",\"g\":1}", "'resource' is missing"),
                Arguments.of("{\"resource\":\"b\",\"operation\":\"GetObject\",\"g\":1}", "'key' is missing"),
                Arguments.of("{\"resource\":\"b\",\"key\":\"a\",\"g\":1}", "'operation' is missing"),
                Arguments.of("{\"resource\":\"b\",\"key\":\"a\",\"operation\":\"GetObject\"}", "'g' is missing"),
                Arguments.of("{\"resource\":\"b\",\"key\":\"a\",\"operation\":\"GetObjekt\",\"g\":1}", "unknown operation"),
                Arguments.of("{\"resource\":\"b\",\"key\":\"a\",\"operation\":\"GetObject\",\"g\":0}", "'g' must be between"),
                Arguments.of("{\"resource\":\"b\",\"key\":\"a\",\"operation\":\"GetObject\",\"g\":5}", "'g' must be between"),
                Arguments.of("{\"resource\":\"b\",\"key\":\"a\",\"operation\":\"GetObject\",\"g\":1.5}", "g"),
                Arguments.of("{\"resource\":\"b\",\"key\":\"a\",\"operation\":\"GetObject\",\"g\":\"x\"}", "g"),
                Arguments.of("{\"resource\":\"b\",\"key\":\"a\",\"operation\":\"GetObject\",\"g\":\"1\"}",
                        "field 'g': expected an integer"),
                Arguments.of("{\"resource\":\"b\",\"key\":\"" + longKey + "\",\"operation\":\"GetObject\",\"g\":1}",
                        "longer than 1024 bytes"),
                Arguments.of("{\"resource\":\"b\",\"key\":\"a\",\"operation\":\"GetObject\",\"g\":1,\"extra\":1}",
                        "unknown field 'extra'"),
                Arguments.of("{\"resource\":\"b\",\"resource\":\"c\",\"key\":\"a\",\"operation\":\"GetObject\",\"g\":1}",
                        "Duplicate"));
    }

    @ParameterizedTest
    @MethodSource("malformedChecks")
    void malformedCheckGets400NamingTheProblem(String body, String expected) throws Exception {
        assertRefusedNaming("/v1/check", body, expected);
    }

    /** POSTs {@code body} to the first limiter's {@code path} and expects a 400 whose error names {@code expected}. */
    static void assertRefusedNaming(String path, String body, String expected) throws Exception {
        var limiter = stack.stack.limiters().get(0).address();
        HttpResponse<String> resp = http.send(HttpRequest.newBuilder(URI.create("http://" + limiter + path))
                .POST(HttpRequest.BodyPublishers.ofString(body)).header("Content-Type", "application/json").build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(resp.statusCode()).isEqualTo(400);
        assertThat(resp.body()).contains("\"error\"").contains(expected).doesNotContain("Exception").doesNotContain("at dev.");
    }

    static Stream<Arguments> malformedBatches() {
        String one = "{\"resource\":\"b\",\"key\":\"a\",\"operation\":\"GetObject\",\"g\":1}";
        return Stream.of(
                Arguments.of("", "malformed JSON"),
                Arguments.of("[]", "body must be a JSON object"),
                Arguments.of("{}", "'checks' is missing"),
                Arguments.of("{\"checks\":[]}", "'checks' is empty"),
                Arguments.of("{\"checks\":[null]}", "'checks[0]' is null"),
                Arguments.of("{\"checks\":5}", "checks"),
                Arguments.of("{\"checks\":[" + one + "],\"extra\":1}", "unknown field 'extra'"),
                Arguments.of("{\"checks\":[" + String.join(",", java.util.Collections.nCopies(1025, one)) + "]}",
                        "more than 1024"));
    }

    @ParameterizedTest
    @MethodSource("malformedBatches")
    void malformedBatchGets400NamingTheProblem(String body, String expected) throws Exception {
        assertRefusedNaming("/v1/checks", body, expected);
    }

    @Test
    void aBatchDecidesItsGoodChecksAndNamesItsBadOnes() throws Exception {
        var limiter = stack.stack.limiters().get(0).address();
        HttpResponse<String> resp = http.send(HttpRequest.newBuilder(URI.create("http://" + limiter + "/v1/checks"))
                .POST(HttpRequest.BodyPublishers.ofString("{\"checks\":["
                        + "{\"resource\":\"b\",\"key\":\"a\",\"operation\":\"GetObject\",\"g\":2},"
                        + "{\"resource\":\"b\",\"key\":\"a\",\"operation\":\"GetObjekt\",\"g\":2},"
                        + "{\"resource\":\"b\",\"key\":\"a\",\"operation\":\"PutObject\",\"g\":9}]}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(resp.statusCode()).isEqualTo(200);
        var decisions = dev.levee.runtime.Json.MAPPER.readTree(resp.body()).get("decisions");
        assertThat(decisions).hasSize(3);
        assertThat(decisions.get(0).get("result").asText()).isEqualTo("accepted");
        assertThat(decisions.get(0).get("limitKey").asText()).isEqualTo("default:b");
        assertThat(decisions.get(1).get("result").asText()).isEqualTo("invalid");
        assertThat(decisions.get(1).get("error").asText()).contains("unknown operation 'GetObjekt'");
        assertThat(decisions.get(2).get("result").asText()).isEqualTo("invalid");
        assertThat(decisions.get(2).get("error").asText()).contains("'g' must be between");
    }

    /** POSTs a binary body ({@code application/x-levee-check}) to the first limiter's {@code path}. */
    static HttpResponse<byte[]> postBinary(String path, byte[] body) throws Exception {
        var limiter = stack.stack.limiters().get(0).address();
        return http.send(HttpRequest.newBuilder(URI.create("http://" + limiter + path))
                .POST(HttpRequest.BodyPublishers.ofByteArray(body))
                .header("Content-Type", dev.levee.wire.BinaryChecks.CONTENT_TYPE).build(),
                HttpResponse.BodyHandlers.ofByteArray());
    }

    static byte[] binary(Object[]... checks) {
        io.netty.buffer.ByteBuf b = dev.levee.wire.BinaryChecks.start(checks.length, 64);
        for (Object[] c : checks) {
            dev.levee.wire.BinaryChecks.writeCheck(b, (String) c[0], (String) c[1], (String) c[2], (Integer) c[3]);
        }
        byte[] out = new byte[b.readableBytes()];
        b.readBytes(out);
        return out;
    }

    static Stream<Arguments> malformedBinaryBodies() {
        byte[] good = binary(new Object[] {"b", "a", "GetObject", 1});
        byte[] badUtf8 = good.clone();
        badUtf8[5] = (byte) 0xFF; // the resource's only byte
        return Stream.of(
                Arguments.of("/v1/check", new byte[0], "too short"),
                Arguments.of("/v1/check", "{\"resource\":\"b\"}".getBytes(StandardCharsets.UTF_8), "version 123 is not 1"),
                Arguments.of("/v1/checks", new byte[] {1, 0, 0}, "count 0"),
                Arguments.of("/v1/check", java.util.Arrays.copyOf(good, good.length - 1), "field 'g' of entry 0 runs past"),
                Arguments.of("/v1/checks", java.util.Arrays.copyOf(good, good.length + 1), "1 bytes after the last entry"),
                Arguments.of("/v1/check", badUtf8, "field 'resource' of entry 0 is not valid UTF-8"),
                Arguments.of("/v1/check", binary(new Object[] {"b", "k".repeat(1025), "GetObject", 1}),
                        "field 'key' of entry 0 is longer than 1024 bytes"),
                Arguments.of("/v1/check", binary(new Object[] {"b", "a", "GetObject", 1}, new Object[] {"b", "a", "GetObject", 1}),
                        "takes one check, got 2"));
    }

    @ParameterizedTest
    @MethodSource("malformedBinaryBodies")
    void malformedBinaryBodyGets400NamingTheProblem(String path, byte[] body, String expected) throws Exception {
        double invalidBefore = invalidDecisions();
        HttpResponse<byte[]> resp = postBinary(path, body);
        String text = new String(resp.body(), StandardCharsets.UTF_8);
        assertThat(resp.statusCode()).isEqualTo(400);
        assertThat(resp.headers().firstValue("Content-Type")).hasValue("application/json");
        assertThat(text).contains("\"error\"").contains(expected).doesNotContain("Exception").doesNotContain("at dev.");
        assertThat(invalidDecisions()).isEqualTo(invalidBefore + 1); // counted once, nothing decided
    }

    /** The first limiter's count of invalid checks, from its /metrics. */
    private static double invalidDecisions() throws Exception {
        var limiter = stack.stack.limiters().get(0).address();
        String metrics = http.send(HttpRequest.newBuilder(URI.create("http://" + limiter + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        return metrics.lines().filter(l -> l.startsWith("levee_limiter_decisions_total{") && l.contains("result=\"invalid\""))
                .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
    }

    @Test
    void aVersion1BinaryBodyIsAnsweredInVersion1AndVersion2CarriesTheQuotaFigures() throws Exception {
        // a levee-client of before issue 14 sends version 1 and reads version-1 answers only
        byte[] v1 = binary(new Object[] {"binv1", "a", "GetObject", 1});
        v1[0] = (byte) dev.levee.wire.BinaryChecks.VERSION_1;
        HttpResponse<byte[]> old = postBinary("/v1/check", v1);
        assertThat(old.statusCode()).isEqualTo(200);
        assertThat(old.body()[0]).isEqualTo((byte) 1);
        var a = dev.levee.wire.BinaryChecks.readAnswers(old.body(), 1)[0];
        assertThat(a.limitKey()).isEqualTo("default:binv1");
        assertThat(a.reset()).as("not in version 1").isZero();
        HttpResponse<byte[]> now = postBinary("/v1/check", binary(new Object[] {"binv2", "a", "GetObject", 1}));
        assertThat(now.body()[0]).isEqualTo((byte) 2);
        var b = dev.levee.wire.BinaryChecks.readAnswers(now.body(), 1)[0];
        assertThat(b.rate()).isPositive();
        assertThat(b.reset()).isPositive();
        assertThat(b.shadow()).isEqualTo(dev.levee.wire.BinaryChecks.SHADOW_NONE);
    }

    @Test
    void binaryChecksAreDecidedAsTheirJsonForms() throws Exception {
        // single: the status and Retry-After of the JSON form, one binary answer
        HttpResponse<byte[]> one = postBinary("/v1/check", binary(new Object[] {"binone", "a", "GetObject", 2}));
        assertThat(one.statusCode()).isEqualTo(200);
        assertThat(one.headers().firstValue("Content-Type")).hasValue(dev.levee.wire.BinaryChecks.CONTENT_TYPE);
        var a = dev.levee.wire.BinaryChecks.readAnswers(one.body(), 1)[0];
        assertThat(a.result()).isEqualTo(dev.levee.wire.BinaryChecks.ACCEPTED);
        assertThat(a.level()).isEqualTo("default");
        assertThat(a.limitKey()).isEqualTo("default:binone");
        assertThat(a.remaining()).isPositive();
        HttpResponse<byte[]> invalid = postBinary("/v1/check", binary(new Object[] {"binone", "a", "GetObjekt", 2}));
        assertThat(invalid.statusCode()).isEqualTo(400);
        assertThat(dev.levee.wire.BinaryChecks.readAnswers(invalid.body(), 1)[0].error())
                .contains("unknown operation 'GetObjekt'");
        // batch: good checks decided, bad ones named, in order, as aBatchDecidesItsGoodChecksAndNamesItsBadOnes
        HttpResponse<byte[]> batch = postBinary("/v1/checks", binary(new Object[] {"b", "a", "GetObject", 2},
                new Object[] {"b", "a", "GetObjekt", 2}, new Object[] {"b", "a", "PutObject", 9}));
        assertThat(batch.statusCode()).isEqualTo(200);
        var as = dev.levee.wire.BinaryChecks.readAnswers(batch.body(), 3);
        assertThat(as[0].result()).isEqualTo(dev.levee.wire.BinaryChecks.ACCEPTED);
        assertThat(as[0].limitKey()).isEqualTo("default:b");
        assertThat(as[1].result()).isEqualTo(dev.levee.wire.BinaryChecks.INVALID);
        assertThat(as[1].error()).contains("unknown operation 'GetObjekt'");
        assertThat(as[2].error()).contains("'g' must be between");
        // the burst of 100 (at 250/s for g = 4) exhausted by binary checks: rejected with Retry-After, as in JSON
        HttpResponse<byte[]> last = null;
        for (int i = 0; i < 5000 && (last == null || last.statusCode() == 200); i++) {
            last = postBinary("/v1/check", binary(new Object[] {"binburst", "a", "GetObject", 4}));
        }
        assertThat(last.statusCode()).isEqualTo(429);
        assertThat(last.headers().firstValue("Retry-After")).isPresent();
        assertThat(dev.levee.wire.BinaryChecks.readAnswers(last.body(), 1)[0].retryAfter()).isPositive();
    }

    @Test
    void hugeBatchBodyIsRefusedWith413() throws Exception {
        var limiter = stack.stack.limiters().get(0).address();
        HttpResponse<String> resp = http.send(HttpRequest.newBuilder(URI.create("http://" + limiter + "/v1/checks"))
                .POST(HttpRequest.BodyPublishers.ofString("{\"checks\":\"" + "a".repeat(5 * 1024 * 1024) + "\"}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(resp.statusCode()).isEqualTo(413);
    }

    @Test
    void hugeCheckBodyIsRefusedWith413() throws Exception {
        var limiter = stack.stack.limiters().get(0).address();
        HttpResponse<String> resp = http.send(HttpRequest.newBuilder(URI.create("http://" + limiter + "/v1/check"))
                .POST(HttpRequest.BodyPublishers.ofString("{\"key\":\"" + "a".repeat(100_000) + "\"}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(resp.statusCode()).isEqualTo(413);
    }

    @Test
    void wellFormedCheckIsDecided() throws Exception {
        var limiter = stack.stack.limiters().get(0).address();
        HttpResponse<String> resp = http.send(HttpRequest.newBuilder(URI.create("http://" + limiter + "/v1/check"))
                .POST(HttpRequest.BodyPublishers.ofString(
                        "{\"resource\":\"b\",\"key\":\"a\\u0000\\n\",\"operation\":\"GetObject\",\"g\":2}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(resp.statusCode()).isEqualTo(200);
        assertThat(resp.body()).contains("\"result\":\"accepted\"").contains("\"level\":\"default\"")
                .contains("\"limitKey\":\"default:b\"");
    }

    static Stream<String> oddRequestLines() {
        return Stream.of("GET / HTTP/1.1", "GET // HTTP/1.1", "GET /odd//x HTTP/1.1", "GET /odd/%ZZ HTTP/1.1",
                "GET /odd/%E2%9C%93 HTTP/1.1", "GET /%2Fodd HTTP/1.1", "GET /odd/../../etc/passwd HTTP/1.1",
                "GET /odd/a?acl&tagging HTTP/1.1", "POST /odd/a?uploads HTTP/1.1", "PUT /odd/a?partNumber=x HTTP/1.1",
                "DELETE /odd?uploadId HTTP/1.1", "OPTIONS /odd/a HTTP/1.1", "PATCH /odd/a HTTP/1.1",
                "GET /odd/" + "x".repeat(4000) + " HTTP/1.1", "GET http://127.0.0.1/odd/x HTTP/1.1",
                "GET /odd/a?list-type=2&list-type=1 HTTP/1.1", "GET /odd/a%00b HTTP/1.1", "HEAD /odd HTTP/1.1");
    }

    @ParameterizedTest
    @MethodSource("oddRequestLines")
    void oddPathsThroughTheGatewayAreAnsweredNeverCrash(String requestLine) throws Exception {
        int port = stack.stack.gateway().port();
        String status;
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            out.write((requestLine + "\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            InputStream in = s.getInputStream();
            byte[] buf = in.readNBytes(12);
            status = new String(buf, StandardCharsets.ISO_8859_1);
        }
        assertThat(status).startsWith("HTTP/1.1 ");
        int code = Integer.parseInt(status.substring(9, 12));
        assertThat(code).isBetween(200, 599).isNotEqualTo(500).isNotEqualTo(502);
        // and the gateway still serves
        assertThat(stack.gateway.listBuckets().buckets()).isNotEmpty();
    }
}
