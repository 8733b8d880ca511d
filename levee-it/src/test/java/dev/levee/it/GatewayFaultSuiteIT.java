package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import dev.levee.stack.EmbeddedS3;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.apache.ApacheHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3Configuration;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.presigner.S3Presigner;

/**
 * The gateway part of issue 10's fault suite: {@code levee gateway} as its own process, started from
 * the command line as an operator would ({@code --no-enforce --principals FILE}, governance on at
 * 1 MiB/s per principal and direction so that transfers take seconds), in front of S3Proxy in this JVM
 * (restartable on its port, so that the backend can be killed and brought back), with AWS SDK v2
 * clients (retries off, so every failure is seen) and raw sockets for slow and hostile clients. A steady
 * load of small GETs and PUTs by four principals runs while a probe breaks something on purpose.
 *
 * <p>Each probe adds a row to a {@link FaultTable} (probe, requests, errors, failovers — none here —,
 * time to recover) printed at the end and appended to {@code target/it-logs/faults/fault-suite.txt},
 * and asserts what an operator may expect: {@code 503 SlowDown} and a refused connection are answers,
 * not errors; an error is a request that failed otherwise (a 5xx other than the expected one, a
 * connection cut, a corrupt body). Thresholds that a starved CPU moves (the machine is shared) are
 * generous bounds, named where they are asserted. Every probe also reads the gateway's log (at DEBUG,
 * in {@code target/it-logs/faults/gateway/}): no line at ERROR and no stack trace.
 *
 * <p>Run: {@code ./mvnw -B -ntp -pl levee-it -am verify -Dit.test=GatewayFaultSuiteIT -Dtest=none
 * -Dsurefire.failIfNoSpecifiedTests=false} (about 50 s).
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class GatewayFaultSuiteIT {

    static final Path DIR = Path.of("target", "it-logs", "faults", "gateway").toAbsolutePath();
    static final String BUCKET = "faults";
    static final String TOKEN = "fault-suite-health-token-0123";
    static final long MiB = 1L << 20;
    static final Duration HEADER_TIMEOUT = Duration.ofSeconds(3);
    static final Duration BODY_TIMEOUT = Duration.ofSeconds(2);
    static final Duration CONTINUE_TIMEOUT = Duration.ofSeconds(1);
    static final Duration DRAIN_DEADLINE = Duration.ofSeconds(10);
    static final Duration SHORT_DEADLINE = Duration.ofSeconds(2);
    static final int LOAD_OBJECT_BYTES = 16 * 1024;

    /** Accounts, one key each: the probes' transfers, the load's four workers, slow and hostile clients. */
    static final List<String> ACCOUNTS = List.of("up1", "up2", "dn1", "dn2", "long1", "long2", "slow", "early",
            "hostile", "w1", "w2", "w3", "w4");

    static String key(String account) {
        return "AKIAFLT" + account.toUpperCase(Locale.ROOT);
    }

    static String secret(String account) {
        return "secret-of-" + account;
    }

    static final FaultTable TABLE = new FaultTable("Fault suite (issue 10): gateway, levee gateway as its own process"
            + " (governed, 1 MiB/s per principal and direction), S3Proxy, 4 SDK workers of small GETs/PUTs"
            + " unless the probe says otherwise");
    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    static final ObjectMapper JSON = new ObjectMapper();

    static EmbeddedS3 s3;
    static S3Client direct;
    static Path principals;
    static Path tokenFile;
    static Gateway main;
    static Gateway shortDeadline;
    static long baselineP50Ms;
    static byte[] loadObject;

    @BeforeAll
    @SuppressWarnings("try") // the load is stopped before its block ends, to see what follows
    static void start() throws Exception {
        Files.createDirectories(DIR);
        try (var old = Files.list(DIR)) { // the gateways' log files are appended to: start from empty ones
            for (Path f : old.filter(f -> f.toString().endsWith(".log") || f.toString().endsWith(".out")).toList()) {
                Files.delete(f);
            }
        }
        Logging.configure(new LogTarget("file", null, 0, DIR.resolve("test-jvm.log")), "levee-it", "WARN");
        s3 = startBackend();
        direct = client(URI.create("http://127.0.0.1:" + s3.port()), "w1");
        direct.createBucket(b -> b.bucket(BUCKET));
        loadObject = random(LOAD_OBJECT_BYTES, 1);
        direct.putObject(b -> b.bucket(BUCKET).key("load/obj"), RequestBody.fromBytes(loadObject));
        direct.putObject(b -> b.bucket(BUCKET).key("big/obj-3m"), RequestBody.fromBytes(random(3 << 20, 100)));
        direct.putObject(b -> b.bucket(BUCKET).key("big/obj-8m"), RequestBody.fromBytes(random(8 << 20, 200)));
        StringBuilder yaml = new StringBuilder("accounts:\n");
        for (String a : ACCOUNTS) {
            yaml.append("  ").append(a).append(":\n    keys: [").append(key(a)).append("]\n");
            if (a.equals("early")) {
                // no ceiling: S3Proxy reads a payload-signed body before it answers 404 (5 MB took 4.8 s at 1 MiB/s)
                yaml.append("    upload_rate: 0\n    download_rate: 0\n");
            }
        }
        principals = DIR.resolve("principals.yaml");
        Files.writeString(principals, yaml);
        tokenFile = DIR.resolve("health.token");
        Files.writeString(tokenFile, TOKEN + "\n");
        // both gateways start at once: two JVM starts in parallel cost less wall time than in a row
        main = new Gateway("gateway", DRAIN_DEADLINE);
        shortDeadline = new Gateway("gateway-deadline", SHORT_DEADLINE);
        main.awaitListening();
        shortDeadline.awaitListening();
        // warm the gateway's and the SDK's paths (JIT) and take the latency baseline of the load
        try (SdkLoad warm = SdkLoad.start(main.port)) {
            hold(Duration.ofSeconds(3));
            warm.close();
            baselineP50Ms = percentileMs(warm.samples().stream().filter(s -> s.outcome() == Outcome.OK).toList(), 50);
            assertThat(warm.errors()).as("the warm-up load").isEmpty();
        }
    }

    @AfterAll
    static void stop() {
        TABLE.print();
        for (Gateway g : new Gateway[] {main, shortDeadline}) {
            if (g != null) {
                g.process.close();
            }
        }
        if (direct != null) {
            direct.close();
        }
        if (s3 != null) {
            s3.close();
        }
    }

    /** Each probe starts from a running backend and gateway: what a failed probe left stopped is started again. */
    @BeforeEach
    void everythingRuns() {
        if (!s3.running()) {
            s3.restart();
        }
        if (!main.process.alive()) {
            main = new Gateway("gateway-restarted", DRAIN_DEADLINE);
            main.awaitListening();
        }
    }

    // ---------------------------------------------------------------- probes

    /** Probe 2: a transfer longer than --shutdown-deadline is cut at the deadline, and the process exits soon after. */
    @Test
    @Order(1)
    void transfersLongerThanTheShutdownDeadlineAreCutAtTheDeadline() throws Exception {
        Gateway g = shortDeadline;
        byte[] upload = random(8 << 20, 300);
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor();
             S3Client downloader = client(g.endpoint(), "long1"); S3Client uploader = client(g.endpoint(), "long2")) {
            AtomicLong received = new AtomicLong();
            AtomicLong cutAt = new AtomicLong();
            Future<String> download = pool.submit(() -> {
                try (ResponseInputStream<GetObjectResponse> in = downloader.getObject(b -> b.bucket(BUCKET).key("big/obj-8m"))) {
                    byte[] buf = new byte[64 * 1024];
                    for (int r; (r = in.read(buf)) > 0; ) {
                        received.addAndGet(r);
                    }
                    cutAt.set(System.nanoTime());
                    return "ended after " + received.get() + " bytes";
                } catch (IOException | SdkClientException e) {
                    cutAt.set(System.nanoTime());
                    return "cut after " + received.get() + " bytes: " + e.getClass().getSimpleName();
                }
            });
            Future<String> put = pool.submit(() -> {
                try {
                    uploader.putObject(b -> b.bucket(BUCKET).key("long/cut-upload"), RequestBody.fromBytes(upload));
                    return "completed";
                } catch (SdkClientException | S3Exception e) {
                    return "cut: " + e.getClass().getSimpleName();
                }
            });
            await("both transfers in flight").atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(20))
                    .until(() -> g.ready().at("/governance/bandwidth/download/openStreams").asInt() == 1
                            && g.ready().at("/governance/bandwidth/upload/openStreams").asInt() == 1
                            && received.get() > 0);
            hold(Duration.ofMillis(500));
            long term = System.nanoTime();
            g.process.signal("TERM");
            String downloadResult = download.get(20, TimeUnit.SECONDS);
            String putResult = put.get(20, TimeUnit.SECONDS);
            int status = g.process.awaitExit(SHORT_DEADLINE.plusSeconds(15));
            long exited = System.nanoTime();
            long cutMs = ms(cutAt.get() - term);
            long exitMs = ms(exited - term);
            boolean stored = exists("long/cut-upload");
            long errors = (downloadResult.startsWith("cut") ? 0 : 1) + (putResult.startsWith("cut") ? 0 : 1) + (stored ? 1 : 0);
            TABLE.row("SIGTERM, 8 MiB transfers > --shutdown-deadline 2s", 2, errors, -1, exitMs, String.format(Locale.ROOT,
                    "download %s at +%d ms, upload %s (stored: %s); exit %d at +%d ms", downloadResult, cutMs, putResult,
                    stored, status, exitMs));
            assertThat(downloadResult).as("the 8 s download").startsWith("cut");
            assertThat(received.get()).as("bytes received of 8 MiB").isLessThan(8 * MiB);
            assertThat(putResult).as("the 8 s upload").startsWith("cut");
            assertThat(stored).as("a cut upload stores nothing").isFalse();
            // cut at the deadline: not before it, and soon after (generous on a shared 2-core machine)
            assertThat(cutMs).as("ms from SIGTERM to the cut").isBetween(SHORT_DEADLINE.toMillis() - 100,
                    SHORT_DEADLINE.toMillis() + 1500);
            assertThat(exitMs).as("ms from SIGTERM to the exit").isLessThan(SHORT_DEADLINE.toMillis() + 3000);
            assertNoErrorInLog(g);
        }
    }

    /** Probe 3a: a client that sends its body at 1 byte/s frees its principal's only upload slot within the body deadline. */
    @Test
    @Order(2)
    void aOneBytePerSecondUploadFreesThePrincipalsOnlySlotWithinTheBodyDeadline() throws Exception {
        long bodyTimeoutsBefore = main.ready().at("/clientFaults/requestBodyTimeouts").asLong();
        URL url = presignPut(main.endpoint(), "slow", "slow/dribbled");
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor(); S3Client next = client(main.endpoint(), "slow");
             Socket s = new Socket(InetAddress.getLoopbackAddress(), main.port)) {
            s.setSoTimeout(15_000);
            OutputStream out = s.getOutputStream();
            out.write(("PUT " + url.getFile() + " HTTP/1.1\r\nHost: 127.0.0.1:" + main.port + "\r\nContent-Length: 1000\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            long started = System.nanoTime();
            AtomicBoolean answered = new AtomicBoolean();
            pool.submit(() -> {
                for (int i = 0; i < 30 && !answered.get(); i++) {
                    out.write('x');
                    out.flush();
                    LockSupport.parkNanos(TimeUnit.SECONDS.toNanos(1));
                }
                return null;
            });
            await("the dribbled upload holds the slot").atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(20))
                    .until(() -> main.ready().at("/governance/admission/mutatingUpload/inFlight").asInt() == 1);
            long queued = System.nanoTime();
            Future<?> second = pool.submit(() -> next.putObject(b -> b.bucket(BUCKET).key("slow/next"),
                    RequestBody.fromBytes(random(64 * 1024, 5))));
            String answer = readHead(s.getInputStream());
            long slowAnswered = System.nanoTime();
            answered.set(true);
            String secondResult = "completed";
            try {
                second.get(20, TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                secondResult = e.getCause().toString();
            }
            long done = System.nanoTime();
            long freedMs = ms(slowAnswered - started);
            long nextMs = ms(done - queued);
            TABLE.row("slow client: body at 1 byte/s, 1 upload slot", 2, secondResult.equals("completed") ? 0 : 1, -1,
                    freedMs, String.format(Locale.ROOT, "dribbler answered '%s' at +%d ms (--request-body-timeout %ds);"
                            + " the principal's next PUT waited and completed in %d ms", statusLine(answer), freedMs,
                            BODY_TIMEOUT.toSeconds(), nextMs));
            assertThat(answer).as("the dribbler's answer").startsWith("HTTP/1.1 400").contains("RequestTimeout");
            assertThat(secondResult).as("the principal's next upload").isEqualTo("completed");
            // the body deadline counts only reading time; the backend's 100 Continue comes first (at most
            // --backend-continue-timeout), then 2 s without progress; generous margin for a starved CPU
            assertThat(freedMs).as("ms until the slot is freed").isBetween(BODY_TIMEOUT.toMillis() - 100,
                    BODY_TIMEOUT.toMillis() + CONTINUE_TIMEOUT.toMillis() + 2000);
            assertThat(main.ready().at("/clientFaults/requestBodyTimeouts").asLong()).isEqualTo(bodyTimeoutsBefore + 1);
            assertThat(exists("slow/dribbled")).as("the dribbled body stores nothing").isFalse();
            assertThat(exists("slow/next")).isTrue();
        }
    }

    /** Probe 3b: 200 slowloris connections are closed by the header timeout; SDK traffic goes on meanwhile. */
    @Test
    @Order(3)
    @SuppressWarnings("try") // the load is stopped before its block ends, to see what follows
    void twoHundredSlowlorisConnectionsAreClosedByTheHeaderTimeoutWhileSdkTrafficFlows() throws Exception {
        int n = 200;
        long headerTimeoutsBefore = main.ready().at("/clientFaults/requestHeaderTimeouts").asLong();
        List<Long> closedAfterMs = java.util.Collections.synchronizedList(new ArrayList<>());
        List<String> notClosed = java.util.Collections.synchronizedList(new ArrayList<>());
        try (SdkLoad load = SdkLoad.start(main.port); ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            hold(Duration.ofMillis(500));
            long fault = System.nanoTime();
            List<Future<?>> lorises = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int id = i;
                lorises.add(pool.submit(() -> slowloris(id, closedAfterMs, notClosed)));
            }
            for (Future<?> f : lorises) {
                f.get(HEADER_TIMEOUT.toSeconds() + 20, TimeUnit.SECONDS);
            }
            long allClosed = System.nanoTime();
            hold(Duration.ofMillis(500));
            load.close();
            List<Sample> ok = load.samples().stream().filter(s -> s.outcome() == Outcome.OK).toList();
            long p50 = percentileMs(ok, 50);
            long max = percentileMs(ok, 100);
            long minClose = closedAfterMs.stream().mapToLong(Long::longValue).min().orElse(-1);
            long maxClose = closedAfterMs.stream().mapToLong(Long::longValue).max().orElse(-1);
            List<Sample> errors = load.errors();
            TABLE.row("slowloris: 200 connections dribbling a head", load.samples().size(), errors.size(), -1,
                    ms(allClosed - fault), String.format(Locale.ROOT, "%d of %d closed by the gateway %d..%d ms after"
                            + " connecting (--request-header-timeout %ds); SDK latency p50 %d ms (baseline %d ms), max %d ms",
                            closedAfterMs.size(), n, minClose, maxClose, HEADER_TIMEOUT.toSeconds(), p50, baselineP50Ms, max));
            details(errors);
            notClosed.stream().limit(3).forEach(t -> TABLE.detail("not closed: " + t));
            assertThat(errors).as("SDK requests that failed during the slowloris").isEmpty();
            assertThat(closedAfterMs).as("slowloris connections closed by the gateway").hasSize(n);
            // dribbled header lines do not extend the deadline: it counts from the accept
            assertThat(minClose).as("earliest close, ms").isGreaterThanOrEqualTo(HEADER_TIMEOUT.toMillis() - 100);
            assertThat(maxClose).as("latest close, ms (generous on a shared CPU)").isLessThan(HEADER_TIMEOUT.toMillis() + 3000);
            // latency stays bounded: a generous absolute bound, as the machine is shared (CPU starvation moves it)
            assertThat(max).as("slowest SDK request, ms").isLessThan(3000);
            assertThat(p50).as("median SDK latency, ms").isLessThan(Math.max(250, 10 * baselineP50Ms));
            assertThat(main.ready().at("/clientFaults/requestHeaderTimeouts").asLong() - headerTimeoutsBefore)
                    .as("header timeouts counted").isGreaterThanOrEqualTo(n);
        }
    }

    /** One slowloris connection: a partial head, one more header line every 500 ms, until the gateway closes it. */
    static Void slowloris(int id, List<Long> closedAfterMs, List<String> notClosed) {
        long t0 = System.nanoTime();
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), main.port)) {
            t0 = System.nanoTime();
            s.setSoTimeout(500);
            OutputStream out = s.getOutputStream();
            InputStream in = s.getInputStream();
            out.write(("GET /" + BUCKET + "/load/obj HTTP/1.1\r\nHost: 127.0.0.1\r\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            long end = t0 + HEADER_TIMEOUT.toNanos() + TimeUnit.SECONDS.toNanos(10);
            for (int line = 0; System.nanoTime() < end; line++) {
                try {
                    if (in.read() < 0) {
                        closedAfterMs.add(ms(System.nanoTime() - t0));
                        return null;
                    }
                } catch (SocketTimeoutException e) {
                    out.write(("X-Loris-" + line + ": " + id + "\r\n").getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                }
            }
            notClosed.add("connection " + id + " still open after " + ms(System.nanoTime() - t0) + " ms");
        } catch (IOException e) {
            closedAfterMs.add(ms(System.nanoTime() - t0)); // reset by the gateway's close (a write crossed it)
        }
        return null;
    }

    /** Probe 4: the backend is killed under load; clean 502 BadGateway meanwhile, recovery when it is back. */
    @Test
    @Order(4)
    @SuppressWarnings("try") // the load is stopped before its block ends, to see what follows
    void backendKilledUnderLoadGivesCleanBadGatewayAndRecovers() throws Exception {
        try (SdkLoad load = SdkLoad.start(main.port)) {
            hold(Duration.ofSeconds(1));
            long kill = System.nanoTime();
            long killLoad = load.elapsedNs();
            s3.kill();
            long killed = System.nanoTime();
            hold(Duration.ofSeconds(2));
            long restart = System.nanoTime();
            long restartLoad = load.elapsedNs();
            s3.restart();
            long back = System.nanoTime();
            long firstOk = awaitOk(load, restartLoad, Duration.ofSeconds(20));
            hold(Duration.ofMillis(1500));
            load.close();
            List<Sample> samples = load.samples();
            long badGateway = samples.stream().filter(s -> s.outcome() == Outcome.BAD_GATEWAY).count();
            // requests in flight at the kill may be cut (a download whose status line is out can only be closed)
            long inFlight = TimeUnit.MILLISECONDS.toNanos(300);
            List<Sample> errors = samples.stream().filter(s -> s.outcome() != Outcome.OK && s.outcome() != Outcome.BAD_GATEWAY)
                    .filter(s -> s.sentNs() + s.latencyNs() < killLoad || s.sentNs() > killLoad + inFlight).toList();
            long cutInFlight = samples.stream().filter(s -> s.outcome() != Outcome.OK && s.outcome() != Outcome.BAD_GATEWAY)
                    .count() - errors.size();
            long lastFailure = samples.stream().filter(s -> s.outcome() != Outcome.OK).mapToLong(s -> s.sentNs() + s.latencyNs())
                    .max().orElse(restartLoad);
            long recoverMs = Math.max(firstOk, ms(lastFailure - restartLoad));
            long afterRecovery = samples.stream().filter(s -> s.outcome() != Outcome.OK)
                    .filter(s -> s.sentNs() > restartLoad + TimeUnit.MILLISECONDS.toNanos(firstOk)).count();
            TABLE.row("backend (S3Proxy) killed 2 s under load", samples.size(), errors.size(), -1, recoverMs,
                    String.format(Locale.ROOT, "%d x 502 BadGateway, %d cut in flight at the kill; S3Proxy stop took %d ms,"
                                    + " start %d ms; first success %d ms after it was back, %s",
                            badGateway, cutInFlight, ms(killed - kill), ms(back - restart), firstOk,
                            lastFailure > restartLoad ? "last failure at +" + ms(lastFailure - restartLoad) + " ms"
                                    : "no failure after it was back"));
            details(errors);
            assertThat(errors).as("failures other than 502 BadGateway, beyond the requests in flight at the kill").isEmpty();
            assertThat(badGateway).as("502 BadGateway answers while the backend was down").isPositive();
            assertThat(afterRecovery).as("failures after the first success on the restarted backend").isZero();
            assertThat(recoverMs).as("ms from the backend's return to recovery").isLessThan(5000);
            assertNoErrorInLog(main);
        }
    }

    /** Probe 5: 5 MB PUTs to a missing bucket get the backend's early 404, relayed. */
    @Test
    @Order(5)
    void fiveMegabytePutsToAMissingBucketGetTheBackendsEarly404() throws Exception {
        byte[] body = random(5_000_000, 21);
        List<Integer> signed;
        List<Integer> chunked;
        try (S3Client payloadSigned = signedPayloadClient(main.endpoint(), "early");
             S3Client streaming = client(main.endpoint(), "early")) {
            long t0 = System.nanoTime();
            signed = putsToAMissingBucket(payloadSigned, body, 6);
            long signedMs = ms(System.nanoTime() - t0);
            chunked = putsToAMissingBucket(streaming, body, 6);
            long relayed = chunked.stream().filter(c -> c == 404).count();
            TABLE.row("5 MB PUTs to a missing bucket (early answer)", 12, signed.stream().filter(c -> c != 404).count()
                            + chunked.stream().filter(c -> c != 404).count(), -1,
                    0, String.format(Locale.ROOT, "payload-signed %s in %d ms; aws-chunked %s: %d/6 relayed 404 (S3Proxy"
                            + " resets after it)", signed, signedMs, chunked, relayed));
        }
        assertThat(signed).as("payload-signed PUTs: the backend's 404 NoSuchBucket, relayed").containsOnly(404);
        assertThat(chunked).as("aws-chunked PUTs: the backend's 404, relayed although S3Proxy resets after it (issue 22,"
                + " item 5)").containsOnly(404);
        main.awaitIdle();
        assertNoErrorInLog(main);
    }

    /** Probe 6: garbage heads, bad chunked bodies, oversized heads and resets under load. */
    @Test
    @Order(6)
    @SuppressWarnings("try") // the load is stopped before its block ends, to see what follows
    void hostileInputUnderLoadLeavesNoErrorAndNoTrace() throws Exception {
        JsonNode before = main.ready().at("/clientFaults");
        URL put = presignPut(main.endpoint(), "hostile", "hostile/put");
        URL get = presignGet(main.endpoint(), "hostile", "big/obj-3m");
        Map<String, AtomicLong> sent = new LinkedHashMap<>();
        for (String k : List.of("garbage head", "oversized head", "bad chunked body", "reset mid-body", "reset mid-download")) {
            sent.put(k, new AtomicLong());
        }
        List<String> unexpected = java.util.Collections.synchronizedList(new ArrayList<>());
        try (SdkLoad load = SdkLoad.start(main.port); ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            hold(Duration.ofMillis(500));
            long t0 = System.nanoTime();
            long end = t0 + TimeUnit.SECONDS.toNanos(6);
            Random rnd = new Random(6);
            List<Future<?>> hostile = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                int thread = t;
                hostile.add(pool.submit(() -> {
                    for (int i = 0; i < 60 && System.nanoTime() < end; i++) {
                        String kind = new ArrayList<>(sent.keySet()).get((i + thread) % sent.size());
                        sent.get(kind).incrementAndGet();
                        try {
                            hostileRequest(kind, put, get, rnd, unexpected);
                        } catch (IOException e) {
                            // the gateway closed or reset a hostile connection: what it should do
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : hostile) {
                f.get(30, TimeUnit.SECONDS);
            }
            long took = System.nanoTime() - t0;
            hold(Duration.ofMillis(500));
            load.close();
            main.awaitIdle();
            JsonNode after = main.ready().at("/clientFaults");
            long malformed = after.get("malformedRequests").asLong() - before.get("malformedRequests").asLong();
            long clientErrors = after.get("clientErrors").asLong() - before.get("clientErrors").asLong();
            long total = sent.values().stream().mapToLong(AtomicLong::get).sum();
            List<Sample> errors = load.errors();
            TABLE.row("hostile input under load (" + total + " connections)", load.samples().size(), errors.size(), -1,
                    0, String.format(Locale.ROOT, "%s in %d ms; counters: malformed +%d, client errors +%d; SDK p50 %d ms",
                            sent, ms(took), malformed, clientErrors,
                            percentileMs(load.samples().stream().filter(s -> s.outcome() == Outcome.OK).toList(), 50)));
            details(errors);
            unexpected.stream().limit(5).forEach(u -> TABLE.detail("unexpected answer: " + u));
            assertThat(errors).as("SDK requests that failed during the hostile input").isEmpty();
            assertThat(unexpected).as("hostile requests answered other than 4xx or a close").isEmpty();
            assertThat(malformed).as("malformed requests counted").isGreaterThanOrEqualTo(sent.get("garbage head").get());
            assertThat(clientErrors).as("client errors (resets, bad framing) counted").isPositive();
            assertNoErrorInLog(main);
        }
    }

    /** One hostile request on a connection of its own. */
    static void hostileRequest(String kind, URL put, URL get, Random rnd, List<String> unexpected) throws IOException {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), main.port)) {
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            String host = "Host: 127.0.0.1:" + main.port + "\r\n";
            switch (kind) {
                case "garbage head" -> {
                    byte[] junk = new byte[200];
                    rnd.nextBytes(junk);
                    junk[0] = 'Z';
                    out.write(junk);
                    out.write("\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                    expect4xxOrClose(s, kind, unexpected);
                }
                case "oversized head" -> {
                    out.write(("GET /" + BUCKET + "/load/obj HTTP/1.1\r\n" + host + "X-Big: " + "a".repeat(70 * 1024)
                            + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                    expect4xxOrClose(s, kind, unexpected);
                }
                case "bad chunked body" -> {
                    out.write(("PUT " + put.getFile() + " HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n"
                            + "zz-not-hex\r\nhello\r\n0\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                    expect4xxOrClose(s, kind, unexpected);
                }
                case "reset mid-body" -> {
                    out.write(("PUT " + put.getFile() + " HTTP/1.1\r\n" + host + "Content-Length: 1048576\r\n\r\n")
                            .getBytes(StandardCharsets.US_ASCII));
                    out.write(new byte[32 * 1024]);
                    out.flush();
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
                    s.setSoLinger(true, 0); // close with RST
                }
                case "reset mid-download" -> {
                    out.write(("GET " + get.getFile() + " HTTP/1.1\r\n" + host + "\r\n").getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                    InputStream in = s.getInputStream();
                    byte[] buf = new byte[16 * 1024];
                    int r = in.read(buf);
                    String head = r > 0 ? new String(buf, 0, Math.min(r, 12), StandardCharsets.US_ASCII) : "";
                    if (!head.startsWith("HTTP/1.1 200")) {
                        unexpected.add(kind + ": " + head);
                    }
                    s.setSoLinger(true, 0);
                }
                default -> throw new IllegalArgumentException(kind);
            }
        }
    }

    static void expect4xxOrClose(Socket s, String kind, List<String> unexpected) throws IOException {
        s.getOutputStream().flush();
        String head = readHead(s.getInputStream());
        if (!head.isEmpty() && !head.matches("(?s)HTTP/1\\.[01] 4.*")) {
            unexpected.add(kind + ": " + statusLine(head));
        }
    }

    /** Probe 1: SIGTERM under load with governed transfers in flight and one queued. */
    @Test
    @Order(7)
    void sigtermUnderLoadCompletesInFlightTransfersAndRefusesNewRequests() throws Exception {
        Gateway g = main;
        byte[] stored = random(3 << 20, 100);
        byte[] up1 = random(3 << 20, 101);
        byte[] up2 = random(3 << 20, 102);
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor();
             S3Client u1 = client(g.endpoint(), "up1"); S3Client u2 = client(g.endpoint(), "up2");
             S3Client d1 = client(g.endpoint(), "dn1"); S3Client d2 = client(g.endpoint(), "dn2");
             S3Client q = client(g.endpoint(), "up1")) {
            Map<String, Future<String>> transfers = new LinkedHashMap<>();
            Map<String, AtomicLong> ended = new LinkedHashMap<>();
            for (String k : List.of("put up1", "put up2", "get dn1", "get dn2")) {
                ended.put(k, new AtomicLong());
            }
            transfers.put("put up1", pool.submit(() -> put(u1, "term/up1", up1, ended.get("put up1"))));
            transfers.put("put up2", pool.submit(() -> put(u2, "term/up2", up2, ended.get("put up2"))));
            transfers.put("get dn1", pool.submit(() -> get(d1, "big/obj-3m", ended.get("get dn1"))));
            transfers.put("get dn2", pool.submit(() -> get(d2, "big/obj-3m", ended.get("get dn2"))));
            await("4 transfers in flight").atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(20)).until(() -> {
                JsonNode r = g.ready();
                return r.at("/governance/bandwidth/upload/openStreams").asInt() == 2
                        && r.at("/governance/bandwidth/download/openStreams").asInt() == 2;
            });
            SdkLoad load = SdkLoad.start(g.port); // after the count above: its own transfers open streams too
            try {
                Future<String> queued = pool.submit(() -> put(q, "term/queued", up1, new AtomicLong()));
                await("1 upload queued").atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(20))
                        .until(() -> g.ready().at("/governance/admission/mutatingUpload/waiting").asInt() == 1);
                hold(Duration.ofMillis(500));
                long termLoad = load.elapsedNs();
                long term = System.nanoTime();
                g.process.signal("TERM");
                String queuedResult = queued.get(10, TimeUnit.SECONDS);
                long queuedMs = ms(System.nanoTime() - term);
                Map<String, String> results = new LinkedHashMap<>();
                for (var e : transfers.entrySet()) {
                    results.put(e.getKey(), e.getValue().get(DRAIN_DEADLINE.toSeconds() + 10, TimeUnit.SECONDS));
                }
                int status = g.process.awaitExit(DRAIN_DEADLINE.plusSeconds(10));
                long exited = System.nanoTime();
                hold(Duration.ofMillis(300)); // the load sees the closed port too
                load.close();
                long lastTransfer = ended.values().stream().mapToLong(AtomicLong::get).max().orElse(term);
                // in-flight transfers: byte-identical; the uploads stored whole, the queued one not at all
                Map<String, String> expected = Map.of("put up1", sha256(up1), "put up2", sha256(up2),
                        "get dn1", sha256(stored), "get dn2", sha256(stored));
                long cut = results.entrySet().stream().filter(e -> !e.getValue().equals(expected.get(e.getKey()))).count();
                boolean up1Stored = storedSha("term/up1").equals(sha256(up1));
                boolean up2Stored = storedSha("term/up2").equals(sha256(up2));
                boolean queuedStored = exists("term/queued");
                // the load: before the signal everything succeeds; after it, refusals are answers, not errors
                List<Sample> samples = load.samples();
                List<Sample> after = samples.stream().filter(s -> s.sentNs() + s.latencyNs() > termLoad).toList();
                long slowDown = after.stream().filter(s -> s.outcome() == Outcome.SLOW_DOWN).count();
                long refused = after.stream().filter(s -> s.outcome() == Outcome.REFUSED).count();
                long okInFlight = after.stream().filter(s -> s.outcome() == Outcome.OK && s.sentNs() <= termLoad).count();
                long okSentAfter = after.stream().filter(s -> s.outcome() == Outcome.OK && s.sentNs() > termLoad).count();
                // the JVM needs a moment to run its shutdown hook: requests sent 1 s after the signal are all refused
                List<Sample> servedLate = after.stream().filter(s -> s.sentNs() > termLoad + TimeUnit.SECONDS.toNanos(1))
                        .filter(s -> s.outcome() != Outcome.SLOW_DOWN && s.outcome() != Outcome.REFUSED).toList();
                // a request the client sent on a keep-alive connection as the drain closed it (idle): it got no
                // answer; not in flight at the gateway, so neither a cut transfer nor a 5xx (an SDK with retries
                // retries it); at most one per load connection, and only at the signal
                long graceNs = TimeUnit.SECONDS.toNanos(1);
                List<Sample> idleResets = after.stream().filter(s -> s.outcome() == Outcome.RESET)
                        .filter(s -> s.sentNs() < termLoad + graceNs).toList();
                List<Sample> loadErrors = samples.stream().filter(s -> s.outcome() != Outcome.OK && s.outcome() != Outcome.SLOW_DOWN
                        && s.outcome() != Outcome.REFUSED).filter(s -> !idleResets.contains(s)).toList();
                long errors = cut + loadErrors.size() + (queuedResult.startsWith("503 SlowDown") ? 0 : 1);
                long exitMs = ms(exited - term);
                TABLE.row("SIGTERM under load: 2 PUTs + 2 GETs of 3 MiB, 1 queued", samples.size() + 5, errors, -1, exitMs,
                        String.format(Locale.ROOT, "transfers byte-identical %d/4 (last done at +%d ms), uploads stored %s/%s;"
                                        + " queued PUT '%s' at +%d ms (stored: %s); after the signal %d x 503 SlowDown, %d refused,"
                                        + " %d ok (%d in flight at it, %d sent before the hook ran), %d reset on idle keep-alive closed by"
                                        + " the drain; exit %d at +%d ms (deadline %d s)",
                                4 - cut, ms(lastTransfer - term), up1Stored, up2Stored, queuedResult, queuedMs, queuedStored,
                                slowDown, refused, okInFlight + okSentAfter, okInFlight, okSentAfter, idleResets.size(), status,
                                exitMs, DRAIN_DEADLINE.toSeconds()));
                idleResets.forEach(s -> TABLE.detail("reset at +" + ms(s.sentNs() - termLoad) + " ms after the signal: "
                        + s.detail()));
                details(loadErrors);
                results.forEach((k, v) -> {
                    if (!v.equals(expected.get(k))) {
                        TABLE.detail(k + ": " + v);
                    }
                });
                assertThat(results).as("in-flight transfers complete byte-identical (SHA-256)").isEqualTo(expected);
                assertThat(up1Stored && up2Stored).as("the in-flight uploads are stored whole").isTrue();
                assertThat(queuedResult).as("the queued upload is refused at once").startsWith("503 SlowDown");
                assertThat(queuedStored).as("the refused upload stores nothing").isFalse();
                assertThat(loadErrors).as("load requests that failed other than 503 SlowDown or a refused connection").isEmpty();
                assertThat(slowDown + refused).as("new requests after the signal are refused").isPositive();
                assertThat(servedLate).as("requests sent more than 1 s after the signal and not refused").isEmpty();
                assertThat(idleResets.size()).as("resets of idle keep-alive connections: at most one per load worker")
                        .isLessThanOrEqualTo(4);
                assertThat(exitMs).as("ms from SIGTERM to the exit (the deadline)").isLessThan(DRAIN_DEADLINE.toMillis());
                assertNoErrorInLog(g);
            } finally {
                load.close();
            }
        }
    }

    // ---------------------------------------------------------------- transfers

    static String put(S3Client c, String key, byte[] body, AtomicLong endedNs) {
        try {
            c.putObject(b -> b.bucket(BUCKET).key(key), RequestBody.fromBytes(body));
            endedNs.set(System.nanoTime());
            return sha256(body);
        } catch (S3Exception e) {
            endedNs.set(System.nanoTime());
            return e.statusCode() + " " + e.awsErrorDetails().errorCode();
        } catch (SdkClientException e) {
            endedNs.set(System.nanoTime());
            return "cut: " + e.getMessage();
        }
    }

    static String get(S3Client c, String key, AtomicLong endedNs) {
        try {
            byte[] b = c.getObjectAsBytes(r -> r.bucket(BUCKET).key(key)).asByteArray();
            endedNs.set(System.nanoTime());
            return sha256(b);
        } catch (S3Exception e) {
            endedNs.set(System.nanoTime());
            return e.statusCode() + " " + e.awsErrorDetails().errorCode();
        } catch (SdkClientException e) {
            endedNs.set(System.nanoTime());
            return "cut: " + e.getMessage();
        }
    }

    static List<Integer> putsToAMissingBucket(S3Client c, byte[] body, int tries) {
        List<Integer> codes = new ArrayList<>();
        for (int i = 0; i < tries; i++) {
            int n = i;
            try {
                c.putObject(b -> b.bucket("no-such-bucket").key("k-" + n), RequestBody.fromBytes(body));
                codes.add(200);
            } catch (S3Exception e) {
                codes.add(e.statusCode());
                if (e.statusCode() == 404) {
                    assertThat(e.awsErrorDetails().errorCode()).isEqualTo("NoSuchBucket");
                }
            } catch (SdkClientException e) {
                codes.add(-1); // an I/O failure: the backend's reset reached the client
            }
        }
        return codes;
    }

    /** The SHA-256 of what the backend stores under {@code key}, or "" when nothing. */
    static String storedSha(String key) {
        return exists(key) ? sha256(direct.getObjectAsBytes(b -> b.bucket(BUCKET).key(key)).asByteArray()) : "";
    }

    static boolean exists(String key) {
        try {
            direct.headObject(b -> b.bucket(BUCKET).key(key));
            return true;
        } catch (S3Exception e) {
            if (e.statusCode() == 404) {
                return false;
            }
            throw e;
        }
    }

    // ---------------------------------------------------------------- load

    /**
     * What one request of the load got. RESET: the connection failed under a request that got no
     * answer (reset, broken pipe, no response); REFUSED: no connection at all.
     */
    enum Outcome { OK, SLOW_DOWN, BAD_GATEWAY, REFUSED, RESET, OTHER_STATUS, IO_ERROR, CORRUPT }

    /** One request of the load: ns since the load started, latency, outcome. */
    record Sample(long sentNs, long latencyNs, Outcome outcome, String detail) {
    }

    /**
     * The steady load: four workers, each a principal of its own with its own SDK client, alternating a
     * GET of a 16 KiB object (checked byte for byte) and a PUT of 16 KiB, 20 ms apart. The clients drop
     * connections idle for more than 1 s, below the gateway's header timeout (its keep-alive limit), so a
     * request never goes out on a connection the gateway is closing as idle.
     */
    static final class SdkLoad implements AutoCloseable {
        final long start = System.nanoTime();
        final AtomicBoolean running = new AtomicBoolean(true);
        final ConcurrentLinkedQueue<Sample> samples = new ConcurrentLinkedQueue<>();
        final List<Thread> threads = new ArrayList<>();
        final List<S3Client> clients = new ArrayList<>();

        static SdkLoad start(int port) {
            SdkLoad load = new SdkLoad();
            for (int w = 1; w <= 4; w++) {
                S3Client c = client(URI.create("http://127.0.0.1:" + port), "w" + w);
                load.clients.add(c);
                int worker = w;
                load.threads.add(Thread.ofVirtual().name("sdk-load-" + w).start(() -> load.run(c, worker)));
            }
            return load;
        }

        void run(S3Client c, int worker) {
            byte[] body = random(LOAD_OBJECT_BYTES, 1000 + worker);
            for (long n = 0; running.get() && n < 100_000; n++) {
                long t0 = System.nanoTime();
                Outcome o = Outcome.OK;
                String detail = "";
                boolean isGet = n % 2 == 0;
                try {
                    if (isGet) {
                        byte[] b = c.getObjectAsBytes(r -> r.bucket(BUCKET).key("load/obj")).asByteArray();
                        if (!java.util.Arrays.equals(b, loadObject)) {
                            o = Outcome.CORRUPT;
                            detail = "GET returned " + b.length + " bytes that differ";
                        }
                    } else {
                        long k = n;
                        c.putObject(r -> r.bucket(BUCKET).key("load/w" + worker + "-" + (k % 4)), RequestBody.fromBytes(body));
                    }
                } catch (S3Exception e) {
                    String code = e.awsErrorDetails() == null ? "" : e.awsErrorDetails().errorCode();
                    o = e.statusCode() == 503 && "SlowDown".equals(code) ? Outcome.SLOW_DOWN
                            : e.statusCode() == 502 && "BadGateway".equals(code) ? Outcome.BAD_GATEWAY : Outcome.OTHER_STATUS;
                    detail = e.statusCode() + " " + code;
                } catch (SdkClientException e) {
                    o = causedBy(e, ConnectException.class) ? Outcome.REFUSED
                            : causedBy(e, java.net.SocketException.class) || causedBy(e, org.apache.http.NoHttpResponseException.class)
                            ? Outcome.RESET : Outcome.IO_ERROR;
                    detail = e.getMessage();
                } catch (RuntimeException e) {
                    o = Outcome.IO_ERROR;
                    detail = e.toString();
                }
                long t1 = System.nanoTime();
                samples.add(new Sample(t0 - start, t1 - t0, o, (isGet ? "GET " : "PUT ") + detail));
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(o == Outcome.OK ? 20 : 50));
            }
        }

        long elapsedNs() {
            return System.nanoTime() - start;
        }

        List<Sample> samples() {
            return new ArrayList<>(samples);
        }

        /** Samples that are not OK (each probe says which of them it expects). */
        List<Sample> errors() {
            return samples().stream().filter(s -> s.outcome() != Outcome.OK).toList();
        }

        @Override
        public void close() {
            if (!running.getAndSet(false)) {
                return;
            }
            for (Thread t : threads) {
                try {
                    t.join(Duration.ofSeconds(30));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            clients.forEach(S3Client::close);
        }
    }

    static boolean causedBy(Throwable t, Class<? extends Throwable> type) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (type.isInstance(c)) {
                return true;
            }
        }
        return false;
    }

    /** Waits for the first OK sample sent after {@code fromNs} (load time); returns ms from {@code fromNs} to it. */
    static long awaitOk(SdkLoad load, long fromNs, Duration timeout) {
        await("a request succeeds again").atMost(timeout).pollInterval(Duration.ofMillis(20))
                .until(() -> load.samples.stream().anyMatch(s -> s.sentNs() >= fromNs && s.outcome() == Outcome.OK));
        return load.samples().stream().filter(s -> s.sentNs() >= fromNs && s.outcome() == Outcome.OK)
                .mapToLong(s -> ms(s.sentNs() + s.latencyNs() - fromNs)).min().orElseThrow();
    }

    static long percentileMs(Collection<Sample> ok, int p) {
        if (ok.isEmpty()) {
            return -1;
        }
        long[] l = ok.stream().mapToLong(Sample::latencyNs).sorted().toArray();
        return ms(l[Math.max(0, (int) Math.ceil(p / 100.0 * l.length) - 1)]);
    }

    static void details(List<Sample> errors) {
        errors.stream().limit(5).forEach(s -> TABLE.detail("error at +" + ms(s.sentNs()) + " ms after "
                + ms(s.latencyNs()) + " ms: " + s.outcome() + " " + s.detail()));
    }

    // ---------------------------------------------------------------- fixture

    /** A gateway process started from the command line. */
    static final class Gateway {
        final int port = RoleProcess.freePort();
        final int admin = RoleProcess.freePort();
        final String name;
        final RoleProcess process;

        Gateway(String name, Duration shutdownDeadline) {
            this.name = name;
            this.process = RoleProcess.start(DIR, name, List.of("gateway",
                    "--listen", "127.0.0.1:" + port, "--admin", "127.0.0.1:" + admin,
                    "--backend", "127.0.0.1:" + s3.port(), "--no-enforce",
                    "--principals", principals.toString(), "--health-token-file", tokenFile.toString(),
                    "--principal-upload-rate", "1MiB/s", "--principal-download-rate", "1MiB/s",
                    "--max-uploads-per-principal", "1", "--max-downloads-per-principal", "4",
                    "--request-header-timeout", HEADER_TIMEOUT.toSeconds() + "s",
                    "--request-body-timeout", BODY_TIMEOUT.toSeconds() + "s",
                    "--backend-continue-timeout", CONTINUE_TIMEOUT.toSeconds() + "s",
                    "--shutdown-deadline", shutdownDeadline.toSeconds() + "s",
                    "--log-target", "file:" + log(), "--log-level", "DEBUG"));
        }

        Path log() {
            return DIR.resolve(name + ".log");
        }

        void awaitListening() {
            process.awaitOutput("levee gateway listening", Duration.ofSeconds(60));
        }

        URI endpoint() {
            return URI.create("http://127.0.0.1:" + port);
        }

        /** The gateway's {@code GET /health/ready}. */
        JsonNode ready() throws Exception {
            HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + admin + "/health/ready"))
                    .header("Authorization", "Bearer " + TOKEN).timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.ofString());
            return JSON.readTree(r.body());
        }

        /** Waits until nothing is in flight, waiting or open. */
        void awaitIdle() {
            await(name + " idle").atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(50)).ignoreExceptions()
                    .untilAsserted(() -> {
                        JsonNode r = ready();
                        assertThat(r.get("inFlightRequests").asInt()).as("in-flight requests").isZero();
                        for (String c : List.of("mutatingUpload", "download")) {
                            assertThat(r.at("/governance/admission/" + c + "/inFlight").asInt()).as(c).isZero();
                            assertThat(r.at("/governance/admission/" + c + "/waiting").asInt()).as(c).isZero();
                        }
                        for (String d : List.of("upload", "download")) {
                            assertThat(r.at("/governance/bandwidth/" + d + "/openStreams").asInt()).as(d).isZero();
                        }
                    });
        }
    }

    static final Pattern SYSLOG_PRI = Pattern.compile("^<(\\d+)>1 ");
    static final Pattern STACK_FRAME = Pattern.compile("^\\s+at [\\w$.]+\\(|^Caused by: |Exception in thread");

    /** No line of ERROR (or worse) and no stack trace in the gateway's log or its standard output and error. */
    static void assertNoErrorInLog(Gateway g) throws IOException {
        List<String> bad = new ArrayList<>();
        String log = Files.exists(g.log()) ? Files.readString(g.log(), StandardCharsets.UTF_8) : "";
        for (String line : (log + "\n" + g.process.output()).split("\n")) {
            Matcher m = SYSLOG_PRI.matcher(line);
            if (m.find() && Integer.parseInt(m.group(1)) % 8 <= 3 || STACK_FRAME.matcher(line).find()) {
                bad.add(line.length() > 300 ? line.substring(0, 300) + "…" : line);
            }
        }
        bad.stream().limit(5).forEach(l -> TABLE.detail("log: " + l));
        assertThat(bad).as("ERROR lines and stack traces in %s", g.log()).isEmpty();
    }

    /**
     * S3Proxy over one in-memory blob store (levee-stack's {@link EmbeddedS3}, as the demo starts it), on a
     * port of its own that it keeps across a kill and a restart (the gateway's --backend does not change),
     * accepting every account's key; w1's signs its own requests.
     */
    static EmbeddedS3 startBackend() {
        Map<String, String> keys = new java.util.LinkedHashMap<>();
        keys.put(key("w1"), secret("w1"));
        ACCOUNTS.forEach(a -> keys.put(key(a), secret(a)));
        return EmbeddedS3.startWithKeys(keys);
    }

    @SuppressWarnings("deprecation") // the SDK's Apache 4 client, as EmbeddedS3.client: no second Netty line
    static S3Client client(URI endpoint, String account) {
        return S3Client.builder().endpointOverride(endpoint).region(Region.US_EAST_1).forcePathStyle(true)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(key(account), secret(account))))
                .httpClientBuilder(ApacheHttpClient.builder().maxConnections(8).connectionTimeout(Duration.ofSeconds(2))
                        .socketTimeout(Duration.ofSeconds(20)).connectionMaxIdleTime(Duration.ofSeconds(1)))
                .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry()))
                .build();
    }

    /** An SDK client that signs the payload's SHA-256 (no aws-chunked streaming, no trailer). */
    @SuppressWarnings("deprecation") // the SDK's Apache 4 client, as EmbeddedS3.client: no second Netty line
    static S3Client signedPayloadClient(URI endpoint, String account) {
        return S3Client.builder().endpointOverride(endpoint).region(Region.US_EAST_1).forcePathStyle(true)
                .serviceConfiguration(S3Configuration.builder().chunkedEncodingEnabled(false).build())
                .requestChecksumCalculation(software.amazon.awssdk.core.checksums.RequestChecksumCalculation.WHEN_REQUIRED)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(key(account), secret(account))))
                .httpClientBuilder(ApacheHttpClient.builder().connectionTimeout(Duration.ofSeconds(2))
                        .socketTimeout(Duration.ofSeconds(20)).connectionMaxIdleTime(Duration.ofSeconds(1)))
                .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry()))
                .build();
    }

    static S3Presigner presigner(URI endpoint, String account) {
        return S3Presigner.builder().endpointOverride(endpoint).region(Region.US_EAST_1)
                .serviceConfiguration(S3Configuration.builder().pathStyleAccessEnabled(true).build())
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(key(account), secret(account))))
                .build();
    }

    static URL presignPut(URI endpoint, String account, String key) {
        try (S3Presigner p = presigner(endpoint, account)) {
            return p.presignPutObject(r -> r.signatureDuration(Duration.ofMinutes(10))
                    .putObjectRequest(o -> o.bucket(BUCKET).key(key))).url();
        }
    }

    static URL presignGet(URI endpoint, String account, String key) {
        try (S3Presigner p = presigner(endpoint, account)) {
            return p.presignGetObject(r -> r.signatureDuration(Duration.ofMinutes(10))
                    .getObjectRequest(o -> o.bucket(BUCKET).key(key))).url();
        }
    }

    /** Reads what the gateway answers until it closes the connection (or 64 KiB, or the socket's timeout); "" when closed at once. */
    static String readHead(InputStream in) throws IOException {
        StringBuilder sb = new StringBuilder();
        byte[] buf = new byte[4096];
        try {
            for (int r; sb.length() < 65536 && (r = in.read(buf)) > 0; ) {
                sb.append(new String(buf, 0, r, StandardCharsets.ISO_8859_1));
            }
        } catch (java.net.SocketException | SocketTimeoutException e) {
            // reset after (or instead of) the answer, or no close: what came is the answer
        }
        return sb.toString();
    }

    static String statusLine(String head) {
        int eol = head.indexOf("\r\n");
        return eol < 0 ? head : head.substring(0, eol);
    }

    static byte[] random(int size, long seed) {
        return GatewayGovernanceIT.random(size, seed);
    }

    static String sha256(byte[] data) {
        return GatewayGovernanceIT.sha256(data);
    }

    /** Lets the load run for {@code d}: the probe's time line, not a wait for a condition. */
    static void hold(Duration d) {
        FaultSuiteIT.hold(d);
    }

    static long ms(long ns) {
        return TimeUnit.NANOSECONDS.toMillis(ns);
    }
}
