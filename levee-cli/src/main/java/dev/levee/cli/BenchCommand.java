package dev.levee.cli;

import dev.levee.cli.bench.LimiterLoad;
import dev.levee.limiter.LimiterService;
import dev.levee.quota.QuotaConfig;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.PoolOptions;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code levee bench}: load runs on loopback that print figures. */
@Command(name = "bench", mixinStandardHelpOptions = true, description = "Load benchmarks on loopback.",
        subcommands = {BenchCommand.Limiter.class, BenchHttp.class})
final class BenchCommand {

    /**
     * Drives one limiter over HTTP/1.1 keep-alive on loopback: first closed-loop at full speed
     * (checks/s), then open-loop at a fraction of that rate (latency p50/p99/p99.9, HdrHistogram).
     */
    @Command(name = "limiter", mixinStandardHelpOptions = true,
            description = "Checks/s and latency of one limiter over HTTP on loopback (load generator in the same JVM"
                    + " on its own event loops, or against --target).")
    static final class Limiter implements Callable<Integer> {

        @Option(names = "--duration", converter = Converters.DurationConverter.class, defaultValue = "10s",
                description = "length of each phase (default: ${DEFAULT-VALUE})")
        Duration duration;

        @Option(names = "--warmup", converter = LimiterCommand.OptionalDurationConverter.class, defaultValue = "5s",
                description = "warm-up before measuring, 0 for none (default: ${DEFAULT-VALUE})")
        Duration warmup;

        @Option(names = "--connections", defaultValue = "32", description = "keep-alive connections (default: ${DEFAULT-VALUE})")
        int connections;

        @Option(names = "--pipeline", defaultValue = "4",
                description = "requests outstanding per connection in the throughput phase (default: ${DEFAULT-VALUE})")
        int outstanding;

        @Option(names = "--keys", defaultValue = "10000", description = "distinct object keys (wildcard quota: one counter each)")
        int keys;

        @Option(names = "--latency-fraction", defaultValue = "0.5",
                description = "rate of the latency phase as a fraction of the measured throughput (default: ${DEFAULT-VALUE})")
        double fraction;

        @Option(names = "--rate", defaultValue = "0",
                description = "offered checks/s of the latency phase; skips the throughput phase, so that settings"
                        + " are compared at one rate (default: --latency-fraction of the measured throughput)")
        double fixedRate;

        @Option(names = "--target", converter = Converters.HostPortConverter.class,
                description = "an already running limiter to drive (default: start one in this JVM)")
        HostPort target;

        @Option(names = "--encoding", defaultValue = "wire",
                description = "how checks go: wire (the check wire, as levee-client speaks to limiters; --wire-connections"
                        + " connections, the checks of one turn of the generator's event loop in one frame), binary or json"
                        + " (one HTTP request per check on --connections connections) (default: ${DEFAULT-VALUE})")
        String encoding;

        @Option(names = "--timeline", description = "print the worst latency of each second of the latency phase")
        boolean timeline;

        @Option(names = "--wire-connections", defaultValue = "1",
                description = "with --encoding wire: check-wire connections to the limiter, as many as a levee-client has"
                        + " event loops sending checks (default: ${DEFAULT-VALUE})")
        int wireConnections;

        @Option(names = "--log-target", converter = Converters.LogTargetConverter.class, defaultValue = "file:levee-logs/bench.log",
                description = "where the limiter's decision log goes (default: ${DEFAULT-VALUE})")
        LogTarget logTarget;

        @Option(names = "--stats", defaultValue = "on",
                description = "the in-JVM limiter's hot-resources statistics: on, off, or both — two limiters, one"
                        + " with and one without, driven in alternating throughput phases (issue 14's cost check)"
                        + " (default: ${DEFAULT-VALUE})")
        String stats;

        @Option(names = "--rounds", defaultValue = "3",
                description = "with --stats both: throughput phases per limiter, in ABBA order (default: ${DEFAULT-VALUE})")
        int rounds;

        @picocli.CommandLine.Spec
        picocli.CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            if (!stats.equals("on") && !stats.equals("off") && !stats.equals("both")) {
                throw new UsageException("--stats must be on, off or both, got '" + stats + "'");
            }
            if (stats.equals("both") && target != null) {
                throw new UsageException("--stats both starts its own two limiters: leave out --target");
            }
            if (rounds < 1) {
                throw new UsageException("--rounds must be >= 1");
            }
            if (connections < 1 || outstanding < 1 || keys < 1 || !(fraction > 0 && fraction <= 1)) {
                throw new UsageException("--connections, --pipeline, --keys must be >= 1 and --latency-fraction in (0,1]");
            }
            if (!(fixedRate >= 0) || Double.isInfinite(fixedRate)) {
                throw new UsageException("--rate must be a number of checks/s >= 0 (0: from the throughput phase), got "
                        + fixedRate);
            }
            if (fixedRate > 0 && fixedRate * duration.toNanos() / 1e9 < 1) {
                throw new UsageException("--rate " + fixedRate + " checks/s sends no check in --duration "
                        + duration.toMillis() + " ms: raise either");
            }
            if (!encoding.equals("binary") && !encoding.equals("json") && !encoding.equals("wire")) {
                throw new UsageException("--encoding must be wire, binary or json, got '" + encoding + "'");
            }
            if (wireConnections < 1 || wireConnections > 1024) {
                throw new UsageException("--wire-connections must be between 1 and 1024, got " + wireConnections);
            }
            if (!encoding.equals("wire") && spec.commandLine().getParseResult().hasMatchedOption("--wire-connections")) {
                System.err.println("levee bench limiter: --wire-connections is for --encoding wire; with " + encoding
                        + " the checks go on --connections " + connections + " HTTP connections");
            }
            LimiterLoad gen = new LimiterLoad(keys, encoding.equals("binary"), timeline, Main::describe);
            if (logTarget.file() != null && logTarget.file().getParent() != null) {
                java.nio.file.Files.createDirectories(logTarget.file().getParent());
            }
            Logging.configure(logTarget, "levee-bench", "INFO");
            QuotaConfig cfg = dev.levee.config.QuotaConfigLoader.parse("""
                    factor: 1
                    default: {rate: 1000000, burst: 1000}
                    resources:
                      bench:
                        prefixes:
                          - prefix: "k/*"
                            quota: {rate: 1000, burst: 100}
                    """, "bench quotas");
            Vertx server = dev.levee.runtime.Http.vertx(1);
            Vertx load = dev.levee.runtime.Http.vertx(1);
            LimiterService limiter = null;
            HostPort addr = target;
            LimiterService without = null;
            Vertx serverOff = null;
            if (addr == null) {
                limiter = Daemon.await(LimiterService.start(server, LimiterService.Options.builder("bench-1")
                        .listen(new HostPort("127.0.0.1", 0)).build(), new dev.levee.config.StaticQuotaSource(cfg),
                        SystemTicker.INSTANCE, Metrics.newRegistry(), stats.equals("off") ? dev.levee.limiter.DecisionStats.OFF
                                : dev.levee.limiter.DecisionStats.DEFAULTS), "limiter");
                addr = limiter.address();
            }
            if (stats.equals("both")) {
                serverOff = dev.levee.runtime.Http.vertx(1);
                without = Daemon.await(LimiterService.start(serverOff, LimiterService.Options.builder("bench-0")
                                .listen(new HostPort("127.0.0.1", 0)).build(),
                        new dev.levee.config.StaticQuotaSource(cfg), SystemTicker.INSTANCE, Metrics.newRegistry(),
                        dev.levee.limiter.DecisionStats.OFF), "limiter");
            }
            HttpClientAgent http = load.createHttpClient(new HttpClientOptions().setKeepAlive(true).setTcpNoDelay(true)
                    .setPipelining(false), new PoolOptions().setHttp1MaxSize(connections).setMaxWaitQueueSize(-1));
            if (encoding.equals("wire")) {
                gen.useWire(load, wireConnections);
                gen.connectWire(addr);
                if (without != null) {
                    gen.connectWire(without.address());
                }
            }
            System.out.printf(Locale.ROOT, "levee bench limiter: target %s, %d connections, %d keys, 2-core loopback%n",
                    addr, connections, keys);
            HostPort a = addr;
            if (without != null) {
                // issue 14: stats on and off side by side, each on its own event loop, in alternating phases so
                // that drifts of the machine (JIT, other load) fall on both alike
                HostPort off = without.address();
                gen.closedLoop(http, off, connections * outstanding, warmup);
                gen.closedLoop(http, a, connections * outstanding, warmup);
                double sumOff = 0;
                double sumOn = 0;
                for (int r = 0; r < rounds; r++) {
                    // ABBA order: a trend over the run (the JIT still warming, load from elsewhere) cancels out
                    boolean offFirst = r % 2 == 0;
                    LimiterLoad.Phase pOff = offFirst ? gen.closedLoop(http, off, connections * outstanding, duration) : null;
                    LimiterLoad.Phase pOn = gen.closedLoop(http, a, connections * outstanding, duration);
                    if (!offFirst) {
                        pOff = gen.closedLoop(http, off, connections * outstanding, duration);
                    }
                    sumOff += pOff.rate();
                    sumOn += pOn.rate();
                    System.out.printf(Locale.ROOT, "round %d     stats off %,10.0f checks/s   stats on %,10.0f checks/s  (errors %d, %d)%n",
                            r + 1, pOff.rate(), pOn.rate(), pOff.errors(), pOn.errors());
                }
                System.out.printf(Locale.ROOT, "stats cost  off %,10.0f checks/s, on %,10.0f checks/s (means of %d phases): on/off = %.3f (%+.1f %%)%n",
                        sumOff / rounds, sumOn / rounds, rounds, sumOn / sumOff, (sumOn / sumOff - 1) * 100);
            }
            boolean failed = false;
            if (!warmup.isZero()) {
                LimiterLoad.Phase warm = gen.closedLoop(http, a, connections * outstanding, warmup);
                System.out.printf(Locale.ROOT, "warm-up     %,10.0f checks/s%n", warm.rate());
                failed = noneDone(warm, a, "warm-up");
            }
            double rate = fixedRate;
            if (fixedRate == 0 && !failed) {
                LimiterLoad.Phase full = gen.closedLoop(http, a, connections * outstanding, duration);
                System.out.printf(Locale.ROOT, "throughput  %,10.0f checks/s  (closed loop, %d outstanding)  p50 %.3f ms  p99 %.3f ms  errors %d%n",
                        full.rate(), connections * outstanding, full.p50Ms(), full.p99Ms(), full.errors());
                rate = full.rate() * fraction;
                failed = noneDone(full, a, "throughput phase");
            }
            if (failed) {
                http.close();
                stopAll(limiter, without, serverOff, load, server);
                return 1;
            }
            long[] ownGc0 = LimiterLoad.ownGc();
            double[] targetGc0 = LimiterLoad.targetGc(a);
            LimiterLoad.Phase open = gen.openLoop(load, http, a, rate, duration);
            long[] ownGc1 = LimiterLoad.ownGc();
            double[] targetGc1 = LimiterLoad.targetGc(a);
            System.out.printf(Locale.ROOT, "latency     %,10.0f checks/s offered (%s), %,.0f done/s  p50 %.3f ms  p99 %.3f ms  p99.9 %.3f ms  max %.3f ms  errors %d%n",
                    rate, fixedRate > 0 ? "--rate" : String.format(Locale.ROOT, "%.0f%% of max", fraction * 100), open.rate(), open.p50Ms(), open.p99Ms(), open.p999Ms(), open.maxMs(), open.errors());
            // the pauses of each JVM in the latency phase: a pause of either shows in the tail
            System.out.printf(Locale.ROOT, "gc          generator (%s): %d collections, %d ms in total; limiter%s: %s%n",
                    java.lang.management.ManagementFactory.getGarbageCollectorMXBeans().stream()
                            .map(java.lang.management.GarbageCollectorMXBean::getName).reduce((x, y) -> x + ", " + y)
                            .orElse("no collector"), ownGc1[0] - ownGc0[0], ownGc1[1] - ownGc0[1],
                    target == null ? " (same JVM)" : "",
                    targetGc0 == null || targetGc1 == null ? "unknown (its /metrics did not answer with a JVM's collections)"
                            : String.format(Locale.ROOT, "%.0f pauses, %.1f ms in total, longest %.1f ms (its jvm_gc_pause_seconds_max)",
                            targetGc1[0] - targetGc0[0], (targetGc1[1] - targetGc0[1]) * 1000, targetGc1[2] * 1000));
            http.close();
            stopAll(limiter, without, serverOff, load, server);
            if (open.rate() == 0) {
                System.err.printf(Locale.ROOT, "levee bench limiter: no check of the latency phase succeeded against %s"
                        + " (%d errors)%n", a, open.errors());
                return 1;
            }
            return 0;
        }

        private static void stopAll(LimiterService limiter, LimiterService without, Vertx serverOff, Vertx load, Vertx server) {
            if (limiter != null) {
                Daemon.await(limiter.stop(), "stop");
            }
            if (without != null) {
                Daemon.await(without.stop(), "stop");
                Daemon.await(serverOff.close(), "close");
            }
            Daemon.await(load.close(), "close");
            Daemon.await(server.close(), "close");
            Logging.shutdown();
        }

        /** True, after saying so, when no check of {@code p} succeeded: the target is wrong or down, measuring on is pointless. */
        private static boolean noneDone(LimiterLoad.Phase p, HostPort a, String phase) {
            if (p.rate() > 0) {
                return false;
            }
            System.err.printf(Locale.ROOT, "levee bench limiter: no check of the %s succeeded against %s (%d errors%s);"
                    + " is a limiter listening there (its --listen, not levee-client's)?%n", phase, a, p.errors(),
                    p.firstError() == null ? "" : ", the first: " + p.firstError());
            return true;
        }
    }
}
