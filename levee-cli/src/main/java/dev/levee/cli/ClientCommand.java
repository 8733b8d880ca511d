package dev.levee.cli;

import dev.levee.client.ClientService;
import dev.levee.client.LeveeClient;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.List;
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

    @Option(names = "--refresh", converter = Converters.DurationConverter.class, defaultValue = "1s",
            description = "limiter list refresh interval (default: ${DEFAULT-VALUE})")
    Duration refresh;

    @Option(names = "--check-timeout", converter = Converters.DurationConverter.class, defaultValue = "250ms",
            description = "time one limiter may take (default: ${DEFAULT-VALUE})")
    Duration checkTimeout;

    @Option(names = "--check-deadline", converter = Converters.DurationConverter.class, defaultValue = "900ms",
            description = "longest a check may take with its spill-over attempts (the limiters beyond the group, asked"
                    + " when every group member failed): one is started only if --check-timeout still fits; keep it"
                    + " below NGINX's check --timeout (default: ${DEFAULT-VALUE})")
    Duration checkDeadline;

    @Option(names = "--backoff", converter = Converters.DurationConverter.class, defaultValue = "2s",
            description = "how long a failed limiter is skipped (default: ${DEFAULT-VALUE})")
    Duration backoff;

    @Option(names = "--base-domain", split = ",", description = "base domains for virtual-hosted style requests")
    List<String> baseDomains = List.of();

    @Option(names = "--limiter-in-flight", defaultValue = "" + LeveeClient.Options.DEFAULT_MAX_IN_FLIGHT,
            description = "HTTP requests one limiter may have outstanding before further checks for it are sent together"
                    + " as one batch, 1-1024; not used on the check wire (default: ${DEFAULT-VALUE})")
    int maxInFlight;

    @Option(names = "--batch-max", defaultValue = "" + LeveeClient.Options.DEFAULT_MAX_BATCH,
            description = "most checks in one batch or wire frame to a limiter, 1-1024 (default: ${DEFAULT-VALUE})")
    int maxBatch;

    @Option(names = "--limiter-wire", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "send checks to the limiters over the check wire (one upgraded connection per limiter, the checks"
                    + " of one event-loop turn in one frame) where they take it; --no-limiter-wire sends each check or batch"
                    + " as an HTTP request, as to limiters older than the wire (default: on)")
    boolean wire;

    @Option(names = "--warmup", converter = LimiterCommand.OptionalDurationConverter.class, defaultValue = "15s",
            description = "longest time spent warming the check path with self-checks through its own listeners once"
                    + " the first limiter list is in; it ends sooner, once their rate stops rising (the JIT is done)."
                    + " /health answers 503 meanwhile; checks are served. 0 for none (default: ${DEFAULT-VALUE})")
    Duration warmup;

    @Option(names = "--list-grace", converter = LimiterCommand.OptionalDurationConverter.class, defaultValue = "3s",
            description = "how long a limiter list that is empty or lost more than half its members is not believed"
                    + " (the last list is kept meanwhile), 0 to believe it at once (default: ${DEFAULT-VALUE})")
    Duration listGrace;

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
        return new LeveeClient.Options(observer.list(), refresh, checkTimeout, backoff, baseDomains, maxInFlight, maxBatch,
                listGrace, checkDeadline, warnInterval, wire);
    }

    @Override
    public Integer call() {
        if (maxInFlight < 1 || maxInFlight > 1024) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(),
                    "--limiter-in-flight must be between 1 and 1024, got " + maxInFlight);
        }
        if (maxBatch < 1 || maxBatch > 1024) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(),
                    "--batch-max must be between 1 and 1024, got " + maxBatch);
        }
        if (lineListen != null && sameListener(lineListen, listen)) {
            // Vert.x shares one socket between servers of the same address: half the connections would reach each
            throw new picocli.CommandLine.ParameterException(spec.commandLine(),
                    "--line-listen " + lineListen + " is the address of --listen " + listen
                            + ": the line endpoint needs a port of its own");
        }
        LeveeClient.Options options = options();
        common.apply("levee-client");
        Vertx vertx = dev.levee.runtime.Http.vertx();
        MeterRegistry registry = Metrics.newRegistry();
        LeveeClient c = Daemon.await(LeveeClient.start(vertx, options, SystemTicker.INSTANCE, registry), "client");
        ClientService.Line line = lineListen == null ? null : new ClientService.Line(lineListen, lineIdleTimeout);
        ClientService s = Daemon.await(ClientService.start(vertx, listen, line, c, registry, warmup),
                "client could not start on " + listen + (line == null ? "" : " and --line-listen " + lineListen));
        common.announce("levee client listening on " + listen.host() + ":" + s.port()
                + (line == null ? "" : ", line protocol on " + new HostPort(lineListen.host(), s.linePort())));
        return Daemon.runUntilStopped(vertx, "client", shutdownTimeout.plusSeconds(5),
                () -> s.stop(shutdownTimeout).eventually(c::stop));
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
