package dev.levee.cli;

import dev.levee.quota.PrefixRule;
import dev.levee.quota.Quota;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaLevel;
import dev.levee.quota.ResolvedQuota;
import dev.levee.quota.ResourceQuotas;
import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import dev.levee.runtime.Metrics;
import dev.levee.s3.S3Operation;
import dev.levee.stack.EmbeddedEtcd;
import dev.levee.stack.EmbeddedS3;
import dev.levee.stack.LocalStack;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * {@code levee demo}: a whole local stack in one process driven by real S3 traffic (docs/design.md §9).
 *
 * <p>Starts an in-process S3 backend (S3Proxy, transient storage), an observer, {@code --limiters}
 * limiters, the client and the gateway on free loopback ports. From the quota configuration it
 * derives one traffic stream per quota entry (it checks with the resolver which quota each stream
 * really hits), drives each at {@code --load-factor} × its rate with the AWS SDK v2 for
 * {@code --duration}, prints each second per quota the requests sent and the answers (accepted, refused
 * with SlowDown) that arrived in that second, with what is still pending ({@link DemoTable}), and at the
 * end the admitted rate against the configured one. With {@code --keep-running} the stack then stays up
 * until SIGTERM/SIGINT ({@link DemoKeepRunning}). The stack itself comes from levee-stack.
 *
 * <p>The parts: the flags and their checks (the fields, {@link LatencyConverter}); {@link #call()}, which starts the
 * stack and runs the phases in order; {@link #deriveStreams} (one {@link Stream} per quota entry, each checked against
 * the resolver) and {@code drivable}; {@code seed} and {@code warmUp} (objects in place, JITs warm, nothing counted);
 * the traffic loop and {@code send} (paced requests, answers counted per second into {@link DemoTable});
 * {@link #judge} (the admitted rate against the configured one, with the spec's bound); and, with
 * {@code --gateways}, the site budget read here and run by {@code SiteDemo} in levee-stack. What the parts print is
 * checked by DemoTableTest, DemoPlanTest, DemoIT and SiteDemoIT.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Run a whole local Levee stack with real S3 traffic above the quotas and print what was"
                + " admitted and refused, second by second.")
final class DemoCommand implements Callable<Integer> {

    @Option(names = "--duration", converter = Converters.DurationConverter.class, defaultValue = "20s",
            description = "how long to drive traffic (default: ${DEFAULT-VALUE})")
    Duration duration;

    @Option(names = "--quotas", description = "quota file, single-file form (default: embedded default quotas)")
    Path quotas;

    @Option(names = "--warmup", converter = Converters.DurationConverter.class, defaultValue = "4s",
            description = "traffic on a separate bucket before measuring, so the JIT has compiled the paths"
                    + " (default: ${DEFAULT-VALUE})")
    Duration warmup;

    @Option(names = "--load-factor", defaultValue = "2.0",
            description = "offered rate as a multiple of each quota's rate (default: ${DEFAULT-VALUE})")
    double loadFactor;

    @Option(names = "--limiters", defaultValue = "4", description = "number of limiters (default: ${DEFAULT-VALUE})")
    int limiterCount;

    @Option(names = "--max-rate", defaultValue = "200",
            description = "the total rate the load generator offers at most, req/s, divided max-min fairly among the"
                    + " streams; a stream above its part meets a scaled copy of its quota (default: ${DEFAULT-VALUE})")
    double maxRate;

    @Option(names = "--etcd", description = "keep quotas, factor and membership in an etcd this command starts"
            + " (needs the etcd binary: apt-get install -y etcd-server)")
    boolean withEtcd;

    @Option(names = "--nginx", description = "enforce in a real NGINX (rate.lua) in front of the gateway, whose own"
            + " check is then off (needs nginx and its lua module: apt-get install -y nginx libnginx-mod-http-lua)")
    boolean withNginx;

    @Option(names = "--gateways", defaultValue = "1",
            description = "with 2-8: that many gateways share one site download budget through etcd leases and one"
                    + " is cut off from etcd for a while (needs etcd; docs/site-bandwidth.md) (default: ${DEFAULT-VALUE})")
    int gateways;

    @Option(names = "--site-download", converter = GatewayCommand.RateConverter.class, defaultValue = "30MiB/s",
            paramLabel = "RATE", description = "the site download budget of --gateways (default: ${DEFAULT-VALUE})")
    long siteDownload;

    @Option(names = "--site-budget", paramLabel = "FILE",
            description = "with --gateways: the site budget document to use (single-file form of docs/site-bandwidth.md)"
                    + " instead of --site-download")
    Path siteBudget;

    @Option(names = "--backend-latency", converter = LatencyConverter.class, defaultValue = "0s",
            paramLabel = "DURATION", description = "hold every answer of the S3 backend this long (a delaying proxy"
                    + " between gateway and backend), to see how late answers show in the table; 0s: none"
                    + " (default: ${DEFAULT-VALUE})")
    Duration backendLatency;

    @Option(names = "--keep-running", description = "after the summary keep the stack up, print its endpoints with"
            + " commands to try (aws s3, curl, levee quota) and stop on Ctrl-C or SIGTERM")
    boolean keepRunning;

    @Option(names = "--ui", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "the observer serves its live page of the hot resources at http://127.0.0.1:<port>/ui/"
                    + " (docs/stats-page.md; loopback only); --no-ui: off (default: on)")
    boolean ui;

    @Option(names = "--log-target", converter = Converters.LogTargetConverter.class,
            defaultValue = "file:levee-logs/demo.log",
            description = "where the components' RFC 5424 logs go (default: ${DEFAULT-VALUE})")
    LogTarget logTarget;

    /** A duration as {@link Converters.DurationConverter} reads it, or zero ({@code 0}, {@code 0s}, {@code 0ms}). */
    static final class LatencyConverter implements picocli.CommandLine.ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            return Converters.parseDuration(value, true);
        }
    }

    /**
     * One stream of S3 requests aimed at one quota entry.
     *
     * @param quota   the entry's quota as configured
     * @param offered requests per second the stream is offered (all its counters)
     * @param entry   where the quota is in the configuration
     * @param driven  the quota the demo's limiters enforce for it: {@code quota}, or its scaled copy ({@link DemoPlan})
     */
    record Stream(String label, String bucket, List<String> keys, S3Operation op, Quota quota, int counters,
                  double offered, DemoPlan.Entry entry, Quota driven) {

        /** The rate the stream is held to, all counters: the driven quota's rate × counters. */
        double configured() {
            return driven.rate() * counters;
        }

        /** Whether the stream is driven against a scaled copy of its quota. */
        boolean isScaled() {
            return !driven.equals(quota);
        }
    }

    /**
     * Reads a site budget file for the site demo ({@code --site-budget}).
     *
     * @throws IllegalArgumentException naming the file and field, or when it gives no download budget
     */
    private static dev.levee.lease.SiteBudget readSiteBudget(java.nio.file.Path file) {
        String text;
        try {
            text = java.nio.file.Files.readString(file);
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("--site-budget: " + Main.unreadable(file, e));
        }
        dev.levee.lease.SiteBudget b = dev.levee.lease.SiteBudget.parse(file.toString(), text);
        if (b.download() == 0) {
            throw new IllegalArgumentException("--site-budget " + file + ": the demo shares a download budget; field"
                    + " 'download' is 0 or absent");
        }
        return b;
    }

    @Override
    public Integer call() throws Exception {
        if (!(loadFactor > 0) || loadFactor > 100) {
            throw new UsageException("--load-factor must be in (0, 100], got " + loadFactor);
        }
        if (limiterCount < 1 || limiterCount > 32) {
            throw new UsageException("--limiters must be 1-32, got " + limiterCount);
        }
        if (!(maxRate > 0)) {
            throw new UsageException("--max-rate must be positive");
        }
        if (backendLatency.isNegative() || backendLatency.compareTo(Duration.ofSeconds(20)) > 0) {
            throw new UsageException("--backend-latency must be 0s-20s, got " + backendLatency.toMillis() + "ms");
        }
        if (gateways < 1 || gateways > 8) {
            throw new UsageException("--gateways must be 1-8, got " + gateways);
        }
        if (keepRunning && gateways > 1) {
            throw new UsageException("--keep-running works with one gateway (the site demo with --gateways "
                    + gateways + " ends after --duration)");
        }
        startFreshLog(logTarget);
        if (gateways > 1) {
            Logging.configure(logTarget, "levee-demo", "INFO");
            dev.levee.lease.SiteBudget budget = siteBudget == null
                    ? new dev.levee.lease.SiteBudget(siteDownload, 0, 0, 0, java.util.Map.of())
                    : readSiteBudget(siteBudget);
            int rc = dev.levee.stack.SiteDemo.run(System.out, gateways, budget, duration, dev.levee.runtime.SystemTicker.INSTANCE,
                    java.time.Clock.systemUTC());
            Logging.shutdown();
            return rc;
        }
        QuotaConfig cfg = Quotas.load(quotas);
        Logging.configure(logTarget, "levee-demo", "INFO");
        PrintStream out = System.out;
        int g = Math.min(cfg.factor(), limiterCount);
        List<Stream> wanted = deriveStreams(cfg, loadFactor);
        if (wanted.isEmpty()) {
            throw new IllegalArgumentException("the quota configuration gives no stream the demo can drive");
        }
        double wantedTotal = wanted.stream().mapToDouble(Stream::offered).sum();
        // what the machine can offer is --max-rate: streams above their part meet a scaled copy of their quota
        // (issue 26 item 1, DemoPlan)
        List<Stream> streams = DemoPlan.fit(wanted, maxRate, loadFactor, g);
        QuotaConfig driven = DemoPlan.driven(cfg, streams);
        if (withEtcd && EmbeddedEtcd.binary() == null) {
            throw new IllegalArgumentException("--etcd needs etcd installed: apt-get install -y etcd-server"
                    + " (or run the demo without --etcd: quotas then come from the file or the embedded defaults)");
        }
        if (withNginx && dev.levee.stack.EmbeddedNginx.unavailable().isPresent()) {
            throw new IllegalArgumentException("--nginx: " + dev.levee.stack.EmbeddedNginx.unavailable().get());
        }
        out.println("levee demo: starting S3 backend, observer, " + limiterCount + " limiters (factor "
                + cfg.factor() + "), client and gateway on loopback" + (withEtcd ? ", with etcd" : "") + "...");
        io.micrometer.core.instrument.MeterRegistry registry = Metrics.newRegistry();
        LocalStack.Settings settings = new LocalStack.Settings(limiterCount, Duration.ofSeconds(2), Duration.ofMillis(500),
                Duration.ofMillis(500), !withNginx, dev.levee.gateway.GatewayOptions.OnFailure.ALLOW, ui);
        DemoKeepRunning keeper = null;
        int rc;
        try (EmbeddedEtcd etcd = withEtcd ? EmbeddedEtcd.start() : null;
             EmbeddedS3 s3 = EmbeddedS3.start();
             dev.levee.stack.LatencyProxy slow = backendLatency.isZero() ? null
                     : dev.levee.stack.LatencyProxy.start("127.0.0.1", s3.port(), backendLatency);
             LocalStack stack = etcd == null
                     ? LocalStack.start(slow != null ? slow.port() : s3.port(),
                             new dev.levee.config.StaticQuotaSource(driven), settings, registry)
                     : startOnEtcd(out, etcd, driven, slow != null ? slow.port() : s3.port(), settings, registry)) {
            out.printf(Locale.ROOT, "  S3 backend   http://127.0.0.1:%d (S3Proxy, in memory)%n", s3.port());
            if (slow != null) {
                out.printf(Locale.ROOT, "  slow link    http://127.0.0.1:%d holds each backend answer %d ms"
                        + " (--backend-latency)%n", slow.port(), backendLatency.toMillis());
            }
            out.printf(Locale.ROOT, "  observer     http://127.0.0.1:%d/v1/limiters%n", stack.observer().port());
            DemoKeepRunning.printLive(out, stack.observer().port(), ui);
            stack.limiters().forEach(l -> out.printf(Locale.ROOT, "  %-12s http://%s%n", l.id(), l.address()));
            out.printf(Locale.ROOT, "  gateway      http://127.0.0.1:%d (metrics: http://127.0.0.1:%d/metrics)%n",
                    stack.gateway().port(), stack.gateway().adminPort());
            out.println("  logs         " + logTarget);
            out.println("               (" + (logTarget.file() != null ? "this run; " : "")
                    + "grep a bucket name for its decisions)");
            try (dev.levee.stack.NginxFront front = withNginx ? dev.levee.stack.NginxFront.start(stack,
                         logTarget.file() != null && logTarget.file().getParent() != null
                                 ? logTarget.file().resolveSibling("nginx") : Path.of("levee-logs", "nginx")) : null;
                 S3Client direct = s3Client(URI.create("http://127.0.0.1:" + s3.port()));
                 S3Client viaGateway = s3Client(URI.create("http://127.0.0.1:"
                         + (front != null ? front.port() : stack.gateway().port())))) {
                if (front != null) {
                    out.printf(Locale.ROOT, "  nginx        http://127.0.0.1:%d checks each request (rate.lua -> levee-client"
                            + " :%d); the gateway does not check again%n", front.port(), front.clientPort());
                    out.println("  nginx log    " + front.accessLog() + " (levee=accepted|rejected|failed per request)");
                }
                seed(direct, streams);
                warmUp(out, direct, viaGateway, warmup);
                rc = run(out, viaGateway, streams, g, wantedTotal,
                        () -> (long) registry.find("levee_gateway_requests_total").tag("result", "failed").counters()
                                .stream().mapToDouble(io.micrometer.core.instrument.Counter::count).sum());
                if (keepRunning) {
                    keeper = DemoKeepRunning.install();
                    Stream shown = streams.stream().filter(x -> cfg.resources().containsKey(x.bucket)
                            && !x.keys.getFirst().isEmpty()).findFirst().orElse(streams.getFirst());
                    DemoKeepRunning.print(out, new DemoKeepRunning.Endpoints(
                            front != null ? front.port() : stack.gateway().port(), front != null, s3.port(),
                            stack.observer().port(), stack.gateway().adminPort(),
                            stack.limiters().stream().map(l -> l.address().toString()).toList(),
                            etcd == null ? null : etcd.endpoint(), front == null ? null : front.accessLog(),
                            (quotas == null ? "the embedded default quotas" : quotas.toString())
                                    + (driven != cfg ? ", with the scaled copies above" : ""), shown.bucket,
                            shown.keys.getFirst()), ui);
                    keeper.awaitStopRequest();
                    out.println("levee demo: stopping (closing the gateway, limiters, observer, backend"
                            + (front != null ? ", NGINX" : "") + (etcd != null ? ", etcd" : "") + ")...");
                }
            }
        } finally {
            if (keeper != null) {
                out.println("levee demo: stopped");
                out.flush();
                Logging.shutdown();
                keeper.stopped();
            }
        }
        Logging.shutdown();
        return rc;
    }

    private static LocalStack startOnEtcd(PrintStream out, EmbeddedEtcd etcd, QuotaConfig cfg, int backend,
                                          LocalStack.Settings settings,
                                          io.micrometer.core.instrument.MeterRegistry registry) throws Exception {
        try (io.etcd.jetcd.Client c = dev.levee.etcd.Etcd.client(List.of(etcd.endpoint()))) {
            List<io.etcd.jetcd.op.Op> puts = new ArrayList<>();
            dev.levee.config.QuotaLayout.toValues(cfg).forEach((k, v) -> puts.add(io.etcd.jetcd.op.Op.put(
                    io.etcd.jetcd.ByteSequence.from("/levee/" + k, StandardCharsets.UTF_8),
                    io.etcd.jetcd.ByteSequence.from(v, StandardCharsets.UTF_8), io.etcd.jetcd.options.PutOption.DEFAULT)));
            c.getKVClient().txn().Then(puts.toArray(io.etcd.jetcd.op.Op[]::new)).commit().get(10, TimeUnit.SECONDS);
        }
        // issue 26 item 5: this etcd is gone when the demo ends; the command is for another terminal meanwhile
        out.println("  etcd         " + etcd.endpoint() + " (quotas under /levee; gone when the demo ends: while it"
                + " runs, in");
        out.println("               another terminal: ./levee quota --etcd " + etcd.endpoint() + " get; or --keep-running)");
        return LocalStack.startWithEtcd(backend, List.of(etcd.endpoint()), "/levee", settings, registry);
    }

    /**
     * Empties the demo's log file, if it logs to one, so that it holds this run only (issue 13); the
     * directory is created when missing.
     *
     * @throws IllegalArgumentException when the file cannot be written, naming it
     */
    static void startFreshLog(LogTarget target) {
        Path f = target.file();
        if (f == null) {
            return;
        }
        try {
            if (f.toAbsolutePath().getParent() != null) {
                java.nio.file.Files.createDirectories(f.toAbsolutePath().getParent());
            }
            java.nio.file.Files.write(f, new byte[0]);
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("--log-target " + target + ": cannot write " + f + ": " + e.getMessage());
        }
    }

    static S3Client s3Client(URI endpoint) {
        return EmbeddedS3.client(endpoint);
    }

    /** Derives one stream per quota entry, keeping those the resolver confirms hit that entry. */
    static List<Stream> deriveStreams(QuotaConfig cfg, double loadFactor) {
        List<Stream> out = new ArrayList<>();
        String other = "levee-demo-other";
        int n = 0;
        while (cfg.resources().containsKey(other)) {
            other = "levee-demo-other-" + (++n);
        }
        addIf(out, cfg, "default (" + other + ")", other, List.of("obj-1", "obj-2", "obj-3"), S3Operation.GetObject,
                new DemoPlan.Entry(QuotaLevel.DEFAULT, null, -1, null), loadFactor);
        for (S3Operation op : cfg.methodsDefault().keySet()) {
            S3Operation driven = drivable(op);
            if (driven != null) {
                addIf(out, cfg, "methods_default." + op + " (" + other + ")", other, List.of("obj-1"), driven,
                        new DemoPlan.Entry(QuotaLevel.METHODS_DEFAULT, null, -1, op), loadFactor);
            }
        }
        int resources = 0;
        for (Map.Entry<String, ResourceQuotas> e : cfg.resources().entrySet()) {
            if (++resources > 4) {
                break;
            }
            String bucket = e.getKey();
            ResourceQuotas rq = e.getValue();
            for (int pi = 0; pi < rq.prefixes().size(); pi++) {
                PrefixRule p = rq.prefixes().get(pi);
                String lit = p.literal();
                String shown = "\"" + p.prefix() + "\"";
                List<String> keys = p.wildcard() ? List.of(lit + "a.bin", lit + "b.bin")
                        : List.of(lit + (lit.isEmpty() || lit.endsWith("/") ? "" : "/") + "demo-1.bin",
                                lit + (lit.isEmpty() || lit.endsWith("/") ? "" : "/") + "demo-2.bin");
                for (S3Operation op : p.methods().keySet()) {
                    S3Operation driven = drivable(op);
                    if (driven != null) {
                        addIf(out, cfg, bucket + " " + shown + " " + op, bucket, keys, driven,
                                new DemoPlan.Entry(QuotaLevel.PREFIX_METHOD, bucket, pi, op), loadFactor);
                    }
                }
                if (p.quota() != null) {
                    S3Operation op = p.methods().containsKey(S3Operation.GetObject) ? S3Operation.HeadObject
                            : S3Operation.GetObject;
                    addIf(out, cfg, bucket + " " + shown + (p.wildcard() ? " (per object)" : ""), bucket, keys, op,
                            new DemoPlan.Entry(QuotaLevel.PREFIX, bucket, pi, null), loadFactor);
                }
            }
            if (rq.quota() != null) {
                addIf(out, cfg, bucket + " (resource)", bucket, List.of("levee-demo-unmatched/x.bin"),
                        S3Operation.GetObject, new DemoPlan.Entry(QuotaLevel.RESOURCE, bucket, -1, null), loadFactor);
            }
        }
        return out;
    }

    private static S3Operation drivable(S3Operation op) {
        return switch (op) {
            case ListObjects, ListObjectsV2 -> S3Operation.ListObjectsV2;
            case GetObject, PutObject, HeadObject, DeleteObject -> op;
            default -> null;
        };
    }

    private static void addIf(List<Stream> out, QuotaConfig cfg, String label, String bucket, List<String> keys,
                              S3Operation op, DemoPlan.Entry entry, double loadFactor) {
        QuotaLevel level = entry.level();
        Set<String> limitKeys = new LinkedHashSet<>();
        Quota quota = null;
        boolean bucketLevel = op == S3Operation.ListObjectsV2;
        for (String k : keys) {
            ResolvedQuota r = cfg.resolve(bucket, bucketLevel ? "" : k, op);
            if (r.level() != level || (quota != null && !quota.equals(r.quota()))) {
                return;
            }
            quota = r.quota();
            limitKeys.add(r.limitKey());
        }
        if (quota == null || quota.rate() <= 0) {
            return;
        }
        List<String> used = bucketLevel ? List.of("") : keys;
        out.add(new Stream(label, bucket, used, op, quota, limitKeys.size(), quota.rate() * limitKeys.size() * loadFactor,
                entry, quota));
    }

    private static void seed(S3Client direct, List<Stream> streams) {
        Set<String> buckets = new LinkedHashSet<>();
        streams.forEach(s -> buckets.add(s.bucket));
        for (String b : buckets) {
            try {
                direct.createBucket(r -> r.bucket(b));
            } catch (S3Exception e) {
                if (!"BucketAlreadyOwnedByYou".equals(e.awsErrorDetails().errorCode())) {
                    throw e;
                }
            }
        }
        for (Stream s : streams) {
            for (String k : s.keys) {
                if (!k.isEmpty()) {
                    direct.putObject(r -> r.bucket(s.bucket).key(k), RequestBody.fromString("levee demo object " + k));
                }
            }
        }
    }

    /**
     * Drives GetObject, PutObject and ListObjectsV2 on a bucket of its own (default quota, its own counter)
     * so that the measured run does not include JIT warm-up of the SDK, gateway, limiters and backend.
     */
    private static void warmUp(PrintStream out, S3Client direct, S3Client s3, Duration d) throws InterruptedException {
        String bucket = "levee-demo-warmup";
        direct.createBucket(r -> r.bucket(bucket));
        direct.putObject(r -> r.bucket(bucket).key("w"), RequestBody.fromString("warm-up"));
        out.printf(Locale.ROOT, "%nWarming up for %d s on bucket %s (not counted)...%n", d.toSeconds(), bucket);
        long end = System.nanoTime() + d.toNanos();
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            Semaphore inFlight = new Semaphore(32);
            for (long i = 0; System.nanoTime() - end < 0; i++) {
                long seq = i;
                if (inFlight.tryAcquire(100, TimeUnit.MILLISECONDS)) {
                    pool.submit(() -> {
                        try {
                            switch ((int) (seq % 3)) {
                                case 0 -> s3.getObjectAsBytes(r -> r.bucket(bucket).key("w"));
                                case 1 -> s3.putObject(r -> r.bucket(bucket).key("w" + seq % 7), RequestBody.fromString("w"));
                                default -> s3.listObjectsV2(r -> r.bucket(bucket).maxKeys(5));
                            }
                        } catch (RuntimeException e) {
                            // SlowDown and the like are expected while warming up
                        } finally {
                            inFlight.release();
                        }
                    });
                }
                TimeUnit.MILLISECONDS.sleep(8); // pacing of the warm-up load, not synchronisation
            }
        }
        TimeUnit.MILLISECONDS.sleep(1200); // let every bucket of the warm-up's own counter drain: not synchronisation
    }

    /** The first line of the demo's advice on bursts (DemoIT looks for it). */
    static final String BURST_ADVICE = "Quotas whose burst cannot hold their rate";

    private static final int OFFERED = DemoTable.OFFERED;
    private static final int ACCEPTED = DemoTable.ACCEPTED;
    private static final int SLOWDOWN = DemoTable.SLOWDOWN;
    private static final int ERRORS = DemoTable.ERRORS;
    /** The load generator's cap on requests awaiting an answer. */
    private static final int IN_FLIGHT = 512;

    /** How long the load generator may run late, or wait for any answer (beyond the backend's latency). */
    static final Duration STALL = Duration.ofSeconds(1);

    /** What a stream's summary line says of it. */
    enum Held { HELD, UNDER, OVER, NOT_MEASURED }

    /**
     * Judges a stream (issue 26 item 1). {@code over}: more admitted than {@code rate × t + g × (burst + 1)} per counter
     * (GCRA's bound, docs/design.md §6). The rate it admitted, {@code (ok − g × burst per counter) / t}, is measured only when
     * it was offered more than its rate and its burst was spent within the first half of the run; then {@code under}
     * below 90 % of its rate, less the one request per limiter and counter a count can miss at the run's edges.
     *
     * @return the verdict and the measured rate as a fraction of the rate held to (NaN when not measured)
     */
    static double[] judge(Stream s, long accepted, double secs, int g) {
        double rate = s.configured();
        double allowance = (double) g * s.driven.burst() * s.counters;
        double bound = rate * secs + allowance + (double) g * s.counters;
        if (accepted > bound) {
            return new double[] {Held.OVER.ordinal(), (accepted - allowance) / secs / rate};
        }
        boolean saturated = s.offered > rate * 1.05 && allowance / (s.offered - rate) <= secs / 2;
        if (!saturated) {
            return new double[] {Held.NOT_MEASURED.ordinal(), Double.NaN};
        }
        double ratio = (accepted - allowance) / secs / rate;
        // a count is exact to one request per limiter and counter at the run's edges (the TAT carried in and out)
        double edge = (double) g * s.counters / (rate * secs);
        return new double[] {(ratio < 0.9 - edge ? Held.UNDER : Held.HELD).ordinal(), ratio};
    }

    private int run(PrintStream out, S3Client s3, List<Stream> streams, int g, double wantedTotal,
                    java.util.function.LongSupplier failedChecks) throws InterruptedException {
        long failedBefore = failedChecks.getAsLong();
        java.util.concurrent.atomic.AtomicLong notSent = new java.util.concurrent.atomic.AtomicLong();
        int seconds = (int) Math.max(1, Math.ceil(duration.toMillis() / 1000.0));
        int m = streams.size();
        Semaphore inFlight = new Semaphore(IN_FLIGHT);
        String[] lastError = new String[1];
        double total = streams.stream().mapToDouble(Stream::offered).sum();
        long scaled = streams.stream().filter(Stream::isScaled).count();
        out.println();
        out.printf(Locale.ROOT, "Offering %s req/s in total for %d s to %d streams, each at %sx the quota it meets%n"
                + "(g = %d limiters per group).%n", rate(total), seconds, m, rate(loadFactor), g);
        if (scaled > 0) {
            out.printf(Locale.ROOT, "At %sx their own quotas the streams would need %s req/s, above --max-rate %s:"
                    + " %d of them meet%n", rate(loadFactor), rate(wantedTotal), rate(maxRate), scaled);
            out.println("a scaled copy of their quota (same burst tolerance in time), enforced by the limiters in its"
                    + " place.");
        }
        for (int i = 0; i < m; i++) {
            Stream s = streams.get(i);
            out.printf(Locale.ROOT, "  [%d] offered %s req/s: %s, %s%n", i + 1, rate(s.offered), s.label, s.op);
            String counters = s.counters > 1 ? ", x " + s.counters + " counters" : "";
            out.printf(Locale.ROOT, "      quota %s req/s, burst %d%s; %s%n", rate(s.quota.rate()), s.quota.burst(), counters,
                    s.isScaled() ? String.format(Locale.ROOT, "met as a copy x%.3g: %s req/s, burst %d", s.driven.rate()
                            / s.quota.rate(), rate(s.driven.rate()), s.driven.burst()) : "met as configured");
        }
        out.println();
        out.println("Each row counts what arrived in that second; per stream: ok = admitted, slow = refused");
        out.println("with 503 SlowDown; all streams: sent = requests sent, pend = sent and not yet answered.");
        dev.levee.core.Ticker ticker = dev.levee.runtime.SystemTicker.INSTANCE;
        long start = ticker.read();
        long end = start + duration.toNanos();
        DemoTable table = new DemoTable(m, seconds, ticker, start);
        table.header().forEach(out::println);
        java.util.concurrent.atomic.AtomicLong lastAnswer = new java.util.concurrent.atomic.AtomicLong(start);
        long maxLag = 0;
        long maxSilence = 0;
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            // one pacing thread: issues every stream's requests at its exact offered rate (open loop)
            double[] next = new double[m];
            long[] issued = new long[m];
            while (true) {
                long now = ticker.read();
                if (now - end >= 0) {
                    break;
                }
                if (inFlight.availablePermits() < IN_FLIGHT) {
                    maxSilence = Math.max(maxSilence, now - lastAnswer.get());
                } else {
                    lastAnswer.set(now); // nothing awaited: no silence
                }
                double elapsed = (now - start) / 1e9;
                for (int i = 0; i < m; i++) {
                    Stream s = streams.get(i);
                    while (next[i] <= elapsed) {
                        maxLag = Math.max(maxLag, (long) ((elapsed - next[i]) * 1e9));
                        long seq = issued[i]++;
                        next[i] = issued[i] / s.offered;
                        table.record(i, OFFERED);
                        if (!inFlight.tryAcquire()) {
                            table.record(i, DemoTable.NOT_SENT);
                            notSent.incrementAndGet();
                            continue;
                        }
                        final int idx = i;
                        pool.submit(() -> {
                            try {
                                table.record(idx, send(s3, s, seq, lastError));
                                lastAnswer.set(ticker.read());
                            } finally {
                                inFlight.release();
                            }
                        });
                    }
                }
                table.dueRows().forEach(out::println); // a second once it is over
                TimeUnit.MILLISECONDS.sleep(2); // pacing tick of the load generator, not synchronisation
            }
            pool.shutdown();
            if (!pool.awaitTermination(35, TimeUnit.SECONDS)) {
                out.println("  (some requests were still in flight after 35 s)");
            }
            table.remainingRows().forEach(out::println);
        }
        double secs = duration.toNanos() / 1e9;
        out.println();
        out.printf(Locale.ROOT, "Summary over %s s: held = (ok - g x burst per counter) / t against the rate the stream"
                + " meets;%n", rate(secs));
        out.println("bound = rate x t + g x (burst + 1) per counter (docs/design.md §6); admitted above it: OVER.");
        out.printf(Locale.ROOT, "  %-7s %7s %7s %7s %6s %9s %9s %7s  %s%n", "stream", "sent", "ok", "slow", "other",
                "rate/s", "held/s", "held", "verdict");
        List<Integer> over = new ArrayList<>();
        List<Integer> under = new ArrayList<>();
        double minHeld = Double.POSITIVE_INFINITY;
        double maxHeld = Double.NEGATIVE_INFINITY;
        long errors = 0;
        for (int i = 0; i < m; i++) {
            Stream s = streams.get(i);
            long acc = table.total(i, ACCEPTED);
            long sent = table.total(i, OFFERED) - table.total(i, DemoTable.NOT_SENT);
            errors += table.total(i, ERRORS);
            double[] j = judge(s, acc, secs, g);
            Held held = Held.values()[(int) j[0]];
            String verdict = switch (held) {
                case HELD -> "held";
                case OVER -> "OVER its bound";
                case UNDER -> "UNDER its rate";
                case NOT_MEASURED -> s.offered <= s.configured() * 1.05 ? "offered within its quota"
                        : "burst lasted over t/2";
            };
            if (held == Held.OVER) {
                over.add(i + 1);
            } else if (held == Held.UNDER) {
                under.add(i + 1);
            }
            if (!Double.isNaN(j[1])) {
                minHeld = Math.min(minHeld, j[1]);
                maxHeld = Math.max(maxHeld, j[1]);
            }
            out.printf(Locale.ROOT, "  %-7s %7d %7d %7d %6d %9.1f %9s %7s  %s%n", "[" + (i + 1) + "]", sent, acc,
                    table.total(i, SLOWDOWN), table.total(i, ERRORS), s.configured(),
                    Double.isNaN(j[1]) ? "-" : String.format(Locale.ROOT, "%.1f", j[1] * s.configured()),
                    Double.isNaN(j[1]) ? "-" : String.format(Locale.ROOT, "%.0f%%", 100 * j[1]), verdict);
        }
        out.println();
        out.println(errors == 0 ? "No request failed with anything but SlowDown."
                : errors + " request(s) failed otherwise" + (lastError[0] == null ? "" : "; last: " + lastError[0]));
        // the quotas driven whose burst cannot hold their rate over g limiters, in the words `levee quota calc` and
        // `levee config validate` use: a property of the quota as configured, said whatever the load (docs/decisions.md,
        // "Bursts that hold the rate")
        List<String> weak = new ArrayList<>();
        for (int i = 0; i < m; i++) {
            Stream s = streams.get(i);
            if (!dev.levee.quota.BurstAdvice.holds(s.quota.rate(), s.quota.burst(), g)) {
                weak.add("  stream [" + (i + 1) + "]: " + dev.levee.quota.BurstAdvice.sentence(s.quota.rate(), s.quota.burst(), g));
            }
        }
        if (!weak.isEmpty()) {
            out.println(BURST_ADVICE + " (as `levee config validate` and `levee quota calc` say):");
            weak.forEach(out::println);
        }
        long failed = failedChecks.getAsLong() - failedBefore;
        if (failed > 0) {
            out.println(failed + " check(s) failed (no limiter answered in time) and the gateway let those requests"
                    + " through (on_failure=allow): they count as ok above");
        }
        long silence = maxSilence - backendLatency.toNanos();
        List<String> behind = new ArrayList<>();
        if (notSent.get() > 0) {
            behind.add(notSent.get() + " request(s) not sent (" + IN_FLIGHT + " already awaited an answer)");
        }
        if (silence >= STALL.toNanos()) {
            behind.add(String.format(Locale.ROOT, "%.1f s without any answer%s", silence / 1e9,
                    backendLatency.isZero() ? "" : " beyond --backend-latency"));
        }
        if (maxLag >= STALL.toNanos()) {
            behind.add(String.format(Locale.ROOT, "requests sent up to %.1f s late", maxLag / 1e9));
        }
        out.println();
        if (!behind.isEmpty()) {
            out.println("Verdict: FELL BEHIND. The load generator could not offer " + rate(total) + " req/s here:");
            behind.forEach(b -> out.println("  " + b + ";"));
            out.println("the rows show this machine's limit, not the quotas'. Run again with a lower --max-rate");
            out.printf(Locale.ROOT, "(this run: --max-rate %s; at most %d answers arrived in one second).%n", rate(maxRate),
                    table.maxAnsweredInASecond());
            return 1;
        }
        if (!over.isEmpty()) {
            out.println("Verdict: stream(s) " + over + " admitted more than their bound"
                    + (failed > 0 ? " (failed checks were let through, see above)." : "."));
            return 1;
        }
        String range = minHeld <= maxHeld ? String.format(Locale.ROOT, " at %.0f-%.0f %% of their rate", 100 * minHeld,
                100 * maxHeld) : "";
        out.println("Verdict: every stream stayed within its bound" + range + ".");
        if (!under.isEmpty()) {
            out.println("Stream(s) " + under + " admitted less than 90 % of their rate" + (weak.isEmpty()
                    ? ";" : ": see the bursts above."));
            if (weak.isEmpty()) {
                out.println("their bursts hold their rates: pauses of the host under " + STALL.toSeconds()
                        + " s, or a defect of Levee.");
            }
        }
        return 0;
    }

    /** A rate as printed: up to 4 significant digits, no trailing zeros ({@code 1000}, {@code 16.7}, {@code 2.5}). */
    static String rate(double v) {
        return new java.math.BigDecimal(v).round(new java.math.MathContext(v >= 1000 ? 6 : 4)).stripTrailingZeros()
                .toPlainString();
    }

    private static int send(S3Client s3, Stream s, long seq, String[] lastError) {
        String key = s.keys.get((int) (seq % s.keys.size()));
        try {
            switch (s.op) {
                case GetObject -> s3.getObjectAsBytes(r -> r.bucket(s.bucket).key(key));
                case HeadObject -> s3.headObject(r -> r.bucket(s.bucket).key(key));
                case PutObject -> s3.putObject(r -> r.bucket(s.bucket).key(key),
                        RequestBody.fromString("levee demo payload " + seq, StandardCharsets.UTF_8));
                case DeleteObject -> s3.deleteObject(r -> r.bucket(s.bucket).key(key + ".tmp"));
                case ListObjectsV2 -> s3.listObjectsV2(r -> r.bucket(s.bucket).maxKeys(10));
                default -> throw new IllegalStateException("not drivable: " + s.op);
            }
            return ACCEPTED;
        } catch (S3Exception e) {
            if (e.statusCode() == 503 && (e.awsErrorDetails() == null || e.awsErrorDetails().errorCode() == null
                    || "SlowDown".equals(e.awsErrorDetails().errorCode()))) {
                return SLOWDOWN;
            }
            if (e.statusCode() == 404) {
                return ACCEPTED; // passed the limiter; the object was simply not there
            }
            lastError[0] = e.statusCode() + " " + e.getMessage();
            return ERRORS;
        } catch (RuntimeException e) {
            lastError[0] = e.toString();
            return ERRORS;
        }
    }
}
