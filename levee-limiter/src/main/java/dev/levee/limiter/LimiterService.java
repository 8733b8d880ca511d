package dev.levee.limiter;

import dev.levee.core.Gcra;
import dev.levee.core.GcraLimit;
import dev.levee.core.GcraTable;
import dev.levee.core.S3Operation;
import dev.levee.core.Ticker;
import dev.levee.config.QuotaSource;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.ResolvedQuota;
import dev.levee.runtime.BinaryChecks;
import dev.levee.runtime.CheckWire;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Http;
import dev.levee.runtime.Json;
import dev.levee.runtime.LogText;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.buffer.ByteBuf;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.RequestOptions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.logging.log4j.util.Unbox;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides checks: resolves the quota (docs/design.md §4), divides its rate by the group size {@code g}
 * (§5) and applies GCRA (§6) on the key's state, held in a bounded {@link GcraTable}.
 *
 * <p>API: {@code POST /v1/check} with a {@link CheckRequest} → 200 accepted / 429 rejected (with
 * {@code Retry-After}) / 500 failed, body {@link CheckResponse}; malformed input → 400 naming the
 * field; {@code POST /v1/checks} with a {@link CheckBatch} decides several checks in one round trip.
 * {@code GET /health}, {@code GET /metrics}. Every decision is logged on the
 * {@code levee.limiter.decision} logger with the resource and key in clear (escaped).
 *
 * <p>When an observer is configured (embedded membership), the limiter sends a heartbeat every
 * {@code heartbeat} interval and leaves on {@link #stop()}.
 */
public final class LimiterService implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger("levee.limiter");
    /**
     * The decision log: Log4j's own API rather than SLF4J's, for its fixed-arity calls (SLF4J's stop at two
     * parameters, beyond which each line costs an array and boxed numbers).
     */
    private static final org.apache.logging.log4j.Logger DECISIONS =
            org.apache.logging.log4j.LogManager.getLogger("levee.limiter.decision");

    /**
     * Settings of a limiter.
     *
     * @param id              stable id, the HRW member id (1–128 of {@code [A-Za-z0-9._:-]})
     * @param listen          address to bind (default 127.0.0.1:7100; port 0 picks a free one)
     * @param advertise       address clients reach this limiter at; null: the bound address
     * @param observer        observer to send heartbeats to; null: none (membership elsewhere)
     * @param heartbeat       heartbeat interval (default 1 s)
     * @param maxKeys         cap of the GCRA state table in key slots of 256 bytes (default 1 000 000;
     *                        see {@link GcraTable#slots})
     * @param warmup          longest time spent warming the decision path before the service counts as
     *                        started (heartbeats, {@code /health} 200): up to {@value #WARMUP_CHECKS}
     *                        self-checks over its own HTTP listener; zero: none (CLI default 3 s)
     * @param drainGrace      on {@link #stop()}, how long the limiter keeps answering after it left the
     *                        membership, so that clients move away (CLI default 2 s; zero: none)
     * @param shutdownTimeout on {@link #stop()}, how long checks in flight get to be answered before the
     *                        connections are closed (default 5 s)
     * @param warnInterval    least time between two warnings while heartbeats do not reach the observer (default
     *                        10 s, CLI {@code --warn-interval}; positive)
     */
    public record Options(String id, HostPort listen, HostPort advertise, HostPort observer, Duration heartbeat,
                          long maxKeys, Duration warmup, Duration drainGrace, Duration shutdownTimeout,
                          Duration warnInterval) {
        /** Validates the settings. @throws IllegalArgumentException when a value is out of range */
        public Options {
            if (id == null || !id.matches("[A-Za-z0-9._:-]{1,128}")) {
                throw new IllegalArgumentException("limiter id must be 1-128 characters of A-Z a-z 0-9 . _ : -");
            }
            if (heartbeat.isNegative() || heartbeat.isZero()) {
                throw new IllegalArgumentException("heartbeat interval must be positive");
            }
            if (maxKeys < 1) {
                throw new IllegalArgumentException("max keys must be >= 1");
            }
            if (warmup.isNegative() || drainGrace.isNegative() || shutdownTimeout.isNegative()) {
                throw new IllegalArgumentException("warm-up, drain grace and shutdown timeout must not be negative");
            }
            if (warnInterval == null || warnInterval.isNegative() || warnInterval.isZero()) {
                throw new IllegalArgumentException("warning interval must be positive");
            }
        }

        /** Settings with the default warning interval (10 s). */
        public Options(String id, HostPort listen, HostPort advertise, HostPort observer, Duration heartbeat,
                       long maxKeys, Duration warmup, Duration drainGrace, Duration shutdownTimeout) {
            this(id, listen, advertise, observer, heartbeat, maxKeys, warmup, drainGrace, shutdownTimeout,
                    dev.levee.runtime.LoudCondition.DEFAULT_INTERVAL);
        }

        /**
         * Settings without warm-up or drain grace (for embedding processes and tests), with a 5 s
         * shutdown timeout.
         */
        public Options(String id, HostPort listen, HostPort advertise, HostPort observer, Duration heartbeat,
                       long maxKeys) {
            this(id, listen, advertise, observer, heartbeat, maxKeys, Duration.ZERO, Duration.ZERO, Duration.ofSeconds(5));
        }
    }

    /** Period of the table's maintenance when idle, ms. */
    private static final long MAINTENANCE_MS = 1000;

    /** Most self-checks of the warm-up: 2 000 (single checks and batches of 8, four at a time). */
    public static final int WARMUP_CHECKS = 2_000;

    /**
     * The resource of the warm-up's self-checks: not a valid S3 bucket name (underscore), so it never
     * shares state with real traffic; its decisions are neither logged nor counted.
     */
    public static final String WARMUP_RESOURCE = dev.levee.runtime.Warmup.RESOURCE;

    private final Options options;
    private final QuotaSource config;
    private final GcraTable table;
    private final MeterRegistry registry;
    private final Map<String, Map<String, Counter>> counters = new ConcurrentHashMap<>();
    private final Map<String, Map<String, Counter>> shadowCounters = new ConcurrentHashMap<>();
    private final Vertx vertx;
    private final io.micrometer.core.instrument.DistributionSummary batchSizes;
    private HttpServer server;
    private HttpClientAgent heartbeatClient;
    private long heartbeatTimer = -1;
    private long maintenanceTimer = -1;
    private volatile HostPort advertised;
    /** False while warming up and once stopping: {@code /health} answers 503. */
    private volatile boolean serving;
    private volatile String notServing = "warming up";
    private volatile boolean stopping;
    /** Whether the last heartbeat reached the observer (true until one failed, and without an observer). */
    private volatile boolean observerReachable = true;
    private volatile String heartbeatError;
    private final dev.levee.runtime.LoudCondition unregistered;
    private final Ticker ticker;
    private final DecisionStats stats;
    /** The decision line's format per result, with this limiter's id in it (ten parameters left). */
    private final String acceptedLine;
    private final String rejectedLine;

    private LimiterService(Vertx vertx, Options options, QuotaSource config, Ticker ticker,
                           MeterRegistry registry, DecisionStats.Options statsOptions) {
        this.vertx = vertx;
        this.stats = new DecisionStats(statsOptions, ticker);
        this.options = options;
        this.config = config;
        this.registry = registry;
        this.table = GcraTable.create(ticker, options.maxKeys());
        this.ticker = ticker;
        this.acceptedLine = decisionLine("accepted", options.id());
        this.rejectedLine = decisionLine("rejected", options.id());
        this.unregistered = new dev.levee.runtime.LoudCondition(options.warnInterval());
        Gauge.builder("levee_limiter_observer_unreachable", this, s -> s.observerReachable ? 0 : 1)
                .description("1 while heartbeats do not reach the observer: clients may not list this limiter")
                .tag("limiter", options.id()).register(registry);
        Gauge.builder("levee_limiter_keys", table, GcraTable::size).description("limit keys held")
                .tag("limiter", options.id()).register(registry);
        io.micrometer.core.instrument.FunctionCounter.builder("levee_limiter_key_evictions_total", table,
                        GcraTable::evictions)
                .description("keys evicted by the table's cap while in use (each restarts with one burst)")
                .tag("limiter", options.id()).register(registry);
        io.micrometer.core.instrument.FunctionCounter.builder("levee_limiter_key_expirations_total", table,
                        GcraTable::expirations)
                .description("idle keys dropped once their state equalled a fresh key's")
                .tag("limiter", options.id()).register(registry);
        io.micrometer.core.instrument.FunctionCounter.builder("levee_limiter_key_table_rebuilds_total", table,
                        GcraTable::rebuilds)
                .description("rebuilds of the key table once a flood of keys had left it mostly empty (releases its arrays)")
                .tag("limiter", options.id()).register(registry);
        Gauge.builder("levee_limiter_key_slots_max", table, t -> options.maxKeys())
                .description("cap of the key table in key slots of 256 bytes (--max-keys)")
                .tag("limiter", options.id()).register(registry);
        io.micrometer.core.instrument.FunctionCounter.builder("levee_config_rejected_updates_total", config,
                        QuotaSource::rejectedUpdates)
                .description("configuration updates refused as invalid (last good configuration kept)")
                .tag("limiter", options.id()).register(registry);
        this.batchSizes = io.micrometer.core.instrument.DistributionSummary.builder("levee_limiter_batch_checks")
                .description("checks per POST /v1/checks batch").baseUnit("checks").tag("limiter", options.id())
                .register(registry);
        Gauge.builder("levee_config_revision", config, QuotaSource::revision)
                .description("revision of the configuration in force").tag("limiter", options.id()).register(registry);
        Gauge.builder("levee_config_invalid_keys", config, c -> c.invalidKeys().size())
                .description("keys in etcd whose value is refused (each keeps its last good value, or none; /health names"
                        + " them)").tag("limiter", options.id()).register(registry);
        Gauge.builder("levee_config_usable", config, c -> c.usable() ? 1 : 0)
                .description("0 while no configuration can be built (a key every decision needs is invalid and no"
                        + " earlier value is known): the limiter refuses everything and does not join the membership")
                .tag("limiter", options.id()).register(registry);
        io.micrometer.core.instrument.FunctionCounter.builder("levee_limiter_state_lost_keys_total", this,
                        s -> Math.max(0, s.table.freshWithinHorizon() - s.warmupFreshKeys))
                .description("keys first seen within one refill horizon (tau + T) after this limiter started: any state an"
                        + " earlier incarnation held for them was lost, and they began with a full burst (an upper bound)")
                .tag("limiter", options.id()).register(registry);
    }

    /** Keys of the warm-up's self-checks among {@link GcraTable#freshWithinHorizon()}, not counted as lost. */
    private volatile long warmupFreshKeys;

    /**
     * Creates a limiter that decides ({@link #decide}) but neither listens nor sends heartbeats: for tests and
     * benchmarks of the decision path with an injected clock.
     *
     * @param options its settings (only the id and the key cap are used)
     * @param config  the quota source
     * @param ticker  the monotonic clock of its GCRA table
     * @param registry where its counters go
     * @return the limiter
     */
    public static LimiterService detached(Options options, QuotaSource config, Ticker ticker, MeterRegistry registry) {
        return new LimiterService(null, options, config, ticker, registry, DecisionStats.DEFAULTS);
    }

    /**
     * Starts a limiter.
     *
     * @param config supplies the configuration snapshot in force; read once per decision
     * @return the running service once it listens
     */
    public static Future<LimiterService> start(Vertx vertx, Options options, QuotaSource config,
                                               Ticker ticker, MeterRegistry registry) {
        return start(vertx, options, config, ticker, registry, DecisionStats.DEFAULTS);
    }

    /**
     * Starts a limiter with statistics settings (issue 14: {@code GET /v1/stats}).
     *
     * @param config supplies the configuration snapshot in force; read once per decision
     * @param stats  the hot-resources statistics' settings ({@link DecisionStats#DEFAULTS} by default)
     * @return the running service once it listens
     */
    public static Future<LimiterService> start(Vertx vertx, Options options, QuotaSource config,
                                               Ticker ticker, MeterRegistry registry, DecisionStats.Options stats) {
        LimiterService s = new LimiterService(vertx, options, config, ticker, registry, stats);
        return Http.listen(vertx, options.listen(), s::handle).compose(server -> {
            s.server = server;
            // expired keys leave the table even when no request arrives to trigger Caffeine's maintenance;
            // on a worker thread, as a flood's expiry can take a while
            s.maintenanceTimer = vertx.setPeriodic(MAINTENANCE_MS, t -> vertx.executeBlocking(() -> {
                s.table.cleanUp();
                return null;
            }, false));
            s.advertised = options.advertise() != null ? options.advertise()
                    : new HostPort(options.listen().host(), server.actualPort());
            return s.warmUp();
        }).map(v -> {
            s.warmupFreshKeys = s.table.freshWithinHorizon();
            s.serving = true;
            // issue 22 item 8: state is not carried across restarts; say so, and count what it may have cost
            LOG.info("limiter {} starts with empty GCRA state: keys an earlier incarnation (or another limiter) held"
                    + " in debt begin again with a full burst; keys first seen within one refill horizon are counted in"
                    + " levee_limiter_state_lost_keys_total", options.id());
            if (options.observer() != null) {
                s.heartbeatClient = vertx.createHttpClient(new HttpClientOptions().setConnectTimeout(1000)
                        .setKeepAlive(true));
                s.sendHeartbeat();
                s.heartbeatTimer = vertx.setPeriodic(options.heartbeat().toMillis(), t -> s.sendHeartbeat());
            }
            LOG.info("limiter {} listening on {}", options.id(), s.advertised);
            return s;
        });
    }

    /**
     * Warms the decision path before the limiter announces itself (issue 10: a cold limiter answered
     * its first checks after the clients' 250 ms timeout): waits until the configuration source is
     * ready, then sends self-checks over its own listener on loopback — single checks and batches,
     * four at a time — until {@value #WARMUP_CHECKS} were decided or {@link Options#warmup()} passed.
     * Never fails: the limiter starts anyway, with a warning, when the bound is reached first.
     */
    private Future<Void> warmUp() {
        if (options.warmup().isZero()) {
            return Future.succeededFuture();
        }
        long startNs = dev.levee.runtime.SystemTicker.INSTANCE.read();
        long deadline = startNs + options.warmup().toNanos();
        String host = options.listen().host();
        String loopback = host.equals("0.0.0.0") || host.equals("::") || host.equals("[::]") ? "127.0.0.1" : host;
        int port = server.actualPort();
        HttpClientAgent http = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true).setTcpNoDelay(true)
                .setConnectTimeout(1000), new io.vertx.core.http.PoolOptions().setHttp1MaxSize(4));
        String one = "{\"resource\":\"" + WARMUP_RESOURCE + "\",\"key\":\"k\",\"operation\":\"GetObject\",\"g\":1}";
        Buffer single = Buffer.buffer(one);
        Buffer batch = Buffer.buffer("{\"checks\":[" + String.join(",", java.util.Collections.nCopies(8, one)) + "]}");
        io.netty.buffer.ByteBuf b1 = BinaryChecks.start(1, 64);
        BinaryChecks.writeCheck(b1, WARMUP_RESOURCE, "k", "GetObject", 1);
        io.netty.buffer.ByteBuf b8 = BinaryChecks.start(8, 256);
        for (int i = 0; i < 8; i++) {
            BinaryChecks.writeCheck(b8, WARMUP_RESOURCE, "k", "GetObject", 1);
        }
        Buffer[] bodies = {single, batch, BinaryChecks.toBuffer(b1), BinaryChecks.toBuffer(b8)};
        java.util.concurrent.atomic.AtomicInteger decided = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicInteger failures = new java.util.concurrent.atomic.AtomicInteger();
        io.vertx.core.Promise<Void> ready = io.vertx.core.Promise.promise();
        awaitReady(deadline, ready);
        return ready.future().compose(v -> {
            List<Future<Void>> loops = new java.util.ArrayList<>();
            for (int w = 0; w < 4; w++) {
                io.vertx.core.Promise<Void> loop = io.vertx.core.Promise.promise();
                warmLoop(http, loopback, port, bodies, w, deadline, decided, failures, loop);
                loops.add(loop.future());
            }
            return Future.join(loops).<Void>mapEmpty();
        }).eventually(() -> http.close()).recover(e -> Future.succeededFuture())
                .compose(v -> warmWire(loopback, port, deadline)).onComplete(ar -> {
            long ms = (dev.levee.runtime.SystemTicker.INSTANCE.read() - startNs) / 1_000_000;
            int wire = ar.succeeded() ? ar.result() : 0;
            if (decided.get() < WARMUP_CHECKS) {
                LOG.warn("limiter {} warm-up bound reached: {} of {} self-checks in {} ms ({} failed), {} over the check"
                        + " wire; starting anyway", options.id(), decided.get(), WARMUP_CHECKS, ms, failures.get(), wire);
            } else {
                LOG.info("limiter {} warmed up: {} self-checks over HTTP and {} over the check wire in {} ms", options.id(),
                        decided.get(), wire, ms);
            }
        }).mapEmpty();
    }

    /** Most self-checks over the check wire in the warm-up: 60 000 (frames of up to 64, 256 outstanding). */
    public static final int WARMUP_WIRE_CHECKS = 60_000;

    /**
     * The warm-up's second part: self-checks over the check wire — the path a levee-client's checks take — until
     * {@value #WARMUP_WIRE_CHECKS} are decided or the deadline passes, so that the frame handling and the decision
     * path are compiled before the limiter is listed. Never fails.
     *
     * @return how many checks were decided over the wire
     */
    private Future<Integer> warmWire(String host, int port, long deadline) {
        io.vertx.core.Promise<Integer> done = io.vertx.core.Promise.promise();
        if (dev.levee.runtime.SystemTicker.INSTANCE.read() - deadline >= 0) {
            done.complete(0);
            return done.future();
        }
        io.netty.channel.EventLoop loop = ((io.vertx.core.internal.ContextInternal) vertx.getOrCreateContext())
                .nettyEventLoop();
        WireWarmup peer = new WireWarmup(deadline, done);
        dev.levee.runtime.WireConnection.connect(peer, loop, Http.socketChannelClass(vertx), new HostPort(host, port),
                dev.levee.runtime.SystemTicker.INSTANCE, Duration.ofSeconds(2), 64).addListener(f -> {
                    if (f.isSuccess()) {
                        @SuppressWarnings("unchecked")
                        var w = (dev.levee.runtime.WireConnection<Integer>) f.getNow();
                        peer.start(w);
                    } else {
                        LOG.debug("check-wire warm-up not started: {}", f.cause().toString());
                        done.tryComplete(0);
                    }
                });
        return done.future();
    }

    /** Keeps 256 warm-up checks outstanding on one wire connection until the count or the deadline is reached. */
    private static final class WireWarmup implements dev.levee.runtime.WireConnection.Peer<Integer> {
        private final long deadline;
        private final io.vertx.core.Promise<Integer> done;
        private dev.levee.runtime.WireConnection<Integer> wire;
        private int sent;
        private int decided;
        private int outstanding;

        WireWarmup(long deadline, io.vertx.core.Promise<Integer> done) {
            this.deadline = deadline;
            this.done = done;
        }

        void start(dev.levee.runtime.WireConnection<Integer> w) {
            wire = w;
            for (int i = 0; i < 256; i++) {
                more();
            }
        }

        private void more() {
            if (sent < WARMUP_WIRE_CHECKS && dev.levee.runtime.SystemTicker.INSTANCE.read() - deadline < 0
                    && wire.send(sent)) {
                sent++;
                outstanding++;
            } else if (outstanding == 0) {
                wire.close(new IllegalStateException("warm-up over"));
                done.tryComplete(decided);
            }
        }

        @Override
        public int size(Integer check) {
            return 32;
        }

        @Override
        public void write(Integer check, io.netty.buffer.ByteBuf frame) {
            BinaryChecks.writeCheck(frame, WARMUP_RESOURCE, (check & 1) == 0 ? "k" : "k/" + (check & 1023),
                    (check & 3) == 3 ? "PutObject" : "GetObject", 1);
        }

        @Override
        public void answered(Integer check, BinaryChecks.AnswerCursor answer) {
            decided++;
            outstanding--;
            more();
        }

        @Override
        public void failed(List<Integer> checks, Throwable cause) {
            outstanding -= checks.size();
            done.tryComplete(decided);
        }

        @Override
        public void closed(dev.levee.runtime.WireConnection<Integer> connection, boolean clean) {
            done.tryComplete(decided);
        }

        @Override
        public void noWire(int status) {
            done.tryComplete(decided);
        }
    }

    /** Completes {@code ready} once the configuration source is ready, or at the deadline. */
    private void awaitReady(long deadline, io.vertx.core.Promise<Void> ready) {
        if (config.ready() || dev.levee.runtime.SystemTicker.INSTANCE.read() - deadline >= 0) {
            ready.tryComplete();
        } else {
            vertx.setTimer(20, t -> awaitReady(deadline, ready));
        }
    }

    /** One warm-up loop: JSON and binary bodies ({@code bodies}: JSON single, JSON batch, binary single, binary batch). */
    private void warmLoop(HttpClientAgent http, String host, int port, Buffer[] bodies, int n, long deadline,
                          java.util.concurrent.atomic.AtomicInteger decided,
                          java.util.concurrent.atomic.AtomicInteger failures, io.vertx.core.Promise<Void> loop) {
        if (decided.get() >= WARMUP_CHECKS || dev.levee.runtime.SystemTicker.INSTANCE.read() - deadline >= 0) {
            loop.tryComplete();
            return;
        }
        boolean many = n % 2 == 1;
        boolean binary = n % 4 >= 2; // each loop alternates JSON and binary rounds
        // an idle timeout only: a request's connect-timeout timer outlives the request and, once the client
        // is closed, fails an already completed promise (Vert.x 5.1 logs "Promise already completed")
        http.request(new RequestOptions().setMethod(HttpMethod.POST).setHost(host).setPort(port)
                        .setURI(many ? "/v1/checks" : "/v1/check").setIdleTimeout(1000)
                        .putHeader("Content-Type", binary ? BinaryChecks.CONTENT_TYPE : "application/json"))
                .compose(r -> r.send(bodies[(binary ? 2 : 0) + (many ? 1 : 0)].copy()))
                .compose(resp -> resp.body().map(b -> resp.statusCode()))
                .onComplete(ar -> {
                    if (ar.succeeded() && (ar.result() == 200 || ar.result() == 429)) { // 429: a small default quota
                        decided.addAndGet(many ? 8 : 1);
                    } else {
                        failures.incrementAndGet();
                        if (failures.get() > 100) {
                            loop.tryComplete(); // something is wrong with the path itself: do not spin
                            return;
                        }
                    }
                    warmLoop(http, host, port, bodies, n + 2, deadline, decided, failures, loop);
                });
    }

    private void sendHeartbeat() {
        byte[] body = Json.write(Map.of("id", options.id(), "address", advertised.toString()));
        heartbeatClient.request(new RequestOptions().setMethod(HttpMethod.POST).setHost(options.observer().host())
                        .setPort(options.observer().port()).setURI("/v1/heartbeat").setTimeout(2000)
                        .putHeader("Content-Type", "application/json"))
                .compose(r -> r.send(Buffer.buffer(body)))
                .onSuccess(resp -> heartbeatDone(resp.statusCode() == 204 ? null : "HTTP " + resp.statusCode()))
                .onFailure(e -> heartbeatDone(e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()));
    }

    /**
     * Records a heartbeat's outcome ({@code error} null: accepted) and warns when heartbeats start failing, at
     * most once per warnInterval while they keep failing, and once when they reach the observer again.
     */
    private void heartbeatDone(String error) {
        if (stopping) {
            return;
        }
        observerReachable = error == null;
        heartbeatError = error;
        var r = unregistered.update(ticker.read(), error == null ? null
                : "heartbeats of limiter " + options.id() + " do not reach the observer " + options.observer()
                        + ": clients may not list it (its /health answers 503)");
        switch (r.kind()) {
            case BEGAN -> LOG.warn("{} ({})", r.reason(), error);
            case LASTS -> LOG.warn("{} (for {} s; {})", r.reason(), r.seconds(), error);
            case ENDED -> LOG.info("heartbeats of limiter {} reach the observer {} again after {} s", options.id(),
                    options.observer(), r.seconds());
            case NONE -> {
            }
        }
    }

    private void handle(HttpServerRequest req) {
        if (stopping) {
            // one request per connection from now on: a client never sends a check on a connection
            // that is being closed under it when the listener stops (it would get no answer)
            req.response().putHeader(io.vertx.core.http.HttpHeaders.CONNECTION, io.vertx.core.http.HttpHeaders.CLOSE);
        }
        String path = req.path();
        if (path.equals(CheckWire.PATH) && req.method() == HttpMethod.GET && offersWire(req)) {
            if (!hasToken(req, io.vertx.core.http.HttpHeaders.CONNECTION, "upgrade")) {
                // RFC 9110 §7.8: an Upgrade header is only sent with the "upgrade" connection option; without it
                // Vert.x would not switch and the request would wait for the idle timeout
                Http.error(req.response(), 400, "an upgrade to " + CheckWire.PROTOCOL + " needs Connection: Upgrade");
            } else if (req.headers().contains(io.vertx.core.http.HttpHeaders.CONTENT_LENGTH)
                    && !"0".equals(req.getHeader(io.vertx.core.http.HttpHeaders.CONTENT_LENGTH).trim())
                    || req.headers().contains(io.vertx.core.http.HttpHeaders.TRANSFER_ENCODING)) {
                // its body would be read as frames after the switch
                Http.error(req.response().putHeader(io.vertx.core.http.HttpHeaders.CONNECTION,
                        io.vertx.core.http.HttpHeaders.CLOSE), 400, "an upgrade to " + CheckWire.PROTOCOL + " has no body");
            } else {
                upgradeToWire(req);
            }
        } else if (path.equals(CheckWire.PATH) && req.method() == HttpMethod.GET) {
            Http.error(req.response().putHeader("Allow", "POST"), 405, "GET " + CheckWire.PATH + " is the check wire:"
                    + " HTTP/1.1 with Connection: Upgrade and Upgrade: " + CheckWire.PROTOCOL + " (POST for a batch of"
                    + " checks)");
        } else if (path.startsWith("/v1/check") && req.method() == HttpMethod.POST
                && BinaryChecks.isBinary(req.getHeader(io.vertx.core.http.HttpHeaders.CONTENT_TYPE))
                && (path.length() == 9 || path.equals("/v1/checks"))) {
            boolean one = path.length() == 9;
            Http.withBody(req, one ? Http.MAX_JSON_BODY : CheckBatch.MAX_BODY, body -> checkBinary(req, body, one));
        } else if (path.equals("/v1/check") && req.method() == HttpMethod.POST) {
            req.response().putHeader(ACCEPT_POST, ACCEPT_POST_VALUE); // levee-client switches to binary
            Http.withBody(req, body -> check(req, body));
        } else if (path.equals("/v1/checks") && req.method() == HttpMethod.POST) {
            req.response().putHeader(ACCEPT_POST, ACCEPT_POST_VALUE);
            Http.withBody(req, CheckBatch.MAX_BODY, body -> checkBatch(req, body));
        } else if (path.equals("/health") && req.method() == HttpMethod.GET) {
            java.util.SortedMap<String, String> invalid = config.invalidKeys();
            boolean ready = serving && config.ready() && observerReachable && invalid.isEmpty() && config.usable();
            Http.json(req.response(), ready ? 200 : 503, Map.of("status", ready ? "ready"
                            : !serving ? notServing : !config.ready() ? "configuration source unreachable"
                            : !observerReachable ? "observer unreachable: " + heartbeatError
                            : invalidStatus(config.usable(), invalid),
                    "id", options.id(), "revision", config.revision(), "invalidKeys", invalid));
        } else if (path.equals("/metrics") && req.method() == HttpMethod.GET) {
            Http.metrics(req, registry);
        } else if (path.equals("/v1/stats") && req.method() == HttpMethod.GET) {
            Http.json(req.response(), 200, statsAnswer());
        } else if (path.equals("/v1/stats/history") && req.method() == HttpMethod.GET) {
            Http.json(req.response(), 200, historyAnswer());
        } else if (path.equals("/v1/check") || path.equals("/v1/checks") || path.equals("/health")
                || path.equals("/metrics") || path.equals("/v1/stats") || path.equals("/v1/stats/history")) {
            Http.error(req.response().putHeader("Allow", path.startsWith("/v1/check") ? "POST" : "GET"), 405,
                    "method " + req.method() + " not allowed on " + path);
        } else {
            Http.error(req.response(), 404, "no such endpoint: " + req.method() + " " + LogText.escape(path, 200));
        }
    }

    /**
     * The {@code /health} status while etcd holds refused values (issue 22): each key with why, and whether the
     * limiter serves meanwhile.
     */
    static String invalidStatus(boolean usable, java.util.SortedMap<String, String> invalid) {
        StringBuilder sb = new StringBuilder(usable
                ? "invalid configuration values, serving with the rest (each keeps its last good value, or none): "
                : "no configuration can be built, not serving: ");
        int n = 0;
        for (Map.Entry<String, String> e : invalid.entrySet()) {
            if (n++ == 10) {
                sb.append("; and ").append(invalid.size() - 10).append(" more (see invalidKeys)");
                break;
            }
            sb.append(n > 1 ? "; " : "").append(e.getKey()).append(": ").append(e.getValue());
        }
        return sb.toString();
    }

    /**
     * True when {@code req} asks for the check wire: HTTP/1.1 (RFC 9110 §7.8: an Upgrade in an HTTP/1.0 request is
     * ignored) with {@value CheckWire#PROTOCOL} among the protocols of its Upgrade header.
     */
    private static boolean offersWire(HttpServerRequest req) {
        return req.version() == io.vertx.core.http.HttpVersion.HTTP_1_1
                && hasToken(req, io.vertx.core.http.HttpHeaders.UPGRADE, CheckWire.PROTOCOL);
    }

    /** True when a comma-separated list in header {@code name} (any of its lines) holds {@code token}, case aside. */
    private static boolean hasToken(HttpServerRequest req, CharSequence name, String token) {
        for (String line : req.headers().getAll(name)) {
            for (String t : line.split(",")) {
                if (t.trim().equalsIgnoreCase(token)) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * Upgrades a connection to the check wire ({@link CheckWire}): 101, then the connection's reads go to a
     * {@link WireHandler} (frames in, answers out) and a stop sends GOAWAY on it. A stopping limiter answers 503.
     */
    private void upgradeToWire(HttpServerRequest req) {
        if (stopping) {
            Http.error(req.response(), 503, "limiter " + options.id() + " is stopping");
            return;
        }
        req.response().putHeader(io.vertx.core.http.HttpHeaders.UPGRADE, CheckWire.PROTOCOL)
                .putHeader(io.vertx.core.http.HttpHeaders.CONNECTION, io.vertx.core.http.HttpHeaders.UPGRADE);
        // frames the client sent right behind its request, before our 101, are held here until the wire is in place
        EarlyBytes early = new EarlyBytes();
        ((io.vertx.core.net.impl.ConnectionBase) req.connection()).channelHandlerContext().pipeline()
                .addBefore("handler", "levee-early", early);
        req.toNetSocket().onComplete(ar -> {
            if (ar.failed()) {
                early.discard();
                LOG.debug("check wire upgrade from {} failed: {}", req.remoteAddress(), ar.cause().toString());
                return;
            }
            io.vertx.core.internal.net.NetSocketInternal so = (io.vertx.core.internal.net.NetSocketInternal) ar.result();
            io.netty.channel.ChannelPipeline pipeline = so.channelHandlerContext().pipeline();
            WireHandler wire = new WireHandler(this);
            pipeline.addBefore("handler", "levee-frames", CheckWire.frameDecoder());
            pipeline.addBefore("handler", "levee-wire", wire);
            early.release();
            io.netty.channel.ChannelHandlerContext ctx = pipeline.context(wire);
            // graceful stop: GOAWAY; Vert.x closes the connection once the client closed it, or at the timeout
            so.shutdownHandler(timeout -> wire.goAway(ctx));
        });
    }

    private void check(HttpServerRequest req, byte[] body) {
        CheckRequest in;
        S3Operation op;
        QuotaConfig cfg = config.current(); // one snapshot per decision: never two versions in one decision
        try {
            in = Json.parse(body, CheckRequest.class);
            op = in.validate(cfg.factor());
        } catch (IllegalArgumentException e) {
            count("invalid", "none");
            Http.error(req.response(), 400, e.getMessage());
            return;
        }
        try {
            CheckResponse out = decide(cfg, in.resource(), in.key(), op, in.g());
            int status = out.result().equals("accepted") ? 200 : 429;
            if (status == 429) {
                req.response().putHeader("Retry-After", Long.toString(out.retryAfter()));
            }
            Http.json(req.response(), status, out);
        } catch (RuntimeException e) {
            count("failed", "none");
            LOG.error("decision failed resource={} key={} op={}", LogText.escape(in.resource()), LogText.escape(in.key()),
                    op, e);
            Http.json(req.response(), 500, CheckResponse.failed(options.id()));
        }
    }

    /**
     * {@code POST /v1/checks}: decides each check of a {@link CheckBatch} in order, as
     * {@code POST /v1/check} would, and answers 200 with {@code {"decisions": [...]}}, one entry per
     * check in the same order: a {@link CheckResponse}, or {@code {"result": "invalid", "error": …}}
     * for a check that is malformed (the others are still decided). A malformed batch → 400.
     */
    private void checkBatch(HttpServerRequest req, byte[] body) {
        CheckBatch batch;
        QuotaConfig cfg = config.current(); // one snapshot for the whole batch
        try {
            batch = Json.parse(body, CheckBatch.class);
            batch.validate();
        } catch (IllegalArgumentException e) {
            count("invalid", "none");
            Http.error(req.response(), 400, e.getMessage());
            return;
        }
        if (batch.checks().isEmpty() || !WARMUP_RESOURCE.equals(batch.checks().get(0).resource())) {
            batchSizes.record(batch.checks().size());
        }
        java.util.List<Object> decisions = new java.util.ArrayList<>(batch.checks().size());
        for (CheckRequest in : batch.checks()) {
            S3Operation op;
            try {
                op = in.validate(cfg.factor());
            } catch (IllegalArgumentException e) {
                count("invalid", "none");
                decisions.add(Map.of("result", "invalid", "error", e.getMessage()));
                continue;
            }
            try {
                decisions.add(decide(cfg, in.resource(), in.key(), op, in.g()));
            } catch (RuntimeException e) {
                count("failed", "none");
                LOG.error("decision failed resource={} key={} op={}", LogText.escape(in.resource()),
                        LogText.escape(in.key()), op, e);
                decisions.add(CheckResponse.failed(options.id()));
            }
        }
        Http.json(req.response(), 200, Map.of("decisions", decisions));
    }

    private static final CharSequence BINARY = io.vertx.core.http.HttpHeaders.createOptimized(BinaryChecks.CONTENT_TYPE);
    private static final CharSequence RETRY_AFTER = io.vertx.core.http.HttpHeaders.createOptimized("Retry-After");
    private static final CharSequence ACCEPT_POST = io.vertx.core.http.HttpHeaders.createOptimized("Accept-Post");
    private static final CharSequence ACCEPT_POST_VALUE = io.vertx.core.http.HttpHeaders.createOptimized(BinaryChecks.ACCEPT_POST);

    /**
     * {@code POST /v1/check} and {@code /v1/checks} in the binary encoding ({@link BinaryChecks}): each check
     * is validated, decided, counted and logged as in JSON; the answer is binary, one entry per check. On
     * {@code /v1/check} (exactly one check) the status is that of the JSON form — 200 accepted, 429 rejected
     * (with {@code Retry-After}), 400 invalid, 500 failed; on {@code /v1/checks} 200. A body that is not a
     * well-formed binary body → 400 with a JSON error naming what is wrong, and nothing is decided.
     */
    private void checkBinary(HttpServerRequest req, byte[] body, boolean one) {
        QuotaConfig cfg = config.current(); // one snapshot for the whole body
        BinaryChecks.CheckCursor in = new BinaryChecks.CheckCursor();
        io.netty.buffer.ByteBuf b = io.netty.buffer.Unpooled.wrappedBuffer(body);
        int n;
        try {
            n = in.validate(b);
            if (one && n != 1) {
                throw new IllegalArgumentException("POST /v1/check takes one check, got " + n
                        + " (several go to /v1/checks)");
            }
        } catch (IllegalArgumentException e) {
            count("invalid", "none");
            Http.error(req.response(), 400, e.getMessage());
            return;
        }
        io.netty.buffer.ByteBuf out = BinaryChecks.start(in.version(), n, 8 + n * 88);
        Last last = new Last();
        decideAll(cfg, in, n, !one, out, last, new Decision());
        var resp = req.response();
        if (resp.ended() || resp.closed()) {
            out.release();
            return;
        }
        if (one && last.status == 429) {
            resp.putHeader(RETRY_AFTER, Long.toString(last.retryAfter));
        }
        resp.setStatusCode(one ? last.status : 200).putHeader(io.vertx.core.http.HttpHeaders.CONTENT_TYPE, BINARY)
                .end(BinaryChecks.toBuffer(out));
    }

    /** The status and Retry-After of the last check of a body, for the answer to a single binary check. */
    private static final class Last {
        int status = 200;
        long retryAfter;
    }

    /**
     * Decides one CHECKS frame of the check wire ({@link WireHandler}): reads the body through once (a malformed
     * body is refused before any of its checks is decided), then decides each check in order and appends the
     * answer body (the frame's version, count, one answer per check) to {@code out}.
     *
     * @param body the frame's body, at its reader index
     * @param in   the connection's cursor
     * @param out  where the answers go
     * @param d    the connection's decision holder
     * @throws IllegalArgumentException naming what is wrong when the body is not a well-formed check body
     */
    void decideFrame(io.netty.buffer.ByteBuf body, BinaryChecks.CheckCursor in, io.netty.buffer.ByteBuf out, Decision d) {
        QuotaConfig cfg = config.current(); // one snapshot for the whole frame
        int n = in.validate(body);
        out.writeByte(in.version());
        out.writeShort(n);
        decideAll(cfg, in, n, true, out, null, d);
    }

    /** Counts a wire frame that could not be read (the connection is closed). */
    void countInvalidFrame() {
        count("invalid", "none");
    }

    /**
     * Decides the {@code n} checks of a validated body in order and appends one binary answer each: an invalid
     * check (unknown operation, group size above the factor) gets an invalid answer and the others are decided.
     *
     * @param batch whether to record the batch size ({@code levee_limiter_batch_checks})
     * @param last  where the status and Retry-After of the last check go (single-check HTTP answers), or null
     */
    private void decideAll(QuotaConfig cfg, BinaryChecks.CheckCursor in, int n, boolean batch,
                           io.netty.buffer.ByteBuf out, Last last, Decision d) {
        int version = in.version();
        boolean counted = false;
        for (int i = 0; i < n; i++) {
            in.next();
            if (batch && !counted) {
                counted = true;
                if (!WARMUP_RESOURCE.equals(in.resource)) {
                    batchSizes.record(n);
                }
            }
            S3Operation op;
            try {
                CheckRequest.checkGroup(in.g, cfg.factor());
                op = in.operation != null ? in.operation : CheckRequest.operation(in.operationName());
            } catch (IllegalArgumentException e) {
                count("invalid", "none");
                BinaryChecks.writeInvalid(out, e.getMessage());
                if (last != null) {
                    last.status = 400;
                }
                continue;
            }
            try {
                decide(cfg, in.resource, in.key, op, in.g, d);
                d.write(out, version);
                if (last != null) {
                    last.status = d.accepted ? 200 : 429;
                    last.retryAfter = d.retryAfter;
                }
            } catch (RuntimeException e) {
                count("failed", "none");
                LOG.error("decision failed resource={} key={} op={}", LogText.escape(in.resource),
                        LogText.escape(in.key), op, e);
                BinaryChecks.writeFailed(out);
                if (last != null) {
                    last.status = 500;
                }
            }
        }
    }

    /**
     * Decides one request (the HTTP-free core of {@code POST /v1/check}): the enforced quota
     * ({@link QuotaConfig#resolveEnforced}) decides; a shadow quota that matched is decided on its own state,
     * logged and counted, and changes nothing of the answer but {@link CheckResponse#shadow()}
     * (docs/decisions.md, "Shadow quotas and RateLimit header fields").
     *
     * @param cfg      the configuration snapshot to use
     * @param resource bucket
     * @param key      object key
     * @param op       operation
     * @param g        group size, 1 ≤ g ≤ DF
     * @return the decision
     */
    public CheckResponse decide(QuotaConfig cfg, String resource, String key, S3Operation op, int g) {
        Decision d = new Decision();
        decide(cfg, resource, key, op, g, d);
        return d.response(options.id());
    }

    /**
     * What one decision produced, written by {@link #decide(QuotaConfig, String, String, S3Operation, int, Decision)}:
     * a holder reused for every check of a connection (one per event loop), so that deciding allocates no answer.
     */
    static final class Decision {
        boolean accepted;
        /** The enforced quota's level label and limit key; null when only shadow quotas apply. */
        String level;
        String limitKey;
        long remaining;
        long retryAfter;
        double rate;
        int burst;
        long reset;
        /** {@link BinaryChecks#SHADOW_NONE}, {@link BinaryChecks#SHADOW_ACCEPTED} or {@link BinaryChecks#SHADOW_WOULD_REJECT}. */
        byte shadow;

        CheckResponse response(String limiter) {
            String result = accepted ? "accepted" : "rejected";
            String sh = shadow == BinaryChecks.SHADOW_NONE ? null
                    : shadow == BinaryChecks.SHADOW_WOULD_REJECT ? CheckResponse.WOULD_REJECT : "accepted";
            return level == null ? new CheckResponse(result, null, null, 0, 0, limiter, 0, 0, 0, sh)
                    : new CheckResponse(result, level, limitKey, remaining, retryAfter, limiter, rate, burst, reset, sh);
        }

        void write(ByteBuf out, int version) {
            BinaryChecks.writeDecision(out, version, accepted, level, limitKey, remaining, retryAfter, shadow, rate,
                    burst, reset);
        }
    }

    /**
     * Decides one request into {@code out} (see {@link #decide(QuotaConfig, String, String, S3Operation, int)}):
     * resolves, applies GCRA, counts, records the statistics and logs the decision; allocates nothing of its own
     * when the quota's answer is shared (every level but a wildcard prefix entry) and the decision log is off or
     * garbage-free.
     */
    void decide(QuotaConfig cfg, String resource, String key, S3Operation op, int g, Decision out) {
        ResolvedQuota rq = cfg.resolveEnforced(resource, key, op); // null: only shadow quotas apply
        boolean ok = true;
        long retry = 0;
        long remaining = 0;
        long reset = 0;
        if (rq != null) {
            GcraLimit limit = rq.limit(g);
            long r = table.attempt(rq.limitKey(), limit);
            ok = Gcra.admitted(r);
            retry = Gcra.retryAfterSeconds(r);
            remaining = ok ? r : 0;
            reset = resetSeconds(limit, r);
        }
        // a shadow quota is decided on its own state (key "shadow:<limit key>"): it never touches the enforced TAT
        ResolvedQuota sq = null;
        byte shadow = BinaryChecks.SHADOW_NONE;
        long shadowR = 0;
        if (cfg.hasShadow()) {
            ResolvedQuota full = cfg.resolve(resource, key, op);
            if (cfg.isShadow(full)) {
                sq = full;
                shadowR = table.attempt(sq.prefixedKey(SHADOW_KEY), sq.limit(g));
                shadow = Gcra.admitted(shadowR) ? BinaryChecks.SHADOW_ACCEPTED : BinaryChecks.SHADOW_WOULD_REJECT;
            }
        }
        // the one outcome counted per check: rejected (enforced), would_reject (admitted, the shadow quota refused), accepted
        boolean wouldReject = ok && sq != null && shadowR < 0;
        String outcome = !ok ? "rejected" : wouldReject ? CheckResponse.WOULD_REJECT : "accepted";
        ResolvedQuota counted = wouldReject || rq == null ? sq : rq;
        boolean warmup = WARMUP_RESOURCE.equals(resource);
        if (!warmup) {
            // one outcome per check, with the level of the quota that produced it (metrics and per-resource stats)
            count(outcome, counted.level().label());
            // per-resource stats: a request on a shadow entry is one row, the trial's (its enforced refusals included)
            recordDecision(sq != null ? sq : rq, !ok ? DecisionStats.Outcome.REFUSED
                    : wouldReject ? DecisionStats.Outcome.WOULD_REJECT : DecisionStats.Outcome.ADMITTED);
            if (sq != null) {
                countShadow(shadow == BinaryChecks.SHADOW_ACCEPTED ? "accepted" : CheckResponse.WOULD_REJECT,
                        sq.level().label());
            }
        }
        if (!warmup && DECISIONS.isInfoEnabled()) {
            logDecision(ok ? "accepted" : "rejected", resource, key, op, g, rq, remaining, retry, sq,
                    sq == null ? null : shadow == BinaryChecks.SHADOW_ACCEPTED ? "accepted" : CheckResponse.WOULD_REJECT,
                    shadowR);
        }
        out.accepted = ok;
        out.shadow = shadow;
        if (rq == null) {
            out.level = null;
            out.limitKey = null;
            out.remaining = 0;
            out.retryAfter = 0;
            out.rate = 0;
            out.burst = 0;
            out.reset = 0;
        } else {
            out.level = rq.level().label();
            out.limitKey = rq.limitKey();
            out.remaining = remaining;
            out.retryAfter = retry;
            out.rate = rq.quota().rate();
            out.burst = rq.quota().burst();
            out.reset = reset;
        }
    }

    /** The GCRA state of shadow quotas is kept under its limit key with this prefix. */
    static final String SHADOW_KEY = "shadow:";

    /**
     * Seconds, rounded up, until a key's allowance is whole again after an {@link Gcra#attempt} result: for an
     * admission {@code (c − remaining) × T} (an upper bound of {@code TAT − now}, at most one emission interval
     * over), for a refusal the wait plus the tolerance {@code τ}, which is {@code TAT − now}. ≥ 1.
     */
    static long resetSeconds(GcraLimit limit, long result) {
        if (limit.blocked()) {
            return 1;
        }
        double ns = result >= 0 ? (double) (limit.capacity() - result) * limit.emissionIntervalNs()
                : (double) -result + limit.toleranceNs();
        return Math.max(1, (long) Math.min(Math.ceil(ns / 1e9), (double) (1L << 40)));
    }

    /**
     * Logs one decision on {@code levee.limiter.decision} without garbage on the caller's thread (issue 12; docs/decisions.md,
     * "Decision log lines without garbage"): Log4j's fixed-arity call with at most ten parameters — the result word
     * and this limiter's id are in the format, which is made once — and numbers through {@code Unbox}; a line with a
     * shadow quota (eighteen fields) is appended to a per-thread builder and logged as text. The line reads as it
     * always did.
     */
    private void logDecision(String result, String resource, String key, S3Operation op, int g, ResolvedQuota rq,
                             long remaining, long retry, ResolvedQuota sq, String shadow, long shadowR) {
        if (sq == null) {
            String format = result.equals("accepted") ? acceptedLine : rejectedLine;
            if (rq == null) {
                DECISIONS.info(format, LogText.escape(resource), LogText.escape(key), op, "none", "-", "-", "-", Unbox.box(g),
                        Unbox.box(remaining), Unbox.box(retry));
            } else {
                DECISIONS.info(format, LogText.escape(resource), LogText.escape(key), op, rq.level().label(),
                        LogText.escape(rq.limitKey()), Unbox.box(rq.quota().rate()), Unbox.box(rq.quota().burst()),
                        Unbox.box(g), Unbox.box(remaining), Unbox.box(retry));
            }
            return;
        }
        StringBuilder b = SHADOW_LINE.get();
        b.setLength(0);
        b.append("decision result=").append(result).append(" resource=").append(LogText.escape(resource))
                .append(" key=").append(LogText.escape(key)).append(" op=").append(op.name())
                .append(" level=").append(rq == null ? "none" : rq.level().label())
                .append(" limit_key=").append(rq == null ? "-" : LogText.escape(rq.limitKey())).append(" rate=");
        if (rq == null) {
            b.append('-');
        } else {
            b.append(rq.quota().rate());
        }
        b.append(" burst=");
        if (rq == null) {
            b.append('-');
        } else {
            b.append(rq.quota().burst());
        }
        b.append(" g=").append(g).append(" remaining=").append(remaining).append(" retry_after=").append(retry)
                .append(" limiter=").append(options.id()).append(" mode=shadow shadow=").append(shadow)
                .append(" shadow_level=").append(sq.level().label())
                .append(" shadow_limit_key=").append(LogText.escape(sq.limitKey()))
                .append(" shadow_rate=").append(sq.quota().rate()).append(" shadow_burst=").append(sq.quota().burst())
                .append(" shadow_remaining=").append(shadowR >= 0 ? shadowR : 0);
        DECISIONS.info(b); // the async logger copies the text before the call returns
    }

    /** The format of a decision line without a shadow quota (the id's characters never include braces). */
    private static String decisionLine(String result, String id) {
        return "decision result=" + result + " resource={} key={} op={} level={} limit_key={} rate={} burst={} g={}"
                + " remaining={} retry_after={} limiter=" + id;
    }

    /** The builder of decision lines with a shadow quota, one per thread. */
    private static final ThreadLocal<StringBuilder> SHADOW_LINE = ThreadLocal.withInitial(() -> new StringBuilder(512));

    private void countShadow(String result, String level) {
        Map<String, Counter> known = shadowCounters.get(result);
        Counter c = known == null ? null : known.get(level);
        if (c != null) {
            c.increment();
            return;
        }
        Map<String, Counter> byLevel = shadowCounters.computeIfAbsent(result, r -> new ConcurrentHashMap<>());
        byLevel.computeIfAbsent(level, k -> Counter.builder("levee_limiter_shadow_decisions_total")
                .description("decisions of shadow quotas by result (accepted, would_reject) and level; the requests"
                        + " were admitted unless an enforced quota refused them")
                .tag("result", result).tag("level", level).register(registry)).increment();
    }

    /**
     * The statistics' hook at the decision point (issue 14): every decided check, once. A shadow entry's
     * refusal (issue 14 item 4) is recorded as {@link DecisionStats.Outcome#WOULD_REJECT}.
     */
    private void recordDecision(ResolvedQuota rq, DecisionStats.Outcome outcome) {
        stats.record(rq.ruleKey(), outcome);
    }

    /**
     * The answer to {@code GET /v1/stats} (documented in openapi.yaml).
     *
     * @param limiter     this limiter's id
     * @param revision    the configuration revision in force
     * @param enabled     whether statistics are kept ({@code --no-stats}: false, no windows)
     * @param top         entries listed per window by offered and by refused
     * @param sketchSize  entries each sketch tracks
     * @param windows     per window its totals and rows
     */
    public record StatsAnswer(String limiter, long revision, boolean enabled, int top, int sketchSize,
                              List<StatsWindow> windows) {
    }

    /** One window of {@link StatsAnswer}: totals, and rows with their rates per second. */
    public record StatsWindow(long seconds, long coveredSeconds, long offered, long refused, long wouldReject,
                              long endSecond, List<StatsRow> rows) {
    }

    /** One row of {@link StatsWindow}: counts and per-second rates over the covered seconds. */
    public record StatsRow(String resource, String level, String prefix, String operation, long offered,
                           long admitted, long refused, long wouldReject, long maxError, double offeredPerS,
                           double admittedPerS, double refusedPerS, double wouldRejectPerS) {
    }

    /** Returns the statistics as {@code GET /v1/stats} serves them. */
    public StatsAnswer statsAnswer() {
        List<StatsWindow> windows = new java.util.ArrayList<>();
        for (DecisionStats.Window w : stats.snapshot()) {
            double d = Math.max(1, w.coveredSeconds());
            List<StatsRow> rows = w.rows().stream().map(r -> new StatsRow(r.resource(), r.level(), r.prefix(),
                    r.operation(), r.offered(), r.admitted(), r.refused(), r.wouldReject(), r.maxError(),
                    w.coveredSeconds() == 0 ? 0 : r.offered() / d, w.coveredSeconds() == 0 ? 0 : r.admitted() / d,
                    w.coveredSeconds() == 0 ? 0 : r.refused() / d, w.coveredSeconds() == 0 ? 0 : r.wouldReject() / d))
                    .toList();
            windows.add(new StatsWindow(w.seconds(), w.coveredSeconds(), w.offered(), w.refused(), w.wouldReject(),
                    w.endSecond(), rows));
        }
        DecisionStats.Options o = stats.options();
        return new StatsAnswer(options.id(), config.revision(), o.enabled(), o.top(), o.sketchSize(), windows);
    }

    /**
     * The answer to {@code GET /v1/stats/history} (openapi.yaml): the longest window's entries with their counts
     * in each of its whole seconds, oldest first, the last for the second before {@code endSecond}.
     *
     * @param limiter   this limiter's id
     * @param enabled   whether statistics are kept
     * @param endSecond the ticker second the history ends before (as a window's {@code endSecond})
     * @param seconds   whole seconds covered: the length of every series
     * @param windows   the windows' lengths in seconds, shortest first
     * @param rows      one per entry of the longest window
     */
    public record HistoryAnswer(String limiter, boolean enabled, long endSecond, long seconds, List<Long> windows,
                                List<DecisionStats.Series> rows) {
    }

    /** Returns the per-second history as {@code GET /v1/stats/history} serves it. */
    public HistoryAnswer historyAnswer() {
        DecisionStats.History h = stats.history();
        return new HistoryAnswer(options.id(), stats.options().enabled(), h.endSecond(), h.seconds(), h.windows(),
                h.rows());
    }

    /** Returns the hot-resources statistics, for diagnostics and tests. */
    public DecisionStats stats() {
        return stats;
    }

    private void count(String result, String level) {
        Map<String, Counter> byLevel = counters.get(result);
        Counter c = byLevel == null ? null : byLevel.get(level);
        if (c != null) {
            c.increment(); // the usual case: no lambda, no allocation
            return;
        }
        byLevel = counters.computeIfAbsent(result, r -> new ConcurrentHashMap<>());
        byLevel.computeIfAbsent(level, k -> Counter.builder("levee_limiter_decisions_total")
                .description("decisions by result (accepted, rejected, would_reject: admitted although the shadow quota"
                        + " refused; invalid, failed) and matched quota level, one per check")
                .tag("result", result).tag("level", level).register(registry)).increment();
    }

    /** Returns this limiter's id. */
    public String id() {
        return options.id();
    }

    /** Returns the address clients reach this limiter at. */
    public HostPort address() {
        return advertised;
    }

    /** Returns how many batches were decided and how many checks they carried, for diagnostics and tests. */
    public long[] batches() {
        return new long[] {batchSizes.count(), (long) batchSizes.totalAmount()};
    }

    /** Returns the GCRA state table, for diagnostics and tests. */
    public GcraTable table() {
        return table;
    }

    /**
     * Stops gracefully (issue 10): leaves the membership first — stops heartbeats and tells the
     * observer (when configured; an etcd registration is revoked by its owner before) — then keeps
     * answering for {@link Options#drainGrace()} while clients move away, each answer with
     * {@code Connection: close} so that no connection is reused across the close, then stops accepting
     * connections and gives checks in flight up to {@link Options#shutdownTimeout()} to be answered
     * before the connections are closed.
     *
     * @return completes once the listener and every connection are closed
     */
    public Future<Void> stop() {
        vertx.cancelTimer(maintenanceTimer);
        serving = false;
        notServing = "stopping";
        stopping = true;
        if (heartbeatTimer >= 0) {
            vertx.cancelTimer(heartbeatTimer);
        }
        Future<Void> leave = Future.succeededFuture();
        if (heartbeatClient != null) {
            leave = heartbeatClient.request(new RequestOptions().setMethod(HttpMethod.DELETE)
                            .setHost(options.observer().host()).setPort(options.observer().port())
                            .setURI("/v1/limiters/" + options.id()).setTimeout(1000))
                    .compose(r -> r.send()).<Void>mapEmpty().recover(e -> Future.succeededFuture())
                    .eventually(() -> heartbeatClient.close());
        }
        long grace = options.drainGrace().toMillis();
        return leave.compose(v -> {
            if (grace > 0) {
                LOG.info("limiter {} left the membership; answering for {} ms more while clients move away",
                        options.id(), grace);
                return vertx.timer(grace, java.util.concurrent.TimeUnit.MILLISECONDS).<Void>mapEmpty();
            }
            return Future.succeededFuture();
        }).compose(v -> server.shutdown(options.shutdownTimeout()));
    }

    /** Stops without leaving the observer (as a crash would): for failure tests. */
    public Future<Void> kill() {
        vertx.cancelTimer(maintenanceTimer);
        if (heartbeatTimer >= 0) {
            vertx.cancelTimer(heartbeatTimer);
        }
        if (heartbeatClient != null) {
            heartbeatClient.close();
        }
        return server.close();
    }

    @Override
    public void close() {
        stop();
    }
}
