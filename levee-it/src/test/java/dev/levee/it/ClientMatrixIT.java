package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.client.ClientService;
import dev.levee.gateway.GatewayOptions;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
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
import java.nio.file.Path;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.ResponseBytes;
import software.amazon.awssdk.core.SdkSystemSetting;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.apache.ApacheHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CompletedPart;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.presigner.S3Presigner;

/**
 * The client compatibility matrix of issue 24: real S3 clients, each with its default retry settings,
 * through both Levee paths (NGINX with {@code levee nginx-config}'s configuration and rate.lua in front of
 * levee-client, the observer and a limiter; and {@code levee gateway} in its own JVM, enforcing, SigV4
 * verified with the key's secret), against the S3 backend the ITs use (S3Proxy, in memory).
 *
 * <p>Clients: AWS SDK for Java v2 (this JVM, Apache HTTP client), boto3 and the AWS CLI (Debian's
 * python3-boto3 and awscli), AWS SDK for JavaScript v3 ({@code @aws-sdk/client-s3}, installed by npm
 * under {@code target/}), rclone and s3cmd (Debian). Each runs the script in
 * {@code src/test/resources/client-matrix/} that prints one line per operation ({@code CELL op
 * ok|fail|na detail}) and per over-quota request ({@code PROBE method key ok|error class detail}).
 *
 * <p>Over quota each client and path has a bucket of its own at 0.2 requests/s (burst 1) and sends
 * {@value #PROBES} HEADs, then {@value #PROBES} GETs, at once. What Levee saw comes from the limiter's decision log: how many attempts
 * each request took, and how long the client waited after each refusal against the Retry-After it got.
 *
 * <p>The run writes {@code target/client-matrix/clients.md}; with {@code -Dclient-matrix.write=true}
 * it also rewrites the generated part of {@code docs/clients.md}. It then checks that the committed doc
 * says what this run saw (cells that depend on timing aside) and the acceptance of issue 24: every
 * operation completes through both paths when nothing is refused, and every client takes Levee's
 * refusals for throttling (HEAD included) with its default configuration.
 */
class ClientMatrixIT {

    static final Path DIR = Path.of("target", "client-matrix");
    static final Path SCRIPTS = Path.of("src", "test", "resources", "client-matrix");
    static final Path DOC = Path.of("..", "docs", "clients.md");
    static final String RUN = HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt()).substring(0, 6);
    static final String BUCKET = "cm-" + RUN;
    static final List<String> CLIENTS = List.of("java-sdk-v2", "boto3", "aws-cli", "js-sdk-v3", "rclone", "s3cmd");
    static final List<String> PATHS = List.of("nginx", "gateway");
    static final List<String> OPS = List.of("put", "put-multipart", "put-checksum", "get-range", "head", "list", "copy",
            "presigned-get", "presigned-put", "delete");
    /** The @aws-sdk packages npm installs under target/ (pinned: the matrix says which version it saw). */
    static final String JS_SDK_VERSION = "3.1178.0";
    static final String TIGHT_RATE = "0.2";
    /** Requests of each method sent at once over quota: enough that some still fail after every client's retries. */
    static final int PROBES = 6;
    /**
     * rclone's: it retries every refusal until it gets through (10 low-level retries, then 3 of the whole command),
     * and each probe costs it several requests (a HEAD, a LIST when that fails, then the GET), each a token at
     * 0.2/s: 6 at once took 4 minutes. Two show the same.
     */
    static final int RCLONE_PROBES = 2;

    static int probes(String client) {
        return client.equals("rclone") ? RCLONE_PROBES : PROBES;
    }
    static final byte[] DATA = data();

    static Stack stack;
    static ClientService service;
    static EmbeddedNginx nginx;
    static RoleProcess gateway;
    static final Map<String, URI> ENDPOINTS = new LinkedHashMap<>();
    static long logStart;

    static byte[] data() {
        byte[] d = new byte[100_000];
        for (int i = 0; i < d.length; i++) {
            d[i] = (byte) ((i * 7 + 3) % 251);
        }
        return d;
    }

    static String tight(String client, String path) {
        return "cmt-" + RUN + "-" + client.replace("-sdk-", "") + "-" + path;
    }

    @BeforeAll
    static void start() throws Exception {
        assertThat(EmbeddedNginx.unavailable()).as("nginx with the lua module (scripts/test installs it)").isEmpty();
        StringBuilder quotas = new StringBuilder("factor: 1\ndefault: {rate: 2000, burst: 400}\nresources:\n");
        for (String c : CLIENTS) {
            for (String p : PATHS) {
                quotas.append("  ").append(tight(c, p)).append(":\n    quota: {rate: ").append(TIGHT_RATE)
                        .append(", burst: 1}\n");
            }
        }
        stack = new Stack(quotas.toString(), new LocalStack.Settings(1, Duration.ofSeconds(2), Duration.ofMillis(300),
                Duration.ofMillis(300), false, GatewayOptions.OnFailure.ALLOW));
        // S3Proxy's start replaces Log4j's context: configure again so that decisions reach Stack.LOG
        Logging.configure(new LogTarget("file", null, 0, Stack.LOG.toAbsolutePath()), "levee-it", "INFO");
        logStart = Files.exists(Stack.LOG) ? Files.size(Stack.LOG) : 0;
        stack.direct.createBucket(r -> r.bucket(BUCKET));
        for (String c : CLIENTS) {
            for (String p : PATHS) {
                String t = tight(c, p);
                stack.direct.createBucket(r -> r.bucket(t));
                for (int i = 0; i < PROBES; i++) {
                    for (String k : List.of("head" + i, "get" + i)) {
                        stack.direct.putObject(r -> r.bucket(t).key(k), RequestBody.fromBytes(DATA));
                    }
                }
            }
        }
        service = ClientService.start(stack.stack.vertx(), new HostPort("127.0.0.1", 0), stack.stack.client(),
                Metrics.newRegistry()).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        nginx = EmbeddedNginx.start(NginxConfig.builder()
                .client(new HostPort("127.0.0.1", service.port()))
                .backend(new HostPort("127.0.0.1", stack.s3.port()))
                .workers("1"));
        ENDPOINTS.put("nginx", URI.create("http://127.0.0.1:" + nginx.port()));
        Files.createDirectories(DIR);
        Path principals = DIR.resolve("principals.yaml");
        Files.writeString(principals, "accounts:\n  demo:\n    keys:\n      - id: " + EmbeddedS3.ACCESS_KEY
                + "\n        secret: \"" + EmbeddedS3.SECRET_KEY + "\"\n");
        int port = RoleProcess.freePort();
        gateway = RoleProcess.start(DIR, "gateway", List.of("gateway", "--listen", "127.0.0.1:" + port,
                "--admin", "127.0.0.1:" + RoleProcess.freePort(), "--backend", stack.s3.address(),
                "--observer", "127.0.0.1:" + stack.stack.observer().port(),
                "--principals", principals.toAbsolutePath().toString(), "--log-target", "stderr"));
        gateway.awaitOutput("levee gateway listening", Duration.ofSeconds(60));
        ENDPOINTS.put("gateway", URI.create("http://127.0.0.1:" + port));
    }

    @AfterAll
    static void stop() throws Exception {
        if (gateway != null) {
            gateway.close();
        }
        if (nginx != null) {
            nginx.close();
        }
        if (service != null) {
            service.stop().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
        if (stack != null) {
            stack.close();
        }
    }

    /** One line of a client's output. */
    record Cell(String op, String outcome, String detail) {
    }

    /** One over-quota request as the client saw it. */
    record Probe(String method, String key, String outcome, String kind, String detail) {
    }

    /** What one client printed on one path. */
    record Run(String version, List<Cell> cells, List<Probe> probes, List<String> noise) {
    }

    /** One limiter decision for an over-quota bucket. */
    record Decision(long atMillis, boolean rejected, String key, String op, long retryAfter) {
    }

    /**
     * What Levee saw of one client's over-quota requests of one S3 operation on one path: refusals, refusals
     * the client sent again (back-off taken), those of them whose Retry-After was 3 s or more, how many of
     * these it sent again no earlier than the refusal's Retry-After, and the shortest wait after a refusal.
     */
    record Seen(int requests, int refusals, int retriedAfterRefusal, int retriedAfterLongRetryAfter, int waitedRetryAfter,
                long minGapMillis) {
    }

    @Test
    void everyClientThroughBothPaths() throws Exception {
        Map<String, Map<String, Run>> ops = new LinkedHashMap<>();
        Map<String, Map<String, Run>> probes = new LinkedHashMap<>();
        Map<String, Map<String, Seen>> seen = new LinkedHashMap<>();
        long t0 = System.nanoTime();
        // one client at a time, its two paths at once (their buckets, keys and quotas are apart)
        ExecutorService both = Executors.newFixedThreadPool(PATHS.size());
        try {
            for (String c : CLIENTS) {
                Map<String, Future<Run[]>> runs = new LinkedHashMap<>();
                for (String p : PATHS) {
                    runs.put(p, both.submit(() -> new Run[] {run(c, p, "ops"), run(c, p, "probe")}));
                }
                for (String p : PATHS) {
                    Run[] r = runs.get(p).get(10, TimeUnit.MINUTES);
                    ops.computeIfAbsent(c, k -> new LinkedHashMap<>()).put(p, r[0]);
                    probes.computeIfAbsent(c, k -> new LinkedHashMap<>()).put(p, r[1]);
                    seen.computeIfAbsent(c, k -> new LinkedHashMap<>()).put(p + " HEAD", seen(tight(c, p), "HeadObject"));
                    seen.get(c).put(p + " GET", seen(tight(c, p), "GetObject"));
                }
                System.out.printf("client matrix: %s done after %d s%n", c,
                        TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - t0));
            }
        } finally {
            both.shutdownNow();
        }
        String table = MatrixDoc.render(ops, probes, seen, TIGHT_RATE);
        Files.writeString(DIR.resolve("clients.md"), table);
        if (Boolean.getBoolean("client-matrix.write")) {
            MatrixDoc.writeInto(DOC, table);
        }
        List<String> problems = new ArrayList<>();
        problems.addAll(MatrixDoc.acceptance(ops, probes, seen));
        problems.addAll(MatrixDoc.compare(DOC, table));
        assertThat(problems).as("client matrix (this run's table: levee-it/target/client-matrix/clients.md)").isEmpty();
    }

    // ---- running the clients -------------------------------------------------------------------------------

    static Run run(String client, String path, String mode) throws Exception {
        String prefix = client + "-" + path + "/";
        Map<String, String> env = new LinkedHashMap<>();
        env.put("PROBES", Integer.toString(probes(client)));
        // no profile, credentials or CA bundle of the machine: each client with its defaults
        env.put("AWS_CONFIG_FILE", "/dev/null");
        env.put("AWS_SHARED_CREDENTIALS_FILE", "/dev/null");
        env.put("EP", ENDPOINTS.get(path).toString());
        env.put("BUCKET", BUCKET);
        env.put("TIGHT", tight(client, path));
        env.put("PREFIX", prefix);
        env.put("AK", EmbeddedS3.ACCESS_KEY);
        env.put("SK", EmbeddedS3.SECRET_KEY);
        Path work = DIR.resolve("work").resolve(client + "-" + path + "-" + mode).toAbsolutePath();
        if (Files.exists(work)) { // an earlier run's files (the scripts collect their probes' results from files here)
            try (java.util.stream.Stream<Path> old = Files.walk(work)) {
                for (Path f : old.sorted(java.util.Comparator.reverseOrder()).toList()) {
                    Files.delete(f);
                }
            }
        }
        Files.createDirectories(work);
        env.put("WORK", work.toString());
        if (client.equals("java-sdk-v2")) {
            return JavaClient.run(env, mode);
        }
        List<String> cmd = switch (client) {
            case "boto3" -> List.of("/usr/bin/python3", SCRIPTS.resolve("boto3_matrix.py").toString(), mode);
            case "aws-cli" -> List.of("bash", SCRIPTS.resolve("awscli_matrix.sh").toString(), mode);
            case "js-sdk-v3" -> {
                env.put("NODE_DIR", nodeModules().toAbsolutePath().toString());
                yield List.of("node", SCRIPTS.resolve("js_matrix.mjs").toString(), mode);
            }
            case "rclone" -> List.of("bash", SCRIPTS.resolve("rclone_matrix.sh").toString(), mode);
            case "s3cmd" -> List.of("bash", SCRIPTS.resolve("s3cmd_matrix.sh").toString(), mode);
            default -> throw new IllegalArgumentException(client);
        };
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().keySet().removeIf(k -> k.startsWith("AWS_") || k.startsWith("RCLONE_") || k.endsWith("CA_BUNDLE"));
        pb.environment().putAll(env);
        Process proc = pb.start();
        byte[] out = proc.getInputStream().readAllBytes(); // the scripts end on their own: every client has timeouts
        assertThat(proc.waitFor(5, TimeUnit.MINUTES)).as(client + " " + mode + " ends").isTrue();
        String text = new String(out, StandardCharsets.UTF_8).replace(work.toString(), "WORK");
        Files.writeString(DIR.resolve(client + "-" + path + "-" + mode + ".out"), text);
        return parse(text);
    }

    static Run parse(String text) {
        String version = "";
        List<Cell> cells = new ArrayList<>();
        List<Probe> probes = new ArrayList<>();
        List<String> noise = new ArrayList<>();
        for (String line : text.lines().toList()) {
            String[] f = line.split("\t", -1);
            if (f[0].equals("VERSION") && f.length >= 2) {
                version = f[1];
            } else if (f[0].equals("CELL") && f.length >= 4) {
                cells.add(new Cell(f[1], f[2], f[3]));
            } else if (f[0].equals("PROBE") && f.length >= 6) {
                probes.add(new Probe(f[1], f[2], f[3], f[4], f[5]));
            } else if (!line.isBlank()) {
                noise.add(line);
            }
        }
        return new Run(version, cells, probes, noise);
    }

    /**
     * The npm directory under target/ with the JS SDK, installed on first use. Synchronized: both paths of a client run
     * at once, and two npm installs into one directory fail each other (ENOTEMPTY, seen on a fresh clone).
     */
    static synchronized Path nodeModules() throws Exception {
        Path dir = Path.of("target", "client-matrix", "node");
        Path marker = dir.resolve("node_modules").resolve("@aws-sdk").resolve("client-s3").resolve("package.json");
        if (Files.exists(marker) && Files.readString(marker).contains("\"version\": \"" + JS_SDK_VERSION + "\"")) {
            Process check = new ProcessBuilder("node", "-e", "require('@aws-sdk/client-s3');"
                    + " require('@aws-sdk/s3-request-presigner')").directory(dir.toFile()).redirectErrorStream(true).start();
            check.getInputStream().readAllBytes();
            if (check.waitFor(2, TimeUnit.MINUTES) && check.exitValue() == 0) {
                return dir;
            }
            // an install cut short (or two at once, before this was synchronized) left a tree that does not load
            try (var files = Files.walk(dir)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
        Files.createDirectories(dir);
        Process p = new ProcessBuilder("npm", "install", "--no-audit", "--no-fund", "--no-save", "--prefix",
                dir.toAbsolutePath().toString(), "@aws-sdk/client-s3@" + JS_SDK_VERSION,
                "@aws-sdk/s3-request-presigner@" + JS_SDK_VERSION).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(5, TimeUnit.MINUTES) && p.exitValue() == 0).as("npm install of the JS SDK:\n" + out).isTrue();
        return dir;
    }

    // ---- what Levee saw ---------------------------------------------------------------------------------------

    static final Pattern DECISION = Pattern.compile(
            " decision result=(\\S+) resource=(\\S+) key=(.*?) op=(\\S+) .* retry_after=(\\d+)");
    static final Pattern STAMP = Pattern.compile("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?(Z|[+-]\\d\\d:?\\d\\d)");

    /** The decisions of operation {@code op} on {@code bucket}'s objects, and what the client did after each refusal. */
    static Seen seen(String bucket, String op) throws IOException {
        List<Decision> all = new ArrayList<>();
        for (String line : logLines()) {
            Matcher m = DECISION.matcher(line);
            if (!m.find() || !m.group(4).equals(op) || !(m.group(2).equals(bucket) || m.group(2).startsWith(bucket + "/"))) {
                continue;
            }
            Matcher s = STAMP.matcher(line);
            if (!s.find()) {
                continue;
            }
            long at = OffsetDateTime.parse(s.group()).toInstant().toEpochMilli();
            all.add(new Decision(at, m.group(1).equals("rejected"), m.group(2) + " " + m.group(3), m.group(4),
                    Long.parseLong(m.group(5))));
        }
        int refusals = 0;
        int retried = 0;
        int waited = 0;
        int longRa = 0;
        long minGap = Long.MAX_VALUE;
        for (int i = 0; i < all.size(); i++) {
            Decision d = all.get(i);
            if (!d.rejected()) {
                continue;
            }
            refusals++;
            for (int j = i + 1; j < all.size(); j++) {
                Decision next = all.get(j);
                if (next.key().equals(d.key()) && next.op().equals(d.op())) {
                    retried++;
                    long gap = next.atMillis() - d.atMillis();
                    minGap = Math.min(minGap, gap);
                    // only a Retry-After of 3 s or more tells a client that reads it from one whose own back-off
                    // happens to be as long (the SDKs' first back-offs are below 1 s, s3cmd's 3 s); 10 % below
                    // it is the slack of the log's stamps and the client's timer
                    if (d.retryAfter() >= 3) {
                        longRa++;
                        if (gap >= d.retryAfter() * 900) {
                            waited++;
                        }
                    }
                    break;
                }
            }
        }
        long keys = all.stream().map(Decision::key).distinct().count();
        return new Seen((int) keys, refusals, retried, longRa, waited, minGap);
    }

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

    // ---- AWS SDK for Java v2, in this JVM ------------------------------------------------------------------------

    /** The Java SDK's side: the same operations and probe as the scripts, with the SDK's defaults. */
    static final class JavaClient {

        @SuppressWarnings("deprecation") // the SDK's Apache 4 client, as EmbeddedS3.client: no second Netty line
        static Run run(Map<String, String> env, String mode) throws Exception {
            List<Cell> cells = new ArrayList<>();
            List<Probe> probes = new ArrayList<>();
            Map<String, String> sent = new java.util.concurrent.ConcurrentHashMap<>();
            ExecutionInterceptor recorder = new ExecutionInterceptor() {
                @Override
                public void beforeTransmission(Context.BeforeTransmission context, ExecutionAttributes attributes) {
                    sent.clear();
                    context.httpRequest().headers().forEach((k, v) -> sent.put(k.toLowerCase(java.util.Locale.ROOT),
                            String.join(",", v)));
                }
            };
            AwsBasicCredentials keys = AwsBasicCredentials.create(env.get("AK"), env.get("SK"));
            URI ep = URI.create(env.get("EP"));
            String b = env.get("BUCKET");
            String p = env.get("PREFIX");
            try (S3Client s3 = S3Client.builder().endpointOverride(ep).region(Region.US_EAST_1).forcePathStyle(true)
                    .credentialsProvider(StaticCredentialsProvider.create(keys))
                    .httpClientBuilder(ApacheHttpClient.builder())
                    .overrideConfiguration(o -> o.addExecutionInterceptor(recorder))
                    .build();
                 S3Presigner presigner = S3Presigner.builder().endpointOverride(ep).region(Region.US_EAST_1)
                         .credentialsProvider(StaticCredentialsProvider.create(keys))
                         .serviceConfiguration(software.amazon.awssdk.services.s3.S3Configuration.builder()
                                 .pathStyleAccessEnabled(true).build())
                         .build()) {
                if (mode.equals("ops")) {
                    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
                    cell(cells, "put", () -> {
                        s3.putObject(r -> r.bucket(b).key(p + "a"), RequestBody.fromBytes(DATA));
                        return "";
                    });
                    cell(cells, "put-multipart", () -> {
                        byte[] part = new byte[5 * 1024 * 1024];
                        String id = s3.createMultipartUpload(r -> r.bucket(b).key(p + "mp")).uploadId();
                        String e1 = s3.uploadPart(r -> r.bucket(b).key(p + "mp").uploadId(id).partNumber(1),
                                RequestBody.fromBytes(part)).eTag();
                        String e2 = s3.uploadPart(r -> r.bucket(b).key(p + "mp").uploadId(id).partNumber(2),
                                RequestBody.fromBytes(DATA)).eTag();
                        s3.completeMultipartUpload(r -> r.bucket(b).key(p + "mp").uploadId(id).multipartUpload(m -> m.parts(
                                CompletedPart.builder().partNumber(1).eTag(e1).build(),
                                CompletedPart.builder().partNumber(2).eTag(e2).build())));
                        long len = s3.headObject(r -> r.bucket(b).key(p + "mp")).contentLength();
                        check(len == part.length + DATA.length, "length " + len);
                        return "2 parts";
                    });
                    cell(cells, "put-checksum", () -> {
                        // a body of unknown length from a stream: the SDK's default CRC32 goes as an aws-chunked trailer
                        s3.putObject(r -> r.bucket(b).key(p + "ck"), RequestBody.fromContentProvider(
                                () -> new java.io.ByteArrayInputStream(DATA), DATA.length, "application/octet-stream"));
                        Map<String, String> h = Map.copyOf(sent);
                        check(h.getOrDefault("content-encoding", "").contains("aws-chunked"), "not aws-chunked: " + h);
                        byte[] got = s3.getObjectAsBytes(r -> r.bucket(b).key(p + "ck")).asByteArray();
                        check(Arrays.equals(got, DATA), "stored " + got.length + " bytes, not the 100000 sent");
                        return "aws-chunked, " + h.get("x-amz-content-sha256") + ", trailer " + h.get("x-amz-trailer");
                    });
                    cell(cells, "get-range", () -> {
                        ResponseBytes<GetObjectResponse> r = s3.getObjectAsBytes(g -> g.bucket(b).key(p + "a").range("bytes=10-99"));
                        check(Arrays.equals(r.asByteArray(), Arrays.copyOfRange(DATA, 10, 100)), r.asByteArray().length + " bytes");
                        return "";
                    });
                    cell(cells, "head", () -> {
                        long len = s3.headObject(r -> r.bucket(b).key(p + "a")).contentLength();
                        check(len == DATA.length, "length " + len);
                        return "";
                    });
                    cell(cells, "list", () -> {
                        check(s3.listObjectsV2(r -> r.bucket(b).prefix(p)).contents().stream()
                                .anyMatch(o -> o.key().equals(p + "a")), "not listed");
                        return "";
                    });
                    cell(cells, "copy", () -> {
                        s3.copyObject(r -> r.sourceBucket(b).sourceKey(p + "a").destinationBucket(b).destinationKey(p + "copy"));
                        check(Arrays.equals(s3.getObjectAsBytes(r -> r.bucket(b).key(p + "copy")).asByteArray(), DATA), "copy differs");
                        return "";
                    });
                    cell(cells, "presigned-get", () -> {
                        URI u = presigner.presignGetObject(r -> r.signatureDuration(Duration.ofMinutes(10))
                                .getObjectRequest(g -> g.bucket(b).key(p + "a"))).url().toURI();
                        HttpResponse<byte[]> r = http.send(HttpRequest.newBuilder(u).build(), HttpResponse.BodyHandlers.ofByteArray());
                        check(r.statusCode() == 200 && Arrays.equals(r.body(), DATA),
                                "HTTP " + r.statusCode() + " " + new String(r.body(), StandardCharsets.UTF_8));
                        return "java.net.http";
                    });
                    cell(cells, "presigned-put", () -> {
                        URI u = presigner.presignPutObject(r -> r.signatureDuration(Duration.ofMinutes(10))
                                .putObjectRequest(g -> g.bucket(b).key(p + "pp"))).url().toURI();
                        byte[] small = Arrays.copyOf(DATA, 1000);
                        HttpResponse<String> r = http.send(HttpRequest.newBuilder(u).PUT(HttpRequest.BodyPublishers.ofByteArray(small))
                                .build(), HttpResponse.BodyHandlers.ofString());
                        check(r.statusCode() == 200, "HTTP " + r.statusCode() + " " + r.body());
                        check(Arrays.equals(s3.getObjectAsBytes(g -> g.bucket(b).key(p + "pp")).asByteArray(), small), "stored body differs");
                        return "java.net.http";
                    });
                    cell(cells, "delete", () -> {
                        s3.deleteObject(r -> r.bucket(b).key(p + "copy"));
                        try {
                            s3.headObject(r -> r.bucket(b).key(p + "copy"));
                            throw new IllegalStateException("still there after DELETE");
                        } catch (S3Exception e) {
                            check(e.statusCode() == 404, "HEAD after DELETE: " + e.getMessage());
                        }
                        return "";
                    });
                } else {
                    String t = env.get("TIGHT");
                    ExecutorService pool = Executors.newFixedThreadPool(PROBES);
                    try {
                        for (String m : List.of("HEAD", "GET")) {
                            List<Future<Probe>> fs = new ArrayList<>();
                            for (int i = 0; i < PROBES; i++) {
                                String key = m.toLowerCase(java.util.Locale.ROOT) + i;
                                fs.add(pool.submit(() -> probe(s3, m, t, key)));
                            }
                            for (Future<Probe> f : fs) {
                                probes.add(f.get(5, TimeUnit.MINUTES));
                            }
                        }
                    } finally {
                        pool.shutdownNow();
                    }
                }
            }
            String version = "AWS SDK for Java v2 " + software.amazon.awssdk.core.util.VersionInfo.SDK_VERSION
                    + " (Apache HTTP client)";
            return new Run(version, cells, probes, List.of());
        }

        static Probe probe(S3Client s3, String method, String bucket, String key) {
            try {
                if (method.equals("HEAD")) {
                    s3.headObject(r -> r.bucket(bucket).key(key));
                } else {
                    s3.getObjectAsBytes(r -> r.bucket(bucket).key(key));
                }
                return new Probe(method, key, "ok", "", "");
            } catch (S3Exception e) {
                String code = e.awsErrorDetails() == null ? null : e.awsErrorDetails().errorCode();
                return new Probe(method, key, "error", e.isThrottlingException() ? "throttle" : "other",
                        "code " + code + ", status " + e.statusCode() + ", " + e.numAttempts() + " attempts");
            } catch (RuntimeException e) {
                return new Probe(method, key, "error", "other", e.toString());
            }
        }

        interface Op {
            String run() throws Exception;
        }

        static void cell(List<Cell> cells, String op, Op body) {
            try {
                cells.add(new Cell(op, "ok", body.run()));
            } catch (Exception | AssertionError e) {
                String m = String.valueOf(e.getMessage()).replace('\n', ' ');
                cells.add(new Cell(op, "fail", e.getClass().getSimpleName() + ": " + m.substring(0, Math.min(300, m.length()))));
            }
        }

        static void check(boolean ok, String message) {
            if (!ok) {
                throw new IllegalStateException(message);
            }
        }
    }

    static {
        // the SDK reads no profile of the machine it runs on
        System.setProperty(SdkSystemSetting.AWS_REGION.property(), "us-east-1");
    }
}
