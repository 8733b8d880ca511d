package dev.levee.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.levee.governor.GovernorConfig;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;

/**
 * Streaming through the governors against a stand-in backend (docs/design.md §8, issue 6): bodies pass
 * byte for byte (aws-chunked framing included), and back-pressure reaches the client's and the
 * backend's TCP connections rather than filling the gateway's memory.
 */
class GovernedStreamingTest {

    static final String KEY = "AKIASTREAM";
    static final String AUTH = TestGateway.auth(KEY);
    static final long RATE = 256 * 1024;

    @AutoClose
    TestGateway rig;
    StubBackend backend;
    GatewayService gateway;

    void start(long principalRate) throws Exception {
        rig = TestGateway.governed(KEY, principalRate);
        backend = rig.backend;
        gateway = rig.gateway;
    }

    @Test
    void awsChunkedUploadsPassByteForByte() throws Exception {
        start(64L << 20);
        StringBuilder body = new StringBuilder();
        String data = "x".repeat(70_000);
        body.append(Integer.toHexString(65536)).append(";chunk-signature=").append("a".repeat(64)).append("\r\n")
                .append(data, 0, 65536).append("\r\n")
                .append(Integer.toHexString(70_000 - 65536)).append(";chunk-signature=").append("b".repeat(64)).append("\r\n")
                .append(data, 65536, 70_000).append("\r\n")
                .append("0;chunk-signature=").append("c".repeat(64)).append("\r\n")
                .append("x-amz-checksum-crc32:AAAAAA==\r\n\r\n");
        byte[] encoded = body.toString().getBytes(StandardCharsets.US_ASCII);
        HttpRequest put = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gateway.port() + "/bucket/chunked-object"))
                .header("Authorization", AUTH)
                .header("Content-Encoding", "aws-chunked")
                .header("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER")
                .header("x-amz-decoded-content-length", "70000")
                .header("x-amz-trailer", "x-amz-checksum-crc32")
                .PUT(HttpRequest.BodyPublishers.ofByteArray(encoded))
                .build();
        HttpResponse<String> r = HttpClient.newHttpClient().send(put, HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(backend.lastBody.get()).isEqualTo(encoded);
        assertThat(backend.lastHeaders.get().get("Content-Length")).isEqualTo(Integer.toString(encoded.length));
        assertThat(backend.lastHeaders.get().get("Content-Encoding")).isEqualTo("aws-chunked");
        assertThat(backend.lastHeaders.get().get("x-amz-decoded-content-length")).isEqualTo("70000");
        assertThat(backend.lastHeaders.get().get("x-amz-content-sha256")).isEqualTo("STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER");
        assertThat(backend.lastHeaders.get().get("Authorization")).isEqualTo(AUTH);
        assertThat(gateway.readyReport().governance().bandwidth().get("upload").grantedBytes())
                .as("the encoded body is charged as sent").isGreaterThanOrEqualTo(encoded.length);
    }

    @Test
    void chunkedTransferEncodingUploadsPassThroughTheGovernor() throws Exception {
        start(64L << 20);
        byte[] data = new byte[300_000];
        for (int i = 0; i < data.length; i++) {
            data[i] = StubBackend.pattern(i);
        }
        HttpRequest put = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gateway.port() + "/bucket/te-object"))
                .header("Authorization", AUTH)
                .PUT(HttpRequest.BodyPublishers.ofInputStream(() -> new java.io.ByteArrayInputStream(data)))
                .build();
        HttpResponse<String> r = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build()
                .send(put, HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(backend.lastBody.get()).isEqualTo(data);
        assertThat(gateway.readyReport().governance().bandwidth().get("upload").grantedBytes()).isGreaterThanOrEqualTo(data.length);
    }

    /**
     * Back-pressure regression: a client uploading 64 MiB at 256 KiB/s must find its TCP window
     * closed, not the gateway's memory filled; the backend receives no more than the ceiling.
     */
    @Test
    void aShapedUploadClosesTheClientsWindow() throws Exception {
        start(RATE);
        long size = 64L << 20;
        AtomicLong sent = new AtomicLong();
        Socket s = new Socket(InetAddress.getLoopbackAddress(), gateway.port());
        try {
            s.setSendBufferSize(64 * 1024);
            OutputStream out = s.getOutputStream();
            out.write(("PUT /bucket/big HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: " + AUTH + "\r\nContent-Length: " + size
                    + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            long start = System.nanoTime();
            Thread writer = Thread.ofVirtual().start(() -> {
                byte[] chunk = new byte[64 * 1024];
                try {
                    while (sent.get() < size) {
                        out.write(chunk);
                        sent.addAndGet(chunk.length);
                    }
                } catch (java.io.IOException e) {
                    // the socket is closed at the end of the test
                }
            });
            parkUntil(start + TimeUnit.SECONDS.toNanos(2)); // the measurement window, not synchronisation
            double t = (System.nanoTime() - start) / 1e9;
            long atBackend = backend.received.get();
            long burst = GovernorConfig.burstBytes(RATE);
            System.out.printf("upload: client wrote %d KiB, backend received %d KiB in %.2f s (ceiling %d KiB)%n",
                    sent.get() >> 10, atBackend >> 10, t, (long) (RATE * t + burst + RATE / 10) >> 10);
            assertThat(atBackend).isLessThanOrEqualTo((long) (RATE * t) + burst + Math.min(GovernorConfig.MAX_QUANTUM_BYTES, GovernorConfig.burstBytes(RATE)));
            assertThat(atBackend).isGreaterThanOrEqualTo((long) (0.7 * RATE * (t - 0.2)));
            assertThat(sent.get()).as("bytes the client could push: window closed, nothing buffered whole")
                    .isLessThan(size / 2);
            // the upload (256 s at its rate) outlives the shutdown's deadline: it is cut there, and
            // everything it held is freed (issue 10: in-flight transfers keep their permits until then)
            gateway.stop(Duration.ofSeconds(1)).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
            ReadyReport.BandwidthReport up = gateway.readyReport().governance().bandwidth().get("upload");
            assertThat(up.openStreams()).isZero();
            assertThat(up.waitingQuanta()).isZero();
            assertThat(gateway.readyReport().governance().admission().get("mutatingUpload").inFlight()).isZero();
            assertThat(gateway.inFlight()).isZero();
            assertThat(backend.lastBody.get()).as("the backend never saw a complete body").isNull();
            gateway = null;
            s.close();
            writer.join(5000);
        } finally {
            s.close();
        }
    }

    /**
     * A client that goes away mid-upload is released once the gateway reads up to its close: a
     * paused connection cannot see the close earlier (docs/gateway.md), so what the socket
     * buffers still passes at the shaped rate, here 4 MiB/s.
     */
    @Test
    void anUploadWhoseClientGoesAwayReleasesItsSlotAndStream() throws Exception {
        start(4L << 20);
        long size = 256L << 20;
        Socket s = new Socket(InetAddress.getLoopbackAddress(), gateway.port());
        AtomicLong sent = new AtomicLong();
        try {
            OutputStream out = s.getOutputStream();
            out.write(("PUT /bucket/gone HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: " + AUTH + "\r\nContent-Length: " + size
                    + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            Thread writer = Thread.ofVirtual().start(() -> {
                byte[] chunk = new byte[64 * 1024];
                try {
                    while (sent.get() < size) {
                        out.write(chunk);
                        sent.addAndGet(chunk.length);
                    }
                } catch (java.io.IOException e) {
                    // closed below
                }
            });
            await().atMost(Duration.ofSeconds(5)).until(() -> backend.received.get() > 512 * 1024);
            assertThat(gateway.readyReport().governance().admission().get("mutatingUpload").inFlight()).isEqualTo(1);
            s.setSoLinger(true, 0); // an abrupt close, as a killed client
            s.close();
            writer.join(5000);
        } finally {
            s.close();
        }
        long start = System.nanoTime();
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            ReadyReport r = gateway.readyReport();
            assertThat(r.governance().bandwidth().get("upload").openStreams()).isZero();
            assertThat(r.governance().bandwidth().get("upload").waitingQuanta()).isZero();
            assertThat(r.governance().admission().get("mutatingUpload").inFlight()).isZero();
            assertThat(r.inFlightRequests()).isZero();
        });
        System.out.printf("upload client gone after %d KiB: released in %d ms%n", sent.get() >> 10,
                (System.nanoTime() - start) / 1_000_000);
        assertThat(backend.lastBody.get()).as("the backend never saw a complete body").isNull();
    }

    /**
     * Back-pressure regression: a 64 MiB download shaped to 256 KiB/s must not be read from the
     * backend faster than the client is served (beyond socket buffers).
     */
    @Test
    void aShapedDownloadReadsTheBackendOnlyAsFastAsItWrites() throws Exception {
        start(RATE);
        long size = 64L << 20;
        AtomicLong received = new AtomicLong();
        Socket s = new Socket(InetAddress.getLoopbackAddress(), gateway.port());
        try {
            s.getOutputStream().write(("GET /bucket/big?size=" + size + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: "
                    + AUTH + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            InputStream in = s.getInputStream();
            long start = System.nanoTime();
            Thread reader = Thread.ofVirtual().start(() -> {
                byte[] buf = new byte[64 * 1024];
                try {
                    int n;
                    while ((n = in.read(buf)) > 0) {
                        received.addAndGet(n);
                    }
                } catch (java.io.IOException e) {
                    // closed at the end of the test
                }
            });
            parkUntil(start + TimeUnit.SECONDS.toNanos(2)); // the measurement window, not synchronisation
            double t = (System.nanoTime() - start) / 1e9;
            long got = received.get();
            long fromBackend = backend.written.get();
            long burst = GovernorConfig.burstBytes(RATE);
            System.out.printf("download: client got %d KiB (with headers), backend wrote %d KiB in %.2f s%n",
                    got >> 10, fromBackend >> 10, t);
            assertThat(got).isLessThanOrEqualTo((long) (RATE * t) + burst + Math.min(GovernorConfig.MAX_QUANTUM_BYTES, GovernorConfig.burstBytes(RATE)) + 1024);
            assertThat(got).isGreaterThanOrEqualTo((long) (0.7 * RATE * (t - 0.2)));
            assertThat(fromBackend).as("bytes the backend could push").isLessThan(size / 2);
            s.close();
            reader.join(5000);
        } finally {
            s.close();
        }
        await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
            ReadyReport.BandwidthReport down = gateway.readyReport().governance().bandwidth().get("download");
            assertThat(down.openStreams()).isZero();
            assertThat(down.waitingQuanta()).isZero();
            assertThat(gateway.readyReport().governance().admission().get("download").inFlight()).isZero();
            assertThat(gateway.inFlight()).isZero();
        });
    }

    static void parkUntil(long deadlineNanos) {
        for (long left; (left = deadlineNanos - System.nanoTime()) > 0; ) {
            LockSupport.parkNanos(left);
        }
    }
}
