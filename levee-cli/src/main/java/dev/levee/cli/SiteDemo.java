package dev.levee.cli;

import com.google.common.util.concurrent.RateLimiter;
import dev.levee.gateway.ByteUnits;
import dev.levee.gateway.GatewayService;
import dev.levee.gateway.GovernanceSettings;
import dev.levee.gateway.PrincipalDirectory;
import dev.levee.gateway.ReadyReport;
import dev.levee.gateway.SiteSettings;
import dev.levee.gateway.site.EtcdShareStore;
import dev.levee.gateway.site.ShareKeeper;
import dev.levee.gateway.site.SiteBudget;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import dev.levee.stack.EmbeddedEtcd;
import dev.levee.stack.EmbeddedS3;
import dev.levee.stack.PartitionProxy;
import io.vertx.core.Vertx;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * {@code levee demo --gateways N}: N gateways share one site download budget through etcd leases
 * (SPEC.md §10). Their clients want different rates (⅙, ⅔ and 4⁄3 of the budget, repeating); the
 * demo prints each second what each gateway sent and its share, the sum against the budget, and
 * cuts the last gateway off from etcd for a while: it fails closed (sends nothing once its lease
 * could have expired) while the others take over its share, then rejoins when the link heals.
 */
final class SiteDemo {

    private static final long MiB = 1 << 20;
    private static final double[] DEMAND = {1.0 / 6, 2.0 / 3, 4.0 / 3};
    private static final int OBJECT_BYTES = 32 << 20;

    private SiteDemo() {
    }

    /**
     * Reads a site budget file for the demo.
     *
     * @throws IllegalArgumentException naming the file and field, or when it gives no download budget
     */
    static SiteBudget readBudget(java.nio.file.Path file) {
        String text;
        try {
            text = java.nio.file.Files.readString(file);
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("--site-budget: " + Main.unreadable(file, e));
        }
        SiteBudget b = SiteBudget.parse(file.toString(), text);
        if (b.download() == 0) {
            throw new IllegalArgumentException("--site-budget " + file + ": the demo shares a download budget; field"
                    + " 'download' is 0 or absent");
        }
        return b;
    }

    static int run(PrintStream out, int gateways, SiteBudget siteBudget, Duration duration) throws Exception {
        long budget = siteBudget.download();
        java.util.List<String> problems = siteBudget.checkGateways("the site budget", gateways);
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException(String.join("\n", problems));
        }
        if (EmbeddedEtcd.binary() == null) {
            throw new IllegalArgumentException("--gateways needs etcd installed: apt-get install -y etcd-server");
        }
        out.printf(Locale.ROOT, "levee demo: %d gateways share a site download budget of %s through etcd leases"
                + " (docs/site-bandwidth.md)...%n", gateways, ByteUnits.formatRate(budget));
        Vertx vertx = dev.levee.runtime.Http.vertx();
        List<GatewayService> gws = new ArrayList<>();
        List<Thread> drivers = new ArrayList<>();
        AtomicBoolean stop = new AtomicBoolean();
        try (EmbeddedEtcd etcd = EmbeddedEtcd.start(); EmbeddedS3 s3 = EmbeddedS3.start()) {
            URI etcdUri = URI.create(etcd.endpoint());
            PartitionProxy cut = PartitionProxy.start(vertx, etcdUri.getHost(), etcdUri.getPort());
            try (io.etcd.jetcd.Client c = dev.levee.etcd.Etcd.client(List.of(etcd.endpoint()))) {
                c.getKVClient().put(io.etcd.jetcd.ByteSequence.from(EtcdShareStore.budgetKey("/levee"), StandardCharsets.UTF_8),
                        io.etcd.jetcd.ByteSequence.from(siteBudget.toYaml(), StandardCharsets.UTF_8))
                        .get(10, TimeUnit.SECONDS);
            }
            try (S3Client direct = EmbeddedS3.client(URI.create("http://127.0.0.1:" + s3.port()))) {
                direct.createBucket(b -> b.bucket("site-demo"));
                direct.putObject(b -> b.bucket("site-demo").key("big"), RequestBody.fromBytes(new byte[OBJECT_BYTES]));
            }
            PrincipalDirectory nobody = PrincipalDirectory.parseYaml("accounts: {}\n", "site demo");
            for (int i = 1; i <= gateways; i++) {
                String endpoint = i == gateways ? "http://127.0.0.1:" + cut.port() : etcd.endpoint();
                ShareKeeper.Settings keeper = new ShareKeeper.Settings("gw-" + i, Duration.ofSeconds(3),
                        Duration.ofMillis(500), 0.01, Duration.ofMillis(100), Duration.ofMillis(500), 3);
                GovernanceSettings gov = GovernanceSettings.builder().principals(nobody)
                        .site(new SiteSettings(List.of(endpoint), "/levee", dev.levee.etcd.Etcd.DEFAULT_MAX_MESSAGE_BYTES,
                                keeper)).build();
                HostPort any = new HostPort("127.0.0.1", 0);
                GatewayService.Options o = new GatewayService.Options(any, any, new HostPort("127.0.0.1", s3.port()), false,
                        GatewayService.OnFailure.ALLOW, Duration.ofSeconds(60), 256).withGovernance(gov);
                gws.add(Daemon.await(GatewayService.start(vertx, o, null, Metrics.newRegistry()), "gateway gw-" + i));
            }
            for (int i = 0; i < gateways; i++) {
                GatewayService g = gws.get(i);
                long rate = (long) (DEMAND[i % DEMAND.length] * budget);
                out.printf(Locale.ROOT, "  gw-%d        http://127.0.0.1:%d  clients want %s%s%n", i + 1, g.port(),
                        ByteUnits.formatRate(rate).replace(" ", ""), i == gateways - 1 ? " (its etcd link is cut later)" : "");
                RateLimiter pace = RateLimiter.create(rate);
                for (int t = 0; t < 2; t++) {
                    Thread th = new Thread(() -> drive(g.port(), pace, stop), "site-demo-client-" + (i + 1) + "-" + t);
                    th.setDaemon(true);
                    th.start();
                    drivers.add(th);
                }
            }
            out.println("  etcd         " + etcd.endpoint() + " (try: ./levee bandwidth status --etcd " + etcd.endpoint() + ")");
            long seconds = Math.max(6, duration.toSeconds());
            long cutAt = Math.round(seconds * 0.4);
            long healAt = Math.round(seconds * 0.75);
            StringBuilder head = new StringBuilder("\n   t ");
            for (int i = 1; i <= gateways; i++) {
                head.append(String.format(Locale.ROOT, "  gw-%d MiB/s share", i));
            }
            head.append("   Σ MiB/s Σ share  (budget ").append(String.format(Locale.ROOT, "%.1f", budget / (double) MiB)).append(")");
            out.println(head);
            long[] prev = new long[gateways];
            for (int i = 0; i < gateways; i++) {
                prev[i] = granted(gws.get(i));
            }
            double maxSum = 0;
            double sumAll = 0;
            long start = System.nanoTime();
            for (long s = 1; s <= seconds; s++) {
                long wake = start + TimeUnit.SECONDS.toNanos(s);
                while (System.nanoTime() < wake) {
                    TimeUnit.NANOSECONDS.sleep(Math.min(50_000_000, wake - System.nanoTime()));
                }
                StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "%4d ", s));
                double sum = 0;
                double shares = 0;
                for (int i = 0; i < gateways; i++) {
                    long now = granted(gws.get(i));
                    double mib = (now - prev[i]) / (double) MiB;
                    prev[i] = now;
                    ReadyReport.SiteDirection d = gws.get(i).readyReport().governance().site().directions().get("download");
                    sum += mib;
                    if (!d.failingClosed()) {
                        shares += d.share() / (double) MiB;
                    }
                    row.append(String.format(Locale.ROOT, "  %10.1f %5s", mib,
                            d.failingClosed() ? "CLOSED" : String.format(Locale.ROOT, "%.1f", d.share() / (double) MiB)));
                }
                maxSum = Math.max(maxSum, sum);
                sumAll += sum;
                row.append(String.format(Locale.ROOT, "  %8.1f %7.1f", sum, shares));
                if (s == cutAt) {
                    cut.partition(true);
                    row.append("  <- gw-").append(gateways).append(" cut off from etcd");
                } else if (s == healAt) {
                    cut.partition(false);
                    row.append("  <- link healed");
                }
                out.println(row);
            }
            out.printf(Locale.ROOT, "%nsummary: busiest second %.1f MiB/s, mean %.1f MiB/s, budget %.1f MiB/s"
                            + " (ceiling per second: budget + one burst per gateway)%n", maxSum, sumAll / seconds,
                    budget / (double) MiB);
            stop.set(true);
            cut.close();
        } finally {
            stop.set(true);
            for (GatewayService g : gws) {
                try {
                    g.stop(Duration.ofSeconds(1)).toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
                } catch (Exception e) {
                    // stopping anyway
                }
            }
            for (Thread t : drivers) {
                t.join(2000);
            }
        }
        return 0;
    }

    private static long granted(GatewayService g) {
        return g.readyReport().governance().bandwidth().get("download").grantedBytes();
    }

    /** Downloads the object again and again, reading its body at the pace of {@code pace} (bytes/s). */
    private static void drive(int port, RateLimiter pace, AtomicBoolean stop) {
        byte[] buf = new byte[64 << 10];
        try (S3Client c = EmbeddedS3.client(URI.create("http://127.0.0.1:" + port))) {
            while (!stop.get()) {
                try (InputStream in = c.getObject(b -> b.bucket("site-demo").key("big"))) {
                    int n;
                    while (!stop.get() && (n = in.read(buf)) > 0) {
                        pace.acquire(n);
                    }
                } catch (Exception e) {
                    if (stop.get()) {
                        return;
                    }
                    try {
                        TimeUnit.MILLISECONDS.sleep(200); // a 503 while failing closed: retry shortly, as SDKs do
                    } catch (InterruptedException ie) {
                        return;
                    }
                }
            }
        }
    }
}
