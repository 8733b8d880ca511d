package dev.levee.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * Backend answers that go wrong on the backend's side while the gateway handles them (found by
 * GatewayFaultSuiteIT, issue 10): each is answered cleanly and logs no ERROR ("Unhandled exception"
 * from Vert.x) and no stack trace.
 */
class BackendAnswerFaultsTest {

    static final String KEY = "AKIAANSWERS";
    static final String AUTH = "AWS4-HMAC-SHA256 Credential=" + KEY + "/20260101/us-east-1/s3/aws4_request,"
            + " SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=0123";

    @TempDir
    Path dir;
    TestGateway rig;
    Path log;
    final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    @AfterEach
    void close() throws Exception {
        if (rig != null) {
            rig.close();
        }
        Logging.configure(new LogTarget("stderr", null, 0, null), "levee-test", "WARN");
    }

    void start(long principalDownloadRate) throws Exception {
        log = dir.resolve("gateway.log");
        Logging.configure(new LogTarget("file", null, 0, log), "levee-gateway", "INFO");
        GovernanceSettings g = GovernanceSettings.builder()
                .principals(new PrincipalDirectory(List.of(PrincipalDirectory.Account.of("svc", KEY))))
                .principalDownloadRate(principalDownloadRate)
                .build();
        rig = TestGateway.start(o -> o.governance(g));
    }

    HttpRequest.Builder request(String path) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + rig.gateway.port() + path))
                .header("Authorization", AUTH).timeout(Duration.ofSeconds(20));
    }

    List<String> errorLines() throws Exception {
        LoggerFactory.getLogger("levee.test").warn("end-of-test-marker");
        await().atMost(Duration.ofSeconds(10)).until(() -> Files.exists(log) && Files.readString(log).contains("end-of-test-marker"));
        return Files.readAllLines(log).stream()
                .filter(l -> l.startsWith("<131>") || l.startsWith("<130>") || l.startsWith("<129>") || l.startsWith("<128>")
                        || l.contains("\tat ") || l.contains("Unhandled exception"))
                .toList();
    }

    /**
     * The backend's answer is cut (its connection closes mid-body) while it waits for its first
     * download permits: the client gets 502 BadGateway, where the pipe was started on the ended
     * answer and Vert.x logged "Unhandled exception: Response already ended" with a stack trace.
     */
    @Test
    void anAnswerCutWhileItWaitsForDownloadPermitsIsABadGatewayAndNoError() throws Exception {
        start(10 * 1024); // 10 KiB/s, burst 1 KiB: a concurrent download keeps the principal's bucket empty
        CompletableFuture<HttpResponse<byte[]>> drain = http.sendAsync(request("/bucket/big?size=60000").build(),
                HttpResponse.BodyHandlers.ofByteArray());
        await().atMost(Duration.ofSeconds(5)).until(() -> rig.gateway.readyReport().governance().bandwidth()
                .get("download").waitingQuanta() >= 1);
        // when the bucket happens to hold enough for the first permits they are granted at once, the head
        // is relayed and the cut shows as a short body: tried 5 times, at least one waits (the case at stake)
        int badGateways = 0;
        for (int i = 0; i < 5; i++) {
            try {
                HttpResponse<String> r = http.send(request("/" + StubBackend.CUT_ANSWER_BUCKET + "/obj-" + i).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(r.statusCode()).as("a backend answer lost before a byte of it was relayed").isEqualTo(502);
                assertThat(r.body()).contains("<Code>BadGateway</Code>");
                badGateways++;
            } catch (java.io.IOException e) {
                assertThat(e).as("the answer's head was relayed, then its body cut").hasMessageContaining("bytes received");
            }
        }
        assertThat(badGateways).as("answers lost while waiting for permits, of 5").isPositive();
        assertThat(drain.get(20, TimeUnit.SECONDS).body()).hasSize(60000);
        await().atMost(Duration.ofSeconds(5)).until(() -> rig.gateway.inFlight() == 0);
        assertThat(errorLines()).as("ERROR lines and stack traces").isEmpty();
    }

    /**
     * A client whose chunked body is malformed goes away before the backend answers: the backend's
     * late answer is dropped quietly, where resetting it logged "Stream reset: 0" at ERROR (Vert.x's
     * unhandled exception: the late response had no exception handler).
     */
    @Test
    void aLateBackendAnswerToAClientThatWentAwayLogsNoError() throws Exception {
        start(0);
        for (int i = 0; i < 3; i++) {
            // a pooled backend connection, so that the PUT's head reaches the backend before the bad chunk is read
            assertThat(http.send(request("/bucket/warm?size=10").build(), HttpResponse.BodyHandlers.ofString()).statusCode())
                    .isEqualTo(200);
            try (java.net.Socket s = new java.net.Socket(java.net.InetAddress.getLoopbackAddress(), rig.gateway.port())) {
                s.setSoTimeout(5000);
                s.getOutputStream().write(("PUT /" + StubBackend.LATE_ANSWER_BUCKET + "/obj-" + i + " HTTP/1.1\r\nHost: x\r\n"
                        + "Authorization: " + AUTH + "\r\nTransfer-Encoding: chunked\r\n\r\nzz-not-hex\r\nhello\r\n0\r\n\r\n")
                        .getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
                s.getOutputStream().flush();
                s.getInputStream().readAllBytes(); // the gateway answers 400 and closes
            } catch (java.io.IOException e) {
                // reset by the gateway's close: also an answer
            }
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> rig.gateway.inFlight() == 0);
        assertThat(rig.backend.earlyAnswers.get()).as("PUT heads the backend received").isEqualTo(3);
        Thread.sleep(500); // the backend's late answers (200 ms) arrive and are dropped; nothing to await in the gateway
        assertThat(errorLines()).as("ERROR lines and stack traces").isEmpty();
    }
}
