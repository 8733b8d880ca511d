package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.levee.client.ClientDecision;
import dev.levee.s3.S3Request;
import dev.levee.stack.LocalStack;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** With the observer gone, clients keep the last good limiter list and decisions go on (docs/design.md §7). */
class ObserverOutageIT {

    @Test
    void clientKeepsTheLastGoodListWhenTheObserverIsUnreachable() throws Exception {
        try (Stack s = new Stack("""
                factor: 2
                default: {rate: 1000, burst: 100}
                """, new LocalStack.Settings(3, Duration.ofSeconds(2), Duration.ofMillis(200), Duration.ofMillis(200), true,
                dev.levee.gateway.GatewayOptions.OnFailure.DENY))) {
            s.direct.createBucket(b -> b.bucket("outage"));
            var client = s.stack.client();
            assertThat(client.view().limiters()).hasSize(3);
            long revision = client.view().revision();
            s.stack.observer().stop().toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
            await().atMost(Duration.ofSeconds(3)).until(() -> !client.observerReachable());
            assertThat(client.view().limiters()).hasSize(3);
            assertThat(client.view().revision()).isEqualTo(revision);
            ClientDecision d = client.check(S3Request.fromRequestUri("GET", "127.0.0.1", "/outage/k", null))
                    .toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
            assertThat(d.result()).isEqualTo(ClientDecision.Result.ACCEPTED);
            // on_failure is DENY here: a request that passes proves the check itself succeeded
            s.gateway.putObject(b -> b.bucket("outage").key("k"), software.amazon.awssdk.core.sync.RequestBody.fromString("x"));
            assertThat(s.gateway.getObjectAsBytes(b -> b.bucket("outage").key("k")).asUtf8String()).isEqualTo("x");
        }
    }

    @Test
    void limiterExposesPrometheusMetrics() throws Exception {
        try (Stack s = new Stack("default: {rate: 1000, burst: 100}\n", new LocalStack.Settings(1, Duration.ofSeconds(2),
                Duration.ofMillis(200), Duration.ofMillis(200), true, dev.levee.gateway.GatewayOptions.OnFailure.ALLOW))) {
            s.direct.createBucket(b -> b.bucket("metered"));
            s.gateway.listObjectsV2(b -> b.bucket("metered"));
            var limiter = s.stack.limiters().get(0).address();
            HttpResponse<String> m = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                    URI.create("http://" + limiter + "/metrics")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(m.statusCode()).isEqualTo(200);
            assertThat(m.body()).contains("levee_limiter_decisions_total{level=\"default\",result=\"accepted\"}")
                    .contains("levee_client_results_total{result=\"accepted\"}")
                    .contains("levee_gateway_requests_total{result=\"accepted\"}")
                    .contains("jvm_memory_used_bytes");
        }
    }
}
