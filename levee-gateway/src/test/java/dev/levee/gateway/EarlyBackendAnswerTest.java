package dev.levee.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A backend that answers before it has read the request body, as S3 does for a PUT to a bucket
 * that does not exist (issue 10, defect 5): the client gets the backend's answer ({@code 404
 * NoSuchBucket}), never a {@code 502} that it would retry with the whole body again.
 */
class EarlyBackendAnswerTest {

    static final String KEY = "AKIAEARLY";
    static final String AUTH = TestGateway.auth(KEY);

    @AutoClose
    TestGateway rig;

    @ParameterizedTest(name = "governed={0} expect100={1}")
    @CsvSource({"false,false", "false,true", "true,false", "true,true"})
    void aFiveMegabytePutToAMissingBucketGetsTheBackends404SixTimesOutOfSix(boolean governed, boolean expect100)
            throws Exception {
        GovernanceSettings g = TestGateway.onePrincipal(KEY).build();
        rig = TestGateway.start(o -> governed ? o.governance(g) : o);
        byte[] body = new byte[5 * 1000 * 1000];
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        for (int i = 0; i < 6; i++) {
            HttpRequest put = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + rig.gateway.port() + "/"
                            + StubBackend.MISSING_BUCKET + "/object-" + i))
                    .header("Authorization", AUTH)
                    .expectContinue(expect100)
                    .PUT(HttpRequest.BodyPublishers.ofByteArray(body))
                    .build();
            HttpResponse<String> r = http.send(put, HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as("try %d", i).isEqualTo(404);
            assertThat(r.body()).contains("<Code>NoSuchBucket</Code>");
        }
        assertThat(rig.backend.earlyAnswers.get()).isEqualTo(6);
        assertThat(rig.backend.received.get()).as("no byte of the bodies was sent to the backend").isZero();
        await().atMost(Duration.ofSeconds(5)).until(() -> rig.gateway.inFlight() == 0);
    }
}
