package dev.levee.cli;

import dev.levee.client.LeveeClient;
import dev.levee.gateway.GatewayService;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code levee gateway}: streaming S3 reverse proxy. */
@Command(name = "gateway", mixinStandardHelpOptions = true,
        description = "Run the S3 gateway: a streaming reverse proxy to an S3 backend, checking each request"
                + " with the limiter cluster unless --no-enforce (NGINX checks).")
final class GatewayCommand implements Callable<Integer> {

    @Mixin
    CommonOptions common = new CommonOptions();

    @Option(names = "--listen", converter = Converters.HostPortConverter.class, defaultValue = "127.0.0.1:9000",
            description = "S3 listener (default: ${DEFAULT-VALUE})")
    HostPort listen;

    @Option(names = "--admin", converter = Converters.HostPortConverter.class, defaultValue = "127.0.0.1:9001",
            description = "admin listener for /health and /metrics (default: ${DEFAULT-VALUE})")
    HostPort admin;

    @Option(names = "--backend", converter = Converters.HostPortConverter.class, required = true,
            description = "S3 backend HOST:PORT (HTTP)")
    HostPort backend;

    @Option(names = "--enforce", negatable = true, defaultValue = "true",
            description = "check each request with the limiter cluster (default: ${DEFAULT-VALUE})")
    boolean enforce;

    @Option(names = "--on-failure", defaultValue = "ALLOW",
            description = "when no limiter answers: ALLOW or DENY (default: ${DEFAULT-VALUE})")
    GatewayService.OnFailure onFailure;

    @Option(names = "--observer", converter = Converters.HostPortConverter.class, defaultValue = "127.0.0.1:7000",
            description = "observer to poll (default: ${DEFAULT-VALUE})")
    HostPort observer;

    @Option(names = "--check-timeout", converter = Converters.DurationConverter.class, defaultValue = "250ms",
            description = "time one limiter may take (default: ${DEFAULT-VALUE})")
    Duration checkTimeout;

    @Option(names = "--backend-timeout", converter = Converters.DurationConverter.class, defaultValue = "60s",
            description = "idle timeout towards the backend (default: ${DEFAULT-VALUE})")
    Duration backendTimeout;

    @Option(names = "--base-domain", split = ",", description = "base domains for virtual-hosted style requests")
    List<String> baseDomains = List.of();

    @Override
    public Integer call() {
        GatewayService.Options options = new GatewayService.Options(listen, admin, backend, enforce, onFailure,
                backendTimeout, 256);
        common.apply("levee-gateway");
        Vertx vertx = Vertx.vertx();
        MeterRegistry registry = Metrics.newRegistry();
        LeveeClient client = enforce ? Daemon.await(LeveeClient.start(vertx, new LeveeClient.Options(observer,
                Duration.ofSeconds(1), checkTimeout, Duration.ofSeconds(2), baseDomains), SystemTicker.INSTANCE,
                registry), "client") : null;
        GatewayService g = Daemon.await(GatewayService.start(vertx, options, client, registry),
                "gateway could not start on " + listen);
        System.err.println("levee gateway listening on " + listen.host() + ":" + g.port() + " -> " + backend);
        return Daemon.runUntilStopped(vertx, "gateway", () -> g.stop(Duration.ofSeconds(10))
                .compose(v -> client == null ? Future.succeededFuture() : client.stop()));
    }
}
