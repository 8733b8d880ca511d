package dev.levee.gateway;

import dev.levee.runtime.HostPort;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

/**
 * Test fixture: a {@link StubBackend} and a gateway in front of it on free loopback ports, with the
 * check off ({@code enforce=false}), 30 s backend timeout and 16 backend connections; closed in
 * reverse order.
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
     * Starts the backend and a gateway whose options {@code configure} completes (governance,
     * health token).
     */
    static TestGateway start(UnaryOperator<GatewayService.Options> configure) throws Exception {
        StubBackend backend = new StubBackend();
        Vertx vertx = Vertx.vertx();
        HostPort any = new HostPort("127.0.0.1", 0);
        GatewayService.Options o = configure.apply(new GatewayService.Options(any, any,
                new HostPort("127.0.0.1", backend.port()), false, GatewayService.OnFailure.ALLOW, Duration.ofSeconds(30), 16));
        GatewayService gateway = GatewayService.start(vertx, o, null, new SimpleMeterRegistry()).toCompletionStage()
                .toCompletableFuture().get(10, TimeUnit.SECONDS);
        return new TestGateway(backend, vertx, gateway);
    }

    @Override
    public void close() throws Exception {
        gateway.stop(Duration.ofSeconds(1)).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        backend.close();
    }
}
