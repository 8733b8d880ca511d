package dev.levee.client;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.levee.core.Rendezvous;
import dev.levee.core.Ticker;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Json;
import dev.levee.runtime.LogText;
import dev.levee.s3.S3Classification;
import dev.levee.s3.S3Classifier;
import dev.levee.s3.S3Request;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Checks S3 requests against the limiter cluster: the levee-client logic as a library (SPEC.md §1
 * step 2, §5).
 *
 * <p>Per check: classify the request (§3); take the cached list of active limiters from the
 * observer; rank them for the resource with HRW and keep the top {@code g = min(DF, active)}; ask
 * the group's members in round-robin order, skipping members in local back-off; a member that
 * fails (connection refused, timeout, HTTP 5xx or anything but 200/429) is skipped for the rest of
 * the request, backed off for {@code backoff}, and the next member is asked. When no member
 * answers, the result is {@link ClientDecision.Result#FAILED}. The list is refreshed every
 * {@code refresh}; when the observer is unreachable the last good list is kept.
 *
 * <p>Each result is logged on {@code levee.client} with the limiter's address. Thread-safe.
 */
public final class LeveeClient implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger("levee.client");
    private static final ObjectMapper LENIENT = JsonMapper.builder()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES).build();

    /**
     * Settings of a client.
     *
     * @param observer     the observer to poll
     * @param refresh      how often the limiter list is refreshed (default 1 s)
     * @param checkTimeout how long one limiter may take to answer (default 250 ms)
     * @param backoff      how long a failed limiter is skipped (default 2 s)
     * @param baseDomains  base domains for virtual-hosted style requests (may be empty)
     */
    public record Options(HostPort observer, Duration refresh, Duration checkTimeout, Duration backoff,
                          List<String> baseDomains) {
        /** Validates and copies. @throws IllegalArgumentException when a duration is not positive */
        public Options {
            for (Duration d : List.of(refresh, checkTimeout, backoff)) {
                if (d.isNegative() || d.isZero()) {
                    throw new IllegalArgumentException("durations must be positive");
                }
            }
            baseDomains = List.copyOf(baseDomains);
        }
    }

    /** An active limiter as the observer lists it. */
    public record Member(String id, String address) {
    }

    /** The observer's view. */
    public record View(long revision, int factor, List<Member> limiters) {
        /** Copies. */
        public View {
            limiters = List.copyOf(limiters);
        }
    }

    private record LimiterAnswer(String result, String level, String limitKey, long remaining, long retryAfter,
                                 String limiter) {
    }

    private final Vertx vertx;
    private final Options options;
    private final Ticker ticker;
    private final S3Classifier classifier;
    private final HttpClientAgent http;
    private final MeterRegistry registry;
    private final Map<String, Long> backedOffUntil = new ConcurrentHashMap<>();
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();
    /**
     * Round-robin position per (resource, operation), so that each stream of requests is spread evenly
     * over the group's members (bounded: Caffeine, 100 000 entries).
     */
    private final com.github.benmanes.caffeine.cache.Cache<String, AtomicLong> roundRobin =
            com.github.benmanes.caffeine.cache.Caffeine.newBuilder().maximumSize(100_000).build();
    private volatile View view = new View(0, 1, List.of());
    private volatile boolean observerReachable;
    private long refreshTimer = -1;

    private LeveeClient(Vertx vertx, Options options, Ticker ticker, MeterRegistry registry) {
        this.vertx = vertx;
        this.options = options;
        this.ticker = ticker;
        this.registry = registry;
        this.classifier = options.baseDomains().isEmpty() ? S3Classifier.pathStyleOnly()
                : S3Classifier.withBaseDomains(options.baseDomains());
        this.http = vertx.createHttpClient(new HttpClientOptions()
                        .setKeepAlive(true)
                        .setTcpNoDelay(true)
                        .setConnectTimeout((int) Math.max(1, options.checkTimeout().toMillis())),
                new PoolOptions().setHttp1MaxSize(64).setMaxWaitQueueSize(4096));
    }

    /**
     * Creates a client and fetches the limiter list once.
     *
     * @return the client, once the first refresh finished (successfully or not)
     */
    public static Future<LeveeClient> start(Vertx vertx, Options options, Ticker ticker, MeterRegistry registry) {
        LeveeClient c = new LeveeClient(vertx, options, ticker, registry);
        return c.refresh().recover(e -> Future.succeededFuture()).map(v -> {
            c.refreshTimer = vertx.setPeriodic(options.refresh().toMillis(), t -> c.refresh());
            return c;
        });
    }

    /** Fetches the limiter list now; keeps the last good list on failure. */
    public Future<Void> refresh() {
        return http.request(new RequestOptions().setMethod(HttpMethod.GET).setHost(options.observer().host())
                        .setPort(options.observer().port()).setURI("/v1/limiters")
                        .setTimeout(Math.max(500, options.refresh().toMillis())))
                .compose(r -> r.send())
                .compose(resp -> resp.body().map(b -> {
                    if (resp.statusCode() != 200) {
                        throw new IllegalStateException("observer answered HTTP " + resp.statusCode());
                    }
                    try {
                        return LENIENT.readValue(b.getBytes(), View.class);
                    } catch (java.io.IOException e) {
                        throw new IllegalStateException("observer sent a malformed list");
                    }
                }))
                .map(v -> {
                    if (v.factor() < 1 || v.limiters() == null) {
                        throw new IllegalStateException("observer sent factor < 1 or no list");
                    }
                    View old = view;
                    if (v.revision() != old.revision() || v.factor() != old.factor()) {
                        LOG.info("limiter list revision={} factor={} limiters={}", v.revision(), v.factor(),
                                v.limiters().size());
                    }
                    view = v;
                    observerReachable = true;
                    return (Void) null;
                })
                .onFailure(e -> {
                    if (observerReachable) {
                        LOG.warn("observer {} unreachable, keeping the last list (revision {}): {}", options.observer(),
                                view.revision(), e.getMessage());
                    }
                    observerReachable = false;
                });
    }

    /** Returns the cached view of the limiter list. */
    public View view() {
        return view;
    }

    /** Returns whether the last refresh reached the observer. */
    public boolean observerReachable() {
        return observerReachable;
    }

    /** Returns the classifier in use. */
    public S3Classifier classifier() {
        return classifier;
    }

    /**
     * Returns the group for a resource: the top {@code g = min(DF, active)} limiters by HRW.
     *
     * @param resource bucket name
     * @return the group, highest score first
     */
    public List<Member> group(String resource) {
        View v = view;
        return Rendezvous.top(v.limiters(), Member::id, resource, Rendezvous.groupSize(v.factor(), v.limiters().size()));
    }

    /**
     * Checks one S3 request. Never fails: problems become {@link ClientDecision.Result#FAILED}.
     *
     * @param request the raw request facts
     * @return the decision
     */
    public Future<ClientDecision> check(S3Request request) {
        S3Classification c = clamp(classifier.classify(request));
        List<Member> group = group(c.resource());
        int g = group.size();
        if (g == 0) {
            return Future.succeededFuture(done(new ClientDecision(ClientDecision.Result.FAILED, 0, 0, null, null, null, c, 0),
                    "no active limiter"));
        }
        // round-robin start, then members not in back-off first, members in back-off last
        int start = (int) Math.floorMod(roundRobin.get(c.resource() + '\u0000' + c.operation().name(), r -> new AtomicLong()).getAndIncrement(), (long) g);
        Member[] order = new Member[g];
        int n = 0;
        long now = ticker.read();
        for (int i = 0; i < g; i++) {
            Member m = group.get((start + i) % g);
            Long until = backedOffUntil.get(m.address());
            if (until == null || now - until >= 0) {
                order[n++] = m;
            }
        }
        for (int i = 0; i < g; i++) {
            Member m = group.get((start + i) % g);
            Long until = backedOffUntil.get(m.address());
            if (until != null && now - until < 0) {
                order[n++] = m;
            }
        }
        Promise<ClientDecision> promise = Promise.promise();
        attempt(c, order, 0, g, promise);
        return promise.future();
    }

    /** Longest resource or key a limiter accepts, in UTF-8 bytes (the S3 key limit). */
    static final int MAX_BYTES = 1024;

    /**
     * Cuts a resource or key longer than {@link #MAX_BYTES} to its first 1024 bytes (on a character
     * boundary) so that such a request is still counted — against the same bucket and prefix quotas —
     * rather than refused by the limiter as malformed and let through as a failed check.
     */
    static S3Classification clamp(S3Classification c) {
        String r = cut(c.resource());
        String k = cut(c.key());
        return r == c.resource() && k == c.key() ? c : new S3Classification(r, k, c.operation());
    }

    private static String cut(String s) {
        if (s.length() * 3 <= MAX_BYTES) {
            return s; // fast path: cannot exceed 1024 bytes
        }
        byte[] b = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        if (b.length <= MAX_BYTES) {
            return s;
        }
        int end = MAX_BYTES;
        while (end > 0 && (b[end] & 0xC0) == 0x80) {
            end--; // do not split a UTF-8 sequence
        }
        return new String(b, 0, end, java.nio.charset.StandardCharsets.UTF_8);
    }

    /** A limiter's answer that is not a decision (4xx): the request is malformed, not the limiter broken. */
    static final class Refused extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Refused(String message) {
            super(message, null, false, false);
        }
    }

    private void attempt(S3Classification c, Member[] order, int i, int g, Promise<ClientDecision> promise) {
        if (i >= order.length) {
            promise.complete(done(new ClientDecision(ClientDecision.Result.FAILED, 0, 0, null, null, null, c, i),
                    "no limiter of the group answered"));
            return;
        }
        Member m = order[i];
        HostPort addr;
        try {
            addr = HostPort.parse(m.address(), "limiter address");
        } catch (IllegalArgumentException e) {
            attempt(c, order, i + 1, g, promise);
            return;
        }
        byte[] body = Json.write(Map.of("resource", c.resource(), "key", c.key(), "operation",
                c.operation().name(), "g", g));
        long timeout = options.checkTimeout().toMillis();
        http.request(new RequestOptions().setMethod(HttpMethod.POST).setHost(addr.host()).setPort(addr.port())
                        .setURI("/v1/check").setTimeout(timeout).putHeader("Content-Type", "application/json"))
                .compose(r -> r.send(Buffer.buffer(body)))
                .compose(resp -> resp.body().map(b -> {
                    int s = resp.statusCode();
                    if (s >= 400 && s < 500 && s != 429) {
                        throw new Refused("HTTP " + s + ": " + b.toString().replaceAll("[\\r\\n]", " "));
                    }
                    if (s != 200 && s != 429) {
                        throw new IllegalStateException("HTTP " + s);
                    }
                    try {
                        return LENIENT.readValue(b.getBytes(), LimiterAnswer.class);
                    } catch (java.io.IOException e) {
                        throw new IllegalStateException("malformed answer");
                    }
                }))
                .timeout(timeout + 50, java.util.concurrent.TimeUnit.MILLISECONDS)
                .onSuccess(a -> {
                    backedOffUntil.remove(m.address());
                    boolean ok = "accepted".equals(a.result());
                    ClientDecision d = new ClientDecision(ok ? ClientDecision.Result.ACCEPTED : ClientDecision.Result.REJECTED,
                            ok ? 0 : Math.max(1, a.retryAfter()), a.remaining(), m.address(), a.level(), a.limitKey(), c,
                            i + 1);
                    promise.complete(done(d, null));
                })
                .onFailure(e -> {
                    if (e instanceof Refused) {
                        // asking another member would get the same answer; the limiter is healthy
                        count("limiter_refused");
                        promise.complete(done(new ClientDecision(ClientDecision.Result.FAILED, 0, 0, m.address(), null, null,
                                c, i + 1), "limiter refused the check: " + e.getMessage()));
                        return;
                    }
                    backedOffUntil.put(m.address(), ticker.read() + options.backoff().toNanos());
                    LOG.warn("limiter {} ({}) failed: {}; backing off {} ms", m.id(), m.address(), e.getMessage(),
                            options.backoff().toMillis());
                    count("limiter_failure");
                    attempt(c, order, i + 1, g, promise);
                });
    }

    private ClientDecision done(ClientDecision d, String why) {
        count(d.result().word());
        if (LOG.isInfoEnabled()) {
            LOG.info("result={} limiter={} resource={} key={} op={} level={} retry_after={} attempts={}{}",
                    d.result().word(), d.limiter() == null ? "-" : d.limiter(),
                    LogText.escape(d.classification().resource()), LogText.escape(d.classification().key()),
                    d.classification().operation(), d.level() == null ? "-" : d.level(), d.retryAfter(), d.attempts(),
                    why == null ? "" : " reason=\"" + why + "\"");
        }
        return d;
    }

    private void count(String what) {
        counters.computeIfAbsent(what, k -> Counter.builder("levee_client_results_total")
                .description("check results and limiter failures").tag("result", what).register(registry)).increment();
    }

    /** Stops refreshing and closes connections. */
    public Future<Void> stop() {
        if (refreshTimer >= 0) {
            vertx.cancelTimer(refreshTimer);
        }
        return http.close();
    }

    @Override
    public void close() {
        stop();
    }
}
