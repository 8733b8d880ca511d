package dev.levee.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.http.ContentStreamProvider;
import software.amazon.awssdk.http.SdkHttpMethod;
import software.amazon.awssdk.http.SdkHttpRequest;
import software.amazon.awssdk.http.auth.aws.signer.AwsV4FamilyHttpSigner;
import software.amazon.awssdk.http.auth.aws.signer.AwsV4HttpSigner;
import software.amazon.awssdk.identity.spi.AwsCredentialsIdentity;

/**
 * A running gateway verifies SigV4 for keys with a secret (issue 6): requests signed by the AWS
 * SDK's signer with the right secret reach the backend and are charged; forged ones (the right
 * key id, another secret; an expired presigned URL) get an S3 XML error, never reach the backend
 * and are charged nothing; a key without a secret keeps the trusted claim.
 */
class SignatureVerificationTest {

    static final String TOKEN = "t0ken-for-tests-0123456789";
    static final String VERIFIED_KEY = "AKIAVERIFIEDKEY";
    static final String SECRET = "the-real-secret/0123456789+abcdefghijklmn";
    static final String TRUSTED_KEY = "AKIATRUSTEDKEY";
    static final Set<String> RESTRICTED = Set.of("host", "content-length", "connection", "expect", "upgrade");

    final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
    final ObjectMapper json = new ObjectMapper();
    TestGateway rig;
    StubBackend backend;
    GatewayService gateway;

    @BeforeEach
    void start() throws Exception {
        PrincipalDirectory.Account account = PrincipalDirectory.Account.of("svc-victim", VERIFIED_KEY, TRUSTED_KEY)
                .withSecret(VERIFIED_KEY, SigningSecret.of(SECRET));
        GovernanceSettings governance = GovernanceSettings.builder()
                .principals(new PrincipalDirectory(List.of(account)))
                .anonymous(AnonymousPolicy.REFUSE)
                .uploadRate(64L << 20)
                .downloadRate(64L << 20)
                .build();
        rig = TestGateway.start(o -> o.governance(governance).healthToken(TOKEN));
        backend = rig.backend;
        gateway = rig.gateway;
    }

    @AfterEach
    void stop() throws Exception {
        rig.close();
    }

    /** Signs a request to the gateway with the SDK's signer, as the S3 client does, at {@code at}. */
    SdkHttpRequest signed(SdkHttpMethod method, String path, String secret, byte[] body, Instant at, Duration presignedFor) {
        int q = path.indexOf('?');
        SdkHttpRequest.Builder builder = SdkHttpRequest.builder().method(method).protocol("http").host("127.0.0.1")
                .port(gateway.port()).encodedPath(q < 0 ? path : path.substring(0, q))
                .putHeader("Content-Length", Integer.toString(body == null ? 0 : body.length));
        if (q >= 0) {
            for (String kv : path.substring(q + 1).split("&")) {
                builder.putRawQueryParameter(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
            }
        }
        SdkHttpRequest request = builder.build();
        return AwsV4HttpSigner.create().sign(r -> {
            r.identity(AwsCredentialsIdentity.create(VERIFIED_KEY, secret)).request(request)
                    .putProperty(AwsV4HttpSigner.SERVICE_SIGNING_NAME, "s3")
                    .putProperty(AwsV4HttpSigner.REGION_NAME, "us-east-1")
                    .putProperty(AwsV4HttpSigner.SIGNING_CLOCK, Clock.fixed(at, ZoneOffset.UTC))
                    .putProperty(AwsV4HttpSigner.DOUBLE_URL_ENCODE, false)
                    .putProperty(AwsV4HttpSigner.NORMALIZE_PATH, false)
                    .putProperty(AwsV4FamilyHttpSigner.PAYLOAD_SIGNING_ENABLED, presignedFor == null);
            if (body != null) {
                r.payload(ContentStreamProvider.fromByteArray(body));
            }
            if (presignedFor != null) {
                r.putProperty(AwsV4FamilyHttpSigner.AUTH_LOCATION, AwsV4FamilyHttpSigner.AuthLocation.QUERY_STRING)
                        .putProperty(AwsV4FamilyHttpSigner.EXPIRATION_DURATION, presignedFor);
            }
        }).request();
    }

    HttpResponse<String> send(SdkHttpRequest signed, byte[] body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(signed.getUri())
                .method(signed.method().name(), body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofByteArray(body));
        signed.forEachHeader((name, values) -> {
            if (!RESTRICTED.contains(name.toLowerCase(java.util.Locale.ROOT))) {
                values.forEach(v -> b.header(name, v));
            }
        });
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    JsonNode ready() throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gateway.adminPort()
                + "/health/ready")).header("Authorization", "Bearer " + TOKEN).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(ReadySchema.errors("ReadyResponse", r.body())).as(r.body()).isEmpty();
        assertThat(r.body()).doesNotContain(SECRET, "real-secret", VERIFIED_KEY, "svc-victim");
        return json.readTree(r.body());
    }

    @Test
    void aRequestSignedWithTheSecretIsForwardedAndCharged() throws Exception {
        byte[] body = new byte[100 * 1024];
        HttpResponse<String> r = send(signed(SdkHttpMethod.PUT, "/bucket/ok.bin", SECRET, body, Instant.now(), null), body);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(backend.lastBody.get()).isEqualTo(body);
        JsonNode ready = ready();
        assertThat(ready.at("/governance/signatures/verifiedKeys").asInt()).isEqualTo(1);
        assertThat(ready.at("/governance/signatures/maxClockSkewSeconds").asLong()).isEqualTo(900);
        assertThat(ready.at("/governance/signatures/verified").asLong()).isEqualTo(1);
        assertThat(ready.at("/governance/signatures/refused").asLong()).isZero();
        assertThat(ready.at("/governance/bandwidth/upload/grantedBytes").asLong()).isGreaterThanOrEqualTo(body.length);
        assertThat(ready.at("/governance/admission/mutatingUpload/admitted").asLong()).isEqualTo(1);
    }

    @Test
    void theRightKeyIdWithAnotherSecretIsRefusedUnchargedAndNeverForwarded() throws Exception {
        byte[] body = new byte[100 * 1024];
        HttpResponse<String> r = send(signed(SdkHttpMethod.PUT, "/bucket/forged.bin", "a-guessed-secret", body, Instant.now(),
                null), body);
        assertThat(r.statusCode()).isEqualTo(403);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/xml");
        assertThat(r.body()).contains("<Code>SignatureDoesNotMatch</Code>", "<Resource>/bucket/forged.bin</Resource>")
                .doesNotContain(SECRET, "a-guessed-secret");
        HttpResponse<String> head = send(signed(SdkHttpMethod.HEAD, "/bucket/forged.bin", "a-guessed-secret", null,
                Instant.now(), null), null);
        assertThat(head.statusCode()).isEqualTo(403);
        assertThat(backend.received.get()).isZero();
        assertThat(backend.lastHeaders.get()).as("nothing reached the backend").isNull();
        JsonNode ready = ready();
        assertThat(ready.at("/governance/signatures/refused").asLong()).isEqualTo(2);
        assertThat(ready.at("/governance/signatures/verified").asLong()).isZero();
        assertThat(ready.at("/governance/bandwidth/upload/grantedBytes").asLong()).isZero();
        assertThat(ready.at("/governance/bandwidth/upload/principals").asInt()).isZero();
        assertThat(ready.at("/governance/admission/mutatingUpload/admitted").asLong()).isZero();
    }

    @Test
    void anExpiredPresignedUrlIsRefusedAndAValidOneServed() throws Exception {
        Instant now = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        SdkHttpRequest expired = signed(SdkHttpMethod.GET, "/bucket/obj?size=1000", SECRET, null,
                now.minus(Duration.ofMinutes(10)), Duration.ofMinutes(5));
        HttpResponse<String> r = send(expired, null);
        assertThat(r.statusCode()).isEqualTo(403);
        assertThat(r.body()).contains("<Code>AccessDenied</Code>", "Request has expired");
        assertThat(backend.written.get()).isZero();

        SdkHttpRequest valid = signed(SdkHttpMethod.GET, "/bucket/obj?size=1000", SECRET, null, now, Duration.ofMinutes(5));
        URI bigger = URI.create(valid.getUri().toString().replace("size=1000", "size=2000"));
        HttpResponse<String> changed = http.send(HttpRequest.newBuilder(bigger).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(changed.statusCode()).as("a parameter changed after signing breaks the signature").isEqualTo(403);
        assertThat(changed.body()).contains("<Code>SignatureDoesNotMatch</Code>");
        assertThat(backend.written.get()).isZero();
        HttpResponse<String> served = send(valid, null);
        assertThat(served.statusCode()).isEqualTo(200);
        assertThat(served.body()).hasSize(1000);
        JsonNode ready = ready();
        assertThat(ready.at("/governance/signatures/verified").asLong()).isEqualTo(1);
        assertThat(ready.at("/governance/signatures/refused").asLong()).isEqualTo(2);
        assertThat(ready.at("/governance/bandwidth/download/grantedBytes").asLong()).isGreaterThanOrEqualTo(1000);
    }

    /** A SigV2 presigned URL: Base64(HMAC-SHA1) over the S3 guide's StringToSign, percent-encoded. */
    URI sigV2Presigned(String method, String path, String secret, long expires) throws Exception {
        javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA1");
        mac.init(new javax.crypto.spec.SecretKeySpec(secret.getBytes(java.nio.charset.StandardCharsets.UTF_8), "HmacSHA1"));
        String signature = java.util.Base64.getEncoder().encodeToString(mac.doFinal((method + "\n\n\n" + expires + "\n"
                + path).getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        return URI.create("http://127.0.0.1:" + gateway.port() + path + "?AWSAccessKeyId=" + VERIFIED_KEY + "&Expires=" + expires
                + "&Signature=" + java.net.URLEncoder.encode(signature, java.nio.charset.StandardCharsets.UTF_8));
    }

    /**
     * Issue 24: boto3 1.26 presigns with SigV2 by default and {@code s3cmd signurl} always does. Such a URL made with
     * the key's secret is served (it was refused {@code 403 AccessDenied}: only SigV4 was verified); with another
     * secret, or expired, it is refused as S3 refuses it and never forwarded.
     */
    @Test
    void aSigV2PresignedUrlIsVerified() throws Exception {
        long expires = Instant.now().getEpochSecond() + 300;
        HttpResponse<String> forged = http.send(HttpRequest.newBuilder(sigV2Presigned("GET", "/bucket/obj", "a-guessed-secret",
                expires)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(forged.statusCode()).isEqualTo(403);
        assertThat(forged.body()).contains("<Code>SignatureDoesNotMatch</Code>");
        HttpResponse<String> expired = http.send(HttpRequest.newBuilder(sigV2Presigned("GET", "/bucket/obj", SECRET,
                expires - 600)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(expired.statusCode()).isEqualTo(403);
        assertThat(expired.body()).contains("<Code>AccessDenied</Code>", "Request has expired");
        assertThat(backend.lastHeaders.get()).as("nothing reached the backend").isNull();
        HttpResponse<String> served = http.send(HttpRequest.newBuilder(sigV2Presigned("GET", "/bucket/obj", SECRET, expires))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertThat(served.statusCode()).as(served.body()).isEqualTo(200);
        JsonNode ready = ready();
        assertThat(ready.at("/governance/signatures/verified").asLong()).isEqualTo(1);
        assertThat(ready.at("/governance/signatures/refused").asLong()).isEqualTo(2);
    }

    @Test
    void aRequestTooFarFromTheClockIsRefused() throws Exception {
        HttpResponse<String> r = send(signed(SdkHttpMethod.PUT, "/bucket/late.bin", SECRET, new byte[10],
                Instant.now().minus(Duration.ofMinutes(20)), null), new byte[10]);
        assertThat(r.statusCode()).isEqualTo(403);
        assertThat(r.body()).contains("<Code>RequestTimeTooSkewed</Code>");
        assertThat(backend.received.get()).isZero();
    }

    @Test
    void aKeyWithoutASecretIsTrustedAsClaimed() throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gateway.port() + "/bucket/t"))
                .PUT(HttpRequest.BodyPublishers.ofString("trusted"))
                .header("Authorization", "AWS4-HMAC-SHA256 Credential=" + TRUSTED_KEY + "/20260101/us-east-1/s3/aws4_request,"
                        + " SignedHeaders=host, Signature=00").build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(new String(backend.lastBody.get(), java.nio.charset.StandardCharsets.UTF_8)).isEqualTo("trusted");
        assertThat(ready().at("/governance/signatures/verified").asLong()).isZero();
    }

    /**
     * Issue 24, 1: a CORS preflight ({@code OPTIONS}) to a presigned URL is S3's unauthenticated preflight: it reaches
     * the backend unverified (it was refused {@code 403 SignatureDoesNotMatch}: the URL is signed for GET), with or
     * without Origin (s3-tests' test_object_raw_get_x_amz_expires_not_expired sends none), even with anonymous
     * requests refused.
     */
    @Test
    void aCorsPreflightOfAPresignedUrlReachesTheBackendUnverified() throws Exception {
        SdkHttpRequest presigned = signed(SdkHttpMethod.GET, "/bucket/obj", SECRET, null, Instant.now(), Duration.ofMinutes(5));
        HttpResponse<String> preflight = http.send(HttpRequest.newBuilder(presigned.getUri())
                .method("OPTIONS", HttpRequest.BodyPublishers.noBody())
                .header("Origin", "https://app.example")
                .header("Access-Control-Request-Method", "GET").build(), HttpResponse.BodyHandlers.ofString());
        assertThat(preflight.statusCode()).as(preflight.body()).isEqualTo(200);
        assertThat(backend.lastHeaders.get().get("Origin")).isEqualTo("https://app.example");
        backend.lastHeaders.set(null);
        HttpResponse<String> bare = http.send(HttpRequest.newBuilder(presigned.getUri())
                .method("OPTIONS", HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(bare.statusCode()).as(bare.body()).isEqualTo(200);
        assertThat(backend.lastHeaders.get()).isNotNull();
        assertThat(ready().at("/governance/signatures/refused").asLong()).isZero();
    }

    /**
     * Issue 24, 3b: curl {@code --aws-sigv4 ... -H 'Expect:'} signs {@code expect} and sends none; the gateway sent
     * the backend {@code Expect: 100-continue}, which breaks that signature at the store (and refused it itself as a
     * missing signed header). Signed headers now go as sent: the backend gets no Expect and the whole body, without
     * the 1 s continue timeout.
     */
    @Test
    void curlSigningAnEmptyExpectIsForwardedWithoutExpect() throws Exception {
        for (String key : List.of(TRUSTED_KEY, VERIFIED_KEY)) {
            backend.lastHeaders.set(null);
            java.nio.file.Path file = java.nio.file.Files.createTempFile("levee-expect", ".bin");
            byte[] body = new byte[200 * 1024];
            java.util.Arrays.fill(body, (byte) 'x');
            java.nio.file.Files.write(file, body);
            long start = System.nanoTime();
            Process curl = new ProcessBuilder("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--aws-sigv4",
                    "aws:amz:us-east-1:s3", "--user", key + ":" + SECRET, "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD",
                    "-H", "Expect:", "-X", "PUT", "--data-binary", "@" + file,
                    "http://127.0.0.1:" + gateway.port() + "/bucket/curl.bin").redirectErrorStream(true).start();
            String out = new String(curl.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            assertThat(curl.waitFor(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
            long millis = (System.nanoTime() - start) / 1_000_000;
            java.nio.file.Files.delete(file);
            assertThat(out).as(key).isEqualTo("200");
            assertThat(backend.lastHeaders.get().get("Authorization")).contains("SignedHeaders=expect;");
            assertThat(backend.lastHeaders.get().contains("Expect")).as(key + ": no Expect added").isFalse();
            assertThat(backend.lastBody.get()).isEqualTo(body);
            assertThat(millis).as("not held for the continue timeout").isLessThan(1000);
        }
    }

    /**
     * Issue 24, 3b: with {@code expect} signed the backend is not asked for {@code 100 Continue}, so its early answer
     * comes while the body is sent; it is relayed as such (here 404 to a 4 MiB upload to a missing bucket, which the
     * stand-in answers at once and then closes with the body unread), never a 502.
     */
    @Test
    void anEarlyAnswerToAnUploadThatSignedExpectIsRelayed() throws Exception {
        java.nio.file.Path file = java.nio.file.Files.createTempFile("levee-expect", ".bin");
        java.nio.file.Files.write(file, new byte[4 << 20]);
        try {
            for (int i = 0; i < 5; i++) {
                Process curl = new ProcessBuilder("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--aws-sigv4",
                        "aws:amz:us-east-1:s3", "--user", VERIFIED_KEY + ":" + SECRET, "-H",
                        "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-H", "Expect:", "-X", "PUT", "--data-binary", "@" + file,
                        "http://127.0.0.1:" + gateway.port() + "/" + StubBackend.MISSING_BUCKET + "/big-" + i)
                        .redirectErrorStream(true).start();
                String out = new String(curl.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
                assertThat(curl.waitFor(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
                assertThat(out).as("upload %d", i).endsWith("404");
            }
        } finally {
            java.nio.file.Files.delete(file);
        }
    }
}
