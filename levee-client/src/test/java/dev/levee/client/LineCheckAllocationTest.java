package dev.levee.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.runtime.HostPort;
import dev.levee.runtime.Http;
import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import dev.levee.runtime.Metrics;
import dev.levee.wire.BinaryChecks;
import dev.levee.wire.CheckWire;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.vertx.core.Context;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.NetSocket;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * What levee-client allocates per check on the line path (issue 12: at most 256 bytes per check): a levee-line/1
 * request read from a TCP connection ({@link LineServer}, {@link LineConnection}, {@link LineDecoder}), classified
 * from the received bytes, checked by {@link LeveeClient} over the check wire with the connection's slot as the
 * callback, the limiter's answer matched, the decision counted and logged — to a file, as in production, through
 * Log4j's garbage-free calls — and the answer line written back. What is left per check: the decision (a record of
 * twelve components, 80 bytes), the check's plan (56), its classification (24) and the key string (24 + 16 + its
 * length, rounded up to 8: 64 for the keys here). Each further 8 characters of key cost 8 bytes more.
 *
 * <p><b>Whose bytes.</b> The JVM's per-thread allocation counter of the one event loop of the client's Vert.x instance
 * ({@code Http.vertx(1)}: one event loop on the native transport, as in production; the line endpoint, the client
 * and its wire connection all run there, as they do on the client endpoint's loop in production). Everything else
 * runs on other threads and is not counted: the stand-in limiter and observer on a second Vert.x instance, the
 * test's request sender (a blocking socket on the test thread) and Log4j's asynchronous appender thread. So the
 * figure is the client's own, and includes Netty's read and write path for the line connection and the wire
 * connection. The JVM runs with the launcher's flags (scripts/jvm-access.sh, set for levee-client's tests in its
 * pom): without {@code --sun-misc-unsafe-memory-access=allow} Netty 4.2 on JDK 24+ copies to and from direct
 * buffers through a new {@code ByteBuffer} view each time (another 100–200 bytes a check), so the test insists.
 *
 * <p><b>How.</b> Requests are sent in bursts of {@code burst} pipelined requests on one connection, each burst
 * answered before the next is sent; a burst of 1 is the worst case (one check per read, per wire frame and per
 * answer write), a burst of 8 is closer to NGINX's many connections on one event loop (a few checks per frame).
 * 30 000 checks warm the path up (JIT, pooled buffers, the Log4j ring), then 20 000 are measured. Every measured
 * check must have gone over the wire (no HTTP check to the stand-in meanwhile) and be accepted. The future path
 * ({@link LeveeClient#check(dev.levee.s3.S3Request)}) is measured alike, with a looser bound.
 *
 * <p>Figures before issue 12's cuts, with the same test: 510 (burst 1) and 453 (burst 8) bytes per check on the
 * line path, 380 on the future path; after: 225, 224 and 272–296 (docs/decisions.md, "Allocation per check on the
 * line path").
 */
class LineCheckAllocationTest {

    /** The bound: bytes allocated on the client's event loop per check on the line path (issue 12 target). */
    static final double BOUND = 256;
    /**
     * The bound of the future path, from the {@link dev.levee.s3.S3Request} on: the line path's objects, a promise,
     * and the request's key cut from its path string.
     */
    static final double FUTURE_BOUND = 320;

    @TempDir
    static Path dir;

    Vertx clientVertx;
    Vertx limiterVertx;
    LeveeClient client;
    LineServer line;
    MeterRegistry registry;
    long loopThread;
    final AtomicInteger httpChecks = new AtomicInteger();
    final AtomicInteger wireChecks = new AtomicInteger();

    @BeforeAll
    static void logToAFile() {
        Logging.configure(LogTarget.parse("file:" + dir.resolve("client.log")), "levee-test", "INFO");
    }

    @AfterAll
    static void stopLogging() {
        Logging.configure(LogTarget.parse("stderr"), "levee-test", "WARN");
    }

    @BeforeEach
    void start() throws Exception {
        limiterVertx = Http.vertx(1);
        clientVertx = Http.vertx(1); // as in production: the native transport (epoll) where it loads
        HttpServer limiter = limiterVertx.createHttpServer().requestHandler(req -> {
            if (req.path().equals(CheckWire.PATH) && "GET".equals(req.method().name())) {
                req.response().putHeader("Upgrade", CheckWire.PROTOCOL).putHeader("Connection", "Upgrade");
                req.toNetSocket().onSuccess(this::wire);
                return;
            }
            req.body().onSuccess(b -> { // the first checks, while the wire comes up
                httpChecks.incrementAndGet();
                JsonObject body = b.toJsonObject();
                JsonArray in = req.path().equals("/v1/checks") ? body.getJsonArray("checks") : new JsonArray().add(body);
                JsonArray out = new JsonArray();
                for (int i = 0; i < in.size(); i++) {
                    out.add(new JsonObject().put("result", "accepted").put("level", "prefix")
                            .put("limitKey", "p:" + in.getJsonObject(i).getString("resource")).put("remaining", 2)
                            .put("retryAfter", 0).put("rate", 27.5).put("burst", 3).put("reset", 2));
                }
                req.response().putHeader("Content-Type", "application/json").end(req.path().equals("/v1/checks")
                        ? new JsonObject().put("decisions", out).encode() : out.getJsonObject(0).encode());
            });
        }).listen(0, "127.0.0.1").await(10, TimeUnit.SECONDS);
        HttpServer observer = StandIns.observer(limiterVertx, limiter.actualPort());
        registry = Metrics.newRegistry();
        client = StandIns.client(clientVertx, observer, registry);
        Context context = clientVertx.getOrCreateContext();
        Promise<LineServer> listening = Promise.promise();
        context.runOnContext(v -> {
            loopThread = Thread.currentThread().threadId();
            LineServer.listen(clientVertx, new HostPort("127.0.0.1", 0), Duration.ofSeconds(60), client)
                    .onComplete(listening);
        });
        line = listening.future().await(10, TimeUnit.SECONDS);
    }

    @AfterEach
    void stop() throws Exception {
        client.stop();
        clientVertx.close().await(10, TimeUnit.SECONDS);
        limiterVertx.close().await(10, TimeUnit.SECONDS);
    }

    /** The stand-in limiter's end of the wire: every check accepted by a prefix quota of 27.5/s, burst 3. */
    void wire(NetSocket so) {
        Buffer[] acc = {Buffer.buffer()};
        BinaryChecks.CheckCursor in = new BinaryChecks.CheckCursor();
        so.handler(chunk -> {
            acc[0].appendBuffer(chunk);
            int at = 0;
            ByteBuf out = null;
            while (acc[0].length() - at >= 4 && acc[0].length() - at >= 4 + acc[0].getInt(at)) {
                int len = acc[0].getInt(at);
                ByteBuf f = Unpooled.wrappedBuffer(acc[0].getBytes(at + 4, at + 4 + len));
                at += 4 + len;
                f.readByte();
                int id = f.readInt();
                int n = in.begin(f);
                if (out == null) {
                    out = Unpooled.buffer();
                }
                int start = CheckWire.startFrame(out, CheckWire.ANSWERS, id);
                out.writeByte(BinaryChecks.VERSION);
                out.writeShort(n);
                for (int i = 0; i < n; i++) {
                    in.next();
                    BinaryChecks.writeDecision(out, BinaryChecks.VERSION, true, "prefix", "p:" + in.resource, 2, 0,
                            BinaryChecks.SHADOW_NONE, 27.5, 3, 2);
                }
                CheckWire.endFrame(out, start);
                wireChecks.addAndGet(n);
            }
            if (at > 0) {
                acc[0] = acc[0].getBuffer(at, acc[0].length());
            }
            if (out != null) {
                byte[] a = new byte[out.readableBytes()];
                out.readBytes(a);
                so.write(Buffer.buffer(a));
            }
        });
    }

    /** Requests of a few buckets and many keys, encoded ahead so that the sender's bytes are ready. */
    static byte[][] requests(String uriPattern) {
        byte[][] r = new byte[1024][];
        for (int i = 0; i < r.length; i++) {
            String uri = uriPattern.replace("{b}", Integer.toString(i % 8)).replace("{k}", Integer.toString(i));
            r[i] = LineConnectionTest.req(false, "GET".getBytes(StandardCharsets.US_ASCII),
                    "127.0.0.1:8080".getBytes(StandardCharsets.US_ASCII), uri.getBytes(StandardCharsets.ISO_8859_1),
                    new byte[0]);
        }
        return r;
    }

    /** Sends {@code n} requests in bursts of {@code burst}, reading each burst's answers before the next. */
    static void send(OutputStream out, InputStream in, byte[][] requests, int n, int burst) throws Exception {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        for (int sent = 0; sent < n; sent += burst) {
            b.reset();
            int k = Math.min(burst, n - sent);
            for (int j = 0; j < k; j++) {
                b.write(requests[(sent + j) % requests.length]);
            }
            b.writeTo(out);
            out.flush();
            for (int j = 0; j < k; j++) {
                String answer = readLine(in);
                assertThat(answer).startsWith("accepted\t");
            }
        }
    }

    static String readLine(InputStream in) throws Exception {
        StringBuilder s = new StringBuilder();
        for (int c; (c = in.read()) >= 0; ) {
            if (c == '\n') {
                return s.toString();
            }
            s.append((char) c);
        }
        throw new java.io.EOFException("the line endpoint closed the connection");
    }

    double count(String result) {
        Counter c = registry.find("levee_client_results_total").tag("result", result).counter();
        return c == null ? 0 : c.count();
    }

    @ParameterizedTest(name = "burst {0}, {1}")
    @CsvSource(delimiter = '|', value = {
            "1 | /photos-{b}/2024/06/img-{k}.jpg",
            "8 | /photos-{b}/2024/06/img-{k}.jpg",
            // a presigned GET: the query's names are compared where they stand, its values not even read
            "8 | /photos-{b}/2024/06/img-{k}.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAEXAMPLE%2F20240601"
                    + "%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20240601T000000Z&X-Amz-Expires=900"
                    + "&X-Amz-SignedHeaders=host&X-Amz-Signature=0123456789abcdef0123456789abcdef",
    })
    void aCheckOnTheLinePathAllocatesAtMostTheBoundOnTheClientsEventLoop(int burst, String uriPattern) throws Exception {
        assertThat(io.netty.util.internal.PlatformDependent.hasUnsafe())
                .as("Netty with Unsafe, as under the launcher's JVM flags (scripts/jvm-access.sh, levee-client/pom.xml)")
                .isTrue();
        byte[][] requests = requests(uriPattern);
        var threads = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), line.port())) {
            socket.setSoTimeout(10_000);
            socket.setTcpNoDelay(true);
            OutputStream out = socket.getOutputStream();
            InputStream in = new BufferedInputStream(socket.getInputStream());
            send(out, in, requests, 30_000, 8); // warm: JIT, the wire connection, pooled buffers, the log ring
            assertThat(wireChecks.get()).as("the wire is up").isPositive();
            int http = httpChecks.get();
            double accepted = count("accepted");
            int n = 20_000;
            java.time.Instant from = java.time.Instant.now();
            long before = threads.getThreadAllocatedBytes(loopThread);
            send(out, in, requests, n, burst);
            long after = threads.getThreadAllocatedBytes(loopThread);
            double perCheck = (double) (after - before) / n;
            System.out.printf("line path, burst %d, %s: %.1f bytes per check on the client's event loop"
                    + " (thread %d, %s to %s)%n", burst, uriPattern, perCheck, loopThread, from, java.time.Instant.now());
            assertThat(httpChecks.get()).as("every measured check went over the wire").isEqualTo(http);
            assertThat(count("accepted") - accepted).as("each check counted once").isEqualTo(n);
            assertThat(perCheck).as("bytes per check on the client's event loop").isLessThanOrEqualTo(BOUND);
        }
        String expected = "result=accepted limiter=127.0.0.1:";
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10))
                .until(() -> Files.readString(dir.resolve("client.log")).contains(expected));
    }

    /**
     * The future path ({@link LeveeClient#check(dev.levee.s3.S3Request)}, as the HTTP endpoint and the gateway call
     * it), measured from the {@code S3Request} on: the requests are built on the test thread (the HTTP endpoint
     * builds them from Vert.x's header strings, which are the HTTP server's own allocation) and checked in bursts
     * of 8 from a task on the client's event loop, each burst's futures completing one shared handler.
     */
    @org.junit.jupiter.api.Test
    void aCheckOnTheFuturePathAllocatesAtMostItsBoundOnTheClientsEventLoop() throws Exception {
        assertThat(io.netty.util.internal.PlatformDependent.hasUnsafe()).isTrue();
        dev.levee.s3.S3Request[] requests = new dev.levee.s3.S3Request[1024];
        for (int i = 0; i < requests.length; i++) {
            requests[i] = dev.levee.s3.S3Request.fromRequestUri("GET", "127.0.0.1:8080",
                    "/photos-" + (i % 8) + "/2024/06/img-" + i + ".jpg", null);
        }
        Context context = clientVertx.getOrCreateContext();
        var threads = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        checkInBursts(context, requests, 30_000); // warm, and the wire comes up
        assertThat(wireChecks.get()).as("the wire is up").isPositive();
        int http = httpChecks.get();
        int n = 20_000;
        java.time.Instant from = java.time.Instant.now();
        long before = threads.getThreadAllocatedBytes(loopThread);
        checkInBursts(context, requests, n);
        double perCheck = (double) (threads.getThreadAllocatedBytes(loopThread) - before) / n;
        System.out.printf("future path, burst 8: %.1f bytes per check on the client's event loop (thread %d, %s to %s)%n",
                perCheck, loopThread, from, java.time.Instant.now());
        assertThat(httpChecks.get()).as("every measured check went over the wire").isEqualTo(http);
        assertThat(perCheck).as("bytes per check on the client's event loop").isLessThanOrEqualTo(FUTURE_BOUND);
    }

    /** Checks {@code n} requests in bursts of 8 made by tasks on {@code context}, each burst awaited. */
    void checkInBursts(Context context, dev.levee.s3.S3Request[] requests, int n) throws Exception {
        java.util.concurrent.atomic.AtomicInteger accepted = new java.util.concurrent.atomic.AtomicInteger();
        io.vertx.core.Handler<io.vertx.core.AsyncResult<ClientDecision>> count = ar -> {
            if (ar.succeeded() && ar.result().result() == ClientDecision.Result.ACCEPTED) {
                accepted.incrementAndGet();
            }
        };
        for (int sent = 0; sent < n; sent += 8) {
            int first = sent;
            java.util.concurrent.CountDownLatch burst = new java.util.concurrent.CountDownLatch(1);
            context.runOnContext(v -> {
                for (int k = 0; k < 8; k++) {
                    client.check(requests[(first + k) % requests.length]).onComplete(count);
                }
                burst.countDown();
            });
            burst.await(10, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (accepted.get() < sent + 8) {
                assertThat(System.nanoTime() - deadline).as("burst decided within 10 s").isNegative();
                java.util.concurrent.locks.LockSupport.parkNanos(20_000);
            }
        }
    }
}
