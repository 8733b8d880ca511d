package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.levee.limiter.LimiterService;
import dev.levee.stack.LocalStack;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * The whole request-rate path in one JVM on loopback (issue 2): S3Proxy backend, observer, four
 * limiters with factor 4, client, gateway, and the AWS SDK v2 as the client.
 */
class RateLimitIT {

    static final String QUOTAS = """
            factor: 4
            default: {rate: 1000, burst: 100}
            resources:
              limited:
                quota: {rate: 50, burst: 5}
              killtest:
                quota: {rate: 40, burst: 4}
              roomy:
                quota: {rate: 10000, burst: 1000}
              longkeys:
                quota: {rate: 2, burst: 1}
            """;

    static Stack stack;

    @BeforeAll
    static void start() {
        // on_failure=deny: a check that fails under load is refused, so what the bound counts is what the
        // limiters admitted (with allow, an overloaded machine would let failed checks through unlimited)
        stack = new Stack(QUOTAS, new LocalStack.Settings(4, Duration.ofSeconds(2), Duration.ofMillis(300),
                Duration.ofMillis(300), true, dev.levee.gateway.GatewayOptions.OnFailure.DENY));
        for (String b : List.of("limited", "killtest", "roomy", "longkeys")) {
            stack.direct.createBucket(r -> r.bucket(b));
        }
        // warm the JIT on every path (SDK, gateway, client, limiters, backend) before measuring rates
        try {
            Load.run(150, 2, seq -> outcome(() -> stack.gateway.listObjectsV2(b -> b.bucket("roomy").maxKeys(1))));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @AfterAll
    static void stop() {
        if (stack != null) {
            stack.close();
        }
    }

    static Load.Outcome outcome(Runnable call) {
        try {
            call.run();
            return Load.Outcome.ACCEPTED;
        } catch (S3Exception e) {
            if (e.statusCode() == 503 && "SlowDown".equals(e.awsErrorDetails().errorCode())) {
                return Load.Outcome.SLOWDOWN;
            }
            System.err.println("unexpected S3 error: " + e.statusCode() + " " + e.awsErrorDetails().errorCode());
            return Load.Outcome.OTHER;
        } catch (RuntimeException e) {
            System.err.println("unexpected failure: " + e);
            return Load.Outcome.OTHER;
        }
    }

    @Test
    void bucketQuotaHoldsUnderFourTimesTheLoad() throws Exception {
        // let any burst from earlier requests refill
        byte[] body = "x".repeat(100).getBytes(StandardCharsets.UTF_8);
        Load.Result r = Load.run(200, 5, seq -> outcome(() -> {
            if (seq % 2 == 0) {
                stack.gateway.putObject(b -> b.bucket("limited").key("k-" + seq), RequestBody.fromBytes(body));
            } else {
                stack.gateway.listObjectsV2(b -> b.bucket("limited").maxKeys(1));
            }
        }));
        int g = 4;
        double t = r.seconds();
        double upper = 50 * t + g * 5 + g;
        System.out.printf("limited: offered %d in %.2f s, accepted %d (%.1f/s), SlowDown %d, other %d; bound %.0f, floor %.0f%n",
                r.offered(), t, r.accepted(), r.accepted() / t, r.slowDown(), r.other(), upper, 0.8 * 50 * t);
        assertThat(r.other()).as("requests failing with anything but SlowDown").isZero();
        assertThat((double) r.accepted()).isLessThanOrEqualTo(upper);
        assertThat((double) r.accepted()).isGreaterThanOrEqualTo(0.8 * 50 * t);
        assertThat(r.slowDown()).isPositive();
    }

    @Test
    void refusalIsSlowDownWithRetryAfter() {
        S3Exception refused = null;
        for (int i = 0; i < 200 && refused == null; i++) {
            try {
                stack.gateway.listObjectsV2(b -> b.bucket("killtest"));
            } catch (S3Exception e) {
                refused = e;
            }
        }
        assertThat(refused).isNotNull();
        assertThat(refused.statusCode()).isEqualTo(503);
        assertThat(refused.awsErrorDetails().errorCode()).isEqualTo("SlowDown");
        assertThat(refused.awsErrorDetails().sdkHttpResponse().firstMatchingHeader("Retry-After"))
                .hasValueSatisfying(v -> assertThat(Long.parseLong(v)).isGreaterThanOrEqualTo(1));
        // a refused HEAD has no body (so no error code for the SDK) but the same status and Retry-After
        S3Exception head = null;
        for (int i = 0; i < 200 && head == null; i++) {
            try {
                stack.gateway.headBucket(b -> b.bucket("killtest"));
            } catch (S3Exception e) {
                head = e;
            }
        }
        assertThat(head).isNotNull();
        assertThat(head.statusCode()).isEqualTo(503);
        assertThat(head.awsErrorDetails().sdkHttpResponse().firstMatchingHeader("Retry-After")).isPresent();
    }

    /** Regression: a key over 1024 bytes used to make the check fail, and the gateway let it through. */
    @Test
    void keysLongerThanTheS3LimitAreStillCounted() throws Exception {
        var http = java.net.http.HttpClient.newHttpClient();
        var uri = java.net.URI.create("http://127.0.0.1:" + stack.stack.gateway().port() + "/longkeys/" + "a".repeat(1100));
        int slow = 0;
        for (int i = 0; i < 20; i++) {
            var r = http.send(java.net.http.HttpRequest.newBuilder(uri).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() == 503 && r.body().contains("<Code>SlowDown</Code>")) {
                slow++;
            }
        }
        // 2 req/s, burst 1 per limiter, 4 limiters: at most a handful pass in the ~1 s this takes
        assertThat(slow).isGreaterThanOrEqualTo(10);
    }

    @Test
    void objectsWrittenUnderQuotaReadBackByteIdentical() {
        Random rnd = new Random(42);
        for (int i = 0; i < 10; i++) {
            byte[] data = new byte[1 + rnd.nextInt(3 * 1024 * 1024)];
            rnd.nextBytes(data);
            String key = "dir/ü nicode/obj+" + i + " %20.bin";
            stack.gateway.putObject(b -> b.bucket("roomy").key(key), RequestBody.fromBytes(data));
            byte[] back = stack.gateway.getObjectAsBytes(b -> b.bucket("roomy").key(key)).asByteArray();
            assertThat(back).isEqualTo(data);
            byte[] direct = stack.direct.getObjectAsBytes(b -> b.bucket("roomy").key(key)).asByteArray();
            assertThat(direct).isEqualTo(data);
        }
    }

    @Test
    void killingALimiterMidRunFailsNothingButSlowDown() throws Exception {
        LimiterService victim = stack.stack.limiters().get(3);
        List<Load.Outcome> seen = Collections.synchronizedList(new ArrayList<>());
        Thread killer = Thread.ofVirtual().start(() -> {
            try {
                TimeUnit.MILLISECONDS.sleep(1500); // kill at a fixed point of the run, not for synchronisation
                victim.kill().toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        long killedAt = System.nanoTime();
        Load.Result r = Load.run(100, 5, seq -> {
            Load.Outcome o = outcome(() -> stack.gateway.listObjectsV2(b -> b.bucket("killtest").maxKeys(1)));
            seen.add(o);
            return o;
        });
        killer.join();
        System.out.printf("killtest: accepted %d, SlowDown %d, other %d%n", r.accepted(), r.slowDown(), r.other());
        assertThat(r.other()).as("requests failing with anything but SlowDown").isZero();
        assertThat(r.accepted()).isPositive();
        // the observer drops the dead limiter within its TTL (2 s) after its last heartbeat
        await().atMost(Duration.ofSeconds(4)).pollInterval(Duration.ofMillis(50)).until(() ->
                stack.stack.observer().membership().view().limiters().stream().noneMatch(m -> m.id().equals(victim.id())));
        assertThat(System.nanoTime() - killedAt).isPositive();
    }
}
