package dev.levee.cli;

import dev.levee.limiter.LimiterService;
import dev.levee.config.QuotaSource;
import dev.levee.roles.RoleAssembler;
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
            description = "cap of the limit-key table in key slots of 256 bytes of heap: that many keys of up to"
                    + " ~80 characters, fewer longer ones; about 256 MiB per million (default: ${DEFAULT-VALUE})")
    long maxKeys;

    @Option(names = "--quotas", description = "quota file, single-file form, reloaded on change"
            + " (default: embedded default quotas; ignored with --etcd)")
    Path quotas;

    @Mixin
    EtcdOptions etcd = new EtcdOptions();

    @Option(names = "--lease-ttl", converter = Converters.DurationConverter.class, defaultValue = "5s",
            description = "etcd lease TTL of this limiter's membership (default: ${DEFAULT-VALUE})")
    Duration leaseTtl;

    /** A duration that may also be zero ({@code 0}, {@code 0s}, {@code 0ms}): "none". */
    static final class OptionalDurationConverter implements picocli.CommandLine.ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            return Converters.parseDuration(value, true);
        }
    }

    @Option(names = "--warmup", converter = OptionalDurationConverter.class, defaultValue = "3s",
            description = "longest time spent warming the decision path with self-checks on loopback before the"
                    + " limiter registers or heartbeats, 0 for none (default: ${DEFAULT-VALUE})")
    Duration warmup;

    @Option(names = "--drain-grace", converter = OptionalDurationConverter.class, defaultValue = "2s",
            description = "on SIGTERM, how long the limiter keeps answering after leaving the membership, so that"
                    + " clients move away; at least the clients' --refresh, 0 for none (default: ${DEFAULT-VALUE})")
    Duration drainGrace;

    @Option(names = "--shutdown-deadline", converter = Converters.DurationConverter.class, defaultValue = "5s",
            description = "on SIGTERM, how long checks in flight get to be answered before connections close"
                    + " (default: ${DEFAULT-VALUE})")
    Duration shutdownTimeout;

    @Option(names = "--warn-interval", converter = Converters.DurationConverter.class, defaultValue = "10s",
            description = "how often heartbeats that keep failing are warned about again (/health 503 meanwhile)"
                    + " (default: ${DEFAULT-VALUE})")
    Duration warnInterval;

    @Mixin
    StatsOptions stats = new StatsOptions();

    /** The hot-resources statistics' flags (issue 14), shared with {@code levee bench limiter}. */
    static final class StatsOptions {
        @Option(names = "--stats", negatable = true, defaultValue = "true", fallbackValue = "true",
                description = "keep hot-resources statistics, served at GET /v1/stats (default: on; --no-stats: off)")
        boolean enabled = true;

        @Option(names = "--stats-top", defaultValue = "20",
                description = "entries listed per window by offered and by refused, 1-1000 (default: ${DEFAULT-VALUE})")
        int top = 20;

        @Option(names = "--stats-windows", split = ",", converter = Converters.DurationConverter.class,
                defaultValue = "10s,60s",
                description = "sliding windows of the statistics, whole seconds up to 1h (default: ${DEFAULT-VALUE})")
        java.util.List<Duration> windows = java.util.List.of(Duration.ofSeconds(10), Duration.ofSeconds(60));

        @Option(names = "--stats-sketch-size", defaultValue = "1024",
                description = "entries each heavy-hitters sketch tracks exactly before its counts carry an error"
                        + " bound, a power of two 16-65536; memory about 61 x 3 x 90 bytes per entry with the"
                        + " default windows (default: ${DEFAULT-VALUE})")
        int sketchSize = 1024;

        dev.levee.limiter.DecisionStats.Options options() {
            return new dev.levee.limiter.DecisionStats.Options(enabled, top, windows, sketchSize);
        }
    }

    @Override
    public Integer call() {
        dev.levee.limiter.DecisionStats.Options statsOptions = stats.options(); // bad values: refused before starting
        common.apply("levee-limiter");
        io.etcd.jetcd.Client client = etcd.enabled() ? etcd.client() : null;
        QuotaSource source = Quotas.source(client, etcd, quotas);
        LimiterService.Options options = LimiterService.Options.builder(id).listen(listen).advertise(advertise)
                .observer(client != null ? null : observer).heartbeat(heartbeat).maxKeys(maxKeys).warmup(warmup)
                .drainGrace(drainGrace).shutdownTimeout(shutdownTimeout).warnInterval(warnInterval).build();
        Vertx vertx = dev.levee.runtime.Http.vertx();
        MeterRegistry registry = Metrics.newRegistry();
        // a limiter joins the membership only with a configuration in force (issue 22): RoleAssembler.startLimiter
        RoleAssembler.Limiter limiter = Daemon.await(RoleAssembler.startLimiter(vertx, options, source,
                        client != null ? new RoleAssembler.EtcdMember(client, etcd.prefix, leaseTtl.toSeconds()) : null,
                        SystemTicker.INSTANCE, registry, statsOptions),
                "limiter could not start on " + listen);
        common.announce("levee limiter " + id + " listening on " + limiter.service().address()
                + (client != null ? " (quotas and membership in etcd " + etcd.endpoints + ")" : ""));
        // leave first (revoke the lease; stop() stops heartbeats), then drain, then close
        return Daemon.runUntilStopped(vertx, "limiter", drainGrace.plus(shutdownTimeout).plusSeconds(5),
                () -> limiter.stop().eventually(() -> {
                    source.close();
                    if (client != null) {
                        client.close();
                    }
                    return io.vertx.core.Future.succeededFuture();
                }));
    }
}
