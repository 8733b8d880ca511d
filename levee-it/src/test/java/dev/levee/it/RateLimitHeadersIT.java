package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.stack.EmbeddedNginx;
import dev.levee.stack.LocalStack;
import dev.levee.nginx.NginxConfig;
import dev.levee.client.ClientService;
import dev.levee.gateway.GatewayOptions;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import dev.levee.runtime.Metrics;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.http.SdkHttpResponse;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * The IETF RateLimit header fields (issue 14 item 5; docs/decisions.md, "RateLimit header fields") as an AWS SDK v2
 * client and curl see them on a {@code 503 SlowDown} through NGINX (rate.lua) and through the gateway, with values
 * that match the quota ({@code q}, {@code w}) and the remaining allowance ({@code r}, {@code t}); on accepted
 * responses only where switched on. Also shadow quotas end to end through NGINX: every request admitted, the
 * refusals the shadow quota would have made logged and counted as {@code would_reject}.
 */
class RateLimitHeadersIT {

    static final String RUN = HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt()).substring(0, 6);
    /** 4 req/s, burst 2: with 2 limiters each admits 2 at once, then one every 0.5 s. */
    static final String TIGHT = "rl-tight-" + RUN;
    static final String FRESH = "rl-fresh-" + RUN;
    static final String FRESH_GW = "rl-freshgw-" + RUN;
    static final String FRESH_LINE = "rl-freshline-" + RUN;
    static final String SHADOW = "rl-shadow-" + RUN;
    static final Pattern POLICY = Pattern.compile("\"(\\w+)\";q=(\\d+);w=(\\d+)");
    static final Pattern LIMIT = Pattern.compile("\"(\\w+)\";r=(\\d+);t=(\\d+)");

    static Stack stack;
    static ClientService service;
    static EmbeddedNginx nginx;
    static S3Client viaNginx;
    static S3Client viaNginxAll;
    /** Through NGINX with rate.lua's cosocket transport (levee-client's line endpoint), without and with fields on accept. */
    static S3Client viaLine;
    static S3Client viaLineAll;

    @BeforeAll
    static void start() throws Exception {
        assertThat(EmbeddedNginx.unavailable()).as("nginx with the lua module (scripts/test installs it)").isEmpty();
        stack = new Stack("""
                factor: 4
                default: {rate: 2000, burst: 400}
                resources:
                  %s:
                    quota: {rate: 4, burst: 2}
                  %s:
                    quota: {rate: 10, burst: 3}
                  %s:
                    quota: {rate: 10, burst: 3}
                  %s:
                    quota: {rate: 10, burst: 3}
                  %s:
                    prefixes:
                      - prefix: ""
                        quota: {rate: 2, burst: 1, mode: shadow}
                """.formatted(TIGHT, FRESH, FRESH_GW, FRESH_LINE, SHADOW), new LocalStack.Settings(2, Duration.ofSeconds(2),
                Duration.ofMillis(300), Duration.ofMillis(300), true, GatewayOptions.OnFailure.ALLOW));
        Logging.configure(new LogTarget("file", null, 0, Stack.LOG.toAbsolutePath()), "levee-it", "INFO");
        for (String b : List.of(TIGHT, FRESH, FRESH_GW, FRESH_LINE, SHADOW)) {
            stack.direct.createBucket(r -> r.bucket(b));
        }
        service = ClientService.start(stack.stack.vertx(), new HostPort("127.0.0.1", 0),
                new ClientService.Line(new HostPort("127.0.0.1", 0), ClientService.Line.DEFAULT_IDLE_TIMEOUT),
                stack.stack.client(), Metrics.newRegistry()).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        NginxConfig.Builder b = NginxConfig.builder()
                .client(new HostPort("127.0.0.1", service.port()))
                .backend(new HostPort("127.0.0.1", stack.s3.port()))
                .workers("1");
        String check = b.build().render(NginxConfig.Part.CHECK);
        String line = ", transport = \"cosocket\", host = \"127.0.0.1\", port = " + service.linePort();
        String extra = NginxRawHttp.server("127.0.0.1:{{port:all}}", "s3_backend",
                "require(\"rate\").attempt(\"/.levee\", { on_failure = \"allow\", ratelimit_on_accept = true })", check)
                // the same through the cosocket transport, to the real levee-client's line endpoint
                + NginxRawHttp.server("127.0.0.1:{{port:line}}", "s3_backend",
                        "require(\"rate\").attempt(\"/.levee\", { on_failure = \"allow\"" + line + " })", check)
                + NginxRawHttp.server("127.0.0.1:{{port:lineall}}", "s3_backend",
                        "require(\"rate\").attempt(\"/.levee\", { on_failure = \"allow\", ratelimit_on_accept = true"
                                + line + " })", check);
        nginx = EmbeddedNginx.start(b.extraHttp(extra));
        viaNginx = Stack.client(URI.create("http://127.0.0.1:" + nginx.port()));
        viaNginxAll = Stack.client(URI.create("http://127.0.0.1:" + nginx.port("all")));
        viaLine = Stack.client(URI.create("http://127.0.0.1:" + nginx.port("line")));
        viaLineAll = Stack.client(URI.create("http://127.0.0.1:" + nginx.port("lineall")));
    }

    @AfterAll
    static void stop() throws Exception {
        for (AutoCloseable c : new AutoCloseable[] {viaNginx, viaNginxAll, viaLine, viaLineAll, nginx}) {
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

    /** Sends ListObjectsV2 until one is refused (at most 100); returns the refusal. */
    static S3Exception firstRefusal(S3Client s3, String bucket) {
        for (int i = 0; i < 100; i++) {
            try {
                s3.listObjectsV2(r -> r.bucket(bucket));
            } catch (S3Exception e) {
                return e;
            }
        }
        throw new AssertionError("no refusal within 100 requests on " + bucket);
    }

    /** Asserts the fields of a SlowDown of the 4 req/s, burst 2 resource quota. */
    static void assertSlowDownFields(String policy, String limit, String retryAfter) {
        assertThat(retryAfter).as("Retry-After stays").isNotNull();
        Matcher p = POLICY.matcher(policy);
        assertThat(p.matches()).as(policy).isTrue();
        assertThat(p.group(1)).isEqualTo("resource");
        assertThat(p.group(2)).as("q: the quota's 4 req/s").isEqualTo("4");
        assertThat(p.group(3)).isEqualTo("1");
        Matcher l = LIMIT.matcher(limit);
        assertThat(l.matches()).as(limit).isTrue();
        assertThat(l.group(1)).isEqualTo("resource");
        assertThat(l.group(2)).as("r: nothing left").isEqualTo("0");
        assertThat(l.group(3)).as("t: the effective window ends with Retry-After").isEqualTo(retryAfter);
        // rate 4/s over g = 2 limiters: T = 0.5 s per limiter, so the wait is at most 0.5 s
        assertThat(Long.parseLong(retryAfter)).isEqualTo(1);
    }

    static void assertSdkSlowDown(S3Exception e) {
        assertThat(e.statusCode()).isEqualTo(503);
        assertThat(e.awsErrorDetails().errorCode()).isEqualTo("SlowDown");
        SdkHttpResponse h = e.awsErrorDetails().sdkHttpResponse();
        assertSlowDownFields(h.firstMatchingHeader("RateLimit-Policy").orElse(null),
                h.firstMatchingHeader("RateLimit").orElse(null), h.firstMatchingHeader("Retry-After").orElse(null));
    }

    /** Runs curl -i once; returns the status and the headers (lower-case names). */
    static Map<String, String> curl(String url) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("curl", "-s", "-i", "--max-time", "5", url).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
        assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
        Map<String, String> h = new LinkedHashMap<>();
        String[] lines = out.split("\r\n");
        h.put(":status", lines[0].split(" ")[1]);
        for (int i = 1; i < lines.length && !lines[i].isEmpty(); i++) {
            int c = lines[i].indexOf(':');
            h.put(lines[i].substring(0, c).trim().toLowerCase(Locale.ROOT), lines[i].substring(c + 1).trim());
        }
        return h;
    }

    static Map<String, String> curlUntilRefused(String url) throws Exception {
        for (int i = 0; i < 60; i++) {
            Map<String, String> h = curl(url);
            if (h.get(":status").equals("503")) {
                return h;
            }
        }
        throw new AssertionError("no 503 within 60 curl requests to " + url);
    }

    @Test
    void theSdkSeesTheFieldsOnASlowDownThroughNginx() {
        assertSdkSlowDown(firstRefusal(viaNginx, TIGHT));
    }

    @Test
    void curlSeesTheFieldsOnASlowDownThroughNginx() throws Exception {
        Map<String, String> h = curlUntilRefused("http://127.0.0.1:" + nginx.port() + "/" + TIGHT + "/curl-key");
        assertThat(h.get("content-type")).isEqualTo("application/xml");
        assertSlowDownFields(h.get("ratelimit-policy"), h.get("ratelimit"), h.get("retry-after"));
    }

    @Test
    void anUploadRefusedWithoutReadingItsBodyCarriesTheFieldsToo() throws Exception {
        // a request that announces a body goes through @levee_slowdown (the fields pass by variables)
        for (int i = 0; i < 60; i++) {
            Process p = new ProcessBuilder("curl", "-s", "-i", "--max-time", "5", "-X", "PUT", "--data-binary", "x",
                    "http://127.0.0.1:" + nginx.port() + "/" + TIGHT + "/up-" + i).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
            p.waitFor(10, TimeUnit.SECONDS);
            if (out.startsWith("HTTP/1.1 503")) {
                assertThat(out).contains("Connection: close").containsPattern("RateLimit-Policy: \"resource\";q=4;w=1\r\n")
                        .containsPattern("RateLimit: \"resource\";r=0;t=1\r\n").contains("Retry-After: 1\r\n");
                return;
            }
        }
        throw new AssertionError("no 503 within 60 uploads");
    }

    @Test
    void acceptedResponsesCarryTheFieldsOnlyWhereSwitchedOn() {
        // a fresh key on the limiter that decides: 3 at once, one used, so 2 left; (3 − 2) × T = 0.2 s → t = 1
        SdkHttpResponse on = viaNginxAll.headBucket(r -> r.bucket(FRESH)).sdkHttpResponse();
        assertThat(on.firstMatchingHeader("RateLimit-Policy")).hasValue("\"resource\";q=10;w=1");
        assertThat(on.firstMatchingHeader("RateLimit")).hasValue("\"resource\";r=2;t=1");
        SdkHttpResponse off = viaNginx.headBucket(r -> r.bucket(FRESH)).sdkHttpResponse();
        assertThat(off.firstMatchingHeader("RateLimit")).isEmpty();
        assertThat(off.firstMatchingHeader("RateLimit-Policy")).isEmpty();
    }

    @Test
    void theCosocketTransportGivesTheSameFields() throws Exception {
        assertSdkSlowDown(firstRefusal(viaLine, TIGHT));
        Map<String, String> h = curlUntilRefused("http://127.0.0.1:" + nginx.port("line") + "/" + TIGHT + "/curl-line");
        assertThat(h.get("content-type")).isEqualTo("application/xml");
        assertSlowDownFields(h.get("ratelimit-policy"), h.get("ratelimit"), h.get("retry-after"));
        // a fresh key of its own on the limiter that decides: 3 at once, one used, so 2 left; t = 1
        SdkHttpResponse on = viaLineAll.headBucket(r -> r.bucket(FRESH_LINE)).sdkHttpResponse();
        assertThat(on.firstMatchingHeader("RateLimit-Policy")).hasValue("\"resource\";q=10;w=1");
        assertThat(on.firstMatchingHeader("RateLimit")).hasValue("\"resource\";r=2;t=1");
        SdkHttpResponse off = viaLine.headBucket(r -> r.bucket(FRESH_LINE)).sdkHttpResponse();
        assertThat(off.firstMatchingHeader("RateLimit")).isEmpty();
        assertThat(off.firstMatchingHeader("RateLimit-Policy")).isEmpty();
    }

    @Test
    void anUploadRefusedThroughTheCosocketTransportCarriesTheFieldsToo() throws Exception {
        for (int i = 0; i < 60; i++) {
            Process p = new ProcessBuilder("curl", "-s", "-i", "--max-time", "5", "-X", "PUT", "--data-binary", "x",
                    "http://127.0.0.1:" + nginx.port("line") + "/" + TIGHT + "/up-line-" + i).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
            p.waitFor(10, TimeUnit.SECONDS);
            if (out.startsWith("HTTP/1.1 503")) {
                assertThat(out).contains("Connection: close").containsPattern("RateLimit-Policy: \"resource\";q=4;w=1\r\n")
                        .containsPattern("RateLimit: \"resource\";r=0;t=1\r\n").contains("Retry-After: 1\r\n");
                return;
            }
        }
        throw new AssertionError("no 503 within 60 uploads");
    }

    @Test
    void theSdkAndCurlSeeTheFieldsOnASlowDownFromTheGateway() throws Exception {
        assertSdkSlowDown(firstRefusal(stack.gateway, TIGHT));
        Map<String, String> h = curlUntilRefused("http://127.0.0.1:" + stack.stack.gateway().port() + "/" + TIGHT + "/k");
        assertSlowDownFields(h.get("ratelimit-policy"), h.get("ratelimit"), h.get("retry-after"));
        // off by default on accepted responses
        assertThat(stack.gateway.headBucket(r -> r.bucket(FRESH_GW)).sdkHttpResponse().firstMatchingHeader("RateLimit"))
                .isEmpty();
    }

    @Test
    void aShadowQuotaAdmitsEveryRequestAndLogsItsWouldRejects() throws Exception {
        int n = 30;
        for (int i = 0; i < n; i++) {
            SdkHttpResponse r = viaNginx.headBucket(b -> b.bucket(SHADOW)).sdkHttpResponse();
            assertThat(r.statusCode()).isEqualTo(200);
        }
        // every decision of the run for this bucket is in the limiters' log, one line per check
        List<String> lines = new ArrayList<>();
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> {
            lines.clear();
            for (String l : Files.readAllLines(Stack.LOG, StandardCharsets.UTF_8)) {
                if (l.contains(" decision result=") && l.contains(" resource=" + SHADOW + " ")) {
                    lines.add(l);
                }
            }
            return lines.size() >= n;
        });
        assertThat(lines).hasSize(n).allMatch(l -> l.contains(" decision result=accepted ") && l.contains(" mode=shadow "));
        long wouldReject = lines.stream().filter(l -> l.contains(" shadow=would_reject ")).count();
        // 2 req/s over 2 limiters with burst 1: within the few hundred ms of the loop most are refused by the trial
        assertThat(wouldReject).isBetween(1L, (long) n - 2);
        assertThat(lines).allMatch(l -> l.contains(" level=default "));
    }
}
