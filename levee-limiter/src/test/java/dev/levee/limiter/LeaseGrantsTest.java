package dev.levee.limiter;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.config.QuotaConfigLoader;
import dev.levee.config.StaticQuotaSource;
import dev.levee.lease.RequestLeaseWire;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Json;
import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code POST /v1/lease} on a real limiter on loopback, with a manual ticker (docs/design.md §12; docs/decisions.md,
 * "Request leases: the limiter side"): the grant's shape and slot spacing, grants and checks on one TAT, refusals and
 * their waits, the restart fence, keys that may not be leased, malformed asks, the grant's log line and counters.
 */
class LeaseGrantsTest {

    static final long MS = 1_000_000L;
    static final long FENCE = Decider.LEASE_LIFETIME_NS;
    static final String QUOTAS = """
            factor: 4
            default: {rate: 100, burst: 3, mode: shadow}
            resources:
              hot:
                quota: {rate: 100, burst: 3}
              off:
                quota: {rate: 100, burst: 3, lease: false}
              zero:
                quota: {rate: 100, burst: 0}
              slow:
                quota: {rate: 1, burst: 5}
              blocked:
                quota: {rate: 0, burst: 3}
              trial:
                quota: {rate: 100, burst: 3}
                prefixes:
                  - {prefix: "t/", quota: {rate: 1, burst: 1, mode: shadow}}
            """;
    static final Path LOG = Path.of("target", "lease-grants-test", "limiter.log");

    final AtomicLong clock = new AtomicLong(7_000_000_000L); // the table is made at 7 s: S
    final HttpClient http = HttpClient.newHttpClient();
    final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    Vertx vertx;
    LimiterService limiter;

    @BeforeAll
    static void logToFile() throws Exception {
        Files.createDirectories(LOG.getParent());
        Files.deleteIfExists(LOG);
        Logging.configure(LogTarget.parse("file:" + LOG), "levee-test", "INFO");
    }

    @AfterAll
    static void logToStderr() {
        Logging.configure(LogTarget.parse("stderr"), "levee-test", "WARN");
    }

    @BeforeEach
    void start() throws Exception {
        vertx = Vertx.vertx();
        limiter = LimiterService.start(vertx, new LimiterService.Options("lim-1", new HostPort("127.0.0.1", 0), null,
                        null, Duration.ofSeconds(1), 10_000), new StaticQuotaSource(QuotaConfigLoader.parse(QUOTAS, "test")),
                clock::get, registry).await(10, TimeUnit.SECONDS);
    }

    @AfterEach
    void stop() throws Exception {
        vertx.close().await(10, TimeUnit.SECONDS);
    }

    HttpResponse<String> post(String path, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://" + limiter.address() + path))
                .timeout(Duration.ofSeconds(5)).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    static String ask(String resource, int slots, String client) {
        return "{\"resource\":\"" + resource + "\",\"key\":\"k\",\"operation\":\"GetObject\",\"g\":1,\"slots\":" + slots
                + ",\"client\":\"" + client + "\"}";
    }

    RequestLeaseWire.Grant lease(String resource, int slots) throws Exception {
        HttpResponse<String> r = post(RequestLeaseWire.PATH, ask(resource, slots, "client-a"));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        RequestLeaseWire.Grant g = Json.parse(r.body().getBytes(), RequestLeaseWire.Grant.class);
        assertThat(g.problem()).as(r.body()).isNull();
        return g;
    }

    int check(String resource, String key) throws Exception {
        return post("/v1/check", "{\"resource\":\"" + resource + "\",\"key\":\"" + key
                + "\",\"operation\":\"GetObject\",\"g\":1}").statusCode();
    }

    double asks(String result) {
        return registry.get("levee_limiter_lease_asks_total").tag("result", result).counter().count();
    }

    @Test
    void aGrantGivesSlotsOneIntervalApartAndTheNextContinuesAfterItsTat() throws Exception {
        clock.addAndGet(FENCE);
        RequestLeaseWire.Grant first = lease("hot", 5);
        // rate 100, burst 3, g 1: T = 10 ms, τ = 20 ms; a fresh key's first slot is at the decision
        assertThat(first).isEqualTo(RequestLeaseWire.Grant.of(1, "lim-1", "resource:hot", 5, 0, 10 * MS, 20 * MS));
        RequestLeaseWire.Grant refused = lease("hot", 2);
        assertThat(refused).as("TAT − now = 50 ms, τ = 20 ms: refused for 30 ms")
                .isEqualTo(RequestLeaseWire.Grant.refused("lim-1", RequestLeaseWire.REFUSED, 30 * MS));
        clock.addAndGet(30 * MS);
        RequestLeaseWire.Grant next = lease("hot", 2);
        assertThat(next.lease()).isEqualTo(2);
        assertThat(next.firstNs()).as("v_1 = the first grant's TAT, 20 ms from now").isEqualTo(20 * MS);
        assertThat(next.slots()).isEqualTo(2);
        assertThat(asks("granted")).isEqualTo(2);
        assertThat(asks("refused")).isEqualTo(1);
        assertThat(registry.get("levee_limiter_lease_slots_total").counter().count()).isEqualTo(7);
    }

    @Test
    void theSlotsAreCappedByTheLeaseLifetime() throws Exception {
        clock.addAndGet(FENCE);
        assertThat(lease("hot", 4096).slots()).as("200 ms of slots 10 ms apart").isEqualTo(20);
    }

    @Test
    void grantsAndChecksOnOneKeyShareOneTat() throws Exception {
        clock.addAndGet(FENCE);
        assertThat(check("hot", "k")).isEqualTo(200);
        assertThat(lease("hot", 2).firstNs()).as("after the check's v").isEqualTo(10 * MS);
        assertThat(check("hot", "other-object")).as("the burst of 3 is used by the check and the lease's 2 slots")
                .isEqualTo(429);
        clock.addAndGet(10 * MS);
        assertThat(check("hot", "k")).as("one interval later: one more").isEqualTo(200);
    }

    @Test
    void keysThatMayNotBeLeasedAreRefusedAsNotLeasable() throws Exception {
        clock.addAndGet(FENCE);
        RequestLeaseWire.Grant no = RequestLeaseWire.Grant.refused("lim-1", RequestLeaseWire.NOT_LEASABLE, 0);
        assertThat(lease("off", 5)).as("lease: false").isEqualTo(no);
        assertThat(lease("zero", 5)).as("burst 0").isEqualTo(no);
        assertThat(lease("slow", 5)).as("τ + T = 5 s, beyond the 200 ms lifetime").isEqualTo(no);
        assertThat(lease("blocked", 5)).as("rate 0").isEqualTo(no);
        assertThat(lease("other", 5)).as("no enforced quota (the default is a shadow quota)").isEqualTo(no);
        assertThat(lease(LimiterService.WARMUP_RESOURCE, 5)).as("the warm-up's self-checks").isEqualTo(no);
        HttpResponse<String> shadowed = post(RequestLeaseWire.PATH, ask("trial", 5, "c").replace("\"k\"", "\"t/x\""));
        assertThat(shadowed.body()).as("a shadow quota decides the request too").contains("\"not_leasable\"");
        assertThat(asks("not_leasable")).isEqualTo(7);
        assertThat(limiter.table().peek("resource:off")).as("nothing reserved").isNull();
    }

    @Test
    void anAskFromAClientWithOtherQuotasForTheBucketIsRefusedAndReservesNothing() throws Exception {
        clock.addAndGet(FENCE);
        String mine = QuotaConfigLoader.parse(QUOTAS, "q").resolutionDigest("hot");
        String theirs = QuotaConfigLoader.parse(QUOTAS.replace("hot:\n    quota: {rate: 100, burst: 3}",
                "hot:\n    quota: {rate: 100, burst: 3}\n    prefixes:\n      - {prefix: \"a/\", quota: {rate: 5, burst: 1}}"),
                "q").resolutionDigest("hot");
        assertThat(theirs).as("a prefix entry more").isNotEqualTo(mine);
        HttpResponse<String> r = post(RequestLeaseWire.PATH, ask("hot", 5, "c").replace("}", ",\"quotas\":\"" + theirs + "\"}"));
        assertThat(Json.parse(r.body().getBytes(), RequestLeaseWire.Grant.class))
                .isEqualTo(RequestLeaseWire.Grant.refused("lim-1", RequestLeaseWire.QUOTAS_DIFFER, 0));
        assertThat(limiter.table().peek("resource:hot")).as("nothing reserved").isNull();
        assertThat(asks("quotas_differ")).isEqualTo(1);
        r = post(RequestLeaseWire.PATH, ask("hot", 5, "c").replace("}", ",\"quotas\":\"" + mine + "\"}"));
        assertThat(Json.parse(r.body().getBytes(), RequestLeaseWire.Grant.class).granted()).as(r.body()).isTrue();
        assertThat(post(RequestLeaseWire.PATH, ask("hot", 5, "c").replace("}", ",\"quotas\":\"a b\"}")).body())
                .contains("field 'quotas'");
    }

    @Test
    void aStartedLimiterIsFencedForTheLeaseLifetimeAndGrantsAfter() throws Exception {
        assertThat(lease("hot", 5)).isEqualTo(RequestLeaseWire.Grant.refused("lim-1", RequestLeaseWire.FENCED, FENCE));
        clock.addAndGet(FENCE - 1);
        assertThat(lease("hot", 5).waitNs()).isEqualTo(1);
        clock.addAndGet(1);
        assertThat(lease("hot", 5).granted()).isTrue();
        assertThat(asks("fenced")).isEqualTo(2);
    }

    /**
     * Per request, a leasable key first decided within the fence is refused until S + F − τ (its v is then S + F);
     * a key that may not be leased is decided as before.
     */
    @Test
    void checksOfLeasableKeysAreFencedToo() throws Exception {
        clock.addAndGet(100 * MS);
        HttpResponse<String> fenced = post("/v1/check", "{\"resource\":\"hot\",\"key\":\"k\",\"operation\":\"GetObject\",\"g\":1}");
        assertThat(fenced.statusCode()).isEqualTo(429);
        assertThat(check("off", "k")).as("lease: false: a full burst at once").isEqualTo(200);
        assertThat(check("slow", "k")).as("τ + T beyond the lifetime: not fenced").isEqualTo(200);
        clock.addAndGet(80 * MS - 1);
        assertThat(check("hot", "k")).isEqualTo(429);
        clock.addAndGet(1);
        assertThat(check("hot", "k")).as("at S + F − τ").isEqualTo(200);
        assertThat(check("hot", "k")).isEqualTo(429);
    }

    /**
     * A limiter counts as started only once its fence has passed (no warm-up here to cover it): a client that finds it
     * through the membership, or a test that checks as soon as {@code start} completes, never meets the fence.
     */
    @Test
    void startCompletesOnceTheFenceHasPassed() throws Exception {
        long before = System.nanoTime();
        LimiterService real = LimiterService.start(vertx, new LimiterService.Options("lim-2",
                        new HostPort("127.0.0.1", 0), null, null, Duration.ofSeconds(1), 10_000),
                new StaticQuotaSource(QuotaConfigLoader.parse(QUOTAS, "test")), dev.levee.runtime.SystemTicker.INSTANCE,
                new SimpleMeterRegistry()).await(10, TimeUnit.SECONDS);
        assertThat(System.nanoTime() - before).as("start took the fence").isGreaterThanOrEqualTo(FENCE);
        assertThat(real.decide(QuotaConfigLoader.parse(QUOTAS, "test"), "hot", "k",
                dev.levee.s3.S3Operation.GetObject, 1).result()).as("a leasable key, decided at once").isEqualTo("accepted");
    }

    @Test
    void malformedAsksAre400NamingTheField() throws Exception {
        String good = ask("hot", 5, "c");
        String[][] cases = {
                {good.replace(",\"slots\":5", ""), "'slots' is missing"},
                {good.replace("\"slots\":5", "\"slots\":0"), "'slots' must be between 1 and 4096, got 0"},
                {good.replace("\"slots\":5", "\"slots\":5000"), "'slots' must be between 1 and 4096, got 5000"},
                {good.replace("\"slots\":5", "\"slots\":\"x\""), "field 'slots'"},
                {good.replace("\"slots\":5", "\"slots\":5,\"extra\":1"), "unknown field 'extra'"},
                {good.replace("\"g\":1", "\"g\":5"), "field 'g' must be between 1 and the factor 4, got 5"},
                {good.replace("\"resource\":\"hot\",", ""), "field 'resource' is missing"},
                {good.replace("GetObject", "Nope"), "unknown operation 'Nope'"},
                {good.replace("\"client\":\"c\"", "\"client\":\"a b\""), "field 'client'"},
                {good.replace("\"slots\":5", "\"slots\":5,\"leadNs\":-1"), "field 'leadNs'"},
                {"", "body is empty"},
                {"[1]", "JSON object"}};
        for (String[] c : cases) {
            HttpResponse<String> r = post(RequestLeaseWire.PATH, c[0]);
            assertThat(r.statusCode()).as(c[0]).isEqualTo(400);
            assertThat(r.body()).as(c[0]).contains(c[1]).doesNotContain("Exception").doesNotContain("\tat ");
        }
        assertThat(asks("invalid")).isEqualTo(cases.length);
        HttpResponse<String> get = http.send(HttpRequest.newBuilder(URI.create("http://" + limiter.address()
                + RequestLeaseWire.PATH)).GET().build(), HttpResponse.BodyHandlers.ofString());
        assertThat(get.statusCode()).isEqualTo(405);
        assertThat(get.headers().firstValue("Allow")).hasValue("POST");
    }

    @Test
    void eachGrantAndRefusalIsOneLogLineAndTheSlotsAreCountedAsAdmitted() throws Exception {
        lease("hot", 5); // fenced
        clock.addAndGet(FENCE);
        lease("hot", 5);
        String granted = "lease granted key=resource:hot slots=5 lease=1 client=client-a first_ns=0 interval_ns=10000000"
                + " tolerance_ns=20000000 resource=hot op=GetObject g=1 limiter=lim-1";
        String fenced = "lease refused reason=fenced key=resource:hot slots=5 client=client-a wait_ns=200000000"
                + " resource=hot op=GetObject g=1 limiter=lim-1";
        Awaitility.await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(Files.readString(LOG))
                .contains(granted).contains(fenced));
        clock.addAndGet(2_000_000_000L); // the grant's second is whole
        DecisionStats.Window w = limiter.stats().snapshot().get(0);
        assertThat(w.offered()).as("the slots, admitted at grant time").isEqualTo(5);
        assertThat(w.refused()).isZero();
        assertThat(w.rows()).anySatisfy(r -> {
            assertThat(r.resource()).isEqualTo("hot");
            assertThat(r.admitted()).isEqualTo(5);
        });
    }
}
