package dev.levee.observer;

import dev.levee.core.Member;
import dev.levee.core.MembershipSource;
import dev.levee.core.MembershipView;
import dev.levee.core.Ticker;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Http;
import dev.levee.runtime.Json;
import io.micrometer.core.instrument.Gauge;
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
 * Serves the list of active limiters (docs/design.md §7), from heartbeats in the embedded default.
 *
 * <p>API: {@code POST /v1/heartbeat {"id","address"}} → 204; {@code DELETE /v1/limiters/<id>} →
 * 204/404; {@code GET /v1/limiters} → {@code {revision, factor, limiters:[{id,address}], incarnation,
 * ready, membership}}; {@code GET /health}; {@code GET /metrics}; {@code GET /ui/} the live page when enabled
 * ({@link StatsPage}). Malformed input → 400 with a message.
 *
 * <p>{@code incarnation} is a random id drawn at each start: revisions of two incarnations are not
 * comparable. {@code ready} is false while the list may be incomplete — for one heartbeat TTL after
 * a start (the limiters have not all sent a heartbeat yet), or while etcd is unreachable — and
 * {@code /health} then answers 503; clients keep their last list meanwhile (issue 10).
 *
 * <p>{@code membership} says where the list comes from and so whether revisions of two observers compare
 * (issue 22, item 9): {@code "etcd"} — the revision is etcd's, the same for every observer of one etcd, so a
 * client polling several takes the highest; {@code "heartbeat"} — the revision counts this observer's own
 * changes and means nothing beside another observer's.
 */
public final class ObserverService implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger("levee.observer");

    /**
     * Settings of an observer.
     *
     * @param listen     address to bind (default 127.0.0.1:7000; port 0 picks a free one)
     * @param ttl        a limiter without heartbeat for this long is dropped (default 3 s)
     * @param factor     the group factor DF served to clients, ≥ 1
     * @param maxMembers the most limiters held (default 1024)
     */
    public record Options(HostPort listen, Duration ttl, int factor, int maxMembers) {
        /** Validates the settings. @throws IllegalArgumentException when a value is out of range */
        public Options {
            if (ttl.isNegative() || ttl.isZero()) {
                throw new IllegalArgumentException("ttl must be positive");
            }
            if (factor < 1) {
                throw new IllegalArgumentException("factor must be >= 1");
            }
        }
    }

    /** The answer to {@code GET /v1/limiters}: the source's view with the incarnation and readiness. */
    private record ListAnswer(long revision, int factor, java.util.List<Member> limiters, String incarnation,
                              boolean ready, String membership) {
    }

    /** What {@link #handle} needs besides the membership: this start's incarnation and readiness. */
    private record Status(String incarnation, java.util.function.BooleanSupplier ready, String notReady,
                          String membership, ConfigStatus config) {
        static Status of(java.util.function.BooleanSupplier ready, String notReady, String membership) {
            return of(ready, notReady, membership, ConfigStatus.NONE);
        }

        static Status of(java.util.function.BooleanSupplier ready, String notReady, String membership,
                         ConfigStatus config) {
            byte[] b = new byte[8];
            new java.security.SecureRandom().nextBytes(b);
            return new Status(java.util.HexFormat.of().formatHex(b), ready, notReady, membership, config);
        }
    }

    /**
     * What an etcd-backed observer says about the quota configuration it reads the factor from (issue 22).
     *
     * @param problem     why {@code /health} answers 503 although the membership is ready (refused values in etcd,
     *                    named by key), or null when there is none
     * @param listRefusal why {@code GET /v1/limiters} answers 503 (no factor is known: handing out a wrong one would
     *                    make clients divide quotas wrongly), or null when the list is served
     */
    public record ConfigStatus(java.util.function.Supplier<String> problem,
                               java.util.function.Supplier<String> listRefusal) {
        /** No configuration problem can arise (heartbeat membership, factor given at start). */
        public static final ConfigStatus NONE = new ConfigStatus(() -> null, () -> null);
    }

    private final MembershipSource membership;
    private final HttpServer server;
    private final long sweepTimer;
    private final Vertx vertx;
    private final StatsAggregator stats;

    private ObserverService(Vertx vertx, MembershipSource membership, HttpServer server, long sweepTimer,
                            StatsAggregator stats) {
        this.vertx = vertx;
        this.stats = stats;
        this.membership = membership;
        this.server = server;
        this.sweepTimer = sweepTimer;
    }

    /**
     * Starts an observer over another membership source (etcd): heartbeats are refused with 409, and
     * {@code /health} answers 503 while {@code ready} is false.
     *
     * @param listen address to bind
     * @param source the membership source
     * @param ready  whether the source is in contact with its origin
     * @return the running service once it listens
     */
    public static Future<ObserverService> start(Vertx vertx, HostPort listen, MembershipSource source,
                                                java.util.function.BooleanSupplier ready, MeterRegistry registry) {
        return start(vertx, listen, source, ready, registry, StatsAggregator.DEFAULT_TIMEOUT);
    }

    /**
     * As {@link #start(Vertx, HostPort, MembershipSource, java.util.function.BooleanSupplier, MeterRegistry)},
     * with the timeout of each limiter's answer to the statistics' fetch (default 1 s).
     */
    public static Future<ObserverService> start(Vertx vertx, HostPort listen, MembershipSource source,
                                                java.util.function.BooleanSupplier ready, MeterRegistry registry,
                                                Duration statsTimeout) {
        return start(vertx, listen, source, ready, registry, statsTimeout, null);
    }

    /**
     * As {@link #start(Vertx, HostPort, MembershipSource, java.util.function.BooleanSupplier, MeterRegistry, Duration)},
     * serving the live page at {@code /ui/} unless {@code page} is null (CLI {@code --ui}, default off).
     */
    public static Future<ObserverService> start(Vertx vertx, HostPort listen, MembershipSource source,
                                                java.util.function.BooleanSupplier ready, MeterRegistry registry,
                                                Duration statsTimeout, StatsPage page) {
        return start(vertx, listen, source, ready, registry, statsTimeout, page, ConfigStatus.NONE);
    }

    /**
     * As {@link #start(Vertx, HostPort, MembershipSource, java.util.function.BooleanSupplier, MeterRegistry, Duration,
     * StatsPage)}, with what the quota configuration in etcd says ({@code /health} 503 naming refused keys; the list
     * refused while no factor is known; issue 22).
     */
    public static Future<ObserverService> start(Vertx vertx, HostPort listen, MembershipSource source,
                                                java.util.function.BooleanSupplier ready, MeterRegistry registry,
                                                Duration statsTimeout, StatsPage page, ConfigStatus config) {
        StatsAggregator stats = new StatsAggregator(vertx, statsTimeout);
        Gauge.builder("levee_observer_limiters", () -> source.view().limiters().size())
                .description("active limiters").register(registry);
        Status status = Status.of(ready, "etcd unreachable", "etcd", config);
        return Http.listen(vertx, listen, req -> {
            if (StatsPage.owns(req.path())) {
                StatsPage.handle(page, req);
            } else if (req.path().equals("/v1/heartbeat")) {
                Http.error(req.response(), 409, "membership comes from etcd leases; heartbeats are not used");
            } else {
                handle(req, null, source, registry, status, stats);
            }
        }).map(server -> {
            // not a second "listening" line: `levee observer` announces its address itself (issue 26 item 9)
            LOG.info("observer serving membership from etcd on port {}, incarnation {}", server.actualPort(),
                    status.incarnation());
            return new ObserverService(vertx, source, server, -1, stats);
        });
    }

    /**
     * Starts an observer with membership from heartbeats. For one TTL after the start its list is
     * marked not ready (and {@code /health} answers 503): limiters that are alive may not have sent
     * their heartbeat to this new incarnation yet.
     *
     * @return the running service once it listens
     */
    public static Future<ObserverService> start(Vertx vertx, Options options, Ticker ticker, MeterRegistry registry) {
        return start(vertx, options, ticker, registry, StatsAggregator.DEFAULT_TIMEOUT);
    }

    /**
     * As {@link #start(Vertx, Options, Ticker, MeterRegistry)}, with the timeout of each limiter's answer to
     * the statistics' fetch (default 1 s, CLI {@code --stats-timeout}).
     */
    public static Future<ObserverService> start(Vertx vertx, Options options, Ticker ticker, MeterRegistry registry,
                                                Duration statsTimeout) {
        return start(vertx, options, ticker, registry, statsTimeout, null);
    }

    /**
     * As {@link #start(Vertx, Options, Ticker, MeterRegistry, Duration)}, serving the live page at {@code /ui/}
     * unless {@code page} is null (CLI {@code --ui}, default off).
     */
    public static Future<ObserverService> start(Vertx vertx, Options options, Ticker ticker, MeterRegistry registry,
                                                Duration statsTimeout, StatsPage page) {
        StatsAggregator stats = new StatsAggregator(vertx, statsTimeout);
        HeartbeatMembership membership = new HeartbeatMembership(ticker, options.ttl().toNanos(), options.factor(),
                options.maxMembers());
        Gauge.builder("levee_observer_limiters", () -> membership.view().limiters().size())
                .description("active limiters").register(registry);
        long started = ticker.read();
        long ttlNs = options.ttl().toNanos();
        Status status = Status.of(() -> ticker.read() - started >= ttlNs, "collecting heartbeats", "heartbeat");
        return Http.listen(vertx, options.listen(), req -> {
            if (StatsPage.owns(req.path())) {
                StatsPage.handle(page, req);
            } else {
                handle(req, membership, membership, registry, status, stats);
            }
        }).map(server -> {
            long every = Math.max(100, options.ttl().toMillis() / 4);
            long[] lastRevision = {0};
            long timer = vertx.setPeriodic(every, id -> {
                MembershipView v = membership.view();
                if (v.revision() != lastRevision[0]) {
                    lastRevision[0] = v.revision();
                    LOG.info("limiters revision={} factor={} members={}", v.revision(), v.factor(),
                            v.limiters().stream().map(m -> m.id() + "@" + m.address()).toList());
                }
            });
            // not a second "listening" line: `levee observer` announces its address itself (issue 26 item 9)
            LOG.info("observer serving membership from heartbeats on port {}: ttl={}ms factor={} incarnation={} (list"
                    + " ready after one ttl)", server.actualPort(), options.ttl().toMillis(), options.factor(),
                    status.incarnation());
            return new ObserverService(vertx, membership, server, timer, stats);
        });
    }

    private record Heartbeat(String id, String address) {
    }

    private static void handle(HttpServerRequest req, HeartbeatMembership heartbeats, MembershipSource membership,
                               MeterRegistry registry, Status status, StatsAggregator stats) {
        String path = req.path();
        try {
            if (path.equals("/v1/stats") && req.method() == HttpMethod.GET) {
                stats.aggregate(membership.view()).onComplete(ar -> {
                    if (ar.succeeded()) {
                        Http.json(req.response(), 200, ar.result());
                    } else {
                        LOG.error("statistics aggregation failed", ar.cause());
                        Http.error(req.response(), 500, "internal error");
                    }
                });
                return;
            }
            if (path.equals("/v1/stats/history") && req.method() == HttpMethod.GET) {
                stats.history(membership.view()).onComplete(ar -> {
                    if (ar.succeeded()) {
                        Http.json(req.response(), 200, ar.result());
                    } else {
                        LOG.error("statistics history failed", ar.cause());
                        Http.error(req.response(), 500, "internal error");
                    }
                });
                return;
            }
            if (path.equals("/v1/limiters") && req.method() == HttpMethod.GET
                    && status.config().listRefusal().get() != null) {
                Http.error(req.response(), 503, status.config().listRefusal().get());
            } else if (path.equals("/v1/limiters") && req.method() == HttpMethod.GET) {
                MembershipView v = membership.view();
                Http.json(req.response(), 200, new ListAnswer(v.revision(), v.factor(), v.limiters(), status.incarnation(),
                        status.ready().getAsBoolean(), status.membership()));
            } else if (path.equals("/v1/heartbeat") && req.method() == HttpMethod.POST && heartbeats != null) {
                Http.withBody(req, body -> {
                    try {
                        Heartbeat hb = Json.parse(body, Heartbeat.class);
                        heartbeats.heartbeat(hb.id(), hb.address());
                        req.response().setStatusCode(204).end();
                    } catch (IllegalArgumentException e) {
                        Http.error(req.response(), 400, e.getMessage());
                    }
                });
            } else if (path.startsWith("/v1/limiters/") && req.method() == HttpMethod.DELETE && heartbeats != null) {
                String id = path.substring("/v1/limiters/".length());
                if (heartbeats.leave(id)) {
                    LOG.info("limiter left id={}", dev.levee.runtime.LogText.escape(id));
                    req.response().setStatusCode(204).end();
                } else {
                    Http.error(req.response(), 404, "no such limiter");
                }
            } else if (path.equals("/health") && req.method() == HttpMethod.GET) {
                boolean ready = status.ready().getAsBoolean();
                String problem = ready ? status.config().problem().get() : null;
                boolean ok = ready && problem == null;
                Http.json(req.response(), ok ? 200 : 503, Map.of("status", ok ? "ready" : !ready ? status.notReady()
                        : problem, "incarnation", status.incarnation()));
            } else if (path.equals("/metrics") && req.method() == HttpMethod.GET) {
                Http.metrics(req, registry);
            } else {
                Http.error(req.response(), 404, "no such endpoint: " + req.method() + " " + path);
            }
        } catch (RuntimeException e) {
            LOG.error("observer request failed", e);
            Http.error(req.response(), 500, "internal error");
        }
    }

    /** Returns the membership source, for the embedding process. */
    public MembershipSource membership() {
        return membership;
    }

    /** Returns the bound port. */
    public int port() {
        return server.actualPort();
    }

    /** Stops listening at once. */
    public Future<Void> stop() {
        if (sweepTimer >= 0) {
            vertx.cancelTimer(sweepTimer);
        }
        stats.close();
        return server.close();
    }

    /**
     * Stops gracefully: stops accepting connections, answers the requests in flight, and closes each
     * connection once answered or after {@code timeout} at the latest (issue 10).
     *
     * @param timeout longest wait (CLI {@code --shutdown-deadline}, default 5 s)
     * @return completes once every connection is closed
     */
    public Future<Void> stop(Duration timeout) {
        if (sweepTimer >= 0) {
            vertx.cancelTimer(sweepTimer);
        }
        return server.shutdown(timeout).eventually(stats::close);
    }

    @Override
    public void close() {
        stop();
    }
}
