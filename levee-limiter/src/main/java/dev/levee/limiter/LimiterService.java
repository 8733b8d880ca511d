package dev.levee.limiter;

import dev.levee.core.Gcra;
import dev.levee.core.GcraLimit;
import dev.levee.core.GcraTable;
import dev.levee.core.S3Operation;
import dev.levee.core.Ticker;
import dev.levee.config.QuotaSource;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.ResolvedQuota;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Http;
import dev.levee.runtime.Json;
import dev.levee.runtime.LogText;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
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
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides checks: resolves the quota (SPEC.md §4), divides its rate by the group size {@code g}
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
    private static final Logger DECISIONS = LoggerFactory.getLogger("levee.limiter.decision");

    /**
     * Settings of a limiter.
     *
     * @param id        stable id, the HRW member id (1–128 of {@code [A-Za-z0-9._:-]})
     * @param listen    address to bind (default 127.0.0.1:7100; port 0 picks a free one)
     * @param advertise address clients reach this limiter at; null: the bound address
     * @param observer  observer to send heartbeats to; null: none (membership elsewhere)
     * @param heartbeat heartbeat interval (default 1 s)
     * @param maxKeys   cap of the GCRA state table in key slots of 256 bytes (default 1 000 000; see
     *                  {@link GcraTable#slots})
     */
    public record Options(String id, HostPort listen, HostPort advertise, HostPort observer, Duration heartbeat,
                          long maxKeys) {
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
        }
    }

    /** Period of the table's maintenance when idle, ms. */
    private static final long MAINTENANCE_MS = 1000;

    private final Options options;
    private final QuotaSource config;
    private final GcraTable table;
    private final MeterRegistry registry;
    private final Map<String, Map<String, Counter>> counters = new ConcurrentHashMap<>();
    private final Vertx vertx;
    private final io.micrometer.core.instrument.DistributionSummary batchSizes;
    private HttpServer server;
    private HttpClientAgent heartbeatClient;
    private long heartbeatTimer = -1;
    private long maintenanceTimer = -1;
    private volatile HostPort advertised;

    private LimiterService(Vertx vertx, Options options, QuotaSource config, Ticker ticker,
                           MeterRegistry registry) {
        this.vertx = vertx;
        this.options = options;
        this.config = config;
        this.registry = registry;
        this.table = GcraTable.create(ticker, options.maxKeys());
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
    }

    /**
     * Starts a limiter.
     *
     * @param config supplies the configuration snapshot in force; read once per decision
     * @return the running service once it listens
     */
    public static Future<LimiterService> start(Vertx vertx, Options options, QuotaSource config,
                                               Ticker ticker, MeterRegistry registry) {
        LimiterService s = new LimiterService(vertx, options, config, ticker, registry);
        return Http.listen(vertx, options.listen(), s::handle).map(server -> {
            s.server = server;
            // expired keys leave the table even when no request arrives to trigger Caffeine's maintenance;
            // on a worker thread, as a flood's expiry can take a while
            s.maintenanceTimer = vertx.setPeriodic(MAINTENANCE_MS, t -> vertx.executeBlocking(() -> {
                s.table.cleanUp();
                return null;
            }, false));
            s.advertised = options.advertise() != null ? options.advertise()
                    : new HostPort(options.listen().host(), server.actualPort());
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

    private void sendHeartbeat() {
        byte[] body = Json.write(Map.of("id", options.id(), "address", advertised.toString()));
        heartbeatClient.request(new RequestOptions().setMethod(HttpMethod.POST).setHost(options.observer().host())
                        .setPort(options.observer().port()).setURI("/v1/heartbeat").setTimeout(2000)
                        .putHeader("Content-Type", "application/json"))
                .compose(r -> r.send(Buffer.buffer(body)))
                .onSuccess(resp -> {
                    if (resp.statusCode() != 204) {
                        LOG.warn("observer refused heartbeat of {}: HTTP {}", options.id(), resp.statusCode());
                    }
                })
                .onFailure(e -> LOG.warn("heartbeat to observer {} failed: {}", options.observer(),
                        e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()));
    }

    private void handle(HttpServerRequest req) {
        String path = req.path();
        if (path.equals("/v1/check") && req.method() == HttpMethod.POST) {
            Http.withBody(req, body -> check(req, body));
        } else if (path.equals("/v1/checks") && req.method() == HttpMethod.POST) {
            Http.withBody(req, CheckBatch.MAX_BODY, body -> checkBatch(req, body));
        } else if (path.equals("/health") && req.method() == HttpMethod.GET) {
            boolean ready = config.ready();
            Http.json(req.response(), ready ? 200 : 503, Map.of("status", ready ? "ready" : "configuration source unreachable",
                    "id", options.id(), "revision", config.revision()));
        } else if (path.equals("/metrics") && req.method() == HttpMethod.GET) {
            Http.metrics(req, registry);
        } else if (path.equals("/v1/check") || path.equals("/v1/checks") || path.equals("/health")
                || path.equals("/metrics")) {
            Http.error(req.response().putHeader("Allow", path.startsWith("/v1/check") ? "POST" : "GET"), 405,
                    "method " + req.method() + " not allowed on " + path);
        } else {
            Http.error(req.response(), 404, "no such endpoint: " + req.method() + " " + LogText.escape(path, 200));
        }
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
            Http.json(req.response(), 500, new CheckResponse("failed", null, null, 0, 0, options.id(), 0, 0));
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
        batchSizes.record(batch.checks().size());
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
                decisions.add(new CheckResponse("failed", null, null, 0, 0, options.id(), 0, 0));
            }
        }
        Http.json(req.response(), 200, Map.of("decisions", decisions));
    }

    /**
     * Decides one request (the HTTP-free core of {@code POST /v1/check}).
     *
     * @param cfg      the configuration snapshot to use
     * @param resource bucket
     * @param key      object key
     * @param op       operation
     * @param g        group size, 1 ≤ g ≤ DF
     * @return the decision
     */
    public CheckResponse decide(QuotaConfig cfg, String resource, String key, S3Operation op, int g) {
        ResolvedQuota rq = cfg.resolve(resource, key, op);
        GcraLimit limit = GcraLimit.of(rq.quota().rate(), rq.quota().burst(), g);
        long r = table.attempt(rq.limitKey(), limit);
        boolean ok = Gcra.admitted(r);
        String result = ok ? "accepted" : "rejected";
        long retry = Gcra.retryAfterSeconds(r);
        long remaining = ok ? r : 0;
        count(result, rq.level().label());
        if (DECISIONS.isInfoEnabled()) {
            DECISIONS.info("decision result={} resource={} key={} op={} level={} limit_key={} rate={} burst={} g={}"
                            + " remaining={} retry_after={} limiter={}",
                    result, LogText.escape(resource), LogText.escape(key), op, rq.level().label(),
                    LogText.escape(rq.limitKey()), rq.quota().rate(), rq.quota().burst(), g, remaining, retry,
                    options.id());
        }
        return new CheckResponse(result, rq.level().label(), rq.limitKey(), remaining, retry, options.id(),
                rq.quota().rate(), rq.quota().burst());
    }

    private void count(String result, String level) {
        Map<String, Counter> byLevel = counters.computeIfAbsent(result, r -> new ConcurrentHashMap<>());
        byLevel.computeIfAbsent(level, k -> Counter.builder("levee_limiter_decisions_total")
                .description("decisions by result and matched quota level")
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

    /** Leaves the observer (when configured) and stops listening. */
    public Future<Void> stop() {
        vertx.cancelTimer(maintenanceTimer);
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
        return leave.compose(v -> server.close());
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
