package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.cli.stack.LocalStack;
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
                true, dev.levee.gateway.GatewayService.OnFailure.ALLOW));
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
