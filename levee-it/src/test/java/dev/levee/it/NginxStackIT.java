package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.levee.client.ClientService;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import dev.levee.stack.EmbeddedNginx;
import dev.levee.stack.EmbeddedS3;
import dev.levee.stack.LocalStack;
import dev.levee.nginx.NginxConfig;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.apache.ApacheHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CompletedPart;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;
import software.amazon.awssdk.services.s3.presigner.S3Presigner;

/**
 * The whole chain of docs/design.md §1 with a real NGINX (issue 4): AWS SDK v2 → NGINX (rate.lua) →
 * S3Proxy, with levee-client, the observer and the limiters of a {@link LocalStack} deciding. The
 * gateway's own check is off, and a second NGINX server sends its accepted requests through the
 * gateway as {@code levee demo --nginx} does; a third refuses on failure ({@code on_failure deny}).
 * Operations are asserted from the limiters' decision log ({@link Stack#LOG}).
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class NginxStackIT {

    /** Unique per run: the decision log is appended to by every run and every test class. */
    static final String RUN = HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt()).substring(0, 6);
    static final String ROOMY = "ngx-roomy-" + RUN;
    static final String TIGHT = "ngx-tight-" + RUN;
    static final String OPS = "ngx-ops-" + RUN;
    static final String ONCE = "ngx-once-" + RUN;
    static final String CHAIN = "ngx-chain-" + RUN;
    static final String DOWN = "ngx-down-" + RUN;

    static Stack stack;
    static ClientService service;
    static int servicePort;
    static EmbeddedNginx nginx;
    static S3Client s3;
    static S3Client viaGateway;
    static S3Client denying;

    @BeforeAll
    static void start() throws Exception {
        assertThat(EmbeddedNginx.unavailable()).as("nginx with the lua module (scripts/test installs it)").isEmpty();
        stack = Stack.behindNginx("""
                factor: 4
                default: {rate: 2000, burst: 400}
                resources:
                  %s:
                    quota: {rate: 4, burst: 2}
                """.formatted(TIGHT));
        logStart = Stack.logSize(); // read only what this class adds
        for (String b : List.of(ROOMY, TIGHT, OPS, ONCE, CHAIN, DOWN)) {
            stack.direct.createBucket(r -> r.bucket(b));
        }
        startClientService(0);
        NginxConfig.Builder b = NginxConfig.builder()
                .client(new HostPort("127.0.0.1", servicePort))
                .backend(new HostPort("127.0.0.1", stack.s3.port()))
                .workers("1");
        String check = b.build().render(NginxConfig.Part.CHECK);
        String extra = "upstream levee_gateway {\n    server 127.0.0.1:" + stack.stack.gateway().port()
                + ";\n    keepalive 16;\n}\n"
                + NginxRawHttp.server("127.0.0.1:{{port:chain}}", "levee_gateway",
                        "require(\"rate\").attempt(\"/.levee\", { on_failure = \"allow\" })", check)
                + NginxRawHttp.server("127.0.0.1:{{port:deny}}", "s3_backend",
                        "require(\"rate\").attempt(\"/.levee\", { on_failure = \"deny\" })", check);
        nginx = EmbeddedNginx.start(b.extraHttp(extra));
        s3 = Stack.client(URI.create("http://127.0.0.1:" + nginx.port()));
        viaGateway = Stack.client(URI.create("http://127.0.0.1:" + nginx.port("chain")));
        denying = Stack.client(URI.create("http://127.0.0.1:" + nginx.port("deny")));
    }

    static void startClientService(int port) {
        try {
            service = ClientService.start(stack.stack.vertx(), new HostPort("127.0.0.1", port), stack.stack.client(),
                    Metrics.newRegistry()).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("levee-client endpoint did not start on port " + port, e);
        }
        servicePort = service.port();
    }

    @AfterAll
    static void stop() throws Exception {
        for (AutoCloseable c : new AutoCloseable[] {s3, viaGateway, denying, nginx}) {
            if (c != null) {
                c.close();
            }
        }
        if (service != null) {
            service.stop().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
        if (stack != null) {
            stack.close();
        }
    }

    /** One decision of the limiters' log. */
    record Decision(String result, String resource, String key, String op) {
    }

    static final Pattern DECISION = Pattern.compile(
            " decision result=(\\S+) resource=(\\S+) key=(.*?) op=(\\S+) level=");

    /** Where {@link Stack#LOG} ended when this class started. */
    static long logStart;

    /** The lines of {@link Stack#LOG} written since this class started. */
    static List<String> logLines() throws IOException {
        if (!Files.exists(Stack.LOG)) {
            return List.of();
        }
        try (java.nio.channels.SeekableByteChannel ch = Files.newByteChannel(Stack.LOG)) {
            ch.position(Math.min(logStart, ch.size()));
            return new java.io.BufferedReader(java.nio.channels.Channels.newReader(ch, StandardCharsets.UTF_8))
                    .lines().toList();
        }
    }

    static List<Decision> decisions(String resource) throws IOException {
        List<Decision> out = new ArrayList<>();
        for (String line : logLines()) {
            Matcher m = DECISION.matcher(line);
            if (m.find() && m.group(2).equals(resource)) {
                out.add(new Decision(m.group(1), m.group(2), m.group(3), m.group(4)));
            }
        }
        return out;
    }

    /** levee-client's line per check: "result=… limiter=… resource=… key=… op=… … attempts=N". */
    static final Pattern CHECK = Pattern.compile(
            " - - result=(\\S+) limiter=\\S+ resource=(\\S+) key=.*? attempts=(\\d+)");

    /** The attempts of each check levee-client made for {@code resource} (one entry per check, from its log line). */
    static List<Integer> checks(String resource) throws IOException {
        List<Integer> out = new ArrayList<>();
        for (String line : logLines()) {
            Matcher m = CHECK.matcher(line);
            if (m.find() && m.group(2).equals(resource)) {
                out.add(Integer.parseInt(m.group(3)));
            }
        }
        return out;
    }

    static List<String> accessLines(String marker) throws IOException {
        if (!Files.exists(nginx.accessLog())) {
            return List.of();
        }
        return Files.readAllLines(nginx.accessLog(), StandardCharsets.UTF_8).stream()
                .filter(l -> l.contains(marker)).toList();
    }

    static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    @Order(1)
    void underQuotaObjectsRoundTripByteIdenticalAndListingsWork() {
        Random rnd = new Random(4);
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            byte[] data = random(1 + rnd.nextInt(3 * 1024 * 1024), i);
            String key = "dir/ü nicode/obj+" + i + " %20&=;.bin";
            keys.add(key);
            s3.putObject(r -> r.bucket(ROOMY).key(key), RequestBody.fromBytes(data));
            assertThat(s3.getObjectAsBytes(r -> r.bucket(ROOMY).key(key)).asByteArray()).isEqualTo(data);
            assertThat(stack.direct.getObjectAsBytes(r -> r.bucket(ROOMY).key(key)).asByteArray()).isEqualTo(data);
            assertThat(s3.headObject(r -> r.bucket(ROOMY).key(key)).contentLength()).isEqualTo(data.length);
        }
        assertThat(s3.listObjectsV2(r -> r.bucket(ROOMY)).contents()).extracting(S3Object::key)
                .containsExactlyInAnyOrderElementsOf(keys);
        assertThat(s3.listObjects(r -> r.bucket(ROOMY).prefix("dir/")).contents()).hasSize(keys.size());
        assertThat(s3.listBuckets().buckets()).extracting(b -> b.name()).contains(ROOMY, TIGHT);
    }

    @Test
    @Order(2)
    void overQuotaTheSdkSeesSlowDown503WithRetryAfter() {
        S3Exception refused = null;
        for (int i = 0; i < 100 && refused == null; i++) {
            try {
                s3.listObjectsV2(r -> r.bucket(TIGHT));
            } catch (S3Exception e) {
                refused = e;
            }
        }
        assertThat(refused).as("a refusal within 100 requests on a 4 req/s quota").isNotNull();
        assertThat(refused.statusCode()).isEqualTo(503);
        assertThat(refused.awsErrorDetails().errorCode()).isEqualTo("SlowDown");
        assertThat(refused.requestId()).matches("[0-9a-f]{32}");
        assertThat(refused.awsErrorDetails().sdkHttpResponse().firstMatchingHeader("Retry-After"))
                .hasValueSatisfying(v -> assertThat(Long.parseLong(v)).isGreaterThanOrEqualTo(1));
    }

    @Test
    @Order(3)
    @SuppressWarnings("deprecation") // the SDK's Apache 4 client, as EmbeddedS3.client: no second Netty line
    void refusedUploadThenTheNextRequestOnASingleConnectionPool() {
        // PutObject goes with Expect: 100-continue; NGINX refuses without reading the body and closes
        try (S3Client one = S3Client.builder()
                .endpointOverride(URI.create("http://127.0.0.1:" + nginx.port()))
                .region(Region.US_EAST_1).forcePathStyle(true)
                .credentialsProvider(StaticCredentialsProvider.create(
                        AwsBasicCredentials.create(EmbeddedS3.ACCESS_KEY, EmbeddedS3.SECRET_KEY)))
                .httpClientBuilder(ApacheHttpClient.builder().maxConnections(1))
                .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry()))
                .build()) {
            byte[] data = random(512 * 1024, 9);
            S3Exception refused = null;
            int stored = 0;
            for (int i = 0; i < 100 && refused == null; i++) {
                String key = "upload-" + i;
                try {
                    one.putObject(r -> r.bucket(TIGHT).key(key), RequestBody.fromBytes(data));
                    stored++;
                } catch (S3Exception e) {
                    refused = e;
                }
            }
            assertThat(refused).isNotNull();
            assertThat(refused.awsErrorDetails().errorCode()).isEqualTo("SlowDown");
            int refusedIndex = stored;
            assertThatThrownBy(() -> stack.direct.headObject(r -> r.bucket(TIGHT).key("upload-" + refusedIndex)))
                    .isInstanceOf(S3Exception.class);
            // the only pooled connection carries on
            byte[] next = random(100_000, 10);
            one.putObject(r -> r.bucket(ROOMY).key("after-refusal"), RequestBody.fromBytes(next));
            assertThat(one.getObjectAsBytes(r -> r.bucket(ROOMY).key("after-refusal")).asByteArray()).isEqualTo(next);
        }
    }

    @Test
    @Order(4)
    void multipartCopyDeleteManyAndPresignedGetAreClassifiedFromTheDecisionLog() throws Exception {
        byte[] part1 = random(5 * 1024 * 1024, 11);
        byte[] part2 = random(1024, 12);
        String upload = s3.createMultipartUpload(r -> r.bucket(OPS).key("mp/big.bin")).uploadId();
        String e1 = s3.uploadPart(r -> r.bucket(OPS).key("mp/big.bin").uploadId(upload).partNumber(1),
                RequestBody.fromBytes(part1)).eTag();
        String e2 = s3.uploadPart(r -> r.bucket(OPS).key("mp/big.bin").uploadId(upload).partNumber(2),
                RequestBody.fromBytes(part2)).eTag();
        assertThat(s3.listParts(r -> r.bucket(OPS).key("mp/big.bin").uploadId(upload)).parts()).hasSize(2);
        s3.completeMultipartUpload(r -> r.bucket(OPS).key("mp/big.bin").uploadId(upload).multipartUpload(m -> m.parts(
                CompletedPart.builder().partNumber(1).eTag(e1).build(), CompletedPart.builder().partNumber(2).eTag(e2).build())));
        s3.copyObject(r -> r.sourceBucket(OPS).sourceKey("mp/big.bin").destinationBucket(OPS).destinationKey("copy/big.bin"));
        s3.putObject(r -> r.bucket(OPS).key("del/a"), RequestBody.fromString("a"));
        s3.putObject(r -> r.bucket(OPS).key("del/b"), RequestBody.fromString("b"));
        s3.deleteObjects(r -> r.bucket(OPS).delete(d -> d.objects(ObjectIdentifier.builder().key("del/a").build(),
                ObjectIdentifier.builder().key("del/b").build())));
        s3.putObject(r -> r.bucket(OPS).key("pre/signed.txt"), RequestBody.fromString("presigned body"));
        URI presigned;
        try (S3Presigner presigner = S3Presigner.builder()
                .endpointOverride(URI.create("http://127.0.0.1:" + nginx.port()))
                .region(Region.US_EAST_1)
                .serviceConfiguration(software.amazon.awssdk.services.s3.S3Configuration.builder()
                        .pathStyleAccessEnabled(true).build())
                .credentialsProvider(StaticCredentialsProvider.create(
                        AwsBasicCredentials.create(EmbeddedS3.ACCESS_KEY, EmbeddedS3.SECRET_KEY)))
                .build()) {
            presigned = presigner.presignGetObject(p -> p.signatureDuration(Duration.ofMinutes(5))
                    .getObjectRequest(g -> g.bucket(OPS).key("pre/signed.txt"))).url().toURI();
        }
        HttpResponse<String> got = HttpClient.newHttpClient().send(HttpRequest.newBuilder(presigned).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(got.statusCode()).isEqualTo(200);
        assertThat(got.body()).isEqualTo("presigned body");
        assertThat(presigned.getRawQuery()).contains("X-Amz-Signature=");

        List<String> expected = List.of("CreateMultipartUpload mp/big.bin", "UploadPart mp/big.bin",
                "UploadPart mp/big.bin", "ListParts mp/big.bin", "CompleteMultipartUpload mp/big.bin",
                "CopyObject copy/big.bin", "PutObject del/a", "PutObject del/b", "DeleteObjects \"\"",
                "PutObject pre/signed.txt", "GetObject pre/signed.txt");
        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50))
                .until(() -> decisions(OPS).size() >= expected.size());
        List<String> seen = decisions(OPS).stream().map(d -> d.op() + " " + d.key()).toList();
        assertThat(seen).containsExactlyElementsOf(expected);
        assertThat(decisions(OPS)).allSatisfy(d -> assertThat(d.result()).isEqualTo("accepted"));
    }

    @Test
    @Order(5)
    void everyRequestIsDecidedExactlyOnceAlsoThroughTheGateway() throws Exception {
        int direct = drive(s3, ONCE);
        int chained = drive(viaGateway, CHAIN);
        // levee-client's checks must reach the number of requests and stay there: no second check anywhere
        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50))
                .until(() -> checks(ONCE).size() >= direct && checks(CHAIN).size() >= chained);
        await().during(Duration.ofMillis(700)).atMost(Duration.ofSeconds(3))
                .until(() -> checks(ONCE).size() == direct && checks(CHAIN).size() == chained);
        // each check decided by a limiter once, or once more for each time levee-client gave up waiting on a limiter
        // and asked the next (its 1 s check timeout: a stall of the one JVM that runs everything here on a loaded
        // machine), which it says in the check's attempts
        for (String bucket : List.of(ONCE, CHAIN)) {
            int n = bucket.equals(ONCE) ? direct : chained;
            int retries = checks(bucket).stream().mapToInt(a -> a - 1).sum();
            if (retries > 0) {
                System.out.printf("NginxStackIT: %d check(s) on %s asked a second limiter (attempts > 1)%n", retries, bucket);
            }
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50))
                    .until(() -> decisions(bucket).size() >= n);
            assertThat(decisions(bucket).size()).as("limiter decisions on %s", bucket).isBetween(n, n + retries);
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> accessLines("/" + ONCE).size() == direct
                && accessLines("/" + CHAIN).size() == chained);
        assertThat(accessLines("/" + ONCE)).allSatisfy(l -> assertThat(l).endsWith(" levee=accepted"));
        assertThat(accessLines("/" + CHAIN)).allSatisfy(l -> assertThat(l).endsWith(" levee=accepted"));
        Map<String, Long> ops = decisions(CHAIN).stream().collect(Collectors.groupingBy(Decision::op, Collectors.counting()));
        assertThat(ops).containsEntry("PutObject", 4L).containsEntry("GetObject", 4L).containsEntry("HeadObject", 4L)
                .containsEntry("DeleteObject", 4L).containsEntry("ListObjectsV2", 4L);
    }

    /** Issues 20 requests of five kinds on {@code bucket}; returns how many. */
    private static int drive(S3Client c, String bucket) {
        int n = 0;
        for (int i = 0; i < 4; i++) {
            String key = "k" + i;
            c.putObject(r -> r.bucket(bucket).key(key), RequestBody.fromString("v" + key));
            assertThat(c.getObjectAsBytes(r -> r.bucket(bucket).key(key)).asUtf8String()).isEqualTo("v" + key);
            c.headObject(r -> r.bucket(bucket).key(key));
            c.listObjectsV2(r -> r.bucket(bucket));
            c.deleteObject(r -> r.bucket(bucket).key(key));
            n += 5;
        }
        return n;
    }

    @Test
    @Order(6)
    void levee_clientStoppedAllowLetsRequestsPassAndDenyRefusesThem() throws Exception {
        s3.putObject(r -> r.bucket(DOWN).key("present"), RequestBody.fromString("still served"));
        int port = servicePort;
        service.stop().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        try {
            assertThat(s3.getObjectAsBytes(r -> r.bucket(DOWN).key("present")).asUtf8String()).isEqualTo("still served");
            S3Exception refused = null;
            try {
                denying.getObjectAsBytes(r -> r.bucket(DOWN).key("present"));
            } catch (S3Exception e) {
                refused = e;
            }
            assertThat(refused).as("on_failure deny refuses while levee-client is down").isNotNull();
            assertThat(refused.statusCode()).isEqualTo(503);
            assertThat(refused.awsErrorDetails().errorCode()).isEqualTo("SlowDown");
            await().atMost(Duration.ofSeconds(10)).until(() -> accessLines("/" + DOWN + "/present").size() == 3);
            List<String> lines = accessLines("/" + DOWN + "/present");
            assertThat(lines.get(0)).contains("\"PUT ").endsWith(" levee=accepted");
            assertThat(lines.get(1)).contains("\"GET ").contains("\" 200 ").endsWith(" levee=failed");
            assertThat(lines.get(2)).contains("\"GET ").contains("\" 503 ").endsWith(" levee=failed");
            assertThat(Files.readString(nginx.errorLog())).contains("levee: check failed (levee-client answered 502");
        } finally {
            startClientService(port);
        }
        // back on its port: the next check is decided again
        s3.getObjectAsBytes(r -> r.bucket(DOWN).key("present"));
        await().atMost(Duration.ofSeconds(10)).until(() -> accessLines("/" + DOWN + "/present").size() == 4);
        assertThat(accessLines("/" + DOWN + "/present").get(3)).endsWith(" levee=accepted");
    }

    @Test
    @Order(100)
    void everyAccessLogLineCarriesExactlyOneResult() throws IOException {
        List<String> lines = Files.readAllLines(nginx.accessLog(), StandardCharsets.UTF_8);
        assertThat(lines).hasSizeGreaterThan(60);
        for (String line : lines) {
            assertThat(line).matches(".* levee=(accepted|rejected|failed)$");
            String lower = line.toLowerCase(Locale.ROOT);
            assertThat(lower.indexOf("levee=")).isEqualTo(lower.lastIndexOf("levee="));
        }
        assertThat(lines).anyMatch(l -> l.endsWith("levee=rejected")).anyMatch(l -> l.endsWith("levee=failed"));
    }
}
