package dev.levee.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;

/**
 * Slow clients (issue 10, defect 6): a request body that trickles frees its principal's upload
 * slot after the progress deadline; an upload the gateway itself throttles is never aborted by
 * that deadline; a slowloris of 200 connections that never finish their heads is closed after the
 * request-header timeout while other requests are served.
 */
class SlowClientTest {

    static final String KEY = "AKIASLOW";
    static final String AUTH = TestGateway.auth(KEY);

    @AutoClose
    TestGateway rig;

    void start(long principalUploadRate, GatewayOptions.ClientDeadlines deadlines) throws Exception {
        GovernanceSettings g = TestGateway.onePrincipal(KEY)
                .principalUploadRate(principalUploadRate)
                .build();
        rig = TestGateway.start(o -> o.governance(g).clientDeadlines(deadlines));
    }

    static String readAll(Socket s) throws IOException {
        s.setSoTimeout(5000);
        return new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
    }

    HttpResponse<String> put(byte[] body) throws Exception {
        return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build().send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + rig.gateway.port() + "/bucket/next"))
                        .header("Authorization", AUTH).PUT(HttpRequest.BodyPublishers.ofByteArray(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void anUploadTricklingTenBytesPerSecondFreesThePrincipalsOnlySlot() throws Exception {
        start(0, new GatewayOptions.ClientDeadlines(Duration.ofSeconds(30), Duration.ofSeconds(1), 1024));
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), rig.gateway.port())) {
            OutputStream out = s.getOutputStream();
            out.write(("PUT /bucket/slow HTTP/1.1\r\nHost: x\r\nAuthorization: " + AUTH
                    + "\r\nContent-Length: 1000\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            await().atMost(Duration.ofSeconds(5)).until(() ->
                    rig.gateway.readyReport().governance().admission().get("mutatingUpload").inFlight() == 1);
            long t0 = System.nanoTime();
            // 10 bytes/s, far below 1 KiB/s; the loop is bounded in count and time
            for (int i = 0; i < 40 && rig.gateway.readyReport().governance().admission().get("mutatingUpload").inFlight() == 1; i++) {
                try {
                    out.write('x');
                    out.flush();
                } catch (IOException closed) {
                    break;
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100)); // the client's pace
            }
            long freedMs = (System.nanoTime() - t0) / 1_000_000;
            System.out.printf("slot of a 10 B/s upload freed after %d ms (body timeout 1 s, min rate 1 KiB/s)%n", freedMs);
            assertThat(rig.gateway.readyReport().governance().admission().get("mutatingUpload").inFlight())
                    .as("the slot is free").isZero();
            assertThat(freedMs).isBetween(900L, 3_000L);
            String answer = readAll(s);
            assertThat(answer).startsWith("HTTP/1.1 400").contains("<Code>RequestTimeout</Code>");
        }
        assertThat(rig.backend.lastBody.get()).as("no object was created").isNull();
        assertThat(rig.gateway.readyReport().clientFaults().requestBodyTimeouts()).isEqualTo(1);
        // the principal's next upload gets the slot
        assertThat(put(new byte[10_000]).statusCode()).isEqualTo(200);
    }

    /** Regression (issue 10, item 6): a client that stops reading its download held its slot until the 120 s idle timeout. */
    @Test
    void aDownloadWhoseClientStopsReadingFreesTheSlotAfterTheSendTimeout() throws Exception {
        stalledReaderIsCut(64 << 20, 0);
    }

    /**
     * Regression (found by a breaking trial): an object small enough that the gateway's write queue never
     * reaches its high-water mark (3 MB into kernel buffers, a 4 KiB receive window) kept its slot: the
     * send timeout watched the queue's mark, not the writes that wait for the client.
     */
    @Test
    void aSmallDownloadWhoseClientNeverReadsIsCutToo() throws Exception {
        stalledReaderIsCut(3_000_000, 4096);
    }

    private void stalledReaderIsCut(long size, int receiveBuffer) throws Exception {
        start(0, new GatewayOptions.ClientDeadlines(Duration.ofSeconds(30), Duration.ofSeconds(30), 1024,
                Duration.ofSeconds(1)));
        try (Socket s = new Socket()) {
            if (receiveBuffer > 0) {
                s.setReceiveBufferSize(receiveBuffer); // before connecting: the window the gateway sees
            }
            s.connect(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), rig.gateway.port()));
            OutputStream out = s.getOutputStream();
            out.write(("GET /bucket/big?size=" + size + " HTTP/1.1\r\nHost: x\r\nAuthorization: " + AUTH
                    + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            await().atMost(Duration.ofSeconds(5)).until(() ->
                    rig.gateway.readyReport().governance().admission().get("download").inFlight() == 1);
            long t0 = System.nanoTime();
            // the client reads nothing: buffers fill, the gateway's writes wait
            await().atMost(Duration.ofSeconds(10)).until(() ->
                    rig.gateway.readyReport().governance().admission().get("download").inFlight() == 0);
            long freedMs = (System.nanoTime() - t0) / 1_000_000;
            System.out.printf("slot of a %d-byte download whose client stopped reading freed after %d ms (send timeout"
                    + " 1 s)%n", size, freedMs);
            assertThat(freedMs).isLessThan(5_000);
            assertThat(rig.gateway.readyReport().clientFaults().sendTimeouts()).isEqualTo(1);
            // and the connection is gone at once (reset), not left to the idle timeout: reading now ends soon
            s.setSoTimeout(5_000);
            long read = 0;
            long readFrom = System.nanoTime();
            try {
                byte[] buf = new byte[64 * 1024];
                for (int n; (n = s.getInputStream().read(buf)) >= 0 && read < size; ) {
                    read += n;
                }
            } catch (java.net.SocketException reset) {
                // the reset
            }
            long endedMs = (System.nanoTime() - readFrom) / 1_000_000;
            System.out.printf("then the client read %d bytes more and the connection ended after %d ms%n", read, endedMs);
            assertThat(read).as("the client got less than the object").isLessThan(size);
            assertThat(endedMs).as("reset, not left to the idle timeout").isLessThan(5_000);
        }
    }

    /** A slow but steady reader is not a stalled one: a 1 MiB download read at ~256 KiB/s completes. */
    @Test
    void aSlowButSteadyReaderIsNotCutBySendTimeout() throws Exception {
        start(0, new GatewayOptions.ClientDeadlines(Duration.ofSeconds(30), Duration.ofSeconds(30), 1024,
                Duration.ofSeconds(1)));
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), rig.gateway.port())) {
            s.setReceiveBufferSize(8192);
            s.setSoTimeout(10_000);
            s.getOutputStream().write(("GET /bucket/steady?size=" + (1 << 20) + " HTTP/1.1\r\nHost: x\r\nAuthorization: "
                    + AUTH + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            byte[] buf = new byte[16 * 1024];
            long total = 0;
            var in = s.getInputStream();
            for (int i = 0; i < 2_000; i++) { // bounded: 1 MiB in 16 KiB reads, one every ~60 ms
                int n = in.read(buf);
                if (n < 0) {
                    break;
                }
                total += n;
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(60)); // the client's pace
            }
            assertThat(total).as("head and whole body").isGreaterThan(1 << 20);
            assertThat(rig.gateway.readyReport().clientFaults().sendTimeouts()).isZero();
        }
    }

    @Test
    void anUploadThatTheGovernorThrottlesIsNotAbortedByTheProgressDeadline() throws Exception {
        // the governor lets 64 KiB/s through; the client must keep 1 MiB/s while it is read, for at
        // most 300 ms: only the gateway's own waits make the upload slow
        start(64 * 1024, new GatewayOptions.ClientDeadlines(Duration.ofSeconds(30), Duration.ofMillis(300), 1L << 20));
        byte[] body = new byte[192 * 1024];
        for (int i = 0; i < body.length; i++) {
            body[i] = StubBackend.pattern(i);
        }
        long t0 = System.nanoTime();
        HttpResponse<String> r = put(body);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        System.out.printf("a 192 KiB upload throttled to 64 KiB/s took %d ms under a 300 ms progress deadline%n", ms);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(rig.backend.lastBody.get()).isEqualTo(body);
        assertThat(ms).as("throttled, so slower than the deadline").isGreaterThan(1_500);
        assertThat(rig.gateway.readyReport().clientFaults().requestBodyTimeouts()).isZero();
    }

    @Test
    void aSlowlorisOfTwoHundredConnectionsIsClosedAfterTheHeaderTimeoutWhileOthersAreServed() throws Exception {
        start(0, new GatewayOptions.ClientDeadlines(Duration.ofSeconds(1), Duration.ofSeconds(30), 1024));
        List<Socket> loris = new ArrayList<>();
        try {
            for (int i = 0; i < 200; i++) {
                Socket s = new Socket(InetAddress.getLoopbackAddress(), rig.gateway.port());
                s.getOutputStream().write("GET /bucket/obj HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.US_ASCII));
                loris.add(s);
            }
            long t0 = System.nanoTime();
            HttpClient http = HttpClient.newHttpClient();
            int open = loris.size();
            long maxServedMs = 0;
            // every 100 ms: one more header byte on every connection, and one ordinary request; at most 5 s
            for (int round = 0; round < 50 && open > 0; round++) {
                open = 0;
                for (Socket s : loris) {
                    if (!s.isClosed()) {
                        try {
                            s.getOutputStream().write('X');
                            open++;
                        } catch (IOException closedByTheGateway) {
                            s.close();
                        }
                    }
                }
                long r0 = System.nanoTime();
                HttpResponse<String> ok = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + rig.gateway.port()
                        + "/bucket/obj?size=10")).timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
                assertThat(ok.statusCode()).isEqualTo(200);
                maxServedMs = Math.max(maxServedMs, (System.nanoTime() - r0) / 1_000_000);
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100)); // the attacker's pace
            }
            long closedMs = (System.nanoTime() - t0) / 1_000_000;
            await().atMost(Duration.ofSeconds(5)).until(() -> rig.gateway.readyReport().clientFaults().requestHeaderTimeouts() >= 200);
            System.out.printf("slowloris: 200 connections closed within %d ms (header timeout 1 s); other requests served"
                    + " in at most %d ms meanwhile%n", closedMs, maxServedMs);
            assertThat(open).as("connections still open").isZero();
            assertThat(closedMs).isLessThan(4_000);
            assertThat(maxServedMs).isLessThan(1_000);
            assertThat(rig.gateway.readyReport().clientFaults().requestHeaderTimeouts()).isEqualTo(200);
        } finally {
            for (Socket s : loris) {
                s.close();
            }
        }
    }

    @Test
    void anIdleKeepAliveConnectionIsClosedAfterTheHeaderTimeout() throws Exception {
        start(0, new GatewayOptions.ClientDeadlines(Duration.ofMillis(500), Duration.ofSeconds(30), 1024));
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), rig.gateway.port())) {
            s.setSoTimeout(5000);
            s.getOutputStream().write("GET /bucket/obj?size=3 HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            InputStream in = s.getInputStream();
            long t0 = System.nanoTime();
            String all = new String(in.readAllBytes(), StandardCharsets.ISO_8859_1); // until the gateway closes
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertThat(all).startsWith("HTTP/1.1 200");
            assertThat(ms).isBetween(400L, 3_000L);
        }
    }
}
