package dev.levee.cli;

import dev.levee.limiter.LimiterService;
import dev.levee.quota.QuotaConfig;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Recorder;
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
            binary = encoding.equals("binary");
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
                wire = new WireLoad(load, keys, wireConnections);
                wire.connect(addr);
                if (without != null) {
                    wire.connect(without.address());
                }
            }
            System.out.printf(Locale.ROOT, "levee bench limiter: target %s, %d connections, %d keys, 2-core loopback%n",
                    addr, connections, keys);
            HostPort a = addr;
            if (without != null) {
                // issue 14: stats on and off side by side, each on its own event loop, in alternating phases so
                // that drifts of the machine (JIT, other load) fall on both alike
                HostPort off = without.address();
                closedLoop(http, off, connections * outstanding, warmup);
                closedLoop(http, a, connections * outstanding, warmup);
                double sumOff = 0;
                double sumOn = 0;
                for (int r = 0; r < rounds; r++) {
                    // ABBA order: a trend over the run (the JIT still warming, load from elsewhere) cancels out
                    boolean offFirst = r % 2 == 0;
                    Phase pOff = offFirst ? closedLoop(http, off, connections * outstanding, duration) : null;
                    Phase pOn = closedLoop(http, a, connections * outstanding, duration);
                    if (!offFirst) {
                        pOff = closedLoop(http, off, connections * outstanding, duration);
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
                Phase warm = closedLoop(http, a, connections * outstanding, warmup);
                System.out.printf(Locale.ROOT, "warm-up     %,10.0f checks/s%n", warm.rate());
                failed = noneDone(warm, a, "warm-up");
            }
            double rate = fixedRate;
            if (fixedRate == 0 && !failed) {
                Phase full = closedLoop(http, a, connections * outstanding, duration);
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
            long[] ownGc0 = ownGc();
            double[] targetGc0 = targetGc(a);
            Phase open = openLoop(load, http, a, rate, duration);
            long[] ownGc1 = ownGc();
            double[] targetGc1 = targetGc(a);
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
        private static boolean noneDone(Phase p, HostPort a, String phase) {
            if (p.rate() > 0) {
                return false;
            }
            System.err.printf(Locale.ROOT, "levee bench limiter: no check of the %s succeeded against %s (%d errors%s);"
                    + " is a limiter listening there (its --listen, not levee-client's)?%n", phase, a, p.errors(),
                    p.firstError() == null ? "" : ", the first: " + p.firstError());
            return true;
        }

        record Phase(double rate, double p50Ms, double p99Ms, double p999Ms, double maxMs, long errors, String firstError) {
        }

        /** A request to the limiter that gets no answer this long counts as an error: 10 s. */
        static final long REQUEST_TIMEOUT_MS = 10_000;

        private boolean binary;
        /** The check-wire load, with {@code --encoding wire}; null for HTTP. */
        private WireLoad wire;

        /** This JVM's collections and milliseconds spent in them so far. */
        private static long[] ownGc() {
            long n = 0;
            long ms = 0;
            for (var gc : java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()) {
                n += Math.max(0, gc.getCollectionCount());
                ms += Math.max(0, gc.getCollectionTime());
            }
            return new long[] {n, ms};
        }

        /** The target's GC pauses from its /metrics: count, total seconds, longest (Micrometer's decaying max); null if unreachable. */
        private static double[] targetGc(HostPort a) {
            try {
                var http = java.net.http.HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
                String text = http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://" + a + "/metrics"))
                        .timeout(Duration.ofSeconds(5)).build(), java.net.http.HttpResponse.BodyHandlers.ofString()).body();
                double[] out = new double[3];
                if (!text.contains("jvm_gc_pause_seconds_count")) {
                    return null; // not a JVM's Prometheus page (or no collection metric in it): unknown, not zero
                }
                for (String line : text.split("\n")) {
                    int sp = line.lastIndexOf(' ');
                    if (sp < 0 || line.startsWith("#")) {
                        continue;
                    }
                    double v = Double.parseDouble(line.substring(sp + 1));
                    if (line.startsWith("jvm_gc_pause_seconds_count")) {
                        out[0] += v;
                    } else if (line.startsWith("jvm_gc_pause_seconds_sum")) {
                        out[1] += v;
                    } else if (line.startsWith("jvm_gc_pause_seconds_max")) {
                        out[2] = Math.max(out[2], v);
                    }
                }
                return out;
            } catch (java.io.IOException | RuntimeException e) {
                return null;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            }
        }

        private Future<Integer> one(HttpClientAgent http, HostPort a, long seq) {
            if (wire != null) {
                return wire.one(a, seq);
            }
            Buffer body;
            if (binary) {
                io.netty.buffer.ByteBuf b = dev.levee.wire.BinaryChecks.start(1, 32);
                dev.levee.wire.BinaryChecks.writeCheck(b, "bench", "k/" + (seq % keys), "GetObject", 1);
                body = dev.levee.runtime.Http.buffer(b);
            } else {
                body = Buffer.buffer("{\"resource\":\"bench\",\"key\":\"k/" + (seq % keys) + "\",\"operation\":\"GetObject\",\"g\":1}");
            }
            return http.request(new RequestOptions().setMethod(HttpMethod.POST).setHost(a.host()).setPort(a.port())
                            .setURI("/v1/check").putHeader("Content-Type",
                                    binary ? dev.levee.wire.BinaryChecks.CONTENT_TYPE : "application/json")
                            .setIdleTimeout(REQUEST_TIMEOUT_MS))
                    .compose(r -> r.send(body))
                    .compose(resp -> resp.body().map(b -> {
                        // a 200 or 429 is a check's answer only in the content type a limiter answers in
                        String type = resp.getHeader("Content-Type");
                        String want = binary ? dev.levee.wire.BinaryChecks.CONTENT_TYPE : "application/json";
                        if (type == null || !type.startsWith(want)) {
                            throw new IllegalStateException("HTTP " + resp.statusCode() + " with "
                                    + (type == null ? "no content type" : "content type " + type)
                                    + ", not a limiter's answer");
                        }
                        return resp.statusCode();
                    }));
        }

        private Phase closedLoop(HttpClientAgent http, HostPort a, int concurrency, Duration d) throws InterruptedException {
            Recorder rec = new Recorder(3);
            AtomicLong done = new AtomicLong();
            AtomicLong errors = new AtomicLong();
            AtomicLong seq = new AtomicLong();
            java.util.concurrent.atomic.AtomicReference<String> firstError = new java.util.concurrent.atomic.AtomicReference<>();
            long start = System.nanoTime();
            long end = start + d.toNanos();
            CountDownLatch finished = new CountDownLatch(concurrency);
            for (int i = 0; i < concurrency; i++) {
                loop(http, a, rec, done, errors, firstError, seq, end, finished);
            }
            finished.await(d.toSeconds() + 30, TimeUnit.SECONDS);
            double secs = (System.nanoTime() - start) / 1e9;
            var h = rec.getIntervalHistogram();
            return new Phase(done.get() / secs, h.getValueAtPercentile(50) / 1e6, h.getValueAtPercentile(99) / 1e6,
                    h.getValueAtPercentile(99.9) / 1e6, h.getMaxValue() / 1e6, errors.get(), firstError.get());
        }

        private void loop(HttpClientAgent http, HostPort a, Recorder rec, AtomicLong done, AtomicLong errors,
                          java.util.concurrent.atomic.AtomicReference<String> firstError, AtomicLong seq, long end,
                          CountDownLatch finished) {
            long t0 = System.nanoTime();
            if (t0 - end >= 0) {
                finished.countDown();
                return;
            }
            one(http, a, seq.getAndIncrement()).onComplete(ar -> {
                rec.recordValue(Math.max(1, System.nanoTime() - t0));
                if (ar.succeeded() && (ar.result() == 200 || ar.result() == 429)) {
                    done.incrementAndGet();
                } else {
                    errors.incrementAndGet();
                    firstError.compareAndSet(null, ar.failed() ? Main.describe(ar.cause()) : "HTTP " + ar.result());
                }
                loop(http, a, rec, done, errors, firstError, seq, end, finished);
            });
        }

        private Phase openLoop(Vertx load, HttpClientAgent http, HostPort a, double rate, Duration d)
                throws InterruptedException {
            Recorder rec = new Recorder(3);
            AtomicLong done = new AtomicLong();
            AtomicLong errors = new AtomicLong();
            long start = System.nanoTime();
            long total = Math.max(1, (long) (rate * d.toNanos() / 1e9)); // at least one: the phase ends when all are back
            CountDownLatch finished = new CountDownLatch(1);
            // each request is issued at its scheduled time (Pacer: to the ~50 µs); latency is measured from the
            // scheduled time, so queueing in the generator counts (no coordinated omission)
            Pacer.start(((io.vertx.core.internal.ContextInternal) load.getOrCreateContext()).nettyEventLoop(), start, rate,
                    total, n -> {
                long scheduled = Pacer.scheduled(start, rate, n);
                one(http, a, n).onComplete(ar -> {
                    long latency = Math.max(1, System.nanoTime() - scheduled);
                    rec.recordValue(latency);
                    if (timeline) {
                        int sec = (int) Math.min(worstPerSecond.length - 1, (scheduled - start) / 1_000_000_000L);
                        if (latency > worstPerSecond[sec]) {
                            worstPerSecond[sec] = latency;
                        }
                    }
                    if (ar.succeeded() && (ar.result() == 200 || ar.result() == 429)) {
                        done.incrementAndGet();
                    } else {
                        if (errors.getAndIncrement() == 0) {
                            System.err.println("first error of the latency phase: " + (ar.failed()
                                    ? Main.describe(ar.cause()) : "HTTP " + ar.result()));
                        }
                    }
                    if (done.get() + errors.get() == total) {
                        finished.countDown();
                    }
                });
            });
            finished.await(d.toSeconds() + 30, TimeUnit.SECONDS);
            double secs = (System.nanoTime() - start) / 1e9;
            var h = rec.getIntervalHistogram();
            if (timeline) {
                StringBuilder b = new StringBuilder("worst latency per second of the latency phase (ms):");
                for (int i = 0; i < Math.min(worstPerSecond.length, (int) Math.ceil(secs)); i++) {
                    b.append(String.format(Locale.ROOT, " %.1f", worstPerSecond[i] / 1e6));
                }
                System.out.println(b);
            }
            return new Phase(done.get() / secs, h.getValueAtPercentile(50) / 1e6, h.getValueAtPercentile(99) / 1e6,
                    h.getValueAtPercentile(99.9) / 1e6, h.getMaxValue() / 1e6, errors.get(), null);
        }

        /** The worst latency of each second of the latency phase (ns), with {@code --timeline}. */
        private final long[] worstPerSecond = new long[3600];

        /**
         * Checks over the check wire ({@link dev.levee.wire.WireConnection}) from the generator's event loop: an answer
         * completes its check's future with 200 (accepted) or 429 (rejected), anything else fails it.
         */
        static final class WireLoad implements dev.levee.wire.WireConnection.Peer<WireLoad.Check> {
            record Check(long seq, io.vertx.core.Promise<Integer> done) {
            }

            private final io.netty.channel.EventLoop loop;
            private final Class<? extends io.netty.channel.Channel> channelClass;
            private final int keys;
            private final java.util.Map<HostPort, java.util.List<dev.levee.wire.WireConnection<Check>>> pools =
                    new java.util.HashMap<>();
            private final int connections;
            private long next;

            WireLoad(Vertx load, int keys, int connections) {
                this.loop = ((io.vertx.core.internal.ContextInternal) load.getOrCreateContext()).nettyEventLoop();
                this.channelClass = dev.levee.runtime.Http.socketChannelClass(load);
                this.keys = keys;
                this.connections = connections;
            }

            Future<Integer> one(HostPort a, long seq) {
                io.vertx.core.Promise<Integer> p = io.vertx.core.Promise.promise();
                Check c = new Check(seq, p);
                if (loop.inEventLoop()) {
                    send(a, c);
                } else {
                    loop.execute(() -> send(a, c));
                }
                return p.future();
            }

            /** Opens the connections to {@code a}; from a thread other than the generator's event loop. */
            void connect(HostPort a) throws Exception {
                java.util.List<dev.levee.wire.WireConnection<Check>> pool = new java.util.ArrayList<>();
                for (int i = 0; i < connections; i++) {
                    try {
                        pool.add(dev.levee.wire.WireConnection.<Check>connect(this, loop, channelClass, a.host(), a.port(),
                                SystemTicker.INSTANCE, Duration.ofSeconds(10), 256).get(15, TimeUnit.SECONDS));
                    } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                        Throwable cause = e.getCause() == null ? e : e.getCause();
                        throw new IllegalArgumentException("cannot open the check wire to " + a + ": " + Main.describe(cause)
                                + "; is a limiter listening there (its --listen, not levee-client's)? (--encoding binary or json"
                                + " for a limiter without the wire)");
                    }
                }
                loop.submit(() -> pools.put(a, pool)).get(5, TimeUnit.SECONDS);
            }

            private void send(HostPort a, Check c) {
                var pool = pools.get(a);
                if (pool == null || pool.isEmpty()) {
                    c.done().fail("no check-wire connection to " + a);
                    return;
                }
                var w = pool.get((int) (next++ % pool.size()));
                if (!w.send(c)) {
                    c.done().fail("check wire to " + a + " takes no more checks");
                }
            }

            @Override
            public int size(Check c) {
                return 40;
            }

            @Override
            public void write(Check c, io.netty.buffer.ByteBuf frame) {
                dev.levee.wire.BinaryChecks.writeCheck(frame, "bench", "k/" + (c.seq() % keys), "GetObject", 1);
            }

            @Override
            public void answered(Check c, dev.levee.wire.BinaryChecks.AnswerCursor a) {
                if (a.result == dev.levee.wire.BinaryChecks.ACCEPTED) {
                    c.done().complete(200);
                } else if (a.result == dev.levee.wire.BinaryChecks.REJECTED) {
                    c.done().complete(429);
                } else {
                    c.done().fail("limiter answered " + a.result + (a.error == null ? "" : ": " + a.error));
                }
            }

            @Override
            public void failed(java.util.List<Check> checks, Throwable cause) {
                for (Check c : checks) {
                    c.done().fail(cause);
                }
            }

            @Override
            public void closed(dev.levee.wire.WireConnection<Check> connection, boolean clean) {
                pools.values().forEach(p -> p.remove(connection));
            }

            @Override
            public void noWire(int status) {
                // connect() fails with the reason and says what to check
            }
        }
    }
}
