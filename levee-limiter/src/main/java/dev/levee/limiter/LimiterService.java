package dev.levee.limiter;

import dev.levee.core.GcraTable;
import dev.levee.s3.S3Operation;
import dev.levee.core.Ticker;
import dev.levee.config.QuotaSource;
import dev.levee.quota.QuotaConfig;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Http;
import dev.levee.runtime.LogText;
import dev.levee.runtime.LoudCondition;
import dev.levee.wire.BinaryChecks;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerRequest;
import java.time.Duration;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A limiter: decides checks — resolves the quota (docs/design.md §4), divides its rate by the group size {@code g}
 * (§5) and applies GCRA (§6) on the key's state, held in a bounded {@link GcraTable}.
 *
 * <p>API: {@code POST /v1/check} with a {@link CheckRequest} → 200 accepted / 429 rejected (with
 * {@code Retry-After}) / 500 failed, body {@link CheckResponse}; malformed input → 400 naming the
 * field; {@code POST /v1/checks} with a {@link CheckBatch} decides several checks in one round trip;
 * {@code GET /v1/checks} with {@code Upgrade} switches to the check wire; {@code POST /v1/lease} grants request
 * leases ({@link LeaseGrants}). {@code GET /health}, {@code GET /metrics},
 * {@code GET /v1/stats}, {@code GET /v1/stats/history}. Every decision is logged on the
 * {@code levee.limiter.decision} logger with the resource and key in clear (escaped).
 *
 * <p>When an observer is configured (embedded membership), the limiter sends a heartbeat every
 * {@code heartbeat} interval and leaves on {@link #stop()}.
 *
 * <h2>Design: the parts and where each lives</h2>
 * <ul>
 *   <li><b>Lifecycle and router</b> — this class: {@link Options} (built with {@link Options#builder}), start
 *       (listen, table maintenance, warm-up, then serving and heartbeats), {@code /health}, the routing of requests
 *       to the parts below, and the graceful {@link #stop()}.</li>
 *   <li><b>Decision core</b> — {@link Decider}: resolve → GCRA → shadow quota, pure (no metrics, no logs, no
 *       clock: fed {@code now}).</li>
 *   <li><b>Decision point and check endpoints</b> — {@link Checks}: JSON and binary {@code POST /v1/check(s)} and
 *       the wire's CHECKS frames; each check decided by the {@link Decider} at one reading of the injected
 *       {@link Ticker}, then counted, recorded and logged.</li>
 *   <li><b>Request leases</b> — {@link LeaseGrants}: {@code POST /v1/lease}, slots reserved on the checks' table.</li>
 *   <li><b>Wire upgrade</b> — {@link WireUpgrade} (the HTTP/1.1 switch, {@link EarlyBytes} for frames sent behind
 *       it); the connection's frames — {@link WireHandler}.</li>
 *   <li><b>Warm-up</b> — {@link LimiterWarmup}: self-checks over HTTP and the wire before the limiter counts as
 *       started.</li>
 *   <li><b>Heartbeats</b> — {@link Heartbeats}: membership through an observer.</li>
 *   <li><b>Logging</b> — {@link DecisionLog}: the garbage-free decision lines.</li>
 *   <li><b>Metrics</b> — {@link LimiterMetrics}: gauges and decision counters.</li>
 *   <li><b>Statistics</b> — {@link DecisionStats} (hot resources, per-second history) and the records of their
 *       answers, {@link StatsAnswers}.</li>
 * </ul>
 * Time comes from the {@link Ticker} given to {@link #start}; nothing in the limiter reads the system clock.
 */
public final class LimiterService implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger("levee.limiter");

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

        /**
         * Returns a builder of settings for limiter {@code id}, with the defaults: listen 127.0.0.1:7100, advertise
         * the bound address, no observer, heartbeat 1 s, {@value GcraTable#DEFAULT_MAX_KEYS} key slots, no warm-up,
         * no drain grace, shutdown timeout 5 s, warning interval 10 s.
         *
         * @param id stable id, the HRW member id (1–128 of {@code [A-Za-z0-9._:-]}; checked by {@link Builder#build()})
         * @return the builder
         */
        public static Builder builder(String id) {
            return new Builder(id);
        }

        /** Builds {@link Options}; each setter names the field it sets (see {@link Options} for units and ranges). */
        public static final class Builder {
            private final String id;
            private HostPort listen = new HostPort("127.0.0.1", 7100);
            private HostPort advertise;
            private HostPort observer;
            private Duration heartbeat = Duration.ofSeconds(1);
            private long maxKeys = GcraTable.DEFAULT_MAX_KEYS;
            private Duration warmup = Duration.ZERO;
            private Duration drainGrace = Duration.ZERO;
            private Duration shutdownTimeout = Duration.ofSeconds(5);
            private Duration warnInterval = LoudCondition.DEFAULT_INTERVAL;

            private Builder(String id) {
                this.id = id;
            }

            /** Sets the address to bind (port 0 picks a free one); returns this builder. */
            public Builder listen(HostPort v) {
                listen = v;
                return this;
            }

            /** Sets the address clients reach this limiter at; null: the bound address; returns this builder. */
            public Builder advertise(HostPort v) {
                advertise = v;
                return this;
            }

            /** Sets the observer to send heartbeats to; null: none; returns this builder. */
            public Builder observer(HostPort v) {
                observer = v;
                return this;
            }

            /** Sets the heartbeat interval, positive; returns this builder. */
            public Builder heartbeat(Duration v) {
                heartbeat = v;
                return this;
            }

            /** Sets the cap of the GCRA state table in key slots of 256 bytes, ≥ 1; returns this builder. */
            public Builder maxKeys(long v) {
                maxKeys = v;
                return this;
            }

            /** Sets the longest warm-up; zero: none; returns this builder. */
            public Builder warmup(Duration v) {
                warmup = v;
                return this;
            }

            /** Sets how long a stopping limiter keeps answering after it left; zero: none; returns this builder. */
            public Builder drainGrace(Duration v) {
                drainGrace = v;
                return this;
            }

            /** Sets how long checks in flight get on stop; returns this builder. */
            public Builder shutdownTimeout(Duration v) {
                shutdownTimeout = v;
                return this;
            }

            /** Sets the least time between two warnings while heartbeats fail, positive; returns this builder. */
            public Builder warnInterval(Duration v) {
                warnInterval = v;
                return this;
            }

            /**
             * Returns the settings.
             *
             * @return the settings
             * @throws IllegalArgumentException when a value is out of range (as {@link Options}' constructor)
             */
            public Options build() {
                return new Options(id, listen, advertise, observer, heartbeat, maxKeys, warmup, drainGrace,
                        shutdownTimeout, warnInterval);
            }
        }
    }

    /** Period of the table's maintenance when idle, ms. */
    private static final long MAINTENANCE_MS = 1000;

    /** Most self-checks of the warm-up over HTTP: 2 000 (single checks and batches of 8, four at a time). */
    public static final int WARMUP_CHECKS = 2_000;

    /** Most self-checks over the check wire in the warm-up: 60 000 (frames of up to 64, 256 outstanding). */
    public static final int WARMUP_WIRE_CHECKS = 60_000;

    /**
     * The resource of the warm-up's self-checks: not a valid S3 bucket name (underscore), so it never
     * shares state with real traffic; its decisions are neither logged nor counted.
     */
    public static final String WARMUP_RESOURCE = dev.levee.runtime.Warmup.RESOURCE;

    private static final String LEASE = dev.levee.lease.RequestLeaseWire.PATH;
    private static final CharSequence ACCEPT_POST = io.vertx.core.http.HttpHeaders.createOptimized("Accept-Post");
    private static final CharSequence ACCEPT_POST_VALUE = io.vertx.core.http.HttpHeaders.createOptimized(BinaryChecks.ACCEPT_POST);

    private final Options options;
    private final QuotaSource config;
    private final GcraTable table;
    private final MeterRegistry registry;
    private final Vertx vertx;
    private final DecisionStats stats;
    private final Heartbeats heartbeats;
    private final LimiterMetrics metrics;
    private final Checks checks;
    private final LeaseGrants leases;
    private final WireUpgrade wire;
    private HttpServer server;
    private long maintenanceTimer = -1;
    private volatile HostPort advertised;
    /** False while warming up and once stopping: {@code /health} answers 503. */
    private volatile boolean serving;
    private volatile String notServing = "warming up";
    private volatile boolean stopping;
    /** Keys of the warm-up's self-checks among {@link GcraTable#freshWithinHorizon()}, not counted as lost. */
    private volatile long warmupFreshKeys;

    private LimiterService(Vertx vertx, Options options, QuotaSource config, Ticker ticker,
                           MeterRegistry registry, DecisionStats.Options statsOptions) {
        this.vertx = vertx;
        this.stats = new DecisionStats(statsOptions, ticker);
        this.options = options;
        this.config = config;
        this.registry = registry;
        this.table = GcraTable.create(ticker, options.maxKeys());
        this.heartbeats = new Heartbeats(vertx, options.id(), options.observer(), options.heartbeat(),
                options.warnInterval(), ticker);
        this.metrics = new LimiterMetrics(registry, options.id(), options.maxKeys(), table, config, this, heartbeats);
        this.checks = new Checks(options.id(), config, new Decider(table, vertx != null), ticker, metrics, stats);
        this.leases = new LeaseGrants(options.id(), config, table, ticker, metrics, stats);
        this.wire = new WireUpgrade(options.id(), checks, () -> stopping);
    }

    /** Keys first seen within one refill horizon since the start, the warm-up's aside ({@code levee_limiter_state_lost_keys_total}). */
    long lostKeys() {
        return Math.max(0, table.freshWithinHorizon() - warmupFreshKeys);
    }

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
     * @return the running service once it listens, is warmed up and its restart fence passed
     */
    public static Future<LimiterService> start(Vertx vertx, Options options, QuotaSource config,
                                               Ticker ticker, MeterRegistry registry) {
        return start(vertx, options, config, ticker, registry, DecisionStats.DEFAULTS);
    }

    /**
     * Starts a limiter with statistics settings (issue 14: {@code GET /v1/stats}).
     *
     * @param config supplies the configuration snapshot in force; read once per decision
     * @param ticker the monotonic clock of every part (GCRA, statistics, warm-up, warnings)
     * @param stats  the hot-resources statistics' settings ({@link DecisionStats#DEFAULTS} by default)
     * @return the running service once it listens, is warmed up and its restart fence passed ({@link LeaseGrants})
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
            return new LimiterWarmup(vertx, options.id(), config, ticker).run(options.warmup(), options.listen().host(),
                    server.actualPort());
        }).compose(v -> s.leases.fencePassed(vertx)).map(v -> {
            s.warmupFreshKeys = s.table.freshWithinHorizon();
            s.serving = true;
            // issue 22 item 8: state is not carried across restarts; say so, and count what it may have cost
            LOG.info("limiter {} starts with empty GCRA state: keys an earlier incarnation (or another limiter) held"
                    + " in debt begin again with a full burst (keys that may be leased: 200 ms after the start, without"
                    + " one); keys first seen within one refill horizon are counted in"
                    + " levee_limiter_state_lost_keys_total", options.id());
            s.heartbeats.start(s.advertised);
            LOG.info("limiter {} listening on {}", options.id(), s.advertised);
            return s;
        });
    }

    /** The router: each endpoint to the part that answers it (see the class comment). */
    private void handle(HttpServerRequest req) {
        if (stopping) {
            // one request per connection from now on: a client never sends a check on a connection
            // that is being closed under it when the listener stops (it would get no answer)
            req.response().putHeader(io.vertx.core.http.HttpHeaders.CONNECTION, io.vertx.core.http.HttpHeaders.CLOSE);
        }
        String path = req.path();
        if (WireUpgrade.isFor(req)) {
            wire.handle(req);
        } else if (path.startsWith("/v1/check") && req.method() == HttpMethod.POST
                && BinaryChecks.isBinary(req.getHeader(io.vertx.core.http.HttpHeaders.CONTENT_TYPE))
                && (path.length() == 9 || path.equals("/v1/checks"))) {
            boolean one = path.length() == 9;
            Http.withBody(req, one ? Http.MAX_JSON_BODY : CheckBatch.MAX_BODY, body -> checks.checkBinary(req, body, one));
        } else if (path.equals("/v1/check") && req.method() == HttpMethod.POST) {
            req.response().putHeader(ACCEPT_POST, ACCEPT_POST_VALUE); // levee-client switches to binary
            Http.withBody(req, body -> checks.check(req, body));
        } else if (path.equals("/v1/checks") && req.method() == HttpMethod.POST) {
            req.response().putHeader(ACCEPT_POST, ACCEPT_POST_VALUE);
            Http.withBody(req, CheckBatch.MAX_BODY, body -> checks.checkBatch(req, body));
        } else if (path.equals(LEASE) && req.method() == HttpMethod.POST) {
            Http.withBody(req, body -> leases.lease(req, body));
        } else if (path.equals("/health") && req.method() == HttpMethod.GET) {
            java.util.SortedMap<String, String> invalid = config.invalidKeys();
            boolean reachable = heartbeats.reachable();
            boolean ready = serving && config.ready() && reachable && invalid.isEmpty() && config.usable();
            Http.json(req.response(), ready ? 200 : 503, Map.of("status", ready ? "ready"
                            : !serving ? notServing : !config.ready() ? "configuration source unreachable"
                            : !reachable ? "observer unreachable: " + heartbeats.error()
                            : invalidStatus(config.usable(), invalid),
                    "id", options.id(), "revision", config.revision(), "invalidKeys", invalid));
        } else if (path.equals("/metrics") && req.method() == HttpMethod.GET) {
            Http.metrics(req, registry);
        } else if (path.equals("/v1/stats") && req.method() == HttpMethod.GET) {
            Http.json(req.response(), 200, statsAnswer());
        } else if (path.equals("/v1/stats/history") && req.method() == HttpMethod.GET) {
            Http.json(req.response(), 200, historyAnswer());
        } else if (path.equals("/v1/check") || path.equals("/v1/checks") || path.equals("/health") || path.equals(LEASE)
                || path.equals("/metrics") || path.equals("/v1/stats") || path.equals("/v1/stats/history")) {
            boolean post = path.startsWith("/v1/check") || path.equals(LEASE);
            Http.error(req.response().putHeader("Allow", post ? "POST" : "GET"), 405,
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
     * Decides one request as {@code POST /v1/check} does, without HTTP: the {@link Decider}'s decision at the
     * ticker's reading, counted, recorded and logged (docs/decisions.md, "Shadow quotas and RateLimit header
     * fields").
     *
     * @param cfg      the configuration snapshot to use
     * @param resource bucket
     * @param key      object key
     * @param op       operation
     * @param g        group size, 1 ≤ g ≤ DF
     * @return the decision
     */
    public CheckResponse decide(QuotaConfig cfg, String resource, String key, S3Operation op, int g) {
        Decider.Decision d = new Decider.Decision();
        checks.decide(cfg, resource, key, op, g, d);
        return d.response(options.id());
    }

    /** Decides one request into a reused holder (see {@link #decide(QuotaConfig, String, String, S3Operation, int)}). */
    void decide(QuotaConfig cfg, String resource, String key, S3Operation op, int g, Decider.Decision out) {
        checks.decide(cfg, resource, key, op, g, out);
    }

    /** Returns the statistics as {@code GET /v1/stats} serves them. */
    public StatsAnswers.StatsAnswer statsAnswer() {
        return StatsAnswers.stats(options.id(), config.revision(), stats);
    }

    /** Returns the per-second history as {@code GET /v1/stats/history} serves it. */
    public StatsAnswers.HistoryAnswer historyAnswer() {
        return StatsAnswers.history(options.id(), stats);
    }

    /** Returns the hot-resources statistics, for diagnostics and tests. */
    public DecisionStats stats() {
        return stats;
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
        return new long[] {metrics.batchSizes.count(), (long) metrics.batchSizes.totalAmount()};
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
        Future<Void> leave = heartbeats.leave();
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
        heartbeats.kill();
        return server.close();
    }

    @Override
    public void close() {
        stop();
    }
}
