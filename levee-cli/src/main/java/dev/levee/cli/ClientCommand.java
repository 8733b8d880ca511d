package dev.levee.cli;

import dev.levee.client.ClientService;
import dev.levee.client.LeveeClient;
import dev.levee.client.RequestLeases;
import dev.levee.config.QuotaSource;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code levee client}: the client-proxy NGINX calls. */
@Command(name = "client", mixinStandardHelpOptions = true,
        description = {"Run levee-client: classifies S3 requests, picks the limiter group with HRW, asks it.",
                "NGINX's rate.lua asks it over HTTP (GET /v1/s3check on --listen, the subrequest transport) or, with"
                        + " --line-listen, over the line protocol of the cosocket transport (docs/nginx.md, \"Transports:"
                        + " subrequest and cosocket\")."})
final class ClientCommand implements Callable<Integer> {

    @Mixin
    CommonOptions common = new CommonOptions();

    @Option(names = "--listen", converter = Converters.HostPortConverter.class, defaultValue = "127.0.0.1:7200",
            description = "address to bind (default: ${DEFAULT-VALUE})")
    HostPort listen;

    @Option(names = "--line-listen", converter = Converters.OptionalLineAddressConverter.class, defaultValue = "none",
            description = "also listen for the line protocol of rate.lua's cosocket transport (levee-line/1,"
                    + " docs/nginx.md: same checks and answers as GET /v1/s3check, without HTTP) on HOST:PORT,"
                    + " e.g. 127.0.0.1:7201; port 0 picks a free one; 'none' for no such listener (default: ${DEFAULT-VALUE})")
    HostPort lineListen;

    @Option(names = "--line-idle-timeout", converter = Converters.DurationConverter.class, defaultValue = "60s",
            description = "close a line connection that sent nothing this long and has no check pending; keep it above"
                    + " rate.lua's keepalive (default: ${DEFAULT-VALUE})")
    Duration lineIdleTimeout;

    @Mixin
    ObserverOptions observer = new ObserverOptions();

    @Mixin
    LimiterClientOptions limiterClient = new LimiterClientOptions();

    @Mixin
    ClientLeaseOptions leases = new ClientLeaseOptions();

    @Option(names = "--warmup", converter = LimiterCommand.OptionalDurationConverter.class, defaultValue = "15s",
            description = "longest time spent warming the check path with self-checks through its own listeners once"
                    + " the first limiter list is in; it ends sooner, once their rate stops rising (the JIT is done)."
                    + " /health answers 503 meanwhile; checks are served. 0 for none (default: ${DEFAULT-VALUE})")
    Duration warmup;

    @Option(names = "--shutdown-deadline", converter = Converters.DurationConverter.class, defaultValue = "5s",
            description = "on SIGTERM, how long checks in flight get to be answered before connections close"
                    + " (default: ${DEFAULT-VALUE})")
    Duration shutdownTimeout;

    @Option(names = "--warn-interval", converter = Converters.DurationConverter.class, defaultValue = "10s",
            description = "how often a lasting degraded state is warned about again — no limiter known (every check answers"
                    + " failed, which NGINX passes by its on_failure policy; /health 503) or the observer unreachable (default: ${DEFAULT-VALUE})")
    Duration warnInterval;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    /** The client library's settings from the options as parsed. */
    LeveeClient.Options options() {
        return limiterClient.options(observer.list(), warnInterval);
    }

    @Override
    public Integer call() {
        limiterClient.validate();
        if (lineListen != null && sameListener(lineListen, listen)) {
            // Vert.x shares one socket between servers of the same address: half the connections would reach each
            throw new picocli.CommandLine.ParameterException(spec.commandLine(),
                    "--line-listen " + lineListen + " is the address of --listen " + listen
                            + ": the line endpoint needs a port of its own");
        }
        Running running = start();
        return Daemon.runUntilStopped(running.vertx(), "client", shutdownTimeout.plusSeconds(5), running.stop());
    }

    /**
     * A started client: its Vert.x, endpoint and library, and what stops them (the endpoint gracefully, the client,
     * then the quota source and etcd client of request leases, when open).
     */
    record Running(Vertx vertx, ClientService service, LeveeClient client, java.util.function.Supplier<Future<?>> stop) {
    }

    /**
     * Starts the client from the options as parsed and validated ({@link #call} checks the addresses first): the
     * library, request leases unless {@code --no-leases}, the endpoint; announces where it listens.
     */
    Running start() {
        LeveeClient.Options options = options();
        RequestLeases.Settings settings = leases.settings(); // bad values refused before starting, leases on or off
        RequestLeases.Settings leaseSettings = leases.enabled ? settings : null;
        common.apply("levee-client");
        Vertx vertx = dev.levee.runtime.Http.vertx();
        MeterRegistry registry = Metrics.newRegistry();
        // --no-leases: no quota source, no etcd client, LeveeClient.start as without leases
        io.etcd.jetcd.Client etcdClient = leaseSettings != null && leases.etcd.enabled() ? leases.etcd.client() : null;
        QuotaSource quotaSource = leaseSettings == null ? null : Quotas.source(etcdClient, leases.etcd, leases.quotas);
        org.slf4j.LoggerFactory.getLogger("levee.client").info(leaseSettings == null
                ? "request leases off (--no-leases): every check asks a limiter"
                : "request leases on: quotas from " + (etcdClient != null ? "etcd" : leases.quotas != null
                ? leases.quotas.toString() : "the embedded defaults") + " (limiters with other quotas lease nothing to"
                + " this client: quotas_differ), hot above " + settings.threshold() + " req/s per key");
        RequestLeases requestLeases = quotaSource == null ? null
                : new RequestLeases(leaseSettings, quotaSource::current, quotaSource::revision, registry);
        LeveeClient c = Daemon.await(LeveeClient.start(vertx, options, SystemTicker.INSTANCE, registry, requestLeases),
                "client");
        ClientService.Line line = lineListen == null ? null : new ClientService.Line(lineListen, lineIdleTimeout);
        ClientService s = Daemon.await(ClientService.start(vertx, listen, line, c, registry, warmup),
                "client could not start on " + listen + (line == null ? "" : " and --line-listen " + lineListen));
        common.announce("levee client listening on " + listen.host() + ":" + s.port()
                + (line == null ? "" : ", line protocol on " + new HostPort(lineListen.host(), s.linePort())));
        return new Running(vertx, s, c, () -> quotaSource == null ? s.stop(shutdownTimeout).eventually(c::stop)
                : s.stop(shutdownTimeout).eventually(c::stop).eventually(() -> {
                    quotaSource.close();
                    if (etcdClient != null) {
                        etcdClient.close();
                    }
                    return Future.succeededFuture();
                }));
    }

    /** Whether two listeners would bind the same socket: the same port (not 0) on the same or a wildcard host. */
    static boolean sameListener(HostPort a, HostPort b) {
        if (a.port() == 0 || a.port() != b.port()) {
            return false;
        }
        return a.host().equals(b.host()) || wildcard(a.host()) || wildcard(b.host());
    }

    private static boolean wildcard(String host) {
        return host.equals("0.0.0.0") || host.equals("::") || host.equals("[::]");
    }
}
