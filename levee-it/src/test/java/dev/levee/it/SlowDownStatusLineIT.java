package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.levee.stack.EmbeddedNginx;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Issue 24, items 3, 4 and 5, as a user sees them: every role its own process started from the command line
 * ({@code levee s3-backend}, {@code observer}, {@code limiter --quotas}, {@code client}, {@code gateway}), NGINX run
 * from the directory {@code levee nginx-config --out} writes, and {@code curl} as the client.
 *
 * <ul>
 *   <li>{@code curl -sI} of a refused request through NGINX and through the gateway shows {@code HTTP/1.1 503 Slow
 *       Down} (NGINX sent {@code 503 Service Temporarily Unavailable}, the gateway {@code 503 Service Unavailable}),
 *       {@code Retry-After}, {@code x-amz-retry-after} (its milliseconds), the RateLimit fields; a refused HEAD has no
 *       body on the wire.</li>
 *   <li>A signed chunked PUT through that NGINX reaches the backend still chunked, with the headers the client signed
 *       (a capture of what NGINX forwards: NGINX sent the small body with Content-Length and no Transfer-Encoding).</li>
 *   <li>Issue 23's defaults: with no lease or batch flag on either command, a hot bucket's requests are admitted by
 *       NGINX from batches of slots the client leased, each named in the access log.</li>
 * </ul>
 */
class SlowDownStatusLineIT {

    static final Path DIR = Path.of("target", "it-logs", "slow-down-status");
    /** 1 request per second, burst 1: the second request of a burst is refused. */
    static final String THROTTLED = "throttled";
    static final List<RoleProcess> ROLES = new ArrayList<>();
    static int s3Port;
    static int clientPort;
    static int gatewayPort;
    static int nginxPort;
    static int capturePort;
    static int nginxCapturePort;
    static Process nginx;
    static Process nginxCapture;
    static ServerSocket capture;
    static final AtomicReference<byte[]> captured = new AtomicReference<>();

    @BeforeAll
    static void start() throws Exception {
        assertThat(EmbeddedNginx.unavailable()).as("nginx with the lua module (scripts/test installs it)").isEmpty();
        Files.createDirectories(DIR);
        Path quotas = DIR.resolve("quotas.yaml");
        Files.writeString(quotas, """
                factor: 1
                default: {rate: 10000, burst: 1000}
                resources:
                  %s:
                    quota: {rate: 1, burst: 1}
                """.formatted(THROTTLED));
        s3Port = RoleProcess.freePort();
        int observerPort = RoleProcess.freePort();
        int limiterPort = RoleProcess.freePort();
        clientPort = RoleProcess.freePort();
        gatewayPort = RoleProcess.freePort();
        RoleProcess s3 = role("s3-backend", List.of("s3-backend", "--listen", "127.0.0.1:" + s3Port));
        RoleProcess observer = role("observer", List.of("observer", "--listen", "127.0.0.1:" + observerPort));
        RoleProcess limiter = role("limiter", List.of("limiter", "--id", "l1", "--listen", "127.0.0.1:" + limiterPort,
                "--observer", "127.0.0.1:" + observerPort, "--quotas", quotas.toString(), "--heartbeat", "200ms",
                "--warmup", "0"));
        // the limiter's --quotas, as the packaged client.args gives it: request leases are on by default
        RoleProcess client = role("client", List.of("client", "--listen", "127.0.0.1:" + clientPort, "--observer",
                "127.0.0.1:" + observerPort, "--refresh", "200ms", "--warmup", "0", "--quotas", quotas.toString()));
        RoleProcess gateway = role("gateway", List.of("gateway", "--listen", "127.0.0.1:" + gatewayPort, "--admin",
                "127.0.0.1:" + RoleProcess.freePort(), "--backend", "127.0.0.1:" + s3Port, "--observer",
                "127.0.0.1:" + observerPort));
        s3.awaitOutput("levee s3-backend listening", Duration.ofSeconds(90));
        observer.awaitOutput("listening", Duration.ofSeconds(90));
        limiter.awaitOutput("listening", Duration.ofSeconds(90));
        client.awaitOutput("levee client listening", Duration.ofSeconds(90));
        gateway.awaitOutput("levee gateway listening", Duration.ofSeconds(90));

        nginxPort = RoleProcess.freePort();
        nginx = startNginx("nginx", "127.0.0.1:" + nginxPort, "127.0.0.1:" + s3Port);

        capture = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        capturePort = capture.getLocalPort();
        Thread.ofVirtual().start(SlowDownStatusLineIT::captureLoop);
        nginxCapturePort = RoleProcess.freePort();
        nginxCapture = startNginx("nginx-capture", "127.0.0.1:" + nginxCapturePort, "127.0.0.1:" + capturePort);
    }

    static RoleProcess role(String name, List<String> args) {
        RoleProcess p = RoleProcess.start(DIR, name, args);
        ROLES.add(p);
        return p;
    }

    /** Renders a prefix with {@code levee nginx-config --out} (the CLI, as a user runs it) and starts NGINX on it. */
    static Process startNginx(String name, String listen, String backend) throws Exception {
        Path prefix = DIR.resolve(name).toAbsolutePath();
        try (RoleProcess render = RoleProcess.start(DIR, name + "-config", List.of("nginx-config", "--out",
                prefix.toString(), "--force", "--listen", listen, "--backend", backend, "--client",
                "127.0.0.1:" + clientPort, "--workers", "1"))) {
            assertThat(render.awaitExit(Duration.ofSeconds(60))).as(render.output()).isZero();
        }
        Files.createDirectories(prefix.resolve("logs"));
        Files.createDirectories(prefix.resolve("tmp"));
        Process p = new ProcessBuilder("nginx", "-p", prefix + "/", "-c", prefix.resolve("nginx.conf").toString(), "-g",
                "daemon off;").redirectErrorStream(true).redirectOutput(DIR.resolve(name + ".out").toFile()).start();
        int port = Integer.parseInt(listen.substring(listen.lastIndexOf(':') + 1));
        await(name + " listening").atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50)).until(() -> {
            assertThat(p.isAlive()).as(name + " exited: " + Files.readString(DIR.resolve(name + ".out"))).isTrue();
            try {
                new Socket(InetAddress.getLoopbackAddress(), port).close();
                return true;
            } catch (IOException e) {
                return false;
            }
        });
        return p;
    }

    /** The backend of nginx-capture: records one request's raw bytes (until 1 s of silence), answers 200, closes. */
    static void captureLoop() {
        while (!capture.isClosed()) {
            try (Socket s = capture.accept()) {
                s.setSoTimeout(1000);
                ByteArrayOutputStream raw = new ByteArrayOutputStream();
                InputStream in = s.getInputStream();
                byte[] buf = new byte[65536];
                try {
                    for (int n; (n = in.read(buf)) > 0; ) {
                        raw.write(buf, 0, n);
                    }
                } catch (SocketTimeoutException e) {
                    // the request is whole: NGINX keeps the connection open for the answer
                }
                captured.set(raw.toByteArray());
                s.getOutputStream().write("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                        .getBytes(StandardCharsets.US_ASCII));
            } catch (IOException e) {
                // closed at the end of the test
            }
        }
    }

    @AfterAll
    static void stop() throws Exception {
        for (Process p : new Process[] {nginx, nginxCapture}) {
            if (p != null) {
                p.destroy(); // SIGTERM: NGINX's fast shutdown
                p.waitFor(10, TimeUnit.SECONDS);
            }
        }
        if (capture != null) {
            capture.close();
        }
        for (RoleProcess r : ROLES) {
            r.close();
        }
    }

    /** Runs curl with {@code args}; returns what it printed. */
    static String curl(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("curl", "--max-time", "10"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
        assertThat(p.waitFor(20, TimeUnit.SECONDS)).isTrue();
        return out;
    }

    /** {@code curl -sI url} until its status line says 503 (the limiter decides from its first heartbeat on). */
    static String curlHeadUntilRefused(String url) {
        AtomicReference<String> refused = new AtomicReference<>();
        await("a 503 for HEAD " + url).atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100)).until(() -> {
            String out = curl("-sI", url);
            if (out.startsWith("HTTP/1.1 503")) {
                refused.set(out);
                return true;
            }
            return false;
        });
        return refused.get();
    }

    static Map<String, String> headers(String response) {
        Map<String, String> h = new LinkedHashMap<>();
        String[] lines = response.split("\r\n");
        for (int i = 1; i < lines.length && !lines[i].isEmpty(); i++) {
            int c = lines[i].indexOf(':');
            h.put(lines[i].substring(0, c).trim().toLowerCase(Locale.ROOT), lines[i].substring(c + 1).trim());
        }
        return h;
    }

    static void assertSlowDown(String response) {
        assertThat(response.lines().findFirst().orElse("")).as(response).isEqualTo("HTTP/1.1 503 Slow Down");
        Map<String, String> h = headers(response);
        assertThat(h).as(response).containsKeys("retry-after", "x-amz-retry-after", "ratelimit-policy", "ratelimit");
        long seconds = Long.parseLong(h.get("retry-after"));
        assertThat(seconds).isPositive();
        assertThat(h.get("x-amz-retry-after")).as("the same decision in milliseconds").isEqualTo(Long.toString(seconds * 1000));
        assertThat(h.get("ratelimit-policy")).isEqualTo("\"resource\";q=1;w=1");
        assertThat(h.get("ratelimit")).isEqualTo("\"resource\";r=0;t=" + seconds);
    }

    /** Sends a refused HEAD on a raw socket and reads to the close: nothing may follow the header section. */
    static String rawHeadUntilRefused(int port, String path) {
        AtomicReference<String> refused = new AtomicReference<>();
        await("a raw 503 for HEAD " + path).atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100)).until(() -> {
            try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
                s.setSoTimeout(5000);
                OutputStream out = s.getOutputStream();
                out.write(("HEAD " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\nConnection: close\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                out.flush();
                String answer = new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
                if (answer.startsWith("HTTP/1.1 503")) {
                    refused.set(answer);
                    return true;
                }
                return false;
            }
        });
        return refused.get();
    }

    @Test
    void curlSeesSlowDownThroughNginx() throws Exception {
        String url = "http://127.0.0.1:" + nginxPort + "/" + THROTTLED + "/k";
        assertSlowDown(curlHeadUntilRefused(url));
        String raw = rawHeadUntilRefused(nginxPort, "/" + THROTTLED + "/raw");
        assertSlowDown(raw);
        assertThat(raw).as("no body after a refused HEAD's header section").endsWith("\r\n\r\n");
        // GET carries the S3 error document with the same status line
        String get = curl("-s", "-i", url);
        if (get.startsWith("HTTP/1.1 503")) {
            assertSlowDown(get);
            assertThat(get).contains("<Code>SlowDown</Code>");
        }
    }

    /**
     * Leases and batches on by default (docs/decisions.md, "Leases and batches on by default"): {@code levee client}
     * typed with the limiter's {@code --quotas} and no lease flag, NGINX from {@code levee nginx-config --out} with no
     * batch flag, one bucket under its quota (10 000 req/s, burst 1 000) asked sequentially: once the bucket is hot,
     * NGINX admits its requests from batches, each access log line naming its batch ({@code lease=<id>/l1/<a>-<b>}),
     * and nothing is refused.
     */
    @Test
    void aHotBucketIsAdmittedFromBatchesWithTheDefaults() throws Exception {
        Path accessLog = DIR.resolve("nginx").resolve("logs").resolve("access.log");
        java.util.regex.Pattern batched = java.util.regex.Pattern.compile(
                "\"GET /hot/k[0-9]+ HTTP/1.1\" [0-9]+ .* lease=[0-9]+/l1/[0-9]+-[0-9]+ levee=accepted$");
        try (java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient()) {
            long end = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            int sent = 0;
            long fromBatches = 0;
            // bounded: at most 20 s or 20 000 requests, until 200 were admitted from batches
            while (sent < 20_000 && System.nanoTime() < end && fromBatches < 200) {
                for (int i = 0; i < 500; i++, sent++) {
                    java.net.http.HttpResponse<Void> r = http.send(java.net.http.HttpRequest.newBuilder(
                            java.net.URI.create("http://127.0.0.1:" + nginxPort + "/hot/k" + sent))
                            .timeout(Duration.ofSeconds(5)).build(), java.net.http.HttpResponse.BodyHandlers.discarding());
                    assertThat(r.statusCode()).as("request %d: the bucket is far below its quota", sent).isNotEqualTo(503);
                }
                try (var lines = Files.lines(accessLog)) {
                    fromBatches = lines.filter(l -> batched.matcher(l).find()).count();
                }
            }
            assertThat(fromBatches).as("requests admitted by NGINX from batches, of %d sent", sent)
                    .isGreaterThanOrEqualTo(200);
        }
    }

    @Test
    void curlSeesSlowDownThroughTheGateway() throws Exception {
        String url = "http://127.0.0.1:" + gatewayPort + "/" + THROTTLED + "/k";
        assertSlowDown(curlHeadUntilRefused(url));
        String raw = rawHeadUntilRefused(gatewayPort, "/" + THROTTLED + "/raw");
        assertSlowDown(raw);
        assertThat(raw).as("no body after a refused HEAD's header section").endsWith("\r\n\r\n");
    }

    /**
     * curl signs {@code transfer-encoding} with {@code -H 'Transfer-Encoding: chunked'}: the 6-byte body arrives with
     * the headers, NGINX reads it whole and used to forward it with {@code Content-Length: 6} and no Transfer-Encoding.
     */
    @Test
    void aSignedChunkedPutReachesTheBackendChunked() throws Exception {
        Path body = DIR.resolve("chunked-body.txt");
        Files.writeString(body, "hello\n");
        captured.set(null);
        String status = curl("-s", "-o", "/dev/null", "-w", "%{http_code}", "--aws-sigv4", "aws:amz:us-east-1:s3",
                "--user", "AKIACHUNKED:chunked-secret", "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-H",
                "Transfer-Encoding: chunked", "-X", "PUT", "--data-binary", "@" + body,
                "http://127.0.0.1:" + nginxCapturePort + "/chunked-bucket/small.txt");
        assertThat(status).isEqualTo("200");
        await("the capture").atMost(Duration.ofSeconds(10)).until(() -> captured.get() != null);
        String raw = new String(captured.get(), StandardCharsets.ISO_8859_1);
        int end = raw.indexOf("\r\n\r\n");
        assertThat(end).as(raw).isPositive();
        Map<String, String> h = headers(raw.substring(0, end + 2));
        assertThat(h.get("authorization")).contains("SignedHeaders=host;transfer-encoding;");
        assertThat(h.get("transfer-encoding")).as(raw).isEqualTo("chunked");
        assertThat(h).as(raw).doesNotContainKey("content-length");
        assertThat(raw.substring(0, raw.indexOf("\r\n"))).isEqualTo("PUT /chunked-bucket/small.txt HTTP/1.1");
        assertThat(raw.substring(end + 4)).as("the body, chunked").isEqualTo("6\r\nhello\n\r\n0\r\n\r\n");
    }
}
