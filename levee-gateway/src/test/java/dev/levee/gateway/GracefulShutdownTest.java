package dev.levee.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;

/**
 * Stopping the gateway during transfers (issue 10, defect 4; docs/design.md §8 preClose): in-flight
 * transfers, governed or not, complete byte for byte within the deadline and the stop returns as
 * soon as they are done; a transfer longer than the deadline is cut at it; new connections are
 * refused while the gateway drains.
 */
class GracefulShutdownTest {

    static final String KEY = "AKIASHUTDOWN";
    static final String AUTH = TestGateway.auth(KEY);
    static final long MiB = 1L << 20;

    @AutoClose
    TestGateway rig;

    void start(long principalRate) throws Exception {
        rig = TestGateway.governed(KEY, principalRate);
    }

    static byte[] pattern(int size) {
        byte[] data = new byte[size];
        for (int i = 0; i < size; i++) {
            data[i] = StubBackend.pattern(i);
        }
        return data;
    }

    URI uri(String path) {
        return URI.create("http://127.0.0.1:" + rig.gateway.port() + path);
    }

    HttpResponse<byte[]> download(HttpClient http, long size) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(uri("/bucket/big?size=" + size)).header("Authorization", AUTH).build(),
                HttpResponse.BodyHandlers.ofByteArray());
    }

    HttpResponse<String> upload(HttpClient http, byte[] data) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(uri("/bucket/up")).header("Authorization", AUTH)
                .PUT(HttpRequest.BodyPublishers.ofByteArray(data)).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void inFlightGovernedTransfersCompleteByteForByteWhenStoppedMidTransfer() throws Exception {
        start(MiB); // 2 MiB each way: about 2 s per transfer
        int size = (int) (2 * MiB);
        byte[] data = pattern(size);
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<HttpResponse<String>> up = pool.submit(() -> upload(http, data));
            Future<HttpResponse<byte[]>> down = pool.submit(() -> download(http, size));
            await().atMost(Duration.ofSeconds(5)).until(() -> {
                ReadyReport.GovernanceReport r = rig.gateway.readyReport().governance();
                return r.bandwidth().get("upload").grantedBytes() > 256 * 1024
                        && r.bandwidth().get("download").grantedBytes() > 256 * 1024;
            });
            long t0 = System.nanoTime();
            CompletableFuture<Void> stopped = rig.gateway.stop(Duration.ofSeconds(20)).toCompletionStage().toCompletableFuture();

            // while draining, a new connection is refused
            await().atMost(Duration.ofSeconds(2)).untilAsserted(() ->
                    assertThatThrownBy(() -> download(HttpClient.newHttpClient(), 10)).isInstanceOf(IOException.class));

            HttpResponse<String> u = up.get(15, TimeUnit.SECONDS);
            HttpResponse<byte[]> d = down.get(15, TimeUnit.SECONDS);
            assertThat(u.statusCode()).isEqualTo(200);
            assertThat(rig.backend.lastBody.get()).as("the upload reached the backend whole").isEqualTo(data);
            assertThat(d.statusCode()).isEqualTo(200);
            assertThat(d.body()).as("the download arrived whole").isEqualTo(data);
            stopped.get(5, TimeUnit.SECONDS);
            long took = (System.nanoTime() - t0) / 1_000_000;
            System.out.printf("drain of 2 governed transfers (2 MiB each at 1 MiB/s) took %d ms%n", took);
            assertThat(took).as("the stop returns when the transfers are done, not at the 20 s deadline")
                    .isLessThan(10_000);
        }
    }

    @Test
    void aRequestCompletedDuringTheDrainIsRefusedWith503OrTheIdleCloseNeverForwarded() throws Exception {
        start(MiB);
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor();
             java.net.Socket idle = new java.net.Socket(java.net.InetAddress.getLoopbackAddress(), rig.gateway.port())) {
            Future<HttpResponse<byte[]>> down = pool.submit(() -> download(http, 2 * MiB)); // keeps the drain going
            await().atMost(Duration.ofSeconds(5)).until(() ->
                    rig.gateway.readyReport().governance().bandwidth().get("download").grantedBytes() > 256 * 1024);
            // a connection opened before the stop, whose request arrives during the drain
            idle.getOutputStream().write("GET /bucket/obj?size=3 HTTP/1.1\r\nHost: x\r\nAuthorization: ".getBytes()
            );
            CompletableFuture<Void> stopped = rig.gateway.stop(Duration.ofSeconds(20)).toCompletionStage().toCompletableFuture();
            idle.getOutputStream().write((AUTH + "\r\n\r\n").getBytes());
            idle.setSoTimeout(5000);
            String answer;
            try {
                answer = new String(idle.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.ISO_8859_1);
            } catch (java.net.SocketException reset) {
                answer = "";
            }
            System.out.println("a request completed during the drain on a connection opened before: "
                    + (answer.isEmpty() ? "closed unanswered (idle at the stop)" : answer.lines().findFirst().orElse("")));
            // Vert.x's shutdown closes the connections that are idle when it starts, and a connection whose
            // request head is still incomplete is idle: then the client sees the close (HTTP's keep-alive race,
            // as with NGINX), never a forwarded request. A head completed before that close gets 503 SlowDown.
            if (!answer.isEmpty()) {
                assertThat(answer).startsWith("HTTP/1.1 503").containsIgnoringCase("connection: close")
                        .contains("<Code>SlowDown</Code>");
            }
            assertThat(down.get(10, TimeUnit.SECONDS).body()).isEqualTo(pattern((int) (2 * MiB)));
            stopped.get(5, TimeUnit.SECONDS);
            assertThat(rig.backend.written.get()).as("the backend served the download only, never the late request")
                    .isEqualTo(2 * MiB);
        }
    }

    @Test
    void anUngovernedSlowDownloadCompletesAndTheStopReturnsRightAfterIt() throws Exception {
        rig = TestGateway.start(o -> o);
        int size = (int) (4 * MiB);
        long t0;
        CompletableFuture<Void> stopped;
        HttpRequest get = HttpRequest.newBuilder(uri("/bucket/big?size=" + size)).build();
        HttpResponse<InputStream> r = HttpClient.newHttpClient().send(get, HttpResponse.BodyHandlers.ofInputStream());
        try (InputStream in = r.body()) {
            byte[] first = in.readNBytes(64 * 1024);
            t0 = System.nanoTime();
            stopped = rig.gateway.stop(Duration.ofSeconds(20)).toCompletionStage().toCompletableFuture();
            // the client reads slowly: about 2 MiB/s (the pause paces the reader, it synchronises nothing)
            byte[] rest = new byte[size - first.length];
            int off = 0;
            for (int n; off < rest.length && (n = in.read(rest, off, Math.min(64 * 1024, rest.length - off))) > 0; off += n) {
                Thread.sleep(10);
            }
            assertThat(off + first.length).as("the whole body").isEqualTo(size);
            byte[] all = new byte[size];
            System.arraycopy(first, 0, all, 0, first.length);
            System.arraycopy(rest, 0, all, first.length, rest.length);
            assertThat(all).isEqualTo(pattern(size));
        }
        stopped.get(5, TimeUnit.SECONDS);
        long took = (System.nanoTime() - t0) / 1_000_000;
        System.out.printf("drain of 1 slow ungoverned download (4 MiB) took %d ms%n", took);
        assertThat(took).isLessThan(10_000);
    }

    @Test
    void aTransferLongerThanTheDeadlineIsCutAtTheDeadline() throws Exception {
        start(MiB); // 16 MiB at 1 MiB/s: 16 s, the deadline is 1 s
        int size = (int) (16 * MiB);
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<HttpResponse<byte[]>> down = pool.submit(() -> download(http, size));
            await().atMost(Duration.ofSeconds(5)).until(() ->
                    rig.gateway.readyReport().governance().bandwidth().get("download").grantedBytes() > 256 * 1024);
            long t0 = System.nanoTime();
            rig.gateway.stop(Duration.ofSeconds(1)).toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
            long took = (System.nanoTime() - t0) / 1_000_000;
            System.out.printf("stop with a transfer longer than its 1 s deadline took %d ms%n", took);
            assertThat(took).as("cut at the deadline").isBetween(900L, 3_000L);
            assertThatThrownBy(() -> down.get(5, TimeUnit.SECONDS)).as("the client sees a cut body")
                    .hasCauseInstanceOf(IOException.class);
        }
        ReadyReport r = rig.gateway.readyReport();
        assertThat(r.inFlightRequests()).isZero();
        assertThat(r.governance().bandwidth().get("download").openStreams()).isZero();
    }
}
