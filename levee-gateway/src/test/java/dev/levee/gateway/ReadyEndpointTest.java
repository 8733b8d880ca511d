package dev.levee.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.levee.governor.AdmissionConfig;
import dev.levee.runtime.Json;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code GET /health/ready} of a running gateway (docs/design.md §8, issue 6): bearer token, and real
 * responses validated against {@code ReadyResponse} of the repository's {@code openapi.yaml}
 * with a JSON-schema validator; no principal id, key, path or object name in them.
 */
class ReadyEndpointTest {

    static final String TOKEN = "t0ken-for-tests-0123456789";
    static final String PRINCIPAL = "svc-secret-principal";
    static final String KEY = "AKIASECRETKEY1";
    static final String BUCKET = "bucket-secret";
    static final String OBJECT = "object-name-secret.bin";

    final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    final ObjectMapper json = new ObjectMapper();
    TestGateway rig;
    StubBackend backend;
    GatewayService gateway;

    @AfterEach
    void stop() throws Exception {
        if (rig != null) {
            rig.close();
        }
    }

    GatewayService start(GovernanceSettings governance) throws Exception {
        rig = TestGateway.start(o -> o.governance(governance).healthToken(TOKEN));
        backend = rig.backend;
        gateway = rig.gateway;
        return gateway;
    }

    static GovernanceSettings governed() {
        return GovernanceSettings.builder()
                .principals(new PrincipalDirectory(List.of(PrincipalDirectory.Account.of(PRINCIPAL, KEY, "AKIASECRETKEY2"))))
                .downloadRate(64L << 20)
                .principalDownloadRate(1L << 20)
                .admission(new AdmissionConfig(1, 2, 16, TimeUnit.SECONDS.toNanos(5)))
                .build();
    }

    HttpResponse<String> ready(String authorization) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gateway.adminPort() + "/health/ready"));
        if (authorization != null) {
            b.header("Authorization", authorization);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    JsonNode validReady() throws Exception {
        HttpResponse<String> r = ready("Bearer " + TOKEN);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(ReadySchema.errors("ReadyResponse", r.body())).as(r.body()).isEmpty();
        assertThat(r.body()).doesNotContain(PRINCIPAL, KEY, BUCKET, OBJECT, "AKIA");
        return json.readTree(r.body());
    }

    @Test
    void refusesWithoutTheBearerToken() throws Exception {
        start(governed());
        for (String auth : new String[] {null, "Bearer", "Bearer wrong-token-0123456789", "Basic " + TOKEN, TOKEN,
            "Bearer " + TOKEN + "x"}) {
            HttpResponse<String> r = ready(auth);
            assertThat(r.statusCode()).as("Authorization: %s", auth).isEqualTo(401);
            assertThat(r.headers().firstValue("WWW-Authenticate")).hasValue("Bearer realm=\"levee\"");
            assertThat(ReadySchema.errors("Error", r.body())).isEmpty();
            assertThat(r.body()).doesNotContain("grantedBytes");
        }
        assertThat(ready("bearer " + TOKEN).statusCode()).as("the scheme is case-insensitive").isEqualTo(200);
    }

    @Test
    void liveCountersValidateAndNameNoPrincipalKeyOrObject() throws Exception {
        start(governed());
        JsonNode idle = validReady();
        assertThat(idle.at("/governance/enabled").asBoolean()).isTrue();
        assertThat(idle.at("/governance/accessKeys").asInt()).isEqualTo(2);

        // a shaped download in flight: 4 MiB at 1 MiB/s
        HttpRequest get = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gateway.port() + "/" + BUCKET + "/" + OBJECT
                + "?size=" + (4 << 20)))
                .header("Authorization", "AWS4-HMAC-SHA256 Credential=" + KEY + "/20260101/us-east-1/s3/aws4_request,"
                        + " SignedHeaders=host, Signature=00")
                .build();
        HttpResponse<InputStream> r = http.send(get, HttpResponse.BodyHandlers.ofInputStream());
        assertThat(r.statusCode()).isEqualTo(200);
        try (InputStream in = r.body()) {
            assertThat(in.readNBytes(64 * 1024)).hasSize(64 * 1024);
            await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
                JsonNode busy = validReady();
                assertThat(busy.at("/inFlightRequests").asInt()).isEqualTo(1);
                assertThat(busy.at("/governance/admission/download/inFlight").asInt()).isEqualTo(1);
                assertThat(busy.at("/governance/bandwidth/download/openStreams").asInt()).isEqualTo(1);
                assertThat(busy.at("/governance/bandwidth/download/waitingQuanta").asInt()).isEqualTo(1);
                assertThat(busy.at("/governance/bandwidth/download/principals").asInt()).isEqualTo(1);
                assertThat(busy.at("/governance/bandwidth/download/grantedBytes").asLong()).isPositive();
            });
        }
        // the client went away: its slot and its waiting permit are released
        await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
            JsonNode after = validReady();
            assertThat(after.at("/inFlightRequests").asInt()).isZero();
            assertThat(after.at("/governance/admission/download/inFlight").asInt()).isZero();
            assertThat(after.at("/governance/bandwidth/download/openStreams").asInt()).isZero();
            assertThat(after.at("/governance/bandwidth/download/waitingQuanta").asInt()).isZero();
            // the waiting quantum is cancelled (1), unless a grant landed between the disconnect and the
            // gateway seeing it: then it was spent, never refunded (docs/design.md §8), and nothing waited (0)
            assertThat(after.at("/governance/bandwidth/download/cancellations").asLong()).isBetween(0L, 1L);
        });
    }

    @Test
    void aClosingGatewayStillAnswersTheSchema() throws Exception {
        start(governed());
        gateway.stop(Duration.ofSeconds(1));
        String body = new String(Json.write(gateway.readyReport()), StandardCharsets.UTF_8);
        assertThat(json.readTree(body).at("/status").asText()).isEqualTo("closing");
        assertThat(ReadySchema.errors("ReadyResponse", body)).isEmpty();
        gateway.stop(Duration.ofSeconds(1)).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        gateway = null;
    }

    @Test
    void aGatewayWithoutGovernanceAnswersTheSchema() throws Exception {
        start(GovernanceSettings.off());
        JsonNode off = validReady();
        assertThat(off.at("/governance").size()).isEqualTo(1);
        assertThat(off.at("/governance/enabled").asBoolean()).isFalse();
    }

    @Test
    void theSchemaRejectsWhatTheContractForbids() {
        String valid = new String(Json.write(new ReadyReport("ready", 0, ReadyReport.GovernanceReport.off())),
                StandardCharsets.UTF_8);
        assertThat(ReadySchema.errors("ReadyResponse", valid)).isEmpty();
        assertThat(ReadySchema.errors("ReadyResponse", valid.replace("\"ready\"", "\"busy\""))).isNotEmpty();
        assertThat(ReadySchema.errors("ReadyResponse", valid.replace("}}", "},\"principal\":\"svc\"}"))).isNotEmpty();
        assertThat(ReadySchema.errors("ReadyResponse", valid.replace("false", "true")))
                .as("governance on requires its counters").isNotEmpty();
        assertThat(ReadySchema.errors("ReadyResponse", "{\"status\":\"ready\",\"inFlightRequests\":-1,"
                + "\"governance\":{\"enabled\":false}}")).isNotEmpty();
    }
}
