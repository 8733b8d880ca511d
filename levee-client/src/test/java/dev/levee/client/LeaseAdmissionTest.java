package dev.levee.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.levee.core.GcraLimit;
import dev.levee.lease.RequestLeaseWire;
import dev.levee.quota.Quota;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.ResourceQuotas;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Json;
import dev.levee.runtime.Metrics;
import dev.levee.s3.S3Request;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A levee-client with request leases (issue 23 item 2, docs/design.md §12) against a stand-in limiter that answers
 * checks ({@code /v1/check}, {@code /v1/checks}) and lease asks ({@code POST /v1/lease}, {@link RequestLeaseWire})
 * with canned grants, on a manual clock: a hot key's checks are admitted from a lease without a check per request,
 * each logged with its lease and limiter; a grant that is not usable is never an admission; a new epoch drops the
 * leases; a client cut off from its limiters admits nothing once the last slot's window ended; without leases no ask
 * is sent.
 */
class LeaseAdmissionTest {

    static final String KEY = "resource:hot";
    /** The hot key's per-limiter limit with g = 1: T = 200 µs, τ = 99.8 ms. */
    static final GcraLimit LIMIT = GcraLimit.of(5000, 500, 1);
    /**
     * Checks at one instant that make the key hot and worth asking for: the last one, at an estimate of 40/s, above the
     * threshold of 10/s and the rate from which a slot of {@link #LIMIT} lasts until used, {@code 1 / (T + τ / 4)} =
     * 39.8/s ({@code LeaseSizer.lastingRate}), sends the ask.
     */
    static final int WARM = 40;
    static final long US = 1_000L;
    static final long MS = 1_000_000L;

    /** One canned answer of the lease endpoint. */
    record Answer(int status, String body) {
    }

    Vertx vertx;
    HttpServer limiter;
    HttpServer observer;
    final AtomicInteger decided = new AtomicInteger();
    final AtomicInteger asked = new AtomicInteger();
    final AtomicLong leaseIds = new AtomicLong();
    final AtomicReference<RequestLeaseWire.Ask> lastAsk = new AtomicReference<>();
    volatile Function<RequestLeaseWire.Ask, Answer> leaseAnswer = a -> grant(50, 0, LIMIT.emissionIntervalNs(),
            LIMIT.toleranceNs(), "l1", KEY);
    final AtomicLong viewRevision = new AtomicLong(1);
    final AtomicLong clock = new AtomicLong(5_000_000_000L);
    final AtomicReference<QuotaConfig> quotas = new AtomicReference<>(config());
    final MeterRegistry registry = Metrics.newRegistry();
    /** The hot-key estimate of the last client made with leases. */
    RequestLeases requestLeases;

    static QuotaConfig config() {
        return QuotaConfig.builder().defaultQuota(new Quota(1000, 100))
                .resource("hot", new ResourceQuotas(new Quota(5000, 500), List.of()))
                .resource("split", new ResourceQuotas(new Quota(5000, 500),
                        List.of(new dev.levee.quota.PrefixRule("a", new Quota(5000, 500), java.util.Map.of())))).build();
    }

    Answer grant(int slots, long firstNs, long intervalNs, long toleranceNs, String limiterId, String limitKey) {
        return json(RequestLeaseWire.Grant.of(leaseIds.incrementAndGet(), limiterId, limitKey, slots, firstNs,
                intervalNs, toleranceNs));
    }

    static Answer json(Object o) {
        try {
            return new Answer(200, Json.MAPPER.writeValueAsString(o));
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    @BeforeEach
    void start() throws Exception {
        vertx = Vertx.vertx();
        limiter = limiter(asked, a -> leaseAnswer.apply(a));
        observer = observer(limiter);
    }

    /** An observer listing {@code members} as l1, l2, … with factor = their number, at {@link #viewRevision}. */
    HttpServer observer(HttpServer... members) throws Exception {
        return vertx.createHttpServer().requestHandler(req -> {
            JsonArray list = new JsonArray();
            for (int i = 0; i < members.length; i++) {
                list.add(new JsonObject().put("id", "l" + (i + 1)).put("address", "127.0.0.1:" + members[i].actualPort()));
            }
            req.response().putHeader("Content-Type", "application/json").end(new JsonObject()
                    .put("revision", viewRevision.get()).put("factor", members.length).put("limiters", list).encode());
        }).listen(0, "127.0.0.1").await(10, TimeUnit.SECONDS);
    }

    /** A stand-in limiter: accepts every check (counted in {@link #decided}), answers lease asks with {@code answer}. */
    HttpServer limiter(AtomicInteger asks, Function<RequestLeaseWire.Ask, Answer> answer) throws Exception {
        return vertx.createHttpServer().requestHandler(req -> req.body().onSuccess(b -> {
            if (req.method() != HttpMethod.POST) {
                req.response().setStatusCode(405).end(); // no check wire: the client keeps to POST
                return;
            }
            if (req.path().equals(RequestLeaseWire.PATH)) {
                asks.incrementAndGet();
                RequestLeaseWire.Ask ask = Json.parse(b.getBytes(), RequestLeaseWire.Ask.class);
                lastAsk.set(ask);
                Answer a = answer.apply(ask);
                if (a == null) {
                    return; // never answered
                }
                req.response().setStatusCode(a.status()).putHeader("Content-Type", "application/json").end(a.body());
                return;
            }
            JsonObject body = b.toJsonObject();
            List<?> checks = req.path().equals("/v1/checks") ? body.getJsonArray("checks").getList() : List.of(body);
            JsonArray answers = new JsonArray();
            for (int i = 0; i < checks.size(); i++) {
                decided.incrementAndGet();
                answers.add(new JsonObject().put("result", "accepted").put("level", "resource").put("limitKey", KEY)
                        .put("remaining", 10).put("retryAfter", 0).put("limiter", "l1"));
            }
            req.response().putHeader("Content-Type", "application/json").end(req.path().equals("/v1/checks")
                    ? new JsonObject().put("decisions", answers).encode() : answers.getJsonObject(0).encode());
        })).listen(0, "127.0.0.1").await(10, TimeUnit.SECONDS);
    }

    @AfterEach
    void stop() throws Exception {
        vertx.close().await(10, TimeUnit.SECONDS);
    }

    LeveeClient client(boolean leases) throws Exception {
        return client(leases, observer);
    }

    LeveeClient client(boolean leases, HttpServer observer) throws Exception {
        return client(leases, observer, Duration.ofSeconds(2));
    }

    LeveeClient client(boolean leases, HttpServer observer, Duration checkTimeout) throws Exception {
        RequestLeases l = leases ? new RequestLeases(new RequestLeases.Settings(10, Duration.ofSeconds(1)), quotas::get,
                registry) : null;
        requestLeases = l;
        return LeveeClient.start(vertx, LeveeClient.Options.builder(new HostPort("127.0.0.1", observer.actualPort()))
                .refresh(Duration.ofHours(1)).checkTimeout(checkTimeout).backoff(Duration.ofSeconds(30))
                .build(), clock::get, registry, l).await(10, TimeUnit.SECONDS);
    }

    static ClientDecision check(LeveeClient c) throws Exception {
        return c.check(S3Request.fromRequestUri("GET", null, "/hot/k", null)).await(10, TimeUnit.SECONDS);
    }

    double asks(String result) {
        return registry.get("levee_client_lease_asks_total").tag("result", result).counter().count();
    }

    double admissions(String result) {
        return registry.get("levee_client_lease_admissions_total").tag("result", result).counter().count();
    }

    /**
     * Makes the key hot ({@link #WARM} checks at one instant), each decided by the limiter, and waits for the ask's
     * outcome.
     */
    void warm(LeveeClient c, String outcome) throws Exception {
        for (int i = 0; i < WARM; i++) {
            assertThat(check(c).attempts()).as("a check before any lease goes to the limiter").isEqualTo(1);
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> asks(outcome) >= 1);
    }

    @Test
    void aHotKeyIsAdmittedFromALeaseWithoutACheckPerRequestEachLineNamingItsLeaseAndLimiter() throws Exception {
        try (LogCapture log = new LogCapture("levee.client")) {
            LeveeClient c = client(true);
            warm(c, "granted");
            assertThat(decided.get()).isEqualTo(WARM);
            assertThat(asked.get()).isEqualTo(1);
            RequestLeaseWire.Ask ask = lastAsk.get();
            assertThat(ask.resource()).isEqualTo("hot");
            assertThat(ask.key()).isEqualTo("k");
            assertThat(ask.operation()).isEqualTo("GetObject");
            assertThat(ask.g()).isEqualTo(1);
            assertThat(ask.lead()).as("a lead of τ / 2: the first slot usable on arrival, half the burst kept")
                    .isEqualTo(LIMIT.toleranceNs() / 2);
            assertThat(ask.problem()).isNull();
            for (int i = 0; i < 20; i++) {
                clock.addAndGet(10 * US);
                ClientDecision d = check(c);
                assertThat(d.result()).isEqualTo(ClientDecision.Result.ACCEPTED);
                assertThat(d.limiter()).isEqualTo("127.0.0.1:" + limiter.actualPort());
                assertThat(d.attempts()).isZero();
                assertThat(d.level()).isEqualTo("resource");
                assertThat(d.limitKey()).isEqualTo(KEY);
                assertThat(d.rate()).isEqualTo(5000);
                assertThat(d.burst()).isEqualTo(500);
                assertThat(d.remaining()).isBetween(0L, 500L);
                assertThat(d.reset()).isGreaterThanOrEqualTo(1);
            }
            assertThat(decided.get()).as("no check per request after the grant").isEqualTo(WARM);
            assertThat(admissions("admitted")).isEqualTo(20);
            assertThat(registry.get("levee_client_results_total").tag("result", "accepted").counter().count())
                    .isEqualTo(WARM + 20);
            assertThat(asked.get()).as("50 slots held, 1 wanted: no second ask").isEqualTo(1);
            String line = "INFO result=accepted limiter=127.0.0.1:" + limiter.actualPort()
                    + " resource=hot key=k op=GetObject level=resource retry_after=0 attempts=0 lease=1 lease_limiter=l1";
            await().atMost(Duration.ofSeconds(10)).until(() -> log.lines().stream().filter(line::equals).count() == 20);
        }
    }

    static ClientDecision check(LeveeClient c, String uri, int batch) throws Exception {
        io.vertx.core.Promise<ClientDecision> p = io.vertx.core.Promise.promise();
        c.check(S3Request.fromRequestUri("GET", null, uri, null), batch, p);
        return p.future().await(10, TimeUnit.SECONDS);
    }

    /**
     * A caller that takes batches (NGINX) gets, with an admission from a lease of a key every request to the bucket
     * is counted on, the lease's next usable slots, gone from the holder, usable until the first one's window ends;
     * the emptied holder asks again at once, and the requests the caller reports it admitted count on the key.
     */
    @Test
    void anAdmissionHandsACallerThatTakesBatchesTheNextUsableSlots() throws Exception {
        // a lead of 10 ms: slot k's window is [10 ms + (k − 1) T − τ, 10 ms + k T), every slot usable at once
        leaseAnswer = a -> grant(50, 10 * MS, LIMIT.emissionIntervalNs(), LIMIT.toleranceNs(), "l1", KEY);
        try (LogCapture log = new LogCapture("levee.client")) {
            LeveeClient c = client(true);
            warm(c, "granted");
            leaseAnswer = a -> null; // later asks stay unanswered: the holder keeps lease 1 alone
            clock.addAndGet(10 * US);
            assertThat(check(c, "/hot/k", -1).batch()).as("a caller that takes none gets none").isNull();
            // the caller reports 2 000 requests admitted from its batches: about 2 000 req/s on the key, whose leases are
            // sized for it (LeaseSizer.slots), and a batch takes at most half of that
            double before = requestLeases.hotKeys().rate(KEY, clock.get());
            ClientDecision d = check(c, "/hot/other-key", 2000);
            assertThat(requestLeases.hotKeys().rate(KEY, clock.get())).as("the 2 000 reported count as arrivals")
                    .isGreaterThan(before + 1900);
            assertThat(d.attempts()).isZero();
            ClientDecision.Batch b = d.batch();
            assertThat(b).isNotNull();
            assertThat(b.firstSlot()).isEqualTo(3);
            assertThat(b.slots()).isBetween(2, 48);
            assertThat(c.leases().holder(KEY).unused(clock.get())).as("taken out of the holder").isEqualTo(48 - b.slots());
            assertThat(b.leaseId()).isEqualTo(1);
            assertThat(b.limiterId()).isEqualTo("l1");
            // slot 3's window ends 10 ms + 3 T = 10.6 ms after the grant (less drift and margin); 10 µs have passed
            assertThat(b.lifeNs()).isBetween(2 * MS, 10_590 * US);
            assertThat(registry.get("levee_client_lease_batch_slots_total").counter().count()).isEqualTo(b.slots());
            // the holder fell to half of the slots its demand asks for, or below: it asked again at once
            await().atMost(Duration.ofSeconds(10)).until(() -> asked.get() >= 2);
            String line = "INFO result=accepted limiter=127.0.0.1:" + limiter.actualPort()
                    + " resource=hot key=other-key op=GetObject level=resource retry_after=0 attempts=0 lease=1"
                    + " lease_limiter=l1 batch=" + b.label() + " batch_slots=" + b.slots() + " batch_life_us="
                    + b.lifeNs() / 1000;
            await().atMost(Duration.ofSeconds(10)).until(() -> log.lines().contains(line));
        }
    }

    /** A bucket whose requests may be counted on more than one key gives no batch: NGINX tells requests apart by bucket only. */
    @Test
    void noBatchWhereTheBucketsRequestsHaveMoreThanOneCounter() throws Exception {
        leaseAnswer = a -> grant(50, 10 * MS, LIMIT.emissionIntervalNs(), LIMIT.toleranceNs(), "l1",
                config().resolve(a.resource(), a.key(), dev.levee.s3.S3Operation.valueOf(a.operation())).limitKey());
        LeveeClient c = client(true);
        for (int i = 0; i < WARM; i++) {
            check(c, "/split/a1", 0);
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> asks("granted") >= 1);
        clock.addAndGet(10 * US);
        ClientDecision d = check(c, "/split/a1", 0);
        assertThat(d.attempts()).as("leased").isZero();
        assertThat(d.limitKey()).isEqualTo("prefix:split/a");
        assertThat(d.batch()).isNull();
    }

    @Test
    void aSlotNotYetUsableRefusesWithTheWaitAndAsksNoLimiter() throws Exception {
        // the first slot 5 ms after its tolerance: usable from about 5.05 ms after the grant arrived
        leaseAnswer = a -> grant(10, LIMIT.toleranceNs() + 5 * MS, LIMIT.emissionIntervalNs(), LIMIT.toleranceNs(),
                "l1", KEY);
        try (LogCapture log = new LogCapture("levee.client")) {
            LeveeClient c = client(true);
            warm(c, "granted");
            ClientDecision d = check(c);
            assertThat(d.result()).isEqualTo(ClientDecision.Result.REJECTED);
            assertThat(d.retryAfter()).isEqualTo(1);
            assertThat(d.attempts()).isZero();
            assertThat(decided.get()).isEqualTo(WARM);
            assertThat(admissions("waiting")).isEqualTo(1);
            await().atMost(Duration.ofSeconds(10)).until(() -> log.lines().stream().anyMatch(l -> l.startsWith(
                    "INFO result=rejected limiter=- resource=hot key=k op=GetObject level=resource retry_after=1"
                            + " attempts=0 lease=waiting")));
            clock.addAndGet(6 * MS);
            assertThat(check(c).result()).isEqualTo(ClientDecision.Result.ACCEPTED);
            assertThat(admissions("admitted")).isEqualTo(1);
        }
    }

    /** What a grant that must not be used looks like: the per-request path, a WARN naming the limiter, a counter. */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            more slots than 4096          | malformed | more than 4096
            a lifetime too long           | malformed | more than 200000000 ns
            another interval              | malformed | the quota gives T=200000 ns
            another tolerance             | malformed | the quota gives T=200000 ns
            not JSON                      | malformed | malformed JSON
            an unknown field              | malformed | unknown field 'extra'
            a field missing               | malformed | grant missing one of
            another limiter               | malformed | a grant from limiter 'l9', asked 'l1'
            another key                   | malformed | a grant for key 'resource:other'
            oversized                     | malformed | more than 4096
            HTTP 500                      | failed    | HTTP 500
            other quotas                  | quotas_differ | with other quotas than this client: give levee client the limiters' quota source
            """)
    void aGrantThatIsNotUsableIsNeverAnAdmission(String what, String outcome, String said) throws Exception {
        long t = LIMIT.emissionIntervalNs();
        long tau = LIMIT.toleranceNs();
        leaseAnswer = switch (what) {
            case "more slots than 4096" -> a -> grant(5000, 0, t, tau, "l1", KEY);
            case "a lifetime too long" -> a -> grant(10, 300 * MS, t, tau, "l1", KEY);
            case "another interval" -> a -> grant(10, 0, 2 * t, tau, "l1", KEY);
            case "another tolerance" -> a -> grant(10, 0, t, tau / 2, "l1", KEY);
            case "not JSON" -> a -> new Answer(200, "slots: 10");
            case "an unknown field" -> a -> new Answer(200, "{\"granted\":true,\"limiter\":\"l1\",\"extra\":1}");
            case "a field missing" -> a -> new Answer(200, "{\"granted\":true,\"limiter\":\"l1\",\"lease\":1}");
            case "another limiter" -> a -> grant(10, 0, t, tau, "l9", KEY);
            case "another key" -> a -> grant(10, 0, t, tau, "l1", "resource:other");
            case "oversized" -> a -> new Answer(200, "{\"granted\":true,\"limiter\":\"" + "l".repeat(5000) + "\"}");
            case "HTTP 500" -> a -> new Answer(500, "{\"error\":\"boom\"}");
            case "other quotas" -> a -> json(RequestLeaseWire.Grant.refused("l1", RequestLeaseWire.QUOTAS_DIFFER, 0));
            default -> throw new IllegalArgumentException(what);
        };
        try (LogCapture log = new LogCapture("levee.client")) {
            LeveeClient c = client(true);
            warm(c, outcome);
            for (int i = 0; i < 10; i++) {
                clock.addAndGet(10 * US);
                assertThat(check(c).attempts()).as("decided by the limiter").isEqualTo(1);
            }
            assertThat(decided.get()).isEqualTo(WARM + 10);
            assertThat(admissions("admitted") + admissions("waiting")).isZero();
            assertThat(asks(outcome)).isEqualTo(1);
            assertThat(asks("granted")).isZero();
            assertThat(asked.get()).as("not asked again within a second").isEqualTo(1);
            assertThat(lastAsk.get().quotas()).as("the ask carries the client's digest of the bucket's quotas")
                    .isEqualTo(config().resolutionDigest("hot"));
            await().atMost(Duration.ofSeconds(10)).until(() -> log.lines().stream().anyMatch(l -> l.startsWith(
                    "WARN lease: ask to limiter l1 (127.0.0.1:" + limiter.actualPort() + ") for key " + KEY + ": "
                            + outcome + ": ") && l.contains(said)));
            clock.addAndGet(1100 * MS);
            for (int i = 0; i < WARM; i++) { // hot and above the lasting rate again after a second's decay
                check(c);
            }
            await().atMost(Duration.ofSeconds(10)).until(() -> asks(outcome) >= 2);
            assertThat(log.lines().stream().filter(l -> l.startsWith("WARN lease:")).count())
                    .as("one WARN per limiter per --warn-interval").isEqualTo(1);
        }
    }

    @Test
    void aNewQuotaRevisionDropsTheLeasesHeld() throws Exception {
        LeveeClient c = client(true);
        warm(c, "granted");
        clock.addAndGet(10 * US);
        assertThat(check(c).attempts()).isZero();
        leaseAnswer = a -> new Answer(500, "{}"); // no new lease: what follows is the per-request path
        quotas.set(config()); // the same quotas, a new configuration: the client's revision moves
        clock.addAndGet(10 * US);
        assertThat(check(c).attempts()).as("the lease of the old revision is dropped").isEqualTo(1);
        assertThat(decided.get()).isEqualTo(WARM + 1);
        assertThat(admissions("admitted")).isEqualTo(1);
    }

    @Test
    void aNewViewRevisionDropsTheLeasesHeld() throws Exception {
        LeveeClient c = client(true);
        warm(c, "granted");
        clock.addAndGet(10 * US);
        assertThat(check(c).attempts()).isZero();
        leaseAnswer = a -> new Answer(500, "{}");
        viewRevision.set(2);
        c.refresh().await(10, TimeUnit.SECONDS);
        assertThat(c.view().revision()).isEqualTo(2);
        clock.addAndGet(10 * US);
        assertThat(check(c).attempts()).as("the lease of the old membership is dropped").isEqualTo(1);
        assertThat(decided.get()).isEqualTo(WARM + 1);
    }

    @Test
    void aGrantAnsweredAfterTheEpochMovedIsNotUsed() throws Exception {
        AtomicReference<Runnable> during = new AtomicReference<>(() -> { });
        leaseAnswer = a -> {
            during.get().run();
            return grant(50, 0, LIMIT.emissionIntervalNs(), LIMIT.toleranceNs(), "l1", KEY);
        };
        during.set(() -> quotas.set(config())); // the quotas change while the ask is in flight
        LeveeClient c = client(true);
        warm(c, "stale");
        during.set(() -> { });
        clock.addAndGet(10 * US);
        assertThat(check(c).attempts()).as("a grant of the old revision is not used").isEqualTo(1);
    }

    @Test
    void aClientCutOffFromItsLimitersAdmitsNothingOnceTheLastWindowEnded() throws Exception {
        LeveeClient c = client(true);
        warm(c, "granted");
        long granted = clock.get();
        limiter.close().await(10, TimeUnit.SECONDS); // checks and asks fail from now on
        long lastAdmitted = 0;
        int accepted = 0;
        for (int i = 0; i < 300; i++) { // 30 ms in steps of 100 µs, past the 50 slots' 10 ms
            clock.addAndGet(100 * US);
            ClientDecision d = check(c);
            if (d.result() == ClientDecision.Result.ACCEPTED) {
                lastAdmitted = clock.get();
                accepted++;
                assertThat(d.attempts()).isZero();
            } else {
                assertThat(d.result()).isEqualTo(ClientDecision.Result.FAILED);
            }
        }
        // slot k's local window ends at s + ⌊k × T × (1 − ρ)⌋ − 1 − ε: the 50th at about 9.8 ms
        assertThat(accepted).isBetween(1, 50);
        assertThat(lastAdmitted - granted).isLessThan(50 * LIMIT.emissionIntervalNs());
        assertThat(decided.get()).isEqualTo(WARM);
    }

    /**
     * A hot key whose rate here is below {@code LeaseSizer.lastingRate} asks nothing: a grant's slots would end before
     * the client reached them, so an ask would cost a round trip and the check would still go to a limiter (through
     * NGINX at 50 req/s on a key with τ = 40 ms: 590 grants in 300 requests, none used). Once the rate passes it, the
     * key is asked for and admitted from leases.
     */
    @Test
    void aHotKeyBelowTheLastingRateAsksNothingAndGoesToTheLimiter() throws Exception {
        LeveeClient c = client(true);
        for (int i = 0; i < 30; i++) { // 30/s at 10 ms apart: hot (above 10/s), below the lasting rate of 39.8/s
            clock.addAndGet(10 * MS);
            assertThat(check(c).attempts()).isEqualTo(1);
        }
        assertThat(registry.get("levee_client_lease_checks_total").tag("key", "hot").counter().count()).isPositive();
        assertThat(asked.get()).as("no ask below the lasting rate").isZero();
        assertThat(decided.get()).isEqualTo(30);
        for (int i = 0; i < 20; i++) { // at one instant: the estimate passes 39.8/s, one ask
            check(c);
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> asks("granted") >= 1);
        clock.addAndGet(10 * US);
        assertThat(check(c).attempts()).as("admitted from the lease").isZero();
        assertThat(asked.get()).isEqualTo(1);
    }

    @Test
    void withoutLeasesNoAskIsSent() throws Exception {
        LeveeClient c = client(false);
        for (int i = 0; i < 50; i++) {
            assertThat(check(c).attempts()).isEqualTo(1);
        }
        assertThat(asked.get()).isZero();
        assertThat(decided.get()).isEqualTo(50);
        assertThat(registry.find("levee_client_lease_asks_total").meters()).isEmpty();
        assertThat(registry.find("levee_client_lease_admissions_total").meters()).isEmpty();
    }

    @Test
    void aShadowQuotaOnTheRequestKeepsItOnTheLimiter() throws Exception {
        quotas.set(QuotaConfig.builder().defaultQuota(new Quota(1000, 100))
                .resource("hot", new ResourceQuotas(new Quota(5000, 500), List.of(dev.levee.quota.PrefixRule.of("k",
                        new Quota(1, 1, dev.levee.quota.QuotaMode.SHADOW, null))))).build());
        LeveeClient c = client(true);
        for (int i = 0; i < 30; i++) {
            assertThat(check(c).attempts()).isEqualTo(1);
        }
        assertThat(asked.get()).isZero();
    }

    @Test
    void eachMemberOfTheGroupIsAskedAndBothLeasesAdmit() throws Exception {
        GcraLimit two = GcraLimit.of(5000, 500, 2); // T = 400 µs
        leaseAnswer = a -> grant(20, 0, two.emissionIntervalNs(), two.toleranceNs(), "l1", KEY);
        AtomicInteger asked2 = new AtomicInteger();
        HttpServer second = limiter(asked2, a -> grant(20, 0, two.emissionIntervalNs(), two.toleranceNs(), "l2", KEY));
        LeveeClient c = client(true, observer(limiter, second));
        assertThat(c.group("hot")).hasSize(2);
        for (int i = 0; i < WARM; i++) {
            assertThat(check(c).attempts()).isEqualTo(1);
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> asks("granted") >= 2);
        assertThat(asked.get()).isEqualTo(1);
        assertThat(asked2.get()).isEqualTo(1);
        assertThat(lastAsk.get().g()).isEqualTo(2);
        java.util.Set<String> limiters = new java.util.HashSet<>();
        for (int i = 0; i < 20; i++) {
            clock.addAndGet(10 * US);
            ClientDecision d = check(c);
            assertThat(d.attempts()).isZero();
            limiters.add(d.limiter());
        }
        assertThat(limiters).containsExactlyInAnyOrder("127.0.0.1:" + limiter.actualPort(),
                "127.0.0.1:" + second.actualPort());
        assertThat(decided.get()).isEqualTo(WARM);
    }

    @Test
    void aRefusedAskIsNotRepeatedBeforeItsWait() throws Exception {
        leaseAnswer = a -> json(RequestLeaseWire.Grant.refused("l1", RequestLeaseWire.REFUSED, 5 * MS));
        LeveeClient c = client(true);
        warm(c, "refused");
        for (int i = 0; i < 10; i++) {
            clock.addAndGet(400 * US);
            assertThat(check(c).attempts()).isEqualTo(1);
        }
        assertThat(asked.get()).as("not within the 5 ms wait").isEqualTo(1);
        leaseAnswer = a -> grant(50, 0, LIMIT.emissionIntervalNs(), LIMIT.toleranceNs(), "l1", KEY);
        clock.addAndGet(2 * MS);
        check(c);
        await().atMost(Duration.ofSeconds(10)).until(() -> asks("granted") >= 1);
        assertThat(asked.get()).isEqualTo(2);
        assertThat(check(c).attempts()).isZero();
    }

    @Test
    void anAskNotAnsweredWithinTheCheckTimeoutIsNeverAnAdmission() throws Exception {
        leaseAnswer = a -> null;
        try (LogCapture log = new LogCapture("levee.client")) {
            LeveeClient c = client(true, observer, Duration.ofMillis(300));
            warm(c, "failed");
            clock.addAndGet(10 * US);
            assertThat(check(c).attempts()).isEqualTo(1);
            assertThat(admissions("admitted")).isZero();
            await().atMost(Duration.ofSeconds(10)).until(() -> log.lines().stream().anyMatch(l -> l.startsWith(
                    "WARN lease: ask to limiter l1") && l.contains(": failed: ")));
        }
    }

    @Test
    void warmUpSelfChecksAreNeverLeased() throws Exception {
        LeveeClient c = client(true);
        for (int i = 0; i < 50; i++) {
            io.vertx.core.Promise<ClientDecision> p = io.vertx.core.Promise.promise();
            c.check(new dev.levee.s3.S3Classification(dev.levee.runtime.Warmup.RESOURCE, "k",
                    dev.levee.s3.S3Operation.GetObject), p);
            assertThat(p.future().await(10, TimeUnit.SECONDS).attempts()).isEqualTo(1);
        }
        assertThat(asked.get()).isZero();
        assertThat(registry.get("levee_client_lease_checks_total").tag("key", "hot").counter().count()).isZero();
    }
}
