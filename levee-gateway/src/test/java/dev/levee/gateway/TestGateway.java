package dev.levee.gateway;

import dev.levee.runtime.HostPort;
import dev.levee.runtime.SystemTicker;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

/**
 * Test fixture: a {@link StubBackend} and a gateway in front of it on free loopback ports, with the
 * check off ({@code enforce=false}), 30 s backend timeout and 16 backend connections; closed in
 * reverse order. A test holds it in an {@code @AutoClose TestGateway rig;} field.
 */
final class TestGateway implements AutoCloseable {

    final StubBackend backend;
    final Vertx vertx;
    final GatewayService gateway;

    private TestGateway(StubBackend backend, Vertx vertx, GatewayService gateway) {
        this.backend = backend;
        this.vertx = vertx;
        this.gateway = gateway;
    }

    /**
     * The {@code Authorization} header of a request from access key {@code key}: SigV4 in form, with a
     * placeholder signature (a key without a secret is trusted by its claim, see {@link PrincipalDirectory}).
     */
    static String auth(String key) {
        return "AWS4-HMAC-SHA256 Credential=" + key + "/20260101/us-east-1/s3/aws4_request,"
                + " SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=0123";
    }

    /** Governance with one principal, {@code svc}, of access key {@code key}; rates left to the caller. */
    static GovernanceSettings.Builder onePrincipal(String key) {
        return GovernanceSettings.builder()
                .principals(new PrincipalDirectory(List.of(PrincipalDirectory.Account.of("svc", key))));
    }

    /**
     * Starts the backend and a gateway whose options {@code configure} completes (governance,
     * health token).
     */
    static TestGateway start(UnaryOperator<GatewayOptions.Builder> configure) throws Exception {
        StubBackend backend = new StubBackend();
        Vertx vertx = Vertx.vertx();
        HostPort any = new HostPort("127.0.0.1", 0);
        GatewayOptions o = configure.apply(GatewayOptions.builder(new HostPort("127.0.0.1", backend.port())).listen(any)
                .admin(any).enforce(false).backendTimeout(Duration.ofSeconds(30)).maxConnections(16)).build();
        GatewayService gateway = GatewayService.start(vertx, o, null, SystemTicker.INSTANCE, Clock.systemUTC(),
                new SimpleMeterRegistry()).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        return new TestGateway(backend, vertx, gateway);
    }

    /**
     * Starts a governed gateway whose one principal ({@link #onePrincipal}) may upload and download
     * {@code principalRate} bytes per second each.
     */
    static TestGateway governed(String key, long principalRate) throws Exception {
        GovernanceSettings g = onePrincipal(key).principalUploadRate(principalRate).principalDownloadRate(principalRate)
                .build();
        return start(o -> o.governance(g));
    }

    @Override
    public void close() throws java.util.concurrent.ExecutionException, java.util.concurrent.TimeoutException {
        try {
            gateway.stop(Duration.ofSeconds(1)).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
            vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) { // close() throws no InterruptedException (AutoCloseable's advice)
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while the test gateway stops", e);
        }
        backend.close();
    }
}
