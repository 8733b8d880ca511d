package dev.levee.client;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.levee.core.Rendezvous;
import dev.levee.core.Ticker;
import dev.levee.runtime.BinaryChecks;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Json;
import dev.levee.runtime.WireConnection;
import dev.levee.runtime.LogText;
import dev.levee.s3.S3Classification;
import dev.levee.s3.S3Classifier;
import dev.levee.s3.S3Request;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Completable;
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
 * Checks S3 requests against the limiter cluster: the levee-client logic as a library (docs/design.md §1
 * step 2, §5).
 *
 * <p>Per check: classify the request (§3); take the cached list of active limiters from the
 * observer; rank them for the resource with HRW and keep the top {@code g = min(DF, active)}; ask
 * the group's members in round-robin order, members in local back-off last; a member that
 * fails (connection refused, timeout, HTTP 5xx or anything but 200/429) is skipped for the rest of
 * the request, backed off for {@code backoff}, and the next member is asked. When every member of
 * the group failed for this check or is backed off, the check <em>spills over</em> to the next
 * {@code g} limiters in HRW rank order (round-robin among them, the same {@code g} sent, so each
 * decides with the rate share {@code rate / g}): the limiters that become the group once the
 * observer drops the failed ones. Members in back-off are skipped straight to the spill-over and
 * asked only as a last resort. At most {@code g} attempts beyond the first {@code g}, each started
 * only if it can end within {@code checkDeadline} of the check's start; a decision from beyond the
 * group is counted in {@code levee_client_results_total{result="spilled"}} and logged with
 * {@code spilled=true}. When no limiter answers, the result is {@link ClientDecision.Result#FAILED}.
 * The list is refreshed every {@code refresh}; when the observer is unreachable the last good list is
 * kept. Given several observers (issue 22, item 9), every one is asked each round and the list is taken from
 * one that answered — a ready one, the newest etcd revision, else the one in use ({@link ObserverChoice}); the
 * client is degraded only when none answers, and an observer that does not answer while another does is a
 * WARN when it begins and once per {@code warnInterval} after ({@link #observersDownReason()}).
 *
 * <p>A new list is not believed at once when it may be a gap rather than a change (issue 10): while
 * the observer marks its list not ready (a restarted observer for one heartbeat TTL, an observer
 * that lost etcd) the last list is kept, as when the observer is unreachable; and a list that is
 * empty or holds fewer than half the members of the list in use (leases that expired together and
 * are being renewed) is adopted only if it is still so after {@code listGrace}. Each hold is logged
 * and counted in {@code levee_client_list_holds_total}; {@code levee_client_list_held} is 1 meanwhile.
 *
 * <p>Each result is logged on {@code levee.client} with the limiter's address. A check is made for a future
 * ({@link #check(S3Request)}) or with a completion handler ({@link #check(S3Classification, Completable)}: no future,
 * and the request may be classified from its received bytes first); either way one {@code Plan} carries it through
 * its attempts. Thread-safe.
 */
public final class LeveeClient implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger("levee.client");
    private static final ObjectMapper LENIENT = JsonMapper.builder()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES).build();

    /**
     * Settings of a client.
     *
     * @param observers    the observers to poll, one or more, each at most once (CLI {@code --observer a,b} or
     *                     {@code LEVEE_OBSERVERS}): every one is asked each {@code refresh} and the list is taken
     *                     from one that answers, by {@link ObserverChoice} (issue 22, item 9)
     * @param refresh      how often the limiter list is refreshed (default 1 s)
     * @param checkTimeout how long one limiter may take to answer (default 250 ms)
     * @param backoff      how long a failed limiter is skipped (default 2 s)
     * @param baseDomains  base domains for virtual-hosted style requests (may be empty)
     * @param maxInFlight  requests one limiter may have outstanding from this client before further
     *                     checks for it are queued and sent together as one batch (default
     *                     {@value #DEFAULT_MAX_IN_FLIGHT}; 1–1024)
     * @param maxBatch     most checks in one batch (default {@value #DEFAULT_MAX_BATCH}; 1–1024, the
     *                     limiter's own cap)
     * @param listGrace    how long a list that is empty or lost more than half its members is not
     *                     believed while the last list is kept (default 3 s, the observer's default TTL;
     *                     zero: believed at once)
     * @param checkDeadline longest a check may take with its spill-over attempts: an attempt beyond the
     *                     first {@code g} is started only if {@code checkTimeout} still fits before it
     *                     (default {@value #DEFAULT_CHECK_DEADLINE_MS} ms, below NGINX's default check
     *                     {@code --timeout} of 1 s; positive)
     * @param warnInterval least time between two warnings about a lasting degraded state — no limiter known
     *                     (every check fails, and passes by NGINX's or the gateway's failure policy) or the
     *                     observer unreachable (default 10 s, CLI {@code --warn-interval}; positive)
     * @param wire         whether checks go over the check wire ({@link WireConnection}, {@code CheckWire}) to
     *                     limiters that take it, rather than as HTTP requests (default true; CLI
     *                     {@code --no-limiter-wire} turns it off); {@code maxInFlight} applies to HTTP only, and
     *                     {@code maxBatch} caps the checks of one wire frame too
     */
    public record Options(List<HostPort> observers, Duration refresh, Duration checkTimeout, Duration backoff,
                          List<String> baseDomains, int maxInFlight, int maxBatch, Duration listGrace,
                          Duration checkDeadline, Duration warnInterval, boolean wire) {
        /** Requests outstanding per limiter before checks are batched, by default: 4. */
        public static final int DEFAULT_MAX_IN_FLIGHT = 4;
        /** Checks per batch at most, by default: 256. */
        public static final int DEFAULT_MAX_BATCH = 256;
        /** How long a sharply shrunk list is not believed, by default: 3 s (the observer's default TTL). */
        public static final Duration DEFAULT_LIST_GRACE = Duration.ofSeconds(3);
        /** Longest a check may take with its spill-over attempts, by default, in ms: 900. */
        public static final long DEFAULT_CHECK_DEADLINE_MS = 900;
        /** {@link #DEFAULT_CHECK_DEADLINE_MS} as a duration. */
        public static final Duration DEFAULT_CHECK_DEADLINE = Duration.ofMillis(DEFAULT_CHECK_DEADLINE_MS);

        /** Most observers one client polls: 16. */
        public static final int MAX_OBSERVERS = 16;

        /**
         * Validates and copies.
         *
         * @throws IllegalArgumentException when a duration is not positive, a limit is out of range, or the
         *                                  observers are none, more than {@value #MAX_OBSERVERS}, or one is given twice
         */
        public Options {
            if (observers == null || observers.isEmpty() || observers.size() > MAX_OBSERVERS) {
                throw new IllegalArgumentException("observers must be 1-" + MAX_OBSERVERS + ", got "
                        + (observers == null ? 0 : observers.size()));
            }
            observers = List.copyOf(observers);
            if (new java.util.HashSet<>(observers).size() != observers.size()) {
                throw new IllegalArgumentException("an observer is given twice: " + observers);
            }
            for (Duration d : List.of(refresh, checkTimeout, backoff)) {
                if (d.isNegative() || d.isZero()) {
                    throw new IllegalArgumentException("durations must be positive");
                }
            }
            if (checkDeadline == null || checkDeadline.isNegative() || checkDeadline.isZero()) {
                throw new IllegalArgumentException("check deadline must be positive");
            }
            if (maxInFlight < 1 || maxInFlight > 1024) {
                throw new IllegalArgumentException("requests in flight per limiter must be 1-1024, got " + maxInFlight);
            }
            if (maxBatch < 1 || maxBatch > 1024) {
                throw new IllegalArgumentException("checks per batch must be 1-1024, got " + maxBatch);
            }
            if (listGrace == null || listGrace.isNegative()) {
                throw new IllegalArgumentException("list grace must not be negative");
            }
            if (warnInterval == null || warnInterval.isNegative() || warnInterval.isZero()) {
                throw new IllegalArgumentException("warning interval must be positive");
            }
            baseDomains = List.copyOf(baseDomains);
        }

        /** Settings with one observer. */
        public Options(HostPort observer, Duration refresh, Duration checkTimeout, Duration backoff,
                       List<String> baseDomains, int maxInFlight, int maxBatch, Duration listGrace,
                       Duration checkDeadline, Duration warnInterval, boolean wire) {
            this(List.of(observer), refresh, checkTimeout, backoff, baseDomains, maxInFlight, maxBatch, listGrace,
                    checkDeadline, warnInterval, wire);
        }

        /** Returns the first observer given (the only one, for a client given one). */
        public HostPort observer() {
            return observers.get(0);
        }

        /** Returns these settings polling {@code list} instead (see {@link #observers()}). */
        public Options withObservers(List<HostPort> list) {
            return new Options(list, refresh, checkTimeout, backoff, baseDomains, maxInFlight, maxBatch, listGrace,
                    checkDeadline, warnInterval, wire);
        }

        /** Settings with checks over the check wire where limiters take it. */
        public Options(HostPort observer, Duration refresh, Duration checkTimeout, Duration backoff,
                       List<String> baseDomains, int maxInFlight, int maxBatch, Duration listGrace,
                       Duration checkDeadline, Duration warnInterval) {
            this(observer, refresh, checkTimeout, backoff, baseDomains, maxInFlight, maxBatch, listGrace, checkDeadline,
                    warnInterval, true);
        }

        /** Returns these settings with the check wire on or off. */
        public Options withWire(boolean on) {
            return new Options(observers, refresh, checkTimeout, backoff, baseDomains, maxInFlight, maxBatch, listGrace,
                    checkDeadline, warnInterval, on);
        }

        /** Settings with the default warning interval (10 s). */
        public Options(HostPort observer, Duration refresh, Duration checkTimeout, Duration backoff,
                       List<String> baseDomains, int maxInFlight, int maxBatch, Duration listGrace,
                       Duration checkDeadline) {
            this(observer, refresh, checkTimeout, backoff, baseDomains, maxInFlight, maxBatch, listGrace, checkDeadline,
                    dev.levee.runtime.LoudCondition.DEFAULT_INTERVAL);
        }

        /** Settings with the default check deadline. */
        public Options(HostPort observer, Duration refresh, Duration checkTimeout, Duration backoff,
                       List<String> baseDomains, int maxInFlight, int maxBatch, Duration listGrace) {
            this(observer, refresh, checkTimeout, backoff, baseDomains, maxInFlight, maxBatch, listGrace,
                    DEFAULT_CHECK_DEADLINE);
        }

        /** Settings with the default list grace. */
        public Options(HostPort observer, Duration refresh, Duration checkTimeout, Duration backoff,
                       List<String> baseDomains, int maxInFlight, int maxBatch) {
            this(observer, refresh, checkTimeout, backoff, baseDomains, maxInFlight, maxBatch, DEFAULT_LIST_GRACE);
        }

        /** Settings with the default in-flight and batch limits. */
        public Options(HostPort observer, Duration refresh, Duration checkTimeout, Duration backoff,
                       List<String> baseDomains) {
            this(observer, refresh, checkTimeout, backoff, baseDomains, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_BATCH,
                    DEFAULT_LIST_GRACE);
        }
    }

    /** An active limiter as the observer lists it. */
    public record Member(String id, String address) {
    }

    /**
     * The observer's view.
     *
     * @param revision    increases with every change within one incarnation of the observer
     * @param factor      the group factor DF
     * @param limiters    the active limiters
     * @param incarnation the observer's start id; null from an observer older than issue 10
     * @param ready       false while the observer's list may be incomplete; null (older observer): ready
     * @param membership  where the list comes from: {@code "etcd"} (the revision is etcd's and compares between
     *                    observers), {@code "heartbeat"} (this observer's own count); null from an observer older
     *                    than issue 22
     */
    public record View(long revision, int factor, List<Member> limiters, String incarnation, Boolean ready,
                       String membership) {
        /** Copies. */
        public View {
            limiters = limiters == null ? null : List.copyOf(limiters);
        }

        /** A view without membership source. */
        public View(long revision, int factor, List<Member> limiters, String incarnation, Boolean ready) {
            this(revision, factor, limiters, incarnation, ready, null);
        }

        /** A view without incarnation, ready. */
        public View(long revision, int factor, List<Member> limiters) {
            this(revision, factor, limiters, null, null, null);
        }

        /** Returns whether the observer marked this list complete (an older observer's always is). */
        public boolean isReady() {
            return ready == null || ready;
        }
    }

    /** A limiter's answer; {@code rate}, {@code burst}, {@code reset}, {@code shadow}: absent from limiters before issue 14. */
    private record LimiterAnswer(String result, String level, String limitKey, long remaining, long retryAfter,
                                 String limiter, String error, double rate, int burst, long reset, String shadow) {
    }

    private record BatchAnswer(List<LimiterAnswer> decisions) {
    }

    /** One check as the limiter's {@code POST /v1/check} and {@code /v1/checks} take it. */
    private record CheckItem(String resource, String key, String operation, int g) {
    }

    /**
     * Largest batch body sent, in bytes: 1 MiB, a quarter of what a limiter accepts. A check is at
     * most ~12.3 KiB of JSON (two 1024-byte names of control characters, each escaped as
     * six-character JSON escapes), so a batch is cut by size before {@code maxBatch} only for such names.
     */
    static final int MAX_BATCH_BYTES = 1 << 20;

    /** Most checks waiting for one limiter; beyond it a check fails over at once: 16 384. */
    static final int MAX_QUEUED = 16_384;

    private final Vertx vertx;
    private final Options options;
    private final Ticker ticker;
    private final S3Classifier classifier;
    private final HttpClientAgent http;
    private final MeterRegistry registry;
    private final Map<String, Long> backedOffUntil = new ConcurrentHashMap<>();
    /** One channel per limiter address: in-flight count and the checks waiting to be batched. */
    private final Map<String, Channel> channels = new ConcurrentHashMap<>();
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();
    private volatile View view = new View(0, 1, List.of());
    /** Set by {@link #stop()}: checks from then on, and those still waiting, fail without a request. */
    private volatile boolean stopped;
    /** Whether the last refresh round reached an observer (any one of those given). */
    private volatile boolean observerReachable;
    /** Why the last refresh failed, for the warning. */
    private volatile String lastObserverError;
    /** The observer whose list was taken last; null before the first answer. */
    private volatile HostPort source;
    /** What was wrong with each observer in the last round ("unreachable (why)", "not ready"); absent: fine. */
    private volatile Map<HostPort, String> observerProblems = Map.of();
    /** Each observer's incarnation as last seen, to say when one restarted. */
    private final Map<HostPort, String> incarnations = new java.util.HashMap<>();
    /** Refresh rounds started, and the latest whose answers were applied (under the client's lock). */
    private final AtomicLong rounds = new AtomicLong();
    private long appliedRound;
    /** Some observers unreachable or not ready while another serves the list: warned, not failed. */
    private final dev.levee.runtime.LoudCondition observersDown;
    private long refreshTimer = -1;
    private final io.vertx.core.Context context;
    /** The socket channel class of the check wire's connections, fitting Vert.x's event loops. */
    private final Class<? extends io.netty.channel.Channel> wireChannelClass;
    /** Whether the list in use is being kept against a newer one, and since when (ticker ns). */
    private volatile boolean held;
    private long heldSince;
    /** The reason of the hold in progress, logged once per hold. */
    private String holdReason;
    /** No limiter known or the observer unreachable: warned at start, every warnInterval, and at the end. */
    private final dev.levee.runtime.LoudCondition degraded;
    /**
     * The gauges this client registered, removed by {@link #stop()}: a gauge names its client, so a client started
     * after this one on the same registry would otherwise find the names taken (Micrometer keeps the first and
     * warns "This Gauge has been already registered") and its gauges would read the stopped client.
     */
    private final List<io.micrometer.core.instrument.Meter> gauges = new java.util.concurrent.CopyOnWriteArrayList<>();

    private LeveeClient(Vertx vertx, Options options, Ticker ticker, MeterRegistry registry) {
        this.vertx = vertx;
        this.options = options;
        this.ticker = ticker;
        this.registry = registry;
        this.context = vertx.getOrCreateContext();
        this.wireChannelClass = dev.levee.runtime.Http.socketChannelClass(vertx);
        gauges.add(io.micrometer.core.instrument.Gauge.builder("levee_client_list_held", this, c -> c.held ? 1 : 0)
                .description("1 while the last limiter list is kept against a newer one (see levee_client_list_holds_total)")
                .register(registry));
        this.degraded = new dev.levee.runtime.LoudCondition(options.warnInterval());
        this.observersDown = new dev.levee.runtime.LoudCondition(options.warnInterval());
        gauges.add(io.micrometer.core.instrument.Gauge.builder("levee_client_observers_unreachable", this,
                        c -> c.observerProblems.values().stream().filter(p -> p.startsWith("unreachable")).count())
                .description("observers (of those given to --observer) that did not answer the last refresh")
                .register(registry));
        gauges.add(io.micrometer.core.instrument.Gauge.builder("levee_client_fail_open", this, c -> c.view.limiters().isEmpty() ? 1 : 0)
                .description("1 while no limiter is known: every check answers failed and passes by the failure policy"
                        + " (counted in levee_client_results_total{result=\"failed\"})")
                .register(registry));
        gauges.add(io.micrometer.core.instrument.Gauge.builder("levee_client_observer_unreachable", this,
                        c -> c.observerReachable ? 0 : 1)
                .description("1 while the last refresh reached no observer (the last list is kept)")
                .register(registry));
        // both reasons exported from the start at 0, so that rate() sees the first hold and dashboards find the series
        holds("not_ready");
        holds("shrunk");
        this.classifier = options.baseDomains().isEmpty() ? S3Classifier.pathStyleOnly()
                : S3Classifier.withBaseDomains(options.baseDomains());
        this.http = vertx.httpClientBuilder()
                .with(new HttpClientOptions()
                        .setKeepAlive(true)
                        .setTcpNoDelay(true)
                        .setConnectTimeout((int) Math.max(1, options.checkTimeout().toMillis())))
                .with(new PoolOptions().setHttp1MaxSize(64).setMaxWaitQueueSize(4096))
                // a limiter that goes away resets its connections: the checks on them fail over and
                // are logged there; the reset itself is not an error worth a line of its own
                .withConnectHandler(conn -> conn.exceptionHandler(e -> LOG.debug("connection to {} failed: {}",
                        conn.remoteAddress(), e.getMessage())))
                .build();
    }

    /**
     * Creates a client and fetches the limiter list once.
     *
     * @return the client, once the first refresh finished (successfully or not)
     */
    public static Future<LeveeClient> start(Vertx vertx, Options options, Ticker ticker, MeterRegistry registry) {
        LeveeClient c = new LeveeClient(vertx, options, ticker, registry);
        return c.refresh().recover(e -> Future.succeededFuture()).map(v -> {
            c.refreshTimer = vertx.setPeriodic(options.refresh().toMillis(), t -> c.poll());
            c.sayIfDegraded();
            return c;
        });
    }

    /** One refresh as the timer makes it: the refresh, then what is to be said about the state it left. */
    Future<Void> poll() {
        return refresh().onComplete(ar -> sayIfDegraded());
    }

    /**
     * Fetches the limiter list now; keeps the last good list on failure. Called from a thread outside
     * Vert.x (the first refresh at start), the request is made on the client's own context: from a bare
     * thread the answer's body could be lost before it was read ("No content to map").
     */
    public Future<Void> refresh() {
        if (Vertx.currentContext() == null) {
            Promise<Void> done = Promise.promise();
            context.runOnContext(v -> fetch().onComplete(done));
            return done.future();
        }
        return fetch();
    }

    /**
     * One refresh round: asks every observer at once, waits for each answer (or failure: a refused connection at
     * once, a silent observer after the request's idle timeout of {@code max(500 ms, refresh)}), then takes the
     * list {@link ObserverChoice} picks. Fails, keeping the last list, when no observer answered.
     */
    private Future<Void> fetch() {
        long round = rounds.incrementAndGet();
        List<HostPort> observers = options.observers();
        List<Future<View>> polls = new java.util.ArrayList<>(observers.size());
        for (HostPort o : observers) {
            polls.add(fetchFrom(o));
        }
        return Future.join(polls).transform(ignored -> {
            List<ObserverChoice.Answer> answers = new java.util.ArrayList<>(observers.size());
            Map<HostPort, String> problems = new java.util.LinkedHashMap<>();
            for (int i = 0; i < observers.size(); i++) {
                Future<View> f = polls.get(i);
                View v = f.succeeded() ? f.result() : null;
                answers.add(new ObserverChoice.Answer(observers.get(i), v));
                if (v == null) {
                    problems.put(observers.get(i), "unreachable (" + reason(f.cause()) + ")");
                } else if (!v.isReady()) {
                    problems.put(observers.get(i), "not ready");
                }
            }
            synchronized (this) {
                if (round < appliedRound) {
                    return Future.<Void>succeededFuture(); // a slower earlier round must not undo a later one
                }
                appliedRound = round;
                for (ObserverChoice.Answer a : answers) {
                    String was = a.view() == null ? null : incarnations.put(a.observer(), a.view().incarnation());
                    if (was != null && a.view().incarnation() != null && !was.equals(a.view().incarnation())) {
                        LOG.info("observer {} restarted (incarnation {} -> {}): revisions start again", a.observer(),
                                was, a.view().incarnation());
                    }
                }
                observerProblems = Map.copyOf(problems);
                int chosen = ObserverChoice.choose(answers, source);
                if (chosen < 0) {
                    // said (WARN) by sayIfDegraded, with this cause, at once and every warnInterval while it lasts
                    lastObserverError = observers.size() == 1 ? reason(polls.get(0).cause())
                            : problems.entrySet().stream().map(e -> e.getKey() + " " + e.getValue())
                            .collect(java.util.stream.Collectors.joining("; "));
                    observerReachable = false;
                    return Future.<Void>failedFuture(lastObserverError);
                }
                observerReachable = true;
                HostPort from = answers.get(chosen).observer();
                View v = answers.get(chosen).view();
                HostPort was = source;
                if (was != null && !was.equals(from)) {
                    String problem = problems.get(was);
                    LOG.info("taking the limiter list from observer {} (revision {}): {}", from, v.revision(),
                            problem != null ? "observer " + was + " is " + problem
                                    : "its revision is newer than observer " + was + "'s");
                }
                source = from;
                adoptOrHold(v);
            }
            return Future.<Void>succeededFuture();
        });
    }

    /** Asks one observer for its list; fails when it does not answer or answers something unusable. */
    private Future<View> fetchFrom(HostPort observer) {
        return request(new RequestOptions().setMethod(HttpMethod.GET).setHost(observer.host())
                        .setPort(observer.port()).setURI("/v1/limiters")
                        .setIdleTimeout(Math.max(500, options.refresh().toMillis())))
                .compose(r -> r.send())
                .compose(resp -> resp.body().map(b -> {
                    if (resp.statusCode() != 200) {
                        throw new IllegalStateException("observer answered HTTP " + resp.statusCode());
                    }
                    try {
                        return LENIENT.readValue(b.getBytes(), View.class);
                    } catch (java.io.IOException e) {
                        throw new IllegalStateException("observer sent a malformed list: " + e.getMessage());
                    }
                }))
                .map(v -> {
                    if (v.factor() < 1 || v.limiters() == null) {
                        throw new IllegalStateException("observer sent factor < 1 or no list");
                    }
                    return v;
                });
    }

    private static String reason(Throwable e) {
        return e == null ? "no answer" : e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    }

    /**
     * Adopts {@code v} unless it may be a gap (see the class comment): not ready, or empty / less than
     * half the list in use, for at most {@code listGrace}.
     */
    private void adoptOrHold(View v) {
        View old = view;
        int had = old.limiters().size();
        String reason = null;
        if (had > 0 && !v.isReady()) {
            reason = "not_ready";
        } else if (had > 0 && v.limiters().size() * 2 < had && !options.listGrace().isZero()) {
            reason = "shrunk";
        }
        long now = ticker.read();
        if (reason != null) {
            if (!held || !reason.equals(holdReason)) {
                if (!held) {
                    heldSince = now;
                }
                holdReason = reason;
                holds(reason).increment();
                held = true;
                LOG.warn("observer {} sent {} limiters (revision {}, {}) against {} in use: keeping the last list{}",
                        source, v.limiters().size(), v.revision(),
                        reason.equals("not_ready") ? "not ready" : "fewer than half", had,
                        reason.equals("not_ready") ? " until it is ready"
                                : " for up to " + options.listGrace().toMillis() + " ms");
            }
            // a list that is not ready is kept like an unreachable observer's (docs/design.md §7); a shrunk one for the grace
            if (reason.equals("not_ready") || now - heldSince < options.listGrace().toNanos()) {
                return;
            }
            LOG.warn("limiter list still {} limiters after {} ms: adopting it", v.limiters().size(),
                    options.listGrace().toMillis());
        } else if (held) {
            LOG.info("limiter list back to {} limiters after {} ms: the last list was kept meanwhile",
                    v.limiters().size(), (now - heldSince) / 1_000_000);
        }
        holdReason = null;
        held = false;
        if (v.revision() != old.revision() || v.factor() != old.factor() || v.limiters().size() != had) {
            LOG.info("limiter list revision={} factor={} limiters={}", v.revision(), v.factor(), v.limiters().size());
        }
        view = v;
        java.util.Set<String> listed = new java.util.HashSet<>();
        for (Member m : v.limiters()) {
            listed.add(m.address());
        }
        for (var it = channels.entrySet().iterator(); it.hasNext(); ) {
            var e = it.next();
            if (!listed.contains(e.getKey())) {
                e.getValue().retire(); // a dropped channel still finishes its own requests, then its wires close
                it.remove();
            }
        }
    }

    /**
     * Starts a request; a closed HTTP client (after {@link #stop()}) throws {@code IllegalStateException}
     * instead of failing the future, which left the checks waiting behind the request unanswered.
     */
    private Future<io.vertx.core.http.HttpClientRequest> request(RequestOptions o) {
        try {
            return http.request(o);
        } catch (RuntimeException e) {
            return Future.failedFuture(e);
        }
    }

    /**
     * Returns why checks are not decided as they should be now, or null when they are: no limiter known
     * (every check answers {@code failed} and passes by the failure policy: NGINX's {@code on_failure},
     * the gateway's {@code --on-failure}) or the observer unreachable (the last list is kept and may be
     * out of date). docs/design.md §11.
     */
    public String degradedReason() {
        if (stopped) {
            return null;
        }
        View v = view;
        if (v.limiters().isEmpty()) {
            return (observerReachable ? "observer " + source + " lists no active limiter"
                    : observersText() + " unreachable and no limiter known")
                    + ": every check answers 'failed' and passes by the failure policy (fails open by default)";
        }
        if (!observerReachable) {
            return observersText() + " unreachable: checks use the last list (" + v.limiters().size()
                    + " limiters, revision " + v.revision() + "), which may be out of date";
        }
        return null;
    }

    /** "observer A" for one observer, "observers A, B" for several: what the messages name. */
    private String observersText() {
        List<HostPort> o = options.observers();
        return o.size() == 1 ? "observer " + o.get(0) : "observers " + o.stream().map(HostPort::toString)
                .collect(java.util.stream.Collectors.joining(", "));
    }

    /**
     * Returns which of several observers are unreachable or not ready while another serves the list, or null when
     * every one answers, none does (then {@link #degradedReason()} says it), or only one observer is given. Not a degraded state: checks are
     * decided with a current list; it is warned about so that the observer is brought back before the last one fails.
     */
    public String observersDownReason() {
        Map<HostPort, String> problems = observerProblems;
        if (stopped || !observerReachable || problems.isEmpty() || options.observers().size() == 1) {
            return null; // one observer: its state is the client's (degradedReason, the list hold's own WARN)
        }
        StringBuilder b = new StringBuilder();
        for (HostPort o : options.observers()) { // in the order given: the same set reads the same each time
            String p = problems.get(o);
            if (p != null) {
                b.append(b.isEmpty() ? "" : ", ").append("observer ").append(o)
                        .append(p.startsWith("unreachable") ? " unreachable" : " " + p);
            }
        }
        return b + ": limiter lists from observer " + source;
    }

    /** Returns the observer whose list was taken last, or null before any answered. */
    public HostPort observerInUse() {
        return source;
    }

    /** Returns what was wrong with each observer in the last refresh ("unreachable (why)", "not ready"); empty: none. */
    public Map<HostPort, String> observerProblems() {
        return observerProblems;
    }

    /** Returns whether every check fails now for want of a limiter (and passes by the failure policy). */
    public boolean failingOpen() {
        return !stopped && view.limiters().isEmpty();
    }

    /** Logs the degraded state: a WARN when it begins and at most once per warnInterval while it lasts. */
    private void sayIfDegraded() {
        dev.levee.runtime.LoudCondition.Report r = degraded.update(ticker.read(), degradedReason());
        switch (r.kind()) {
            case BEGAN -> LOG.warn("{}{}", r.reason(), observerReachable ? "" : " (" + lastObserverError + ")");
            case LASTS -> LOG.warn("{} (for {} s{})", r.reason(), r.seconds(),
                    observerReachable ? "" : "; " + lastObserverError);
            case ENDED -> LOG.info("checks decided by limiters again after {} s ({} limiters known)", r.seconds(),
                    view.limiters().size());
            case NONE -> {
            }
        }
        dev.levee.runtime.LoudCondition.Report d = observersDown.update(ticker.read(), observersDownReason());
        switch (d.kind()) {
            case BEGAN, LASTS -> LOG.warn("{}{} ({})", d.reason(), d.kind() == dev.levee.runtime.LoudCondition.Kind.LASTS
                    ? " for " + d.seconds() + " s" : "", observerProblems.entrySet().stream()
                    .map(e -> e.getKey() + " " + e.getValue()).collect(java.util.stream.Collectors.joining("; ")));
            case ENDED -> LOG.info("no longer so after {} s: {}", d.seconds(), d.reason());
            case NONE -> {
            }
        }
    }

    private Counter holds(String reason) {
        return Counter.builder("levee_client_list_holds_total")
                .description("limiter lists not believed at once (observer not ready, or list shrunk sharply)")
                .tag("reason", reason).register(registry);
    }

    /** Returns whether the list in use is being kept against a newer list from the observer. */
    public boolean listHeld() {
        return held;
    }

    /** Returns the cached view of the limiter list. */
    public View view() {
        return view;
    }

    /** Returns whether the last refresh reached an observer (one of those given is enough). */
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
        Promise<ClientDecision> decision = Promise.promise();
        check(request, decision);
        return decision.future();
    }

    /**
     * Checks one S3 request and hands the decision to {@code done}, without a future: the callback form of
     * {@link #check(S3Request)}, for an endpoint that keeps one completion handler per request slot (the line
     * endpoint). Never fails: {@code done} is completed exactly once, with a decision and no failure.
     *
     * @param request the raw request facts
     * @param done    takes the decision; completed on the check's event loop, possibly before this returns
     */
    public void check(S3Request request, Completable<ClientDecision> done) {
        if (Vertx.currentContext() == null) {
            // from a thread outside Vert.x a limiter's answer could be lost before it was read ("malformed
            // answer"); the check is made on the client's own context instead
            context.runOnContext(v -> decide(classifier.classify(request), done));
            return;
        }
        decide(classifier.classify(request), done);
    }

    /**
     * Checks one request already classified (by {@link #classifier()}, e.g. from the bytes it arrived in) and hands
     * the decision to {@code done}: as {@link #check(S3Request, Completable)} after classification. A resource or
     * key longer than the limiters accept is cut first ({@link #clamp}).
     *
     * @param classification what the request was classified as
     * @param done           takes the decision; completed exactly once, with a decision and no failure
     */
    public void check(S3Classification classification, Completable<ClientDecision> done) {
        if (Vertx.currentContext() == null) {
            context.runOnContext(v -> decide(classification, done));
            return;
        }
        decide(classification, done);
    }

    private void decide(S3Classification classification, Completable<ClientDecision> decision) {
        S3Classification c = clamp(classification);
        View v = view;
        int g = Rendezvous.groupSize(v.factor(), v.limiters().size());
        if (g == 0) {
            decision.succeed(done(new ClientDecision(ClientDecision.Result.FAILED, 0, 0, null, null, null, c, 0),
                    "no active limiter"));
            return;
        }
        // the group, then up to g more in HRW rank order: those the check may spill over to
        Ranking r = ranking(v, c.resource(), 2 * g);
        long start = r.next(c.operation(), c.key());
        long now = ticker.read();
        List<Member> ranked = r.ranked();
        int position = position(ranked.size(), g, start);
        // no limiter in back-off (the usual case): the plain order, no lookups, no predicate and no array per check
        int[] order = null;
        if (!backedOffUntil.isEmpty() || position < 0) {
            order = order(ranked.size(), g, start, i -> {
                Long until = backedOffUntil.get(ranked.get(i).address());
                return until != null && now - until < 0;
            });
        }
        attempt(new Plan(c, r, order, position, now, decision, loopOf(Vertx.currentContext())), 0);
    }

    /**
     * A resource's limiters in HRW rank order for one view of the list (the first {@code n}), and its round-robin
     * {@link Positions} per operation, so that each object key's requests are spread evenly over the group's members.
     */
    private record Ranking(View view, int n, List<Member> ranked,
                           ConcurrentHashMap<dev.levee.core.S3Operation, Positions> positions) {

        /** The group size {@code g}: a ranking holds the group and up to as many beyond it ({@code n = 2g}). */
        int g() {
            return n / 2;
        }

        /** Returns the next round-robin position of {@code key}'s requests of {@code op} on this resource. */
        long next(dev.levee.core.S3Operation op, String key) {
            Positions p = positions.get(op);
            if (p == null) {
                p = positions.computeIfAbsent(op, o -> new Positions());
            }
            return p.next(key);
        }
    }

    /**
     * The round-robin positions of one (resource, operation): one of its own for each of the last few keys asked
     * (up to {@link #SLOTS}, by the key's hash), so that a key's consecutive checks go to the group's members in turn;
     * a key seen for the first time starts at the next position of the resource's shared sequence, so keys asked once
     * each are spread in turn too. One shared position per (resource, operation) was not enough (issue 26 item 1): a
     * counter of its own per object key ({@code prefix: "uploads/*"}) whose requests alternate with other keys' on
     * the same bucket and operation took every 6th position, met only 2 of its 4 limiters and admitted 65 % of its rate
     * ({@code levee demo --quotas examples/quotas.yaml}); so did a shared prefix counter whose two keys were each
     * asked every other time. A key pushed out of its slot by others starts again from the shared sequence. About
     * 130 bytes per (resource, operation); keys are kept as their 32-bit hash (two keys with one hash share a
     * position).
     */
    static final class Positions {
        /** Keys with a position of their own: the hot keys of one (resource, operation). */
        static final int SLOTS = 8;
        /** Slots looked at from a key's home slot before the home slot is taken over. */
        static final int PROBES = 4;

        private final int[] hashes = new int[SLOTS];
        private final long[] next = new long[SLOTS];
        private final boolean[] used = new boolean[SLOTS];
        private long shared;

        /** Returns the position of this check of {@code key}: the key's next, or the shared sequence's for a new key. */
        synchronized long next(String key) {
            int h = key.hashCode();
            int home = (h * 0x9E3779B9) >>> (Integer.SIZE - Integer.numberOfTrailingZeros(SLOTS));
            int free = -1;
            for (int i = 0; i < PROBES; i++) {
                int slot = (home + i) & (SLOTS - 1);
                if (!used[slot]) {
                    free = free < 0 ? slot : free;
                } else if (hashes[slot] == h) {
                    return next[slot]++;
                }
            }
            int slot = free >= 0 ? free : home;
            long start = shared++;
            used[slot] = true;
            hashes[slot] = h;
            next[slot] = start + 1;
            return start;
        }
    }

    /**
     * HRW rankings and round-robin positions per resource, kept while the view they were made from is in force
     * (bounded: Caffeine, 100 000 entries): a check neither hashes the resource with every member again nor makes
     * a key string.
     */
    private final com.github.benmanes.caffeine.cache.Cache<String, Ranking> rankings =
            com.github.benmanes.caffeine.cache.Caffeine.newBuilder().maximumSize(100_000).build();

    private Ranking ranking(View v, String resource, int n) {
        Ranking r = rankings.getIfPresent(resource);
        if (r == null || r.view() != v || r.n() != n) {
            // a new view keeps the positions: the streams stay spread across a list change
            r = new Ranking(v, n, Rendezvous.top(v.limiters(), Member::id, resource, n),
                    r == null ? new ConcurrentHashMap<>() : r.positions());
            rankings.put(resource, r);
        }
        return r;
    }

    /** The event loop of a Vert.x context (the client's own when there is none): where a check's wire sends go. */
    private io.netty.channel.EventLoop loopOf(io.vertx.core.Context c) {
        return ((io.vertx.core.internal.ContextInternal) (c == null ? context : c)).nettyEventLoop();
    }

    /**
     * The order in which one check asks limiters (docs/design.md §5 and docs/decisions.md, "Spill-over"): the
     * group's members not in back-off from the round-robin position on; then the members beyond the
     * group not in back-off, round-robin among them from the same position; then the group's members in
     * back-off; then those beyond it in back-off. Pure: no I/O, no clock.
     *
     * @param n         how many limiters were ranked: the group and those beyond it, {@code g ≤ n ≤ 2g}
     *                  unless fewer are active ({@code n < g} is read as a group of {@code n})
     * @param g         the group size {@code min(DF, active)}, ≥ 1
     * @param start     the round-robin position (any long; taken modulo the set's size)
     * @param backedOff whether the limiter at an HRW rank ({@code 0..n-1}) is in local back-off
     * @return HRW ranks in asking order, each once; ranks {@code ≥ g} are beyond the group
     */
    static int[] order(int n, int g, long start, java.util.function.IntPredicate backedOff) {
        int inGroup = Math.min(g, n);
        int out = n - inGroup;
        int[] order = new int[n];
        int k = 0;
        int first = (int) Math.floorMod(start, (long) inGroup);
        int firstOut = out == 0 ? 0 : (int) Math.floorMod(start, (long) out);
        for (int pass = 0; pass < 2; pass++) {
            boolean wantBackedOff = pass == 1;
            for (int j = 0; j < inGroup; j++) {
                int r = (first + j) % inGroup;
                if (backedOff.test(r) == wantBackedOff) {
                    order[k++] = r;
                }
            }
            for (int j = 0; j < out; j++) {
                int r = inGroup + (firstOut + j) % out;
                if (backedOff.test(r) == wantBackedOff) {
                    order[k++] = r;
                }
            }
        }
        return order;
    }

    /**
     * Returns the HRW rank asked at step {@code k} when no limiter is in back-off: {@code order(n, g, start,
     * none)[k]} without the array — the group's members from the round-robin position on, then those beyond it.
     */
    static int plainRank(int n, int g, long start, int k) {
        // the ranks of a plain order depend on start only modulo inGroup and modulo out: position() keeps both
        int inGroup = Math.min(g, n);
        if (k < inGroup) {
            return (int) ((Math.floorMod(start, (long) inGroup) + k) % inGroup);
        }
        int out = n - inGroup;
        return inGroup + (int) ((Math.floorMod(start, (long) out) + k - inGroup) % out);
    }

    /**
     * Reduces a round-robin position to an int that gives the same plain order ({@link #plainRank}): {@code start}
     * modulo {@code inGroup × out}, which both divide; -1 when that product exceeds an int (never, for fewer than
     * 92 000 ranked limiters: then the order is kept as an array).
     */
    static int position(int n, int g, long start) {
        int inGroup = Math.min(g, n);
        long period = (long) inGroup * Math.max(1, n - inGroup);
        return period > Integer.MAX_VALUE ? -1 : (int) Math.floorMod(start, period);
    }

    /** Longest resource or key a limiter accepts, in UTF-8 bytes (the S3 key limit). */
    static final int MAX_BYTES = 1024;

    /**
     * Cuts a resource or key longer than {@link #MAX_BYTES} to its first 1024 bytes (on a character
     * boundary) so that such a request is still counted — against the same bucket and prefix quotas —
     * rather than refused by the limiter as malformed and let through as a failed check.
     * Public so that {@code levee quota explain} shows what a check carries (the same cut).
     *
     * @param c the classification, not null
     * @return {@code c} itself when both fit, else a copy with the long parts cut
     */
    public static S3Classification clamp(S3Classification c) {
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

    /**
     * One check on its way (docs/design.md §5): what is checked, the limiters it may ask and in which order, when it started
     * (ticker ns), who waits for its decision, and where it is now. A check waits for, or is in, at most one
     * limiter's request, batch or wire frame at a time, so the attempt in progress ({@link #i}: it asks
     * {@code member(i)}) and when it was queued for it live here too: one object per check, not one per attempt.
     * The order is kept as an array only when a limiter was in back-off as the check started ({@link #order}); else
     * it is the plain one ({@link #plainRank}).
     */
    private static final class Plan {
        final S3Classification c;
        /** The group and those beyond it in HRW rank order, and the group size. */
        final Ranking ranking;
        /** HRW ranks in asking order ({@link LeveeClient#order}), or null: the plain order ({@link LeveeClient#plainRank}). */
        final int[] order;
        /** The round-robin position the plain order starts from ({@link LeveeClient#position}). */
        final int position;
        final long startedAt;
        final Completable<ClientDecision> decision;
        /** The event loop the check was made on: where its wire sends go. */
        final io.netty.channel.EventLoop loop;
        /** The attempt in progress: the limiter asked is {@code member(i)}. */
        int i;
        /** When the check was queued for attempt {@link #i} (ticker ns). */
        long queuedAt;

        Plan(S3Classification c, Ranking ranking, int[] order, int position, long startedAt,
             Completable<ClientDecision> decision, io.netty.channel.EventLoop loop) {
            this.c = c;
            this.ranking = ranking;
            this.order = order;
            this.position = position;
            this.startedAt = startedAt;
            this.decision = decision;
            this.loop = loop;
        }

        /** The group size sent with every attempt. */
        int g() {
            return ranking.g();
        }

        /** How many limiters the check may ask. */
        int size() {
            return ranking.ranked().size();
        }

        /** The HRW rank of the limiter of attempt {@code k}. */
        int rank(int k) {
            return order != null ? order[k] : plainRank(size(), g(), position, k);
        }

        /** The limiter of attempt {@code k}. */
        Member member(int k) {
            return ranking.ranked().get(rank(k));
        }

        /** Whether attempt {@code k} goes beyond the group (a spill-over). */
        boolean beyond(int k) {
            return rank(k) >= g();
        }

        /** The JSON form, for a limiter that takes JSON only (made when needed: not kept, as few checks need it). */
        byte[] json() {
            return Json.write(new CheckItem(c.resource(), c.key(), c.operation().name(), g()));
        }

        /** Bytes of this check in the body of a binary request or wire frame. */
        int binarySize() {
            return BinaryChecks.checkSize(c.resource(), c.key(), c.operation().name());
        }
    }

    /** Makes attempt {@code i} of a check: asks {@code plan.member(i)}, or ends the check when it may ask no more. */
    private void attempt(Plan plan, int i) {
        S3Classification c = plan.c;
        plan.i = i;
        if (stopped) {
            plan.decision.succeed(done(new ClientDecision(ClientDecision.Result.FAILED, 0, 0, null, null, null, c, i),
                    "levee-client is stopped"));
            return;
        }
        if (i >= plan.g() && i < plan.size()
                && ticker.read() - plan.startedAt + options.checkTimeout().toNanos() > options.checkDeadline().toNanos()) {
            count("spill_deadline");
            plan.decision.succeed(done(new ClientDecision(ClientDecision.Result.FAILED, 0, 0, null, null, null, c, i),
                    "no limiter answered within the check deadline (" + options.checkDeadline().toMillis() + " ms)"));
            return;
        }
        if (i >= plan.size()) {
            plan.decision.succeed(done(new ClientDecision(ClientDecision.Result.FAILED, 0, 0, null, null, null, c, i),
                    plan.size() > plan.g() ? "no limiter of the group or beyond it answered"
                            : "no limiter of the group answered"));
            return;
        }
        Member m = plan.member(i);
        Channel ch = channels.get(m.address());
        if (ch == null) {
            HostPort addr;
            try {
                addr = HostPort.parse(m.address(), "limiter address");
            } catch (IllegalArgumentException e) {
                attempt(plan, i + 1);
                return;
            }
            ch = channels.computeIfAbsent(m.address(), a -> new Channel(a, addr));
        }
        plan.queuedAt = ticker.read();
        ch.submit(plan);
    }

    /**
     * The checks bound for one limiter. A check is sent at once while fewer than
     * {@link Options#maxInFlight()} requests to the limiter are outstanding; otherwise it waits, and
     * when a request comes back the waiting checks go out together as one {@code POST /v1/checks}
     * (at most {@link Options#maxBatch()}). Under light load nothing waits; under heavy load the
     * round trips, parses and system calls of many checks are shared. A check that waited longer than
     * the check timeout fails over to the next member without being sent.
     */
    private final class Channel {
        private final String address;
        private final HostPort addr;
        private final java.util.ArrayDeque<Plan> waiting = new java.util.ArrayDeque<>();
        private int inFlight;
        /** Set when the limiter has no {@code /v1/checks} (an older version): checks go one by one. */
        private volatile boolean single;
        /**
         * Whether checks go in the binary encoding ({@link BinaryChecks}): set once the limiter's answer
         * to a JSON check lists the binary type in {@code Accept-Post} (a limiter of issue 12 or later);
         * cleared for good when a binary body is refused with an answer that is not binary (the limiter
         * at this address was replaced by an older one): JSON then.
         */
        private volatile boolean binary;
        private volatile boolean noBinary;

        /** Request options by encoding (binary: +2) and form (batch: +1), built once: not one per request. */
        private final RequestOptions[] requests = new RequestOptions[4];

        /**
         * The check-wire connections of this limiter, one per event loop that sends checks (usually one: the client
         * endpoint's). Touched only on its own loop.
         */
        private final Map<io.netty.channel.EventLoop, WireSlot> wires = new ConcurrentHashMap<>();
        /** Set when the limiter answered the upgrade with anything but 101 (an older version): HTTP from then on. */
        private volatile boolean noWire;

        Channel(String address, HostPort addr) {
            this.address = address;
            this.addr = addr;
            long timeout = options.checkTimeout().toMillis();
            for (int k = 0; k < 4; k++) {
                requests[k] = new RequestOptions().setMethod(HttpMethod.POST).setHost(addr.host()).setPort(addr.port())
                        .setURI(k % 2 == 0 ? "/v1/check" : "/v1/checks").setIdleTimeout(timeout)
                        .putHeader(io.vertx.core.http.HttpHeaders.CONTENT_TYPE, k >= 2 ? BINARY : JSON);
            }
        }

        void submit(Plan p) {
            if (!noWire && options.wire()) {
                io.netty.channel.EventLoop loop = p.loop;
                if (!loop.inEventLoop()) {
                    loop.execute(() -> submit(p));
                    return;
                }
                WireSlot slot = wires.get(loop);
                if (slot == null) {
                    slot = wires.computeIfAbsent(loop, WireSlot::new);
                }
                if (slot.send(p)) {
                    return;
                }
            }
            boolean now;
            synchronized (this) {
                now = inFlight < options.maxInFlight();
                if (now) {
                    inFlight++;
                } else if (waiting.size() < MAX_QUEUED) {
                    waiting.add(p);
                    return;
                }
            }
            if (now) {
                send(List.of(p), binary, null);
            } else {
                count("queue_full");
                attempt(p, p.i + 1);
            }
        }

        /** Called when a request finished: sends the next batch on the same slot, or frees it. */
        private void next() {
            List<Plan> batch = new java.util.ArrayList<>();
            List<Plan> expired = null;
            List<byte[]> jsons = null; // the batch's JSON forms, made once, when it goes in JSON
            long now = ticker.read();
            long timeout = options.checkTimeout().toNanos();
            int max = single ? 1 : options.maxBatch();
            boolean bin = binary;
            long bytes = 0;
            synchronized (this) {
                while (batch.size() < max && !waiting.isEmpty()) {
                    byte[] json = bin ? null : waiting.peek().json();
                    int size = bin ? waiting.peek().binarySize() : json.length + 1;
                    if (!batch.isEmpty() && bytes + size > MAX_BATCH_BYTES) {
                        break; // the rest goes in the next batch
                    }
                    Plan p = waiting.poll();
                    if (now - p.queuedAt > timeout) {
                        if (expired == null) {
                            expired = new java.util.ArrayList<>();
                        }
                        expired.add(p);
                    } else {
                        batch.add(p);
                        if (json != null) {
                            if (jsons == null) {
                                jsons = new java.util.ArrayList<>();
                            }
                            jsons.add(json);
                        }
                        bytes += size;
                    }
                }
                if (batch.isEmpty()) {
                    inFlight--;
                }
            }
            if (expired != null) {
                count("queue_timeout", expired.size());
                for (Plan p : expired) {
                    attempt(p, p.i + 1);
                }
            }
            if (!batch.isEmpty()) {
                send(batch, bin, jsons); // in the encoding its size was counted in
            }
        }

        /** Sends a batch; {@code jsons}: the checks' JSON forms when made already, else null. */
        private void send(List<Plan> batch, boolean bin, List<byte[]> jsons) {
            boolean one = batch.size() == 1;
            Buffer body;
            if (bin) {
                io.netty.buffer.ByteBuf b = BinaryChecks.start(batch.size(), 8 + batch.size() * 64);
                for (Plan p : batch) {
                    BinaryChecks.writeCheck(b, p.c.resource(), p.c.key(), p.c.operation().name(), p.g());
                }
                body = BinaryChecks.toBuffer(b);
            } else if (one) {
                body = Buffer.buffer(jsons != null ? jsons.get(0) : batch.get(0).json());
            } else {
                byte[] first = jsons != null ? jsons.get(0) : batch.get(0).json();
                body = Buffer.buffer(64 + batch.size() * (first.length + 8));
                body.appendString("{\"checks\":[");
                for (int k = 0; k < batch.size(); k++) {
                    if (k > 0) {
                        body.appendByte((byte) ',');
                    }
                    body.appendBytes(k == 0 ? first : jsons != null ? jsons.get(k) : batch.get(k).json());
                }
                body.appendString("]}");
            }
            long timeout = options.checkTimeout().toMillis();
            request(requests[(bin ? 2 : 0) + (one ? 0 : 1)])
                    .compose(r -> r.send(body))
                    .compose(resp -> resp.body().map(b -> {
                        if (!bin && !noBinary && BinaryChecks.accepts(resp.getHeader(ACCEPT_POST))) {
                            binary = true; // from the next request on
                        }
                        return parse(resp.statusCode(), resp.getHeader(io.vertx.core.http.HttpHeaders.CONTENT_TYPE), b,
                                one, bin, batch.size());
                    }))
                    .timeout(timeout + 50, java.util.concurrent.TimeUnit.MILLISECONDS)
                    .onComplete(ar -> {
                        try {
                            if (ar.succeeded()) {
                                backedOffUntil.remove(address);
                                List<LimiterAnswer> answers = ar.result();
                                for (int k = 0; k < batch.size(); k++) {
                                    answered(batch.get(k), answers.get(k));
                                }
                            } else if (ar.cause() instanceof NoBinary) {
                                binary = false;
                                noBinary = true;
                                LOG.info("limiter {} does not take the binary check encoding: JSON from now on", addr);
                                for (int k = batch.size() - 1; k >= 0; k--) {
                                    submitAfterSlot(batch.get(k)); // to the front, in the original order
                                }
                            } else if (ar.cause() instanceof NoBatches) {
                                single = true;
                                LOG.warn("limiter {} refused a batch (no /v1/checks, or a smaller body limit):"
                                        + " sending checks one by one", addr);
                                for (int k = batch.size() - 1; k >= 0; k--) {
                                    submitAfterSlot(batch.get(k)); // to the front, in the original order
                                }
                            } else {
                                failed(batch, ar.cause());
                            }
                        } finally {
                            next();
                        }
                    });
        }

        /** Re-queues a check at the front (its slot is freed by {@link #next()} right after). */
        private void submitAfterSlot(Plan p) {
            synchronized (this) {
                waiting.addFirst(p);
            }
        }

        private List<LimiterAnswer> parse(int status, String contentType, Buffer b, boolean one, boolean bin, int n) {
            if (!one && (status == 404 || status == 413)) {
                throw new NoBatches(); // an older limiter, or one with a smaller body limit
            }
            boolean binaryAnswer = BinaryChecks.isBinary(contentType);
            if (bin && !binaryAnswer && (status == 400 || status == 415)) {
                throw new NoBinary(); // an older limiter read the binary body as JSON
            }
            if (binaryAnswer && (status == 200 || status == 429 || one && (status == 400 || status == 500))) {
                return binaryAnswers(b, n);
            }
            if (status >= 400 && status < 500 && status != 429) {
                throw new Refused("HTTP " + status + ": " + b.toString().replaceAll("[\\r\\n]", " "));
            }
            if (one ? status != 200 && status != 429 : status != 200) {
                throw new IllegalStateException("HTTP " + status);
            }
            try {
                if (one) {
                    return List.of(LENIENT.readValue(b.getBytes(), LimiterAnswer.class));
                }
                BatchAnswer a = LENIENT.readValue(b.getBytes(), BatchAnswer.class);
                if (a.decisions() == null || a.decisions().size() != n || a.decisions().contains(null)) {
                    throw new IllegalStateException("malformed answer: not one decision per check");
                }
                return a.decisions();
            } catch (java.io.IOException e) {
                throw new IllegalStateException("malformed answer");
            }
        }

        private void answered(Plan p, LimiterAnswer a) {
            String r = a.result() == null ? "" : a.result();
            switch (r) {
                case "accepted", "rejected" -> decided(p, r.equals("accepted"), a.retryAfter(), a.remaining(), a.level(),
                        a.limitKey(), a.rate(), a.burst(), a.reset(), "would_reject".equals(a.shadow()));
                case "invalid" -> refused(p, "limiter refused the check: " + a.error());
                default -> failed(List.of(p), new IllegalStateException("limiter answered '" + r + "'"));
            }
        }

        /** A check's answer from the wire (the cursor holds it). */
        private void answered(Plan p, BinaryChecks.AnswerCursor a) {
            switch (a.result) {
                case BinaryChecks.ACCEPTED, BinaryChecks.REJECTED -> decided(p, a.result == BinaryChecks.ACCEPTED,
                        a.retryAfter, a.remaining, a.level, a.limitKey, a.rate, a.burst, a.reset,
                        a.shadow == BinaryChecks.SHADOW_WOULD_REJECT);
                case BinaryChecks.INVALID -> refused(p, "limiter refused the check: " + a.error);
                default -> failed(List.of(p), new IllegalStateException("limiter answered 'failed'"));
            }
        }

        private void decided(Plan p, boolean ok, long retryAfter, long remaining, String level, String limitKey,
                             double rate, int burst, long reset, boolean wouldReject) {
            boolean spilled = p.beyond(p.i);
            if (spilled) {
                count("spilled");
            }
            if (wouldReject) {
                count("would_reject"); // admitted (or refused by an enforced quota); the shadow quota refused
            }
            p.decision.succeed(done(new ClientDecision(ok ? ClientDecision.Result.ACCEPTED
                    : ClientDecision.Result.REJECTED, ok ? 0 : Math.max(1, retryAfter), remaining,
                    address, level, limitKey, p.c, p.i + 1, rate, burst, reset,
                    wouldReject), null, spilled));
        }

        /** Ends this channel's wire connections once their outstanding checks are answered (the limiter left the list). */
        void retire() {
            for (WireSlot slot : wires.values()) {
                slot.loop.execute(slot::retire);
            }
        }

        /** Closes this channel's wire connections at once; their outstanding checks fail over (or fail: stopped). */
        void closeWires(Throwable cause) {
            for (WireSlot slot : wires.values()) {
                slot.loop.execute(() -> slot.close(cause));
            }
        }

        /**
         * The check-wire connection of this limiter on one event loop ({@link WireConnection}): sends while it is
         * up; otherwise starts connecting (at most one attempt at a time, and after a failure not before
         * {@code backoff} has passed) and the check goes over HTTP meanwhile.
         */
        private final class WireSlot implements WireConnection.Peer<Plan> {
            final io.netty.channel.EventLoop loop;
            private WireConnection<Plan> wire;
            private boolean connecting;
            private boolean retired;
            private long retryAt;

            WireSlot(io.netty.channel.EventLoop loop) {
                this.loop = loop;
                this.retryAt = ticker.read();
            }

            /** Sends over the wire; false: send it over HTTP. On {@link #loop}. */
            boolean send(Plan p) {
                if (wire != null && wire.send(p)) {
                    return true;
                }
                if (wire == null && !connecting && !noWire && !retired && !stopped && ticker.read() - retryAt >= 0) {
                    connecting = true;
                    WireConnection.connect(this, loop, wireChannelClass, addr, ticker, options.checkTimeout(),
                            options.maxBatch()).addListener(f -> {
                                connecting = false;
                                if (f.isSuccess()) {
                                    @SuppressWarnings("unchecked")
                                    WireConnection<Plan> w = (WireConnection<Plan>) f.getNow();
                                    if (retired || stopped) {
                                        w.close(new IllegalStateException("levee-client is stopped"));
                                    } else {
                                        wire = w;
                                    }
                                } else {
                                    retryAt = ticker.read() + options.backoff().toNanos();
                                    LOG.debug("check wire to {} not up: {}", addr, f.cause().toString());
                                }
                            });
                }
                return false;
            }

            void retire() {
                retired = true;
                if (wire != null) {
                    wire.retire();
                }
            }

            void close(Throwable cause) {
                retired = true;
                if (wire != null) {
                    wire.close(cause);
                }
            }

            @Override
            public int size(Plan p) {
                return p.binarySize();
            }

            @Override
            public void write(Plan p, io.netty.buffer.ByteBuf frame) {
                BinaryChecks.writeCheck(frame, p.c.resource(), p.c.key(), p.c.operation().name(), p.g());
            }

            @Override
            public void answered(Plan p, BinaryChecks.AnswerCursor answer) {
                backedOffUntil.remove(address);
                Channel.this.answered(p, answer);
            }

            @Override
            public void failed(List<Plan> checks, Throwable cause) {
                Channel.this.failed(checks, cause);
            }

            @Override
            public void closed(WireConnection<Plan> connection, boolean clean) {
                if (wire == connection) {
                    wire = null;
                }
                // after a failure not at once again; an idle connection the limiter closed comes back with the next check
                retryAt = clean ? ticker.read() : ticker.read() + options.backoff().toNanos();
            }

            @Override
            public void noWire(int status) {
                if (!noWire) {
                    noWire = true;
                    LOG.info("limiter {} does not take the check wire (upgrade answered HTTP {}): HTTP from now on",
                            addr, status);
                }
            }
        }

        private void refused(Plan p, String why) {
            // asking another member would get the same answer; the limiter is healthy
            count("limiter_refused");
            p.decision.succeed(done(new ClientDecision(ClientDecision.Result.FAILED, 0, 0, address, null,
                    null, p.c, p.i + 1), why));
        }

        private void failed(List<Plan> batch, Throwable e) {
            if (stopped) {
                for (Plan p : batch) {
                    attempt(p, p.i + 1); // fails as stopped: the limiter is not to blame
                }
                return;
            }
            if (e instanceof Refused) {
                for (Plan p : batch) {
                    refused(p, "limiter refused the check: " + e.getMessage());
                }
                return;
            }
            Member m = batch.get(0).member(batch.get(0).i);
            backedOffUntil.put(address, ticker.read() + options.backoff().toNanos());
            LOG.warn("limiter {} ({}) failed: {}; backing off {} ms ({} checks fail over)", m.id(), addr,
                    e.getMessage(), options.backoff().toMillis(), batch.size());
            count("limiter_failure", batch.size());
            for (Plan p : batch) {
                attempt(p, p.i + 1);
            }
        }
    }

    private static List<LimiterAnswer> binaryAnswers(Buffer b, int n) {
        BinaryChecks.Answer[] as;
        try {
            as = BinaryChecks.readAnswers(b.getBytes(), n);
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException("malformed answer: " + e.getMessage());
        }
        LimiterAnswer[] out = new LimiterAnswer[n];
        for (int k = 0; k < n; k++) {
            BinaryChecks.Answer a = as[k];
            out[k] = new LimiterAnswer(switch (a.result()) {
                case BinaryChecks.ACCEPTED -> "accepted";
                case BinaryChecks.REJECTED -> "rejected";
                case BinaryChecks.INVALID -> "invalid";
                default -> "failed";
            }, a.level(), a.limitKey(), a.remaining(), a.retryAfter(), null, a.error(), a.rate(), a.burst(), a.reset(),
                    a.shadow() == BinaryChecks.SHADOW_WOULD_REJECT ? "would_reject"
                            : a.shadow() == BinaryChecks.SHADOW_ACCEPTED ? "accepted" : null);
        }
        return java.util.Arrays.asList(out);
    }

    private static final CharSequence BINARY = io.vertx.core.http.HttpHeaders.createOptimized(BinaryChecks.CONTENT_TYPE);
    private static final CharSequence JSON = io.vertx.core.http.HttpHeaders.createOptimized("application/json");
    private static final CharSequence ACCEPT_POST = io.vertx.core.http.HttpHeaders.createOptimized("Accept-Post");

    /** A limiter answered a binary body with a 400 or 415 that is not binary: it takes JSON only. */
    static final class NoBinary extends RuntimeException {
        private static final long serialVersionUID = 1L;

        NoBinary() {
            super("no binary check encoding", null, false, false);
        }
    }

    /** The limiter answered 404 to {@code /v1/checks}. */
    static final class NoBatches extends RuntimeException {
        private static final long serialVersionUID = 1L;

        NoBatches() {
            super("no /v1/checks", null, false, false);
        }
    }

    private ClientDecision done(ClientDecision d, String why) {
        return done(d, why, false);
    }

    /** Counts and logs a result; {@code spilled}: decided by a limiter beyond the group. */
    private ClientDecision done(ClientDecision d, String why, boolean spilled) {
        if (dev.levee.runtime.Warmup.RESOURCE.equals(d.classification().resource())) {
            return d; // a warm-up self-check: neither counted nor logged, as on the limiters
        }
        count(d.result().word());
        if (DECISIONS.isInfoEnabled()) {
            // garbage-free: Log4j's fixed-arity call, the result word in the format, numbers through Unbox
            // (docs/decisions.md, "Decision log lines without garbage"); the line reads as it always did
            String suffix = spilled ? d.wouldReject() ? " spilled=true shadow=would_reject" : " spilled=true"
                    : d.wouldReject() ? " shadow=would_reject" : "";
            DECISIONS.info(RESULT_LINES[d.result().ordinal()], d.limiter() == null ? "-" : d.limiter(),
                    LogText.escape(d.classification().resource()), LogText.escape(d.classification().key()),
                    d.classification().operation(), d.level() == null ? "-" : d.level(),
                    org.apache.logging.log4j.util.Unbox.box(d.retryAfter()),
                    org.apache.logging.log4j.util.Unbox.box(d.attempts()), suffix,
                    why == null ? "" : " reason=" + LogText.escape(why, 400));
        }
        return d;
    }

    /**
     * The per-check result log: the {@code levee.client} logger through Log4j's own API, for its fixed-arity calls
     * (SLF4J's stop at two parameters, beyond which each line costs an array and boxed numbers).
     */
    private static final org.apache.logging.log4j.Logger DECISIONS = org.apache.logging.log4j.LogManager.getLogger("levee.client");

    /** The result line's format by {@link ClientDecision.Result} ordinal. */
    private static final String[] RESULT_LINES = java.util.Arrays.stream(ClientDecision.Result.values())
            .map(r -> "result=" + r.word() + " limiter={} resource={} key={} op={} level={} retry_after={} attempts={}{}{}")
            .toArray(String[]::new);

    private void count(String what) {
        count(what, 1);
    }

    private void count(String what, int n) {
        Counter known = counters.get(what);
        if (known != null) {
            known.increment(n); // the usual case: no lambda made
            return;
        }
        counters.computeIfAbsent(what, k -> Counter.builder("levee_client_results_total")
                .description("check results and limiter failures").tag("result", what).register(registry)).increment(n);
    }

    /**
     * Stops refreshing and closes connections. Checks still waiting for a limiter, and checks made from
     * then on, are answered {@link ClientDecision.Result#FAILED} ("levee-client is stopped") at once. Its gauges
     * leave the registry (a client started after it on the same registry registers its own); counters stay.
     */
    public Future<Void> stop() {
        stopped = true;
        gauges.forEach(registry::remove);
        gauges.clear();
        if (refreshTimer >= 0) {
            vertx.cancelTimer(refreshTimer);
        }
        IllegalStateException why = new IllegalStateException("levee-client is stopped");
        for (Channel ch : channels.values()) {
            ch.closeWires(why);
        }
        return http.close();
    }

    @Override
    public void close() {
        stop();
    }
}
