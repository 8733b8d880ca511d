package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The {@link TcpProxy} fixture against a JDK HTTP server on loopback, with raw sockets as clients (so
 * every byte is known): it forwards an HTTP exchange and counts its bytes exactly in both directions;
 * a blackhole stalls a transfer without closing it (and a new connection is accepted but not passed
 * on), and lifting it resumes the same transfer to its end; a cut resets open connections.
 *
 * <p>Run: {@code ./mvnw -B -ntp -pl levee-it -am verify -Dit.test=TcpProxyIT -Dtest=none
 * -Dsurefire.failIfNoSpecifiedTests=false} (a few seconds).
 */
class TcpProxyIT {

    static final int SMALL = 100_000;
    static final int LARGE = 64 << 20;
    static HttpServer server;
    static final AtomicInteger exchanges = new AtomicInteger();

    @BeforeAll
    static void startServer() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
        server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool(r -> Thread.ofPlatform().daemon().unstarted(r)));
        server.createContext("/bytes", ex -> {
            exchanges.incrementAndGet();
            int n = Integer.parseInt(ex.getRequestURI().getQuery());
            ex.getRequestBody().readAllBytes();
            ex.sendResponseHeaders(200, n);
            byte[] chunk = new byte[64 * 1024];
            try (OutputStream out = ex.getResponseBody()) {
                for (int left = n; left > 0; left -= chunk.length) {
                    out.write(chunk, 0, Math.min(left, chunk.length));
                }
            } catch (IOException e) {
                // the client went away (cut)
            }
        });
        server.start();
    }

    @AfterAll
    static void stopServer() {
        server.stop(0);
    }

    static byte[] request(int bytes) {
        return ("GET /bytes?" + bytes + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
    }

    static Socket connect(TcpProxy p) throws IOException {
        Socket s = new Socket(InetAddress.getLoopbackAddress(), p.port());
        s.setSoTimeout(20_000);
        return s;
    }

    /** Reads to the end, counting into {@code read}; returns everything read. */
    static byte[] readAll(InputStream in, AtomicLong read) throws IOException {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        byte[] buf = new byte[32 * 1024];
        for (int n; (n = in.read(buf)) >= 0; ) {
            all.write(buf, 0, n);
            read.addAndGet(n);
        }
        return all.toByteArray();
    }

    static int headerLength(byte[] response) {
        String s = new String(response, 0, Math.min(response.length, 4096), StandardCharsets.ISO_8859_1);
        return s.indexOf("\r\n\r\n") + 4;
    }

    @Test
    @SuppressWarnings("try") // the client closes its side before the block ends: what the proxy counts then
    void forwardsAnHttpExchangeAndCountsItsBytesExactly() throws Exception {
        try (TcpProxy p = TcpProxy.start(server.getAddress().getPort()); Socket s = connect(p)) {
            byte[] req = request(SMALL);
            s.getOutputStream().write(req);
            byte[] resp = readAll(s.getInputStream(), new AtomicLong());
            assertThat(new String(resp, 0, 15, StandardCharsets.US_ASCII)).isEqualTo("HTTP/1.1 200 OK");
            assertThat(resp.length - headerLength(resp)).isEqualTo(SMALL);
            await("counters settle").atMost(Duration.ofSeconds(5)).until(() -> p.bytesToClient() == resp.length);
            assertThat(p.bytesToTarget()).isEqualTo(req.length);
            assertThat(p.bytesToClient()).isEqualTo(resp.length);
            assertThat(p.acceptedConnections()).isEqualTo(1);
            s.close(); // the server closed its side; the connection ends when the client closes its own
            await("the closed connection is forgotten").atMost(Duration.ofSeconds(5)).until(() -> p.openConnections() == 0);
        }
    }

    @Test
    void aBlackholeStallsATransferWithoutClosingItAndLiftingItResumes() throws Exception {
        try (TcpProxy p = TcpProxy.start(server.getAddress().getPort()); Socket s = connect(p)) {
            s.getOutputStream().write(request(LARGE));
            AtomicLong read = new AtomicLong();
            InputStream in = s.getInputStream();
            byte[] first = new byte[1 << 20]; // read 1 MiB, then stall the reader until the blackhole is on
            int got = 0;
            while (got < first.length) {
                got += in.read(first, got, first.length - got);
            }
            p.blackhole(true);
            CompletableFuture<byte[]> rest = CompletableFuture.supplyAsync(() -> {
                try {
                    return readAll(in, read);
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            // what the proxy had already written drains to the client; then nothing moves and nothing closes
            await("the client has everything the proxy forwarded").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
                    .until(() -> first.length + read.get() == p.bytesToClient());
            long stalledAt = p.bytesToClient();
            await("no byte passes while blackholed").during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(2))
                    .until(() -> p.bytesToClient() == stalledAt && !rest.isDone());
            assertThat(stalledAt).as("stalled mid-transfer").isLessThan(LARGE);
            assertThat(p.openConnections()).isEqualTo(1);

            // a new connection is accepted but not passed on to the target while blackholed
            int before = exchanges.get();
            try (Socket late = connect(p)) {
                late.setSoTimeout(500);
                late.getOutputStream().write(request(10));
                assertThatThrownBy(() -> late.getInputStream().read()).isInstanceOf(SocketTimeoutException.class);
                assertThat(exchanges.get()).as("the target saw no new exchange").isEqualTo(before);

                p.blackhole(false);
                byte[] tail = rest.get(30, TimeUnit.SECONDS);
                byte[] whole = new byte[first.length + tail.length];
                System.arraycopy(first, 0, whole, 0, first.length);
                System.arraycopy(tail, 0, whole, first.length, tail.length);
                assertThat(whole.length - headerLength(whole)).as("the whole body after the heal").isEqualTo(LARGE);
                late.setSoTimeout(10_000);
                byte[] lateResp = readAll(late.getInputStream(), new AtomicLong());
                assertThat(new String(lateResp, 0, 15, StandardCharsets.US_ASCII)).isEqualTo("HTTP/1.1 200 OK");
                await("counters settle").atMost(Duration.ofSeconds(5))
                        .until(() -> p.bytesToClient() == whole.length + lateResp.length);
            }
        }
    }

    @Test
    void aCutResetsOpenConnectionsAndNewOnesAreServed() throws Exception {
        try (TcpProxy p = TcpProxy.start(server.getAddress().getPort()); Socket s = connect(p)) {
            s.getOutputStream().write(request(LARGE));
            InputStream in = s.getInputStream();
            assertThat(in.read(new byte[1024])).isPositive();
            await("the connection is open").atMost(Duration.ofSeconds(5)).until(() -> p.openConnections() == 1);
            p.cut();
            assertThatThrownBy(() -> readAll(in, new AtomicLong())).isInstanceOf(SocketException.class)
                    .hasMessageContaining("reset");
            assertThat(p.openConnections()).isZero();
            try (Socket again = connect(p)) {
                again.getOutputStream().write(request(SMALL));
                byte[] resp = readAll(again.getInputStream(), new AtomicLong());
                assertThat(resp.length - headerLength(resp)).isEqualTo(SMALL);
            }
        }
    }
}
