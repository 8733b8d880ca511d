package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.gaul.s3proxy.AuthenticationType;
import org.gaul.s3proxy.S3Proxy;
import org.jclouds.ContextBuilder;
import org.jclouds.blobstore.BlobStoreContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.apache.ApacheHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3Configuration;
import software.amazon.awssdk.services.s3.presigner.S3Presigner;

/**
 * The gateway's exchange with its backend (issue 22, items 3 and 5), through real processes: {@code levee
 * gateway} as its own JVM started from the command line, in front of real backends — S3Proxy in this JVM (with
 * keys, and without authentication), {@code levee s3-backend} as its own process — and of a hand-written backend
 * that takes a body and never answers.
 *
 * <ul>
 *   <li>Item 3: an upload that takes longer than {@code --backend-timeout 2s}, because a principal rate throttles it
 *       or because its client paces it (with a pause longer than the timeout), is stored whole; the timeout still
 *       fires when the backend hangs after the body was sent, or stops taking the body.</li>
 *   <li>Item 5: 20 unsigned 5 MB PUTs to a missing bucket get the backend's own answer (403/404), never
 *       {@code 502}, as straight to the backend.</li>
 * </ul>
 *
 * <p>Run: {@code ./mvnw -B -ntp -pl levee-it -am verify -Dit.test=GatewayBackendIT -Dtest=none
 * -Dsurefire.failIfNoSpecifiedTests=false} (logs in {@code target/it-logs/gateway-backend/}).
 */
class GatewayBackendIT {

    static final Path DIR = Path.of("target", "it-logs", "gateway-backend").toAbsolutePath();
    static final String BUCKET = "uploads";
    static final Duration BACKEND_TIMEOUT = Duration.ofSeconds(2);
    static final long MiB = 1L << 20;
    static final Map<String, String> KEYS = Map.of("AKIATHROTTLED", "secret-throttled", "AKIAPACED", "secret-paced");

    static S3Backend keyed;
    static S3Proxy anonymous;
    static BlobStoreContext anonymousStore;
    static int anonymousPort;
    static RoleProcess s3Backend;
    static int s3BackendPort;
    static HangingBackend hanging;
    static GatewayProcess toKeyed;
    static GatewayProcess toAnonymous;
    static GatewayProcess toS3Backend;
    static GatewayProcess toHanging;

    @BeforeAll
    static void start() throws Exception {
        Files.createDirectories(DIR);
        try (var old = Files.list(DIR)) {
            for (Path f : old.filter(f -> f.toString().endsWith(".log") || f.toString().endsWith(".out")).toList()) {
                Files.delete(f);
            }
        }
        Logging.configure(new LogTarget("file", null, 0, DIR.resolve("test-jvm.log")), "levee-it", "WARN");
        s3BackendPort = RoleProcess.freePort();
        s3Backend = RoleProcess.start(DIR, "s3-backend", List.of("s3-backend", "--listen", "127.0.0.1:" + s3BackendPort));
        keyed = S3Backend.start(KEYS);
        try (S3Client c = DemandClient.s3Client(keyed.endpoint(), "AKIAPACED", KEYS.get("AKIAPACED"), 2)) {
            c.createBucket(b -> b.bucket(BUCKET));
        }
        anonymousStore = ContextBuilder.newBuilder("transient").credentials("identity", "credential")
                .modules(List.of(new org.jclouds.logging.slf4j.config.SLF4JLoggingModule()))
                .build(BlobStoreContext.class);
        anonymousPort = RoleProcess.freePort();
        anonymous = S3Proxy.builder().blobStore(anonymousStore.getBlobStore())
                .endpoint(URI.create("http://127.0.0.1:" + anonymousPort))
                .awsAuthentication(AuthenticationType.NONE, null, null).ignoreUnknownHeaders(true).build();
        anonymous.start();
        await("S3Proxy without authentication started").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
                .until(() -> "STARTED".equals(anonymous.getState()));
        Logging.reapply();
        hanging = new HangingBackend();
        Path principals = DIR.resolve("principals.yaml");
        Files.writeString(principals, """
                accounts:
                  throttled:
                    keys: [AKIATHROTTLED]
                    upload_rate: 1MiB/s
                  paced:
                    keys: [AKIAPACED]
                """);
        // four gateway JVMs start in parallel: less wall time than in a row
        toKeyed = new GatewayProcess("gateway-keyed", keyed.port(), "--principals", principals.toString());
        toAnonymous = new GatewayProcess("gateway-anonymous", anonymousPort);
        toS3Backend = new GatewayProcess("gateway-s3-backend", s3BackendPort);
        toHanging = new GatewayProcess("gateway-hanging", hanging.port());
        s3Backend.awaitOutput("levee s3-backend listening", Duration.ofSeconds(60));
        for (GatewayProcess g : List.of(toKeyed, toAnonymous, toS3Backend, toHanging)) {
            g.process.awaitOutput("levee gateway listening", Duration.ofSeconds(60));
        }
    }

    @AfterAll
    static void stop() throws Exception {
        for (GatewayProcess g : new GatewayProcess[] {toKeyed, toAnonymous, toS3Backend, toHanging}) {
            if (g != null) {
                g.process.close();
            }
        }
        if (s3Backend != null) {
            s3Backend.close();
        }
        if (hanging != null) {
            hanging.close();
        }
        if (keyed != null) {
            keyed.close();
        }
        if (anonymous != null) {
            anonymous.stop();
        }
        if (anonymousStore != null) {
            anonymousStore.close();
        }
    }

    // ---------------------------------------------------------------- item 3: --backend-timeout

    /** A PUT throttled by its principal's rate (4 MiB at 1 MiB/s, about 4 s) outlives --backend-timeout 2s: 200, stored whole. */
    @Test
    void anUploadThrottledByItsPrincipalRateLongerThanTheBackendTimeoutIsStoredWhole() {
        byte[] data = GatewayGovernanceIT.random((int) (4 * MiB), 31);
        long t0 = System.nanoTime();
        Throwable failure;
        try (S3Client c = sdk(toKeyed.endpoint(), "AKIATHROTTLED")) {
            failure = org.assertj.core.api.Assertions.catchThrowable(
                    () -> c.putObject(b -> b.bucket(BUCKET).key("throttled"), RequestBody.fromBytes(data)));
        }
        long ms = ms(System.nanoTime() - t0);
        System.out.printf(Locale.ROOT, "item 3: 4 MiB PUT throttled to 1 MiB/s through --backend-timeout 2s: %s in %d ms%n",
                failure == null ? "200" : failure.toString(), ms);
        assertThat(failure).as("the throttled PUT (%d ms)", ms).isNull();
        assertThat(ms).as("ms the throttled PUT took: longer than --backend-timeout").isGreaterThan(2 * BACKEND_TIMEOUT.toMillis());
        assertThat(storedSha256("throttled")).as("the stored object").isEqualTo(GatewayGovernanceIT.sha256(data));
    }

    /**
     * A PUT its client paces (3 MiB, 64 KiB every 80 ms, and one pause of 3 s, longer than --backend-timeout 2s,
     * in the middle), through a presigned URL: 200, stored whole.
     */
    @Test
    void anUploadPacedByItsClientLongerThanTheBackendTimeoutIsStoredWhole() throws Exception {
        byte[] data = GatewayGovernanceIT.random((int) (3 * MiB), 32);
        URL put = presignPut(toKeyed.endpoint(), "AKIAPACED", "paced");
        long t0 = System.nanoTime();
        String answer;
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), toKeyed.port)) {
            s.setSoTimeout(20_000);
            OutputStream out = s.getOutputStream();
            out.write(("PUT " + put.getFile() + " HTTP/1.1\r\nHost: 127.0.0.1:" + toKeyed.port + "\r\nContent-Length: "
                    + data.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            int chunk = 64 * 1024;
            for (int off = 0, i = 0; off < data.length; off += chunk, i++) {
                out.write(data, off, Math.min(chunk, data.length - off));
                out.flush();
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(i == data.length / chunk / 2 ? 3_000 : 80));
            }
            answer = statusLine(readAnswer(s.getInputStream()));
        }
        long ms = ms(System.nanoTime() - t0);
        System.out.printf(Locale.ROOT, "item 3: 3 MiB PUT paced by its client (3 s pause) through --backend-timeout 2s: %s in"
                + " %d ms%n", answer, ms);
        assertThat(answer).as("the paced PUT's answer (%d ms)", ms).startsWith("HTTP/1.1 200");
        assertThat(ms).isGreaterThan(2 * BACKEND_TIMEOUT.toMillis());
        assertThat(storedSha256("paced")).as("the stored object").isEqualTo(GatewayGovernanceIT.sha256(data));
    }

    /** A backend that takes the whole body and never answers: the gateway answers 504 about --backend-timeout after the body's end. */
    @Test
    void aBackendThatHangsAfterTheBodyIsTimedOutBackendTimeoutAfterTheBodysEnd() throws Exception {
        hanging.mode = HangingBackend.Mode.READ_ALL;
        byte[] data = GatewayGovernanceIT.random((int) MiB, 33);
        String answer;
        long answeredNs;
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), toHanging.port)) {
            s.setSoTimeout(20_000);
            OutputStream out = s.getOutputStream();
            out.write(("PUT /" + BUCKET + "/hang HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + data.length + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.write(data);
            out.flush();
            answer = statusLine(readAnswer(s.getInputStream()));
            answeredNs = System.nanoTime();
        }
        long afterBody = ms(answeredNs - hanging.bodyEndNs.get());
        System.out.printf(Locale.ROOT, "item 3: a backend hanging after the body: %s, %d ms after the body's end%n", answer,
                afterBody);
        assertThat(hanging.bodyEndNs.get()).as("the hanging backend received the whole body").isPositive();
        assertThat(answer).startsWith("HTTP/1.1 504");
        // not before the timeout; after it within a bound generous for a shared 2-core machine
        assertThat(afterBody).as("ms from the body's end to the answer").isBetween(BACKEND_TIMEOUT.toMillis() - 100,
                BACKEND_TIMEOUT.toMillis() + 1500);
    }

    /** A backend that stops taking the body (reads 256 KiB of 32 MiB, then nothing): the gateway answers 504. */
    @Test
    void aBackendThatStopsTakingTheBodyIsTimedOut() throws Exception {
        hanging.mode = HangingBackend.Mode.STOP_READING;
        byte[] data = new byte[(int) (32 * MiB)];
        String answer;
        long t0 = System.nanoTime();
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), toHanging.port);
             ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            s.setSoTimeout(30_000);
            OutputStream out = s.getOutputStream();
            out.write(("PUT /" + BUCKET + "/stall HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + data.length + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            Future<?> writer = pool.submit(() -> {
                out.write(data);
                return null;
            });
            answer = statusLine(readAnswer(s.getInputStream()));
            writer.cancel(true);
        }
        long answeredNs = System.nanoTime();
        long afterStop = ms(answeredNs - hanging.stoppedReadingNs.get());
        System.out.printf(Locale.ROOT, "item 3: a backend that stops taking the body: %s after %d ms, %d ms after it stopped"
                + " reading%n", answer, ms(answeredNs - t0), afterStop);
        assertThat(hanging.stoppedReadingNs.get()).as("the backend read 256 KiB, then stopped").isPositive();
        assertThat(answer).startsWith("HTTP/1.1 504");
        // from its last read: the socket buffers between fill first (well under a second on loopback), then the
        // timeout runs; generous for a shared 2-core machine
        assertThat(afterStop).as("ms from the backend's last read to the answer").isBetween(BACKEND_TIMEOUT.toMillis() - 100,
                BACKEND_TIMEOUT.toMillis() + 2000);
    }

    // ---------------------------------------------------------------- item 5: early answers

    /** 20 unsigned 5 MB PUTs to a missing bucket of S3Proxy without authentication: 404 each, straight and through the gateway. */
    @Test
    void unsignedPutsToAMissingBucketOfS3ProxyGetItsAnswerNever502() throws Exception {
        earlyAnswers("S3Proxy without authentication", anonymousPort, toAnonymous, "404");
    }

    /** The same against {@code levee s3-backend} (it refuses an unsigned request): 403 each, never 502. */
    @Test
    void unsignedPutsToAMissingBucketOfLeveeS3BackendGetItsAnswerNever502() throws Exception {
        earlyAnswers("levee s3-backend", s3BackendPort, toS3Backend, "403");
    }

    static void earlyAnswers(String backend, int backendPort, GatewayProcess gateway, String expected) throws Exception {
        byte[] body = GatewayGovernanceIT.random(5_000_000, 34);
        List<String> straight = new ArrayList<>();
        List<String> through = new ArrayList<>();
        List<Long> throughMs = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            straight.add(unsigned("PUT", backendPort, "no-such-bucket/k-" + i, body));
            long t0 = System.nanoTime();
            through.add(unsigned("PUT", gateway.port, "no-such-bucket/k-" + i, body));
            throughMs.add(ms(System.nanoTime() - t0));
        }
        long bad = through.stream().filter(c -> c.equals("502")).count();
        System.out.printf(Locale.ROOT, "item 5: 20 unsigned 5 MB PUTs to a missing bucket, %s: straight %s; through the"
                + " gateway %s (%d x 502), in %s ms%n", backend, straight, through, bad, throughMs);
        assertThat(straight).as("straight to %s", backend).containsOnly(expected);
        assertThat(through).as("through the gateway to %s: the backend's answer", backend).containsOnly(expected);
        // a method S3 does not know, with a 5 MB body (found by fuzzing): the backend's own answer too
        List<String> patchStraight = new ArrayList<>();
        List<String> patchThrough = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            patchStraight.add(unsigned("PATCH", backendPort, BUCKET + "/p-" + i, body));
            patchThrough.add(unsigned("PATCH", gateway.port, BUCKET + "/p-" + i, body));
        }
        System.out.printf(Locale.ROOT, "item 5: 5 unsigned 5 MB PATCHes, %s: straight %s; through the gateway %s%n", backend,
                patchStraight, patchThrough);
        assertThat(patchThrough).as("PATCH through the gateway to %s", backend).isEqualTo(patchStraight)
                .doesNotContain("502", "-1");
        gateway.awaitIdle();
    }

    /**
     * One unsigned request with a body on a connection of its own, its body written by another thread while the answer is read (as
     * a client that does not wait for {@code 100 Continue}): the answer's status code, or {@code -1} without one.
     */
    static String unsigned(String method, int port, String path, byte[] body) throws Exception {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port);
             ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            s.setSoTimeout(20_000);
            OutputStream out = s.getOutputStream();
            out.write((method + " /" + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\nContent-Type: application/octet-stream"
                    + "\r\nContent-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            pool.submit(() -> {
                try {
                    out.write(body);
                    out.flush();
                } catch (IOException e) {
                    // the server answered early and closed (or reset): what the answer says counts
                }
                return null;
            });
            String line = statusLine(readAnswer(s.getInputStream()));
            return line.startsWith("HTTP/1.1 ") && line.length() >= 12 ? line.substring(9, 12) : "-1";
        }
    }

    // ---------------------------------------------------------------- helpers

    /** Reads an answer until the status line and headers are in (or the connection ends); "" when none came. */
    static String readAnswer(InputStream in) throws IOException {
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        byte[] buf = new byte[8192];
        try {
            for (int r; (r = in.read(buf)) > 0; ) {
                got.write(buf, 0, r);
                String s = got.toString(StandardCharsets.ISO_8859_1);
                if (s.contains("\r\n\r\n") && !s.startsWith("HTTP/1.1 100")) {
                    return s;
                }
                if (s.startsWith("HTTP/1.1 100") && s.indexOf("\r\n\r\n") + 4 < s.length()) {
                    return s.substring(s.indexOf("\r\n\r\n") + 4);
                }
            }
        } catch (java.net.SocketException | SocketTimeoutException e) {
            // reset after (or instead of) the answer: what came is the answer
        }
        return got.toString(StandardCharsets.ISO_8859_1);
    }

    static String statusLine(String answer) {
        int eol = answer.indexOf("\r\n");
        return eol < 0 ? answer : answer.substring(0, eol);
    }

    static String storedSha256(String key) {
        try (S3Client c = DemandClient.s3Client(keyed.endpoint(), "AKIAPACED", KEYS.get("AKIAPACED"), 2)) {
            return GatewayGovernanceIT.sha256(c.getObjectAsBytes(b -> b.bucket(BUCKET).key(key)).asByteArray());
        }
    }

    @SuppressWarnings("deprecation") // the SDK's Apache 4 client, as EmbeddedS3.client: no second Netty line
    static S3Client sdk(URI endpoint, String key) {
        return S3Client.builder().endpointOverride(endpoint).region(Region.US_EAST_1).forcePathStyle(true)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(key, KEYS.get(key))))
                .httpClientBuilder(ApacheHttpClient.builder().connectionTimeout(Duration.ofSeconds(2))
                        .socketTimeout(Duration.ofSeconds(30)))
                .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry()))
                .build();
    }

    static URL presignPut(URI endpoint, String key, String object) {
        try (S3Presigner p = S3Presigner.builder().endpointOverride(endpoint).region(Region.US_EAST_1)
                .serviceConfiguration(S3Configuration.builder().pathStyleAccessEnabled(true).build())
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(key, KEYS.get(key))))
                .build()) {
            return p.presignPutObject(r -> r.signatureDuration(Duration.ofMinutes(10))
                    .putObjectRequest(o -> o.bucket(BUCKET).key(object))).url();
        }
    }

    static long ms(long ns) {
        return TimeUnit.NANOSECONDS.toMillis(ns);
    }

    /** {@code levee gateway --backend-timeout 2s} in front of one backend, as its own process. */
    static final class GatewayProcess {
        final int port = RoleProcess.freePort();
        final int admin = RoleProcess.freePort();
        final RoleProcess process;

        GatewayProcess(String name, int backendPort, String... more) {
            List<String> args = new ArrayList<>(List.of("gateway", "--listen", "127.0.0.1:" + port,
                    "--admin", "127.0.0.1:" + admin, "--backend", "127.0.0.1:" + backendPort, "--no-enforce",
                    "--backend-timeout", BACKEND_TIMEOUT.toSeconds() + "s",
                    "--log-target", "file:" + DIR.resolve(name + ".log"), "--log-level", "DEBUG"));
            args.addAll(List.of(more));
            process = RoleProcess.start(DIR, name, args);
        }

        URI endpoint() {
            return URI.create("http://127.0.0.1:" + port);
        }

        /** Waits until the gateway holds no request (the early answers' connections closed). */
        void awaitIdle() {
            java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
            await("gateway idle").atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50)).ignoreExceptions()
                    .until(() -> http.send(java.net.http.HttpRequest.newBuilder(
                                    URI.create("http://127.0.0.1:" + admin + "/health")).build(),
                            java.net.http.HttpResponse.BodyHandlers.ofString()).body().contains("\"inFlight\":0"));
        }
    }

    /**
     * A backend that answers {@code 100 Continue} and then either reads the whole body and never answers
     * ({@link Mode#READ_ALL}), or reads 256 KiB of it and stops reading ({@link Mode#STOP_READING}).
     */
    static final class HangingBackend implements AutoCloseable {
        enum Mode { READ_ALL, STOP_READING }

        final ServerSocket server;
        final ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor();
        final AtomicLong bodyEndNs = new AtomicLong();
        final AtomicLong stoppedReadingNs = new AtomicLong();
        final List<Socket> held = java.util.Collections.synchronizedList(new ArrayList<>());
        volatile Mode mode = Mode.READ_ALL;

        HangingBackend() throws IOException {
            server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            pool.submit(() -> {
                while (!server.isClosed()) {
                    Socket s = server.accept();
                    held.add(s);
                    pool.submit(() -> serve(s));
                }
                return null;
            });
        }

        int port() {
            return server.getLocalPort();
        }

        Void serve(Socket s) throws IOException {
            InputStream in = s.getInputStream();
            StringBuilder head = new StringBuilder();
            while (!head.toString().endsWith("\r\n\r\n")) {
                int c = in.read();
                if (c < 0) {
                    return null;
                }
                head.append((char) c);
            }
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?i)content-length:\\s*(\\d+)").matcher(head);
            long length = m.find() ? Long.parseLong(m.group(1)) : 0;
            s.getOutputStream().write("HTTP/1.1 100 Continue\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            s.getOutputStream().flush();
            long limit = mode == Mode.STOP_READING ? 256 * 1024 : length;
            byte[] buf = new byte[64 * 1024];
            long read = 0;
            while (read < limit) {
                int r = in.read(buf, 0, (int) Math.min(buf.length, limit - read));
                if (r < 0) {
                    return null;
                }
                read += r;
            }
            if (read == length) {
                bodyEndNs.set(System.nanoTime());
            } else {
                stoppedReadingNs.set(System.nanoTime());
            }
            return null; // holds the connection open and silent until close()
        }

        @Override
        public void close() throws IOException {
            server.close();
            synchronized (held) {
                for (Socket s : held) {
                    s.close();
                }
            }
            pool.shutdownNow();
        }
    }
}
