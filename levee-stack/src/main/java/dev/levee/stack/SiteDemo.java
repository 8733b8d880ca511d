package dev.levee.stack;

import com.google.common.util.concurrent.RateLimiter;
import dev.levee.core.ByteUnits;
import dev.levee.core.Ticker;
import dev.levee.etcd.EtcdShareStore;
import dev.levee.gateway.GatewayOptions;
import dev.levee.gateway.GatewayService;
import dev.levee.gateway.GovernanceSettings;
import dev.levee.gateway.PrincipalDirectory;
import dev.levee.gateway.ReadyReport;
import dev.levee.gateway.SiteSettings;
import dev.levee.lease.MaxMinFair;
import dev.levee.lease.ShareKeeper;
import dev.levee.lease.SiteBudget;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import io.vertx.core.Vertx;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
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
 * (docs/design.md §10). Their clients want different rates (⅙, ⅔ and 4⁄3 of the budget, repeating); the
 * demo prints each second, per gateway, what its governor granted (sent) and what its clients read, its lease
 * share and its max-min fair share of the budget for the clients' demands, with the site's sum and a verdict
 * (issue 26 item 4); it cuts the last gateway off from etcd for a while: it fails closed (sends nothing once
 * its lease could have expired) while the others take over its share, then rejoins when the link heals. At
 * the end: the site against its budget (exit 1 if it sent more than the budget and bursts allow in a second)
 * and each gateway against its fair share (shown, not an exit status: docs/site-bandwidth.md).
 */
public final class SiteDemo {

    private static final long MiB = 1 << 20;
    private static final double[] DEMAND = {1.0 / 6, 2.0 / 3, 4.0 / 3};
    private static final int OBJECT_BYTES = 32 << 20;

    private SiteDemo() {
    }

    /**
     * Runs the demo and prints it to {@code out}.
     *
     * @param out        where the demo's table goes (standard output for {@code levee demo})
     * @param gateways   how many gateways share the budget, ≥ 2
     * @param siteBudget the site budget, with a download budget
     * @param duration   how long the demo runs (at least 6 s)
     * @param ticker     the monotonic clock of the gateways and of the demo's seconds
     * @param wallClock  the gateways' wall clock
     * @return the exit status: 1 if the site sent more than its budget allows in a second, else 0
     * @throws IllegalArgumentException when the budget does not fit the gateways, or etcd is not installed
     * @throws IllegalStateException    naming the gateway when one does not start
     */
    public static int run(PrintStream out, int gateways, SiteBudget siteBudget, Duration duration, Ticker ticker,
                          Clock wallClock) throws Exception {
        long budget = siteBudget.download();
        java.util.List<String> problems = siteBudget.checkGateways("the site budget", gateways);
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException(String.join("\n", problems));
        }
        if (EmbeddedEtcd.binary() == null) {
            throw new IllegalArgumentException("--gateways needs etcd installed: apt-get install -y etcd-server");
        }
        out.printf(Locale.ROOT, "levee demo: %d gateways share a site download budget of %s through etcd leases...%n",
                gateways, ByteUnits.formatRate(budget));
        Vertx vertx = dev.levee.runtime.Http.vertx();
        List<GatewayService> gws = new ArrayList<>();
        List<Thread> drivers = new ArrayList<>();
        AtomicBoolean stop = new AtomicBoolean();
        int rc;
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
                GatewayOptions o = GatewayOptions.builder(new HostPort("127.0.0.1", s3.port())).listen(any).admin(any)
                        .enforce(false).governance(gov).healthToken(LocalStack.HEALTH_TOKEN).build();
                gws.add(dev.levee.runtime.Http.await(GatewayService.start(vertx, o, null, ticker, wallClock,
                        Metrics.newRegistry()), "gateway gw-" + i));
            }
            double[] demand = new double[gateways];
            java.util.concurrent.atomic.AtomicLong[] read = new java.util.concurrent.atomic.AtomicLong[gateways];
            for (int i = 0; i < gateways; i++) {
                GatewayService g = gws.get(i);
                long rate = (long) (DEMAND[i % DEMAND.length] * budget);
                demand[i] = rate;
                read[i] = new java.util.concurrent.atomic.AtomicLong();
                java.util.concurrent.atomic.AtomicLong counted = read[i];
                out.printf(Locale.ROOT, "  gw-%d        http://127.0.0.1:%d  its clients read up to %s%s%n", i + 1, g.port(),
                        ByteUnits.formatRate(rate).replace(" ", ""), i == gateways - 1 ? " (its etcd link is cut later)" : "");
                RateLimiter pace = RateLimiter.create(rate);
                for (int t = 0; t < 2; t++) {
                    Thread th = new Thread(() -> drive(g.port(), pace, counted, stop), "site-demo-client-" + (i + 1) + "-" + t);
                    th.setDaemon(true);
                    th.start();
                    drivers.add(th);
                }
            }
            out.println("  etcd         " + etcd.endpoint() + " (gone when the demo ends; while it runs, in another"
                    + " terminal:");
            out.println("               ./levee bandwidth status --etcd " + etcd.endpoint() + ")");
            long seconds = Math.max(6, duration.toSeconds());
            long cutAt = Math.round(seconds * 0.4);
            long healAt = Math.round(seconds * 0.75);
            double budgetMiB = budget / (double) MiB;
            // what the site may send in one second: the budget and the bursts of the shared buckets (within 5 % of it)
            double ceilingMiB = budgetMiB * 1.05 + 0.0625;
            out.println();
            out.printf(Locale.ROOT, "Each second, MiB/s per gateway: sent = granted by its governor, read = read by its"
                    + " clients,%nshare = its lease share (CLOSED: failing closed), fair = its max-min fair share of the"
                    + " budget%nfor the clients' demands of the gateways not failing closed. Site: sent by all against"
                    + " %.1f.%n(docs/site-bandwidth.md, \"What the demo shows\")%n", budgetMiB);
            StringBuilder names = new StringBuilder("     ");
            StringBuilder head = new StringBuilder("   t ");
            for (int i = 1; i <= gateways; i++) {
                names.append(String.format(Locale.ROOT, "| %-23s", "gw-" + i));
                head.append("| sent  read  share  fair");
            }
            out.println(names.append("| site"));
            out.println(head.append("| sent verdict"));
            long[] prevSent = new long[gateways];
            long[] prevRead = new long[gateways];
            for (int i = 0; i < gateways; i++) {
                prevSent[i] = granted(gws.get(i));
                prevRead[i] = read[i].get();
            }
            double maxSum = 0;
            double sumAll = 0;
            int overSeconds = 0;
            int[] belowSeconds = new int[gateways];
            double[] readAll = new double[gateways];
            double[] fairAll = new double[gateways];
            long start = ticker.read();
            long prevAt = start;
            for (long s = 1; s <= seconds; s++) {
                long wake = start + TimeUnit.SECONDS.toNanos(s);
                while (ticker.read() - wake < 0) {
                    TimeUnit.NANOSECONDS.sleep(Math.min(50_000_000, wake - ticker.read()));
                }
                long at = ticker.read();
                double secs = (at - prevAt) / 1e9; // the real length of this second: the host may have paused us
                prevAt = at;
                StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "%4d ", s));
                double sum = 0;
                double[] sent = new double[gateways];
                double[] got = new double[gateways];
                boolean[] closed = new boolean[gateways];
                double[] wants = new double[gateways];
                String[] share = new String[gateways];
                for (int i = 0; i < gateways; i++) {
                    long nowSent = granted(gws.get(i));
                    long nowRead = read[i].get();
                    sent[i] = (nowSent - prevSent[i]) / (double) MiB / secs;
                    got[i] = (nowRead - prevRead[i]) / (double) MiB / secs;
                    prevSent[i] = nowSent;
                    prevRead[i] = nowRead;
                    ReadyReport.SiteDirection d = gws.get(i).readyReport().governance().site().directions().get("download");
                    closed[i] = d.failingClosed();
                    wants[i] = closed[i] ? 0 : demand[i] / MiB;
                    share[i] = closed[i] ? "CLOSED" : d.share() < 0 ? "held"
                            : String.format(Locale.ROOT, "%.1f", d.share() / (double) MiB);
                    sum += sent[i];
                }
                double[] fair = MaxMinFair.fairShares(wants, budgetMiB);
                List<String> below = new ArrayList<>();
                for (int i = 0; i < gateways; i++) {
                    row.append(String.format(Locale.ROOT, "|%5.1f %5.1f %6s %5.1f", sent[i], got[i], share[i], fair[i]));
                    readAll[i] += got[i];
                    fairAll[i] += fair[i];
                    if (got[i] < 0.9 * fair[i]) {
                        below.add(Integer.toString(i + 1));
                        belowSeconds[i]++;
                    }
                }
                maxSum = Math.max(maxSum, sum);
                sumAll += sum;
                boolean over = sum > ceilingMiB;
                if (over) {
                    overSeconds++;
                }
                row.append(String.format(Locale.ROOT, "|%5.1f %s", sum, over ? "OVER BUDGET"
                        : below.isEmpty() ? "fair" : "< fair: " + String.join(",", below)));
                out.println(row);
                if (s == cutAt) {
                    cut.partition(true);
                    out.println("  -> gw-" + gateways + " cut off from etcd (it fails closed once its lease could have"
                            + " expired)");
                } else if (s == healAt) {
                    cut.partition(false);
                    out.println("  -> link healed");
                }
            }
            out.printf(Locale.ROOT, "%nsummary: busiest second %.1f MiB/s, mean %.1f, budget %.1f (with bursts: %.1f"
                    + " a second)%n", maxSum, sumAll / seconds, budgetMiB, ceilingMiB);
            for (int i = 0; i < gateways; i++) {
                out.printf(Locale.ROOT, "  gw-%d: its clients read %.1f MiB/s on average, fair share %.1f; below 90 %% of"
                        + " it in %d of %d s%n", i + 1, readAll[i] / seconds, fairAll[i] / seconds, belowSeconds[i], seconds);
            }
            List<String> unfair = new ArrayList<>();
            for (int i = 0; i < gateways; i++) {
                if (belowSeconds[i] > 0) {
                    unfair.add("gw-" + (i + 1) + " in " + belowSeconds[i] + " s");
                }
            }
            out.println(overSeconds > 0
                    ? "Verdict: the site sent more than its budget allows in " + overSeconds + " of " + seconds + " s."
                    : "Verdict: the site stayed within its budget every second.");
            out.println(unfair.isEmpty() ? "Every gateway's clients got at least 90 % of its fair share every second."
                    : "Below its fair share: " + String.join(", ", unfair) + ".\nShares follow the demand each gateway"
                            + " measures (docs/site-bandwidth.md, \"What the demo shows\").");
            rc = overSeconds > 0 ? 1 : 0;
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
        return rc;
    }

    private static long granted(GatewayService g) {
        return g.readyReport().governance().bandwidth().get("download").grantedBytes();
    }

    /** Downloads the object again and again, reading its body at the pace of {@code pace} (bytes/s), counting it. */
    private static void drive(int port, RateLimiter pace, java.util.concurrent.atomic.AtomicLong read, AtomicBoolean stop) {
        byte[] buf = new byte[64 << 10];
        try (S3Client c = EmbeddedS3.client(URI.create("http://127.0.0.1:" + port))) {
            while (!stop.get()) {
                try (InputStream in = c.getObject(b -> b.bucket("site-demo").key("big"))) {
                    int n;
                    while (!stop.get() && (n = in.read(buf)) > 0) {
                        read.addAndGet(n);
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
