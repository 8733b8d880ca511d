package dev.levee.cli;

import dev.levee.observer.ObserverService;
import dev.levee.roles.RoleAssembler;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Vertx;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code levee observer}: serves the list of active limiters. */
@Command(name = "observer", mixinStandardHelpOptions = true,
        description = "Run the observer: limiter membership from heartbeats, served as GET /v1/limiters.")
final class ObserverCommand implements Callable<Integer> {

    @Mixin
    CommonOptions common = new CommonOptions();

    @Option(names = "--listen", converter = Converters.HostPortConverter.class, defaultValue = "127.0.0.1:7000",
            description = "address to bind (default: ${DEFAULT-VALUE})")
    HostPort listen;

    @Option(names = "--ttl", converter = Converters.DurationConverter.class, defaultValue = "3s",
            description = "drop a limiter after this long without heartbeat (default: ${DEFAULT-VALUE})")
    Duration ttl;

    @Option(names = "--factor", description = "group factor DF (default: the factor of --quotas)")
    Integer factor;

    @Option(names = "--quotas", description = "quota file to read the factor from (default: embedded default quotas)")
    Path quotas;

    @Option(names = "--max-limiters", defaultValue = "1024", description = "most limiters held (default: ${DEFAULT-VALUE})")
    int maxLimiters;

    @Mixin
    EtcdOptions etcd = new EtcdOptions();

    @Option(names = "--shutdown-deadline", converter = Converters.DurationConverter.class, defaultValue = "5s",
            description = "on SIGTERM, how long requests in flight get to be answered before connections close"
                    + " (default: ${DEFAULT-VALUE})")
    Duration shutdownTimeout;

    @Option(names = "--stats-timeout", converter = Converters.DurationConverter.class, defaultValue = "1s",
            description = "GET /v1/stats: longest wait for each limiter's statistics; a limiter that does not answer"
                    + " in time is listed as not answered (default: ${DEFAULT-VALUE})")
    Duration statsTimeout;

    @Option(names = "--ui", negatable = true, defaultValue = "false",
            description = "serve the live page of the hot resources at http://<listen>/ui/ (table, plots of the last"
                    + " minutes, membership, config revision), on the observer's listener (default: off)")
    boolean ui;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    /** Whether the etcd endpoints came from the environment, not from --etcd. */
    private boolean etcdFromEnvironment() {
        return spec != null && !spec.commandLine().getParseResult().hasMatchedOption("--etcd");
    }

    @Override
    public Integer call() {
        if (statsTimeout.isNegative() || statsTimeout.isZero()) {
            throw new UsageException("--stats-timeout must be positive, got " + statsTimeout);
        }
        if (etcd.enabled()) {
            // with etcd the membership is etcd's leases and the factor the quotas' in etcd: these would be ignored
            // refused beside --etcd; only warned about when etcd comes from LEVEE_ETCD_ENDPOINTS (a packaged observer's
            // args file names --quotas for the sites without etcd, and its env file may set the variable)
            for (String name : List.of("--factor", "--quotas", "--ttl", "--max-limiters")) {
                if (spec != null && spec.commandLine().getParseResult().hasMatchedOption(name)) {
                    String why = name + " is not used with etcd (" + (etcdFromEnvironment() ? "LEVEE_ETCD_ENDPOINTS is set"
                            : "--etcd") + "): the factor is the quotas' in etcd (levee quota factor) and a limiter is"
                            + " listed while its etcd lease lives (limiter --lease-ttl)";
                    if (!etcdFromEnvironment()) {
                        throw new picocli.CommandLine.ParameterException(spec.commandLine(), why + "; leave it out");
                    }
                    System.err.println("levee observer: " + why + "; ignored");
                }
            }
            common.apply("levee-observer");
            io.etcd.jetcd.Client client = etcd.client();
            dev.levee.etcd.EtcdQuotaSource source = RoleAssembler.etcdQuotaSource(client, etcd.prefix, etcd.maxValueBytes,
                    SystemTicker.INSTANCE);
            Vertx vertx = dev.levee.runtime.Http.vertx();
            MeterRegistry registry = Metrics.newRegistry();
            // issue 22: refused values in etcd are reported (log by the source, /health 503, these metrics); the
            // list is served with every valid key, and refused only while no factor is known
            RoleAssembler.registerConfigMetrics(source, registry);
            RoleAssembler.EtcdObserver o = Daemon.await(RoleAssembler.startEtcdObserver(vertx, listen, client, etcd.prefix,
                    source, SystemTicker.INSTANCE, registry, statsTimeout, page()), "observer could not start on " + listen);
            ObserverService s = o.service();
            common.announce("levee observer listening on " + listen.host() + ":" + s.port() + " (membership in etcd)"
                    + page(s));
            return Daemon.runUntilStopped(vertx, "observer", shutdownTimeout.plusSeconds(5),
                    () -> s.stop(shutdownTimeout).eventually(() -> {
                        o.close();
                        source.close();
                        client.close();
                        return io.vertx.core.Future.succeededFuture();
                    }));
        }
        if (factor != null && factor < 1) {
            throw new UsageException("--factor must be ≥ 1, got " + factor);
        }
        if (maxLimiters < 1) {
            throw new UsageException("--max-limiters must be ≥ 1, got " + maxLimiters);
        }
        int df = factor != null ? factor : Quotas.load(quotas).factor();
        ObserverService.Options options = new ObserverService.Options(listen, ttl, df, maxLimiters);
        common.apply("levee-observer");
        Vertx vertx = dev.levee.runtime.Http.vertx();
        MeterRegistry registry = Metrics.newRegistry();
        ObserverService s = Daemon.await(ObserverService.start(vertx, options, SystemTicker.INSTANCE, registry, statsTimeout,
                page()), "observer could not start on " + listen);
        common.announce("levee observer listening on " + listen.host() + ":" + s.port() + " (factor " + df + ")"
                + page(s));
        return Daemon.runUntilStopped(vertx, "observer", shutdownTimeout.plusSeconds(5), () -> s.stop(shutdownTimeout));
    }

    private dev.levee.observer.StatsPage page() {
        return ui ? dev.levee.observer.StatsPage.load() : null;
    }

    private String page(ObserverService s) {
        return ui ? "; live page at http://" + new HostPort(listen.host(), s.port()) + "/ui/" : "";
    }
}
