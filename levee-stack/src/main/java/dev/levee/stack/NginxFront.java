package dev.levee.stack;

import dev.levee.client.ClientService;
import dev.levee.nginx.NginxConfig;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * NGINX as the enforcement point in front of a {@link LocalStack}'s gateway (docs/design.md §1, §9): the
 * levee-client endpoint ({@code GET /v1/s3check}) over the stack's client library, and an
 * {@link EmbeddedNginx} whose accepted requests go to the gateway. Start the stack with
 * {@code enforce = false} so that no request is checked twice.
 */
public final class NginxFront implements AutoCloseable {

    private final ClientService endpoint;
    private final EmbeddedNginx nginx;

    private NginxFront(ClientService endpoint, EmbeddedNginx nginx) {
        this.endpoint = endpoint;
        this.nginx = nginx;
    }

    /**
     * Starts the levee-client endpoint and NGINX.
     *
     * @param stack  the running stack; NGINX proxies accepted requests to its gateway
     * @param logDir directory for NGINX's access and error logs, kept after close
     * @return the running front
     * @throws IllegalStateException when nginx or its lua module is missing, or either does not start
     */
    public static NginxFront start(LocalStack stack, Path logDir) {
        EmbeddedNginx.unavailable().ifPresent(reason -> {
            throw new IllegalStateException(reason);
        });
        ClientService endpoint;
        try {
            endpoint = ClientService.start(stack.vertx(), new HostPort("127.0.0.1", 0), stack.client(),
                    Metrics.newRegistry()).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("levee-client endpoint did not start: " + e.getMessage(), e);
        }
        try {
            EmbeddedNginx nginx = EmbeddedNginx.start(NginxConfig.builder()
                    .client(new HostPort("127.0.0.1", endpoint.port()))
                    .backend(new HostPort("127.0.0.1", stack.gateway().port()))
                    .workers("1"), logDir);
            return new NginxFront(endpoint, nginx);
        } catch (RuntimeException e) {
            endpoint.stop();
            throw e;
        }
    }

    /** Returns NGINX's S3 port on 127.0.0.1. */
    public int port() {
        return nginx.port();
    }

    /** Returns the levee-client endpoint's port on 127.0.0.1. */
    public int clientPort() {
        return endpoint.port();
    }

    /** Returns NGINX's access log (one {@code levee=accepted|rejected|failed} per request). */
    public Path accessLog() {
        return nginx.accessLog();
    }

    /** Returns NGINX. */
    public EmbeddedNginx nginx() {
        return nginx;
    }

    /** Stops NGINX, then the endpoint. */
    @Override
    public void close() {
        nginx.close();
        try {
            endpoint.stop().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            // stopping anyway
        }
    }
}
