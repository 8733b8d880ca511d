package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.client.ClientService;
import dev.levee.client.LeveeClient;
import dev.levee.client.RequestLeases;
import dev.levee.config.QuotaConfigLoader;
import dev.levee.config.StaticQuotaSource;
import dev.levee.core.Member;
import dev.levee.core.MembershipView;
import dev.levee.limiter.LimiterService;
import dev.levee.observer.ObserverService;
import dev.levee.nginx.NginxConfig;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import dev.levee.stack.EmbeddedNginx;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Issue 23's acceptance bound with request leases on: quotas of 50, 500 and 5 000 req/s over four limiters
 * (factor 4, bursts by docs/quotas.md's formula), two levee-clients with {@code --leases} driven closed-loop at
 * well over the rate, admissions counted at the clients. In every 10 s window the admitted count stays within
 * docs/design.md §5's {@code rate × w + g × burst + g} and at or above 97 % of {@code rate × w}; and the
 * admissions came from leases (the clients' lease counters), not from a per-request check each: almost all of them
 * at 500 and 5 000 req/s, a part at 50 req/s (see the test).
 */
class RequestLeaseBoundIT {

    static final int G = 4;
    static final double WINDOW_S = 10;
    static final double MEASURED_S = 13;
    static final String QUOTAS = """
            factor: 4
            default: {rate: 1000000, burst: 100000}
            resources:
              lease50: {quota: {rate: 50, burst: 2}}
              lease500: {quota: {rate: 500, burst: 13}}
              lease5000: {quota: {rate: 5000, burst: 125}}
              batchhot: {quota: {rate: 200000, burst: 2000}}
            """;

    @org.junit.jupiter.api.io.TempDir
    java.nio.file.Path logs;

    Vertx vertx;
    StaticQuotaSource quotas;
    final List<LimiterService> limiters = new ArrayList<>();
    ObserverService observer;
    final List<LeveeClient> clients = new ArrayList<>();
    final List<MeterRegistry> registries = new ArrayList<>();
    final List<ClientService> endpoints = new ArrayList<>();

    static <T> T done(Future<T> f) throws Exception {
        return f.await(10, TimeUnit.SECONDS);
    }

    @BeforeEach
    void start() throws Exception {
        // every check and grant logged at INFO as in production, to a file of this test's own
        Logging.configure(new LogTarget("file", null, 0, logs.resolve("lease-bound.log")), "levee-it", "INFO");
        vertx = Vertx.vertx();
        quotas = new StaticQuotaSource(QuotaConfigLoader.parse(QUOTAS, "test quotas"));
        List<Member> members = new ArrayList<>();
        for (String id : List.of("b1", "b2", "b3", "b4")) {
            LimiterService l = limiter(id, 0);
            limiters.add(l);
            members.add(new Member(id, l.address().toString()));
        }
        MembershipView view = new MembershipView(1, 4, members);
        observer = done(ObserverService.start(vertx, new HostPort("127.0.0.1", 0), () -> view, () -> true,
                Metrics.newRegistry()));
        for (int i = 0; i < 2; i++) {
            MeterRegistry registry = Metrics.newRegistry();
            // a threshold of 10 checks/s: each client sees the 50 req/s quota's key far above it when driven
            RequestLeases leases = new RequestLeases(new RequestLeases.Settings(10, Duration.ofSeconds(1)),
                    quotas::current, registry);
            LeveeClient c = done(LeveeClient.start(vertx, LeveeClient.Options.builder(
                            new HostPort("127.0.0.1", observer.port())).refresh(Duration.ofMillis(500))
                    .checkTimeout(Duration.ofMillis(250)).backoff(Duration.ofSeconds(2)).build(),
                    SystemTicker.INSTANCE, registry, leases));
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> c.view().limiters().size() == 4);
            clients.add(c);
            registries.add(registry);
            endpoints.add(done(ClientService.start(vertx, new HostPort("127.0.0.1", 0), c, Metrics.newRegistry())));
        }
    }

    final List<MeterRegistry> limiterRegistries = new ArrayList<>();

    LimiterService limiter(String id, int port) throws Exception {
        MeterRegistry registry = Metrics.newRegistry();
        limiterRegistries.add(registry);
        return done(LimiterService.start(vertx, new LimiterService.Options(id, new HostPort("127.0.0.1", port), null,
                null, Duration.ofSeconds(1), 10_000), quotas, SystemTicker.INSTANCE, registry));
    }

    /** Sums a counter over registries, by its {@code result} tag when one is given. */
    static double sum(List<MeterRegistry> registries, String name, String result) {
        return registries.stream().mapToDouble(r -> (result == null ? r.find(name) : r.find(name).tag("result", result))
                .counters().stream().mapToDouble(c -> c.count()).sum()).sum();
    }

    /** What the leases did, for the report: slots granted, asks by answer, checks refused from a lease. */
    String leaseFigures() {
        StringBuilder b = new StringBuilder("slots granted ").append((long) sum(limiterRegistries,
                "levee_limiter_lease_slots_total", null)).append("; asks");
        for (String r : List.of("granted", "refused", "fenced", "not_leasable", "malformed", "failed", "stale")) {
            b.append(' ').append(r).append(' ').append((long) sum(registries, "levee_client_lease_asks_total", r));
        }
        return b.append("; refused waiting ").append((long) sum(registries, "levee_client_lease_admissions_total",
                "waiting")).append("; slots handed to NGINX in batches ").append((long) sum(registries,
                "levee_client_lease_batch_slots_total", null)).toString();
    }

    @AfterEach
    void stop() throws Exception {
        for (ClientService e : endpoints) {
            done(e.stop());
        }
        for (LeveeClient c : clients) {
            done(c.stop());
        }
        if (observer != null) {
            done(observer.stop());
        }
        for (LimiterService l : limiters) {
            l.kill();
        }
        vertx.close().await(20, TimeUnit.SECONDS);
        Logging.configure(new LogTarget("file", null, 0, Stack.LOG.toAbsolutePath()), "levee-it", "INFO");
    }

    ClosedLoop.Run drive(String bucket, int connections, double seconds) throws Exception {
        return ClosedLoop.drive(endpoints.stream().map(ClosedLoop.Endpoint::of).toList(), bucket, connections, seconds);
    }

    double leaseAdmissions() {
        return registries.stream().mapToDouble(r -> r.find("levee_client_lease_admissions_total")
                .tag("result", "admitted").counters().stream().mapToDouble(c -> c.count()).sum()).sum();
    }

    @ParameterizedTest(name = "{0} req/s, burst {1}")
    @CsvSource({"50, 2, 4, 0.1", "500, 13, 8, 0.9", "5000, 125, 32, 0.9"})
    void twoLeasingClientsStayWithinTheBoundAndAbove97PercentInEveryTenSecondWindow(double rate, int burst,
            int connections, double leasedShare) throws Exception {
        String bucket = "lease" + (long) rate;
        // the key turns hot, the clients take leases and the burst is spent: every window below is in steady state
        ClosedLoop.Run warm = drive(bucket, connections, 3);
        double leasedBefore = leaseAdmissions();
        System.out.println("leases after the warm-up: " + leaseFigures());
        ClosedLoop.Run r = drive(bucket, connections, MEASURED_S);
        double leased = leaseAdmissions() - leasedBefore;
        System.out.println("leases after the run: " + leaseFigures());
        Windows f = new Windows(warm, r, rate, burst);
        System.out.printf("leases, %.0f/s over 4 limiters, 2 clients × %d connections: %s, %.0f from leases%n", rate,
                connections, f, leased);
        f.assertBound();
        // at 50 req/s a member gives 12.5 req/s with a burst of 2: a lease holds at most 2 slots, and while a client
        // waits out a refused ask its checks go to the limiters per request, where they take most of the slots (27–51 %
        // leased over 7 runs); at 500 and 5 000 req/s almost every admission is leased (97–98 %, 99.8–99.9 %)
        assertThat(leased).as("admissions from leases").isGreaterThanOrEqualTo(leasedShare * r.admittedAt().length);
        f.assertFloor();
    }

    /**
     * A measured run after its warm-up against issue 23's acceptance: the most admissions in any 10 s window and from
     * the fresh key within docs/design.md §5's {@code rate × w + g × burst + g}, the fewest at or above 97 % of
     * {@code rate × w} when the drivers offered at least 1.5 × the rate.
     */
    record Windows(ClosedLoop.Run warm, ClosedLoop.Run r, double rate, int burst) {
        static final long W = (long) (WINDOW_S * 1e9);

        double upper() {
            return rate * WINDOW_S + G * burst + G;
        }

        double offered() {
            return (r.admittedAt().length + r.rejected() + r.other()) / r.seconds();
        }

        /**
         * The span from the warm-up's start to the measured run's last answer, s: the window every admission from the
         * fresh key lies in, the pause between the two runs included (a first cut summed the two runs' own spans and
         * left the pause out: a fresh clone admitted 8 060 where that gave 8 056.4 at 500 req/s).
         */
        double span() {
            return (r.endNs() - warm.startNs()) / 1e9;
        }

        double wholeUpper() {
            return rate * span() + G * burst + G;
        }

        long whole() {
            return warm.admittedAt().length + r.admittedAt().length;
        }

        void assertBound() {
            assertThat(r.other()).as("checks or requests that failed").isZero();
            assertThat((double) whole()).as("admitted from a fresh key ≤ rate × t + g × burst + g")
                    .isLessThanOrEqualTo(wholeUpper());
            assertThat((double) r.most(W)).as("admitted in every 10 s window ≤ rate × w + g × burst + g"
                    + " (docs/design.md §5)").isLessThanOrEqualTo(upper());
        }

        void assertFloor() {
            org.junit.jupiter.api.Assumptions.assumeTrue(offered() >= rate * 1.5, String.format("this machine offered"
                    + " only %.0f/s, not 1.5 x the quota of %.0f/s: floor not tested", offered(), rate));
            assertThat((double) r.fewest(W)).as("admitted in every 10 s window ≥ 97 %% of rate × w (%s)", this)
                    .isGreaterThanOrEqualTo(0.97 * rate * WINDOW_S);
        }

        @Override
        public String toString() {
            long fewest = r.fewest(W);
            return String.format(java.util.Locale.ROOT, "%.0f/s offered; admitted %d in %.2f s (%.1f/s); 10 s windows:"
                            + " most %d (bound %.0f), fewest %s (floor %.0f); rejected %d, other %d; from a fresh key %d"
                            + " in %.3f s, a pause of %.3f s between the runs included (bound %.1f); longest time"
                            + " without an admission %.1f ms, from %.2f s into the run", offered(),
                    r.admittedAt().length, r.seconds(), r.admittedAt().length / r.seconds(), r.most(W), upper(),
                    fewest == Long.MAX_VALUE ? "- (a shorter run)" : Long.toString(fewest), 0.97 * rate * WINDOW_S,
                    r.rejected(), r.other(), whole(), span(), (r.startNs() - warm.endNs()) / 1e9, wholeUpper(),
                    r.longestPause()[0] / 1e6, r.longestPause()[1] / 1e9);
        }
    }

    /**
     * Batches in NGINX (docs/design.md §12), over quota: each levee-client behind an NGINX of its own (two workers
     * sharing the batches) with rate.lua's {@code batches = true}, driven closed-loop through NGINX at a backend that
     * answers everything. Admissions counted at the drivers stay within the bound and at or above 97 % of the rate in
     * every 10 s window. (A key over its quota gives few batches: its slots are taken one check at a time as they
     * open, and a batch holds only slots already usable; the test after this one is the key under its quota.)
     */
    @ParameterizedTest(name = "{0} req/s through NGINX with batches")
    @CsvSource({"500, 13, 8", "5000, 125, 32"})
    void twoNginxTakingBatchesStayWithinTheBoundAndAbove97PercentInEveryTenSecondWindow(double rate, int burst,
            int connections) throws Exception {
        throughNginx((through, fronts) -> {
            String bucket = "lease" + (long) rate;
            ClosedLoop.Run warm = ClosedLoop.drive(through, bucket, connections, 3);
            long batchedBefore = batched(fronts).size();
            ClosedLoop.Run r = ClosedLoop.drive(through, bucket, connections, MEASURED_S);
            long batchedAll = batched(fronts).size();
            Windows f = new Windows(warm, r, rate, burst);
            System.out.printf("batches in NGINX, %.0f/s over 4 limiters, 2 NGINX x 2 workers x %d connections: %s;"
                            + " %d by NGINX from batches (%d in all); %s%n", rate, connections, f,
                    batchedAll - batchedBefore, batchedAll, leaseFigures());
            f.assertBound();
            f.assertFloor();
        });
    }

    /**
     * Batches in NGINX under the quota (200 000 req/s, ten times what these drivers sent on two cores: a fresh clone's
     * drivers reached 19 781 req/s against a first quota of 20 000 and were refused 257 times): NGINX admits most requests from
     * batches without a check, none is refused, the count stays within the bound, and an access log line's batch label
     * leads to the levee-client line that handed the batch over and to the limiter's grant of its lease.
     */
    @org.junit.jupiter.api.Test
    void underItsQuotaAHotBucketIsAdmittedByNginxFromBatchesEachLabelLeadingToItsLeaseAndLimiter() throws Exception {
        throughNginx((through, fronts) -> {
            double rate = 200_000;
            int burst = 2000;
            ClosedLoop.Run warm = ClosedLoop.drive(through, "batchhot", 4, 3);
            long batchedBefore = batched(fronts).size();
            ClosedLoop.Run r = ClosedLoop.drive(through, "batchhot", 4, 5);
            List<String> labels = batched(fronts);
            long fromBatches = labels.size() - batchedBefore;
            Windows f = new Windows(warm, r, rate, burst);
            System.out.printf("batches in NGINX under the quota: %s; %d by NGINX from batches; %s%n", f, fromBatches,
                    leaseFigures());
            f.assertBound();
            assertThat(f.offered()).as("offered well under the quota (the test's premise)").isLessThan(rate / 2);
            assertThat(r.rejected()).as("requests refused under the quota").isZero();
            assertThat((double) fromBatches).as("admitted by NGINX from batches").isGreaterThan(0.5 * r.admittedAt().length);
            // the debugging story: NGINX's label names the lease, levee-client's line the batch, the limiter's the grant
            String label = labels.getLast();
            String[] parts = label.split("/");
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(
                    java.nio.file.Files.readString(logs.resolve("lease-bound.log"))).contains(" batch=" + label + " ")
                    .containsPattern("lease granted key=resource:batchhot slots=\\d+ lease=" + parts[0]
                            + " client=\\S+ .* limiter=" + parts[1]));
        });
    }

    /** What a test does with NGINX in front of each levee-client: the drivers' endpoints and the NGINX instances. */
    interface ThroughNginx {
        void run(List<ClosedLoop.Endpoint> through, List<EmbeddedNginx> fronts) throws Exception;
    }

    /**
     * Runs {@code test} with an NGINX of its own (two workers, {@code levee nginx-config --batches}) in front of each
     * levee-client, its backend a server that answers every request 200.
     */
    void throughNginx(ThroughNginx test) throws Exception {
        assertThat(EmbeddedNginx.unavailable()).as("nginx with the lua module (scripts/test installs it)").isEmpty();
        io.vertx.core.http.HttpServer backend = done(vertx.createHttpServer()
                .requestHandler(req -> req.response().end("ok")).listen(0, "127.0.0.1"));
        List<EmbeddedNginx> fronts = new ArrayList<>();
        try {
            for (ClientService e : endpoints) {
                fronts.add(EmbeddedNginx.start(NginxConfig.builder().client(new HostPort("127.0.0.1", e.port()))
                        .backend(new HostPort("127.0.0.1", backend.actualPort())).workers("2").batches(true)));
            }
            test.run(fronts.stream().map(f -> ClosedLoop.Endpoint.nginx(f.port())).toList(), fronts);
        } finally {
            for (EmbeddedNginx f : fronts) {
                f.close();
            }
            done(backend.close());
        }
    }

    /** The batch labels of NGINX's access log lines of requests admitted from a batch ({@code lease=<label>}). */
    static List<String> batched(List<EmbeddedNginx> fronts) throws java.io.IOException {
        java.util.regex.Pattern lease = java.util.regex.Pattern.compile(" lease=(\\d+/\\S+/\\d+-\\d+) levee=accepted$");
        List<String> labels = new ArrayList<>();
        for (EmbeddedNginx f : fronts) {
            for (String line : java.nio.file.Files.readAllLines(f.accessLog())) {
                java.util.regex.Matcher m = lease.matcher(line);
                if (m.find()) {
                    labels.add(m.group(1));
                }
            }
        }
        return labels;
    }

    /**
     * Fail closed (issue 23): a limiter killed with leases outstanding and started again on its address (a new
     * incarnation, no state) never lets the group exceed the bound — its restart fence keeps the old slots and its new
     * decisions apart — and clients cut off from every limiter admit nothing once their leases' windows have ended.
     */
    @org.junit.jupiter.api.Test
    void aLimiterRestartedUnderLeasesKeepsTheBoundAndClientsCutOffAdmitNothingOnceTheirLeasesEnd() throws Exception {
        double rate = 500;
        int burst = 13;
        drive("lease500", 8, 3);
        java.util.concurrent.ScheduledExecutorService at = java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
        long[] restartedAt = new long[1];
        long[] cutAt = new long[1];
        try {
            LimiterService b1 = limiters.getFirst();
            int port = b1.address().port();
            at.schedule(() -> {
                done(b1.kill());
                limiters.set(0, limiter("b1", port)); // the same id and address, nothing carried over
                restartedAt[0] = System.nanoTime();
                return null;
            }, 3, TimeUnit.SECONDS);
            ClosedLoop.Run r = drive("lease500", 8, 12);
            double upper = rate * WINDOW_S + G * burst + G;
            long most = r.most((long) (WINDOW_S * 1e9));
            System.out.printf("limiter b1 killed and started again under leases at %.2f s: admitted %d in %.2f s; 10 s"
                            + " windows: most %d (bound %.0f); other %d%n", (restartedAt[0] - r.startNs()) / 1e9,
                    r.admittedAt().length, r.seconds(), most, upper, r.other());
            assertThat(restartedAt[0]).as("b1 was restarted during the run").isBetween(r.startNs(), r.endNs());
            assertThat((double) most).as("every 10 s window with the restart ≤ rate × w + g × burst + g")
                    .isLessThanOrEqualTo(upper);

            // every limiter goes away: leased admissions end with the last slot's window (≤ 200 ms after its grant)
            at.schedule(() -> {
                for (LimiterService l : limiters) {
                    done(l.kill());
                }
                cutAt[0] = System.nanoTime();
                return null;
            }, 1, TimeUnit.SECONDS);
            ClosedLoop.Run cut = drive("lease500", 8, 3);
            long lifetime = dev.levee.lease.RequestLeaseRules.DEFAULTS.maxLifetimeNs();
            long after = java.util.Arrays.stream(cut.admittedAt()).filter(t -> t - cutAt[0] > lifetime + 50_000_000L)
                    .count();
            long before = java.util.Arrays.stream(cut.admittedAt()).filter(t -> t < cutAt[0]).count();
            System.out.printf("every limiter killed at %.2f s: admitted %d before, %d more than 250 ms after%n",
                    (cutAt[0] - cut.startNs()) / 1e9, before, after);
            assertThat(before).as("admitted before the cut").isPositive();
            assertThat(after).as("admitted more than a lease's lifetime after every limiter went away").isZero();
        } finally {
            at.shutdownNow();
        }
    }
}
