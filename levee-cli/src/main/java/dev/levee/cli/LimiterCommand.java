package dev.levee.cli;

import dev.levee.limiter.LimiterService;
import dev.levee.quota.QuotaConfig;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Vertx;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code levee limiter}: one limiter of the cluster. */
@Command(name = "limiter", mixinStandardHelpOptions = true,
        description = "Run a limiter: decides checks with GCRA on quotas divided by the group size.")
final class LimiterCommand implements Callable<Integer> {

    @Mixin
    CommonOptions common = new CommonOptions();

    @Option(names = "--id", required = true, description = "stable limiter id (HRW member id)")
    String id;

    @Option(names = "--listen", converter = Converters.HostPortConverter.class, defaultValue = "127.0.0.1:7100",
            description = "address to bind (default: ${DEFAULT-VALUE})")
    HostPort listen;

    @Option(names = "--advertise", converter = Converters.HostPortConverter.class,
            description = "address clients use to reach this limiter (default: the bound address)")
    HostPort advertise;

    @Option(names = "--observer", converter = Converters.HostPortConverter.class, defaultValue = "127.0.0.1:7000",
            description = "observer to send heartbeats to (default: ${DEFAULT-VALUE})")
    HostPort observer;

    @Option(names = "--heartbeat", converter = Converters.DurationConverter.class, defaultValue = "1s",
            description = "heartbeat interval (default: ${DEFAULT-VALUE})")
    Duration heartbeat;

    @Option(names = "--max-keys", defaultValue = "1000000",
            description = "hard cap of limit keys held in memory (default: ${DEFAULT-VALUE})")
    long maxKeys;

    @Option(names = "--quotas", description = "quota file, single-file form (default: embedded default quotas)")
    Path quotas;

    @Override
    public Integer call() {
        QuotaConfig cfg = Quotas.load(quotas);
        LimiterService.Options options = new LimiterService.Options(id, listen, advertise, observer, heartbeat, maxKeys);
        common.apply("levee-limiter");
        Vertx vertx = Vertx.vertx();
        MeterRegistry registry = Metrics.newRegistry();
        LimiterService s = Daemon.await(LimiterService.start(vertx, options, () -> cfg, SystemTicker.INSTANCE, registry),
                "limiter could not start on " + listen);
        System.err.println("levee limiter " + id + " listening on " + s.address());
        return Daemon.runUntilStopped(vertx, "limiter", s::stop);
    }
}
