package dev.levee.gateway;

import dev.levee.client.LeveeClient;
import dev.levee.core.ByteUnits;
import dev.levee.core.Ticker;
import dev.levee.governor.Direction;
import dev.levee.runtime.Http;
import dev.levee.runtime.LogText;
import dev.levee.s3.S3Operation;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.PoolOptions;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Streams S3 requests to a backend (docs/design.md §1, §2 levee-gateway, §8): a reverse proxy that never
 * buffers a body whole, checks each request with a {@link LeveeClient} when no NGINX is in front,
 * and, when {@linkplain GovernanceSettings governance} is on, shapes every body through the
 * bandwidth governor of its direction and admits uploads and downloads per principal.
 *
 * <h2>Parts, and where each lives</h2>
 * <ul>
 *   <li>{@link GatewayOptions} (with its builder, {@link GatewayOptions.ClientDeadlines} and
 *       {@link GatewayOptions.OnFailure}): the settings, validated at construction.</li>
 *   <li>This class: the listeners, the client connections (request-head deadline, malformed heads,
 *       connection faults), the backend's HTTP client, readiness, the site watch (failing closed said
 *       loudly, and a first-permits wait refused when the site's shares expire), and shutdown.</li>
 *   <li>{@link Exchange}: one request's state machine below ("One request"): identification, rate check,
 *       admission, forward, the backend request with its one retry and {@code 100-continue}, the body
 *       stream, relay (early answers included), and the release of what it holds.</li>
 *   <li>{@link AdminEndpoint}: the admin listener's routes.</li>
 *   <li>{@link ErrorAnswers}: the gateway's own S3 error answers, with the bodies {@link SlowDown}
 *       renders; {@link GatewayCounters}: what is counted.</li>
 *   <li>Beside them, the pieces an exchange is made of: {@link Governance} (principals, governors,
 *       admission), {@link GovernedPipe}, {@link WatchedBody} and {@link ProgressDeadline} (the body's
 *       deadline), {@link BackendWatch} and {@link BackendSink} ({@code --backend-timeout}),
 *       {@link EarlyAnswer}, {@link ResponseSink} (the send timeout).</li>
 * </ul>
 * Time comes from the {@link Ticker} and the wall {@link Clock} given to {@link #start}: the assembling
 * code chooses them; nothing here reads the system clock.
 *
 * <h2>One request</h2>
 * <ol>
 *   <li>The request is paused: nothing of its body is read yet.</li>
 *   <li>Governance on: its principal is the account owning the access key id it claims (SigV4
 *       {@code Authorization}, presigned {@code X-Amz-Credential}, SigV2 forms), else the
 *       anonymous principal, or it is refused with {@code 403 AccessDenied} when anonymous
 *       requests are refused. When that key has a secret in the principals file, the claim
 *       counts only if the request's SigV4 or SigV2 signature verifies ({@link SigV4Verifier},
 *       {@link SigV2Verifier}); otherwise
 *       the request is refused ({@code 403 SignatureDoesNotMatch}, {@code RequestTimeTooSkewed},
 *       {@code AccessDenied}, or {@code 400} when malformed) before anything is charged.</li>
 *   <li>Enforcement on: the request-rate check (docs/design.md §1); refusal is {@code 503 SlowDown}.</li>
 *   <li>Governance on: {@code PutObject}, {@code UploadPart}, {@code PostObject} wait for a
 *       mutating-upload slot of their principal, {@code GetObject} for a download slot; a full
 *       queue or the wait's timeout is {@code 503 SlowDown} with {@code Retry-After}.</li>
 *   <li>A request body is sent to the backend only once the backend asked for it ({@code Expect:
 *       100-continue} is always sent; its {@code 100 Continue} is relayed to a client that asked),
 *       or after the continue timeout; an early answer of the backend is relayed.</li>
 *   <li>The request body, if charged ({@link TransferPolicy}), flows through a {@link GovernedPipe}
 *       of the upload governor: its first permits are taken before the backend is called (a
 *       refusal is still a clean 503), then the body is read from the client only as permits
 *       arrive. Otherwise it is piped as is. Bytes pass unchanged, aws-chunked framing included.</li>
 *   <li>The response body, if charged, flows through a pipe of the download governor: its first
 *       permits are taken before the status line is written, then bytes are written to the client
 *       only as permits arrive, and the backend is read only as fast.</li>
 *   <li>The end of the exchange (response ended, or the connection closed) releases the slot and
 *       cancels a waiting permit request.</li>
 * </ol>
 * The request line, Host and headers reach the backend as the client sent them (so SigV4
 * signatures stay valid), minus hop-by-hop headers.
 *
 * <h2>Admin listener</h2>
 * {@code GET /health} (liveness), {@code GET /health/ready} (readiness and aggregated counters,
 * behind a bearer token), {@code GET /metrics} (Prometheus) and {@code GET /openapi.yaml} (the
 * contract), on their own listener so that no bucket name is shadowed.
 *
 * <h2>Shutdown</h2>
 * {@link #stop}: new connections are refused and new requests on open ones get 503; the admission
 * queues are closed (waiters are answered 503); in-flight requests go on, their transfers still
 * granted permits, until they end or the deadline; then the listeners, the backend client, the
 * governors and the timer thread are closed.
 *
 * <h2>Slow and faulty clients</h2>
 * A connection must deliver a complete request head within the request-header timeout; a request
 * body must progress ({@link ProgressDeadline}, measured only while the gateway reads it) or it is
 * answered {@code 400 RequestTimeout} and everything it holds is freed. Client faults (malformed
 * heads, bad chunked framing, resets) are one DEBUG line each and counted, never an ERROR.
 *
 * <h2>A slow backend</h2>
 * {@code --backend-timeout} bounds the backend's own slowness only ({@link BackendWatch}): a body write that does not
 * reach its socket, the request's end to the status line, a response read that brings nothing; past it the client
 * gets {@code 504 GatewayTimeout} (or a cut once the status line is out). Time the gateway holds an upload's body
 * (the governor, its client) or does not read a response never counts.
 */
public final class GatewayService implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger("levee.gateway");
    /**
     * Largest body chunk the HTTP decoders deliver, bytes: one quantum. Vert.x's default (8 KiB)
     * costs a write and a flush per 8 KiB on the other connection (docs/BENCHMARKS.md).
     */
    private static final int BODY_CHUNK_BYTES = 64 * 1024;

    private final Vertx vertx;
    private final GatewayOptions options;
    private final LeveeClient client;
    private final HttpClientAgent backend;
    private final Governance governance;
    /** The monotonic time of deadlines, the site watch and shutdown, ns. */
    private final Ticker ticker;
    private final GatewayCounters counters;
    private final AtomicInteger inFlight = new AtomicInteger();
    /** The S3 listener's open connections and what they wait for; each entry is used on its connection's loop. */
    private final Map<HttpConnection, Conn> connections = new ConcurrentHashMap<>();
    /** What every exchange shares. */
    private final Exchange.Shared shared;
    private volatile boolean closing;
    private Future<Void> stopped;
    private HttpServer s3Server;
    private HttpServer adminServer;

    private GatewayService(Vertx vertx, GatewayOptions options, LeveeClient client, Ticker ticker, Clock wallClock,
                           MeterRegistry registry) {
        this.vertx = vertx;
        this.options = options;
        this.client = client;
        this.ticker = ticker;
        this.counters = new GatewayCounters(registry);
        this.governance = options.governance().enabled() ? new Governance(options.governance(), ticker) : null;
        if (governance != null) {
            governance.bind(registry);
        }
        if (governance != null && governance.site() != null) {
            governance.site().bind(registry);
        }
        // no idle timeout on the backend's connections: --backend-timeout is watched per exchange (BackendWatch),
        // counting only the backend's own slowness; an all-idle timeout of the connection also counted the time the
        // gateway held an upload's body (the governor, its client) and cut it. Pooled idle connections still close
        // after the keep-alive timeout (60 s)
        this.backend = vertx.httpClientBuilder().with(new HttpClientOptions()
                        .setKeepAlive(true)
                        .setTcpNoDelay(true)
                        .setIdleTimeout(0)
                        .setConnectTimeout(5000)
                        .setMaxInitialLineLength(16 * 1024)
                        .setMaxHeaderSize(64 * 1024)
                        .setMaxChunkSize(BODY_CHUNK_BYTES))
                .with(new PoolOptions().setHttp1MaxSize(options.maxConnections()).setMaxWaitQueueSize(-1))
                .withConnectHandler(GatewayService::keepReadingAfterAFailedWrite)
                .build();
        this.shared = new Exchange.Shared(vertx, options, client, governance, backend, ticker, wallClock, counters,
                inFlight, () -> closing, this::failingClosed, this::refusePrepayWhenFailingClosed);
    }

    /**
     * Keeps a backend connection open for reading when a write to it fails (issue 22, item 5). A backend that
     * answers early (404 NoSuchBucket, 403) closes its connection with the request body unread, and its kernel
     * resets it; the gateway's next write of the body then fails, and Netty's default (auto-close) closed the
     * socket at once — before the answer, already in the socket's receive buffer, was read (Netty handles a
     * channel's writes before its reads): the client got {@code 502} ("Connection was closed") for an answer that
     * had arrived. Without auto-close, a failed write only shuts the output down: the answer is read, then the
     * reset or the end of the stream closes the connection. Uses Vert.x's {@code ConnectionBase} (implementation,
     * as {@link Exchange#closeNow}); another connection type keeps Netty's default.
     */
    private static void keepReadingAfterAFailedWrite(HttpConnection connection) {
        if (connection instanceof io.vertx.core.net.impl.ConnectionBase base) {
            base.channel().config().setAutoClose(false);
        } else {
            LOG.debug("backend connection {} is not a ConnectionBase: a failed write closes it",
                    connection.getClass().getName());
        }
    }

    /**
     * Starts a gateway.
     *
     * @param client    the check client; may be null only when {@code options.enforce()} is false
     * @param ticker    the monotonic time of deadlines, governors and shutdown ({@code SystemTicker} in production)
     * @param wallClock the wall clock that signed requests' dates are compared with ({@code Clock.systemUTC()} in
     *                  production; SigV4 dates are wall-clock times)
     * @return the running service once both listeners are bound
     * @throws IllegalArgumentException when enforcement is on and no client is given
     */
    public static Future<GatewayService> start(Vertx vertx, GatewayOptions options, LeveeClient client, Ticker ticker,
                                               Clock wallClock, MeterRegistry registry) {
        if (options.enforce() && client == null) {
            throw new IllegalArgumentException("enforcement needs a levee client");
        }
        GatewayService g = new GatewayService(vertx, options, client, ticker, wallClock, registry);
        HttpServerOptions s3Options = new HttpServerOptions()
                .setHost(options.listen().host()).setPort(options.listen().port())
                .setTcpNoDelay(true).setReuseAddress(true)
                .setIdleTimeout(120)
                .setMaxInitialLineLength(16 * 1024).setMaxHeaderSize(64 * 1024)
                .setMaxChunkSize(BODY_CHUNK_BYTES)
                .setHandle100ContinueAutomatically(false)
                .setHttp2ClearTextEnabled(false);
        AdminEndpoint admin = new AdminEndpoint(registry, options.healthToken(), () -> g.closing, g.inFlight::get,
                g::readyReport);
        return g.listenS3(s3Options)
                .compose(s -> {
                    g.s3Server = s;
                    return Http.listen(vertx, options.admin(), admin);
                })
                .map(a -> {
                    g.adminServer = a;
                    LOG.info("gateway S3 listener on {}:{} admin on {}:{} backend {} enforce={} on_failure={} {}",
                            options.listen().host(), g.s3Server.actualPort(), options.admin().host(), a.actualPort(),
                            options.backend(), options.enforce(), options.onFailure(),
                            GatewayOptions.describe(options.governance()));
                    if (options.healthToken() == null) {
                        LOG.warn("no health token configured: GET /health/ready answers 401 to every request");
                    }
                    if (g.governance != null && g.governance.site() != null) {
                        g.siteWatchSince = g.ticker.read();
                        g.siteWatch = vertx.setPeriodic(SITE_WATCH_MS, t -> g.watchSite());
                    }
                    return g;
                })
                .onFailure(e -> {
                    if (g.governance != null) {
                        g.governance.close();
                    }
                });
    }

    /**
     * Starts the S3 listener on an event loop of its own (as {@link Http#listen} does), with the
     * handlers that watch its connections: the request-head deadline, malformed requests and
     * connection errors (one DEBUG line each, counted; never an ERROR with a stack trace).
     */
    private Future<HttpServer> listenS3(HttpServerOptions s3Options) {
        Promise<HttpServer> bound = Promise.promise();
        vertx.deployVerticle(new VerticleBase() {
            @Override
            public Future<?> start() {
                return vertx.createHttpServer(s3Options)
                        .connectionHandler(GatewayService.this::connected)
                        .invalidRequestHandler(GatewayService.this::invalidRequest)
                        .exceptionHandler(e -> connectionError(null, e))
                        .requestHandler(GatewayService.this::proxy)
                        .listen().onComplete(bound);
            }
        }).onFailure(bound::tryFail);
        return bound.future();
    }

    // ---------------------------------------------------------------- client connections

    /** One client connection: the timer of its request-head deadline. Used on its event loop only. */
    private final class Conn {
        final HttpConnection connection;
        long headTimer = -1;

        Conn(HttpConnection connection) {
            this.connection = connection;
        }

        /** Waits for a complete request head: from the accept, or from the end of the previous response. */
        void awaitHead() {
            cancelHead();
            headTimer = vertx.setTimer(options.clientDeadlines().requestHeaderTimeout().toMillis(), t -> {
                headTimer = -1;
                counters.headerTimeouts.increment();
                counters.count("header_timeout");
                LOG.debug("closing a connection from {}: no complete request head within {} ms",
                        connection.remoteAddress(), options.clientDeadlines().requestHeaderTimeout().toMillis());
                connection.close();
            });
        }

        void cancelHead() {
            if (headTimer >= 0) {
                vertx.cancelTimer(headTimer);
                headTimer = -1;
            }
        }
    }

    private void connected(HttpConnection c) {
        limitNotSent(c, options.governance().notSentLowWatermark());
        Conn conn = new Conn(c);
        connections.put(c, conn);
        c.exceptionHandler(e -> connectionError(c, e));
        c.closeHandler(v -> {
            conn.cancelHead();
            connections.remove(c);
        });
        conn.awaitHead();
    }

    /**
     * Sets {@code TCP_NOTSENT_LOWAT} on a client connection (GovernanceSettings#notSentLowWatermark): the
     * kernel then takes no more of a response than that beyond what it is sending, so bytes the governor
     * granted leave when granted, not later from a send buffer autotuned to megabytes. Only with Netty's
     * native epoll transport (Vert.x's {@code ConnectionBase}: implementation, not API); elsewhere, or with
     * {@code bytes} 0, the kernel's setting stays.
     */
    static void limitNotSent(HttpConnection c, int bytes) {
        if (bytes > 0 && c instanceof io.vertx.core.net.impl.ConnectionBase base
                && base.channel() instanceof io.netty.channel.epoll.EpollSocketChannel ch) {
            ch.config().setTcpNotSentLowAt(bytes);
        }
    }

    /** A request whose head Netty could not decode: answered by Vert.x's default (400, 414, 431), counted. */
    private void invalidRequest(HttpServerRequest req) {
        counters.malformedRequests.increment();
        counters.count("malformed");
        Throwable cause = req.decoderResult() == null ? null : req.decoderResult().cause();
        LOG.debug("malformed request from {}: {}", req.remoteAddress(),
                LogText.escape(cause == null ? "undecodable request" : String.valueOf(cause.getMessage())));
        HttpServerRequest.DEFAULT_INVALID_REQUEST_HANDLER.handle(req);
    }

    /** A client connection failed (reset, bad framing): one DEBUG line, counted. */
    private void connectionError(HttpConnection c, Throwable e) {
        counters.connectionErrors.increment();
        counters.count("connection_error");
        LOG.debug("client connection {} failed: {}", c == null ? "" : c.remoteAddress(), LogText.escape(e.toString()));
    }

    /**
     * The request failed on the client's side before its body was piped (a reset while it waits
     * for admission): one DEBUG line, counted; the close handler releases what it holds.
     */
    private void clientFault(HttpServerRequest req, Throwable e) {
        counters.connectionErrors.increment();
        counters.count("client_error");
        LOG.debug("{} {} from {} failed on the client's side: {}", req.method(), LogText.escape(req.path()),
                req.remoteAddress(), LogText.escape(e.toString()));
    }

    /** Returns what {@code GET /health/ready} reports now: aggregated counters, no principal ids. */
    public ReadyReport readyReport() {
        // with enforcement and no limiter known, every check fails: requests pass (allow) or are refused
        // (deny) by --on-failure, and the gateway is not ready (docs/design.md §11); the client warns in its log.
        // With site budgets, expired shares also make it not ready (docs/design.md §10)
        String status = closing ? "closing"
                : governance != null && governance.site() != null && governance.site().failingClosed() ? "site_shares_expired"
                : options.enforce() && client != null && client.failingOpen()
                        ? (options.onFailure() == GatewayOptions.OnFailure.DENY ? "failing_closed" : "failing_open")
                : options.enforce() && client != null && !client.observerReachable() ? "observer_unreachable"
                : "ready";
        return new ReadyReport(status, inFlight(),
                governance == null ? ReadyReport.GovernanceReport.off() : governance.report(), counters.clientFaults());
    }

    // ---------------------------------------------------------------- S3 listener

    /** A request: paused (nothing of its body is read yet), then an {@link Exchange} counted in flight. */
    private void proxy(HttpServerRequest req) {
        req.pause();
        Conn conn = connections.get(req.connection());
        if (conn != null) {
            conn.cancelHead();
        }
        req.exceptionHandler(e -> clientFault(req, e));
        if (closing) {
            ErrorAnswers.refuse(req, 1, "gateway shutting down", closing);
            return;
        }
        Exchange ex = new Exchange(shared, req, vertx.getOrCreateContext(), () -> {
            if (conn != null && connections.containsKey(conn.connection) && !closing) {
                conn.awaitHead(); // a keep-alive connection waits for its next request head
            }
        });
        inFlight.incrementAndGet();
        ex.begin();
    }

    // ---------------------------------------------------------------- site watch

    /** How often the site's state is looked at for the WARN of failing closed: 500 ms. */
    private static final long SITE_WATCH_MS = 500;
    /** Failing closed on the site's shares, said at once, again every 10 s while it lasts, and when it ends. */
    private final dev.levee.runtime.LoudCondition siteClosed =
            new dev.levee.runtime.LoudCondition(dev.levee.runtime.LoudCondition.DEFAULT_INTERVAL);
    private long siteWatch = -1;
    /** When the watch began, ticker ns: before a first budget is read, failing closed is said after 5 s only. */
    private long siteWatchSince;

    /**
     * Says failing closed on the site's shares as it begins, every 10 s while it lasts and once when it ends
     * (docs/design.md §11: a degraded state is loud), like failing open: every governed request of the direction is then
     * refused with 503 SlowDown and open transfers stall (docs/site-bandwidth.md, "Fail closed"). Before, the first
     * line came from the lease keeper only once etcd answered again, and a gateway that started without etcd said
     * nothing at all.
     */
    private void watchSite() {
        var status = governance.site().keeper().status();
        java.util.List<String> closedDirections = new java.util.ArrayList<>();
        for (Direction d : Direction.values()) {
            if (status.failingClosed(d)) {
                closedDirections.add(d.name().toLowerCase(java.util.Locale.ROOT));
            }
        }
        String reason = closedDirections.isEmpty() ? null : String.join(" and ", closedDirections)
                + (!status.budgetKnown() ? " (no site budget read from etcd yet)"
                : !status.leaseHeld() ? " (no site lease held)" : " (the site shares expired: etcd not answering)");
        long now = ticker.read();
        if (!status.budgetKnown() && now - siteWatchSince < 5_000_000_000L) {
            return; // etcd is being asked for the first time: not yet a condition worth a WARN
        }
        var r = siteClosed.update(now, reason);
        switch (r.kind()) {
            case BEGAN -> LOG.warn("failing closed on the site bandwidth budget: {}; governed requests get 503 SlowDown"
                    + " and open transfers stall until the shares are renewed", r.reason());
            case LASTS -> LOG.warn("still failing closed on the site bandwidth budget after {} s: {}", r.seconds(),
                    r.reason());
            case ENDED -> LOG.info("site bandwidth shares held again after {} s failing closed", r.seconds());
            default -> {
            }
        }
    }

    /** How often a request waiting for its first permits looks whether the site's shares expired: 250 ms. */
    private static final long PREPAY_WATCH_MS = 250;

    /**
     * While {@code pipe}'s prepay waits for its first permits, watches the site's shares: once they expire (failing
     * closed), the request is refused with {@code 503 SlowDown} as a new one would be, instead of waiting, without a
     * status line, until etcd answers again (found by breaking it: 25 s for the length of an outage). Nothing
     * without site leases, or when the permits came at once.
     */
    private void refusePrepayWhenFailingClosed(Exchange ex, GovernedPipe pipe) {
        if (governance == null || governance.site() == null || !pipe.prepaying()) {
            return;
        }
        vertx.setPeriodic(PREPAY_WATCH_MS, id -> {
            if (!pipe.prepaying() || ex.finished) {
                vertx.cancelTimer(id);
            } else if (failingClosed(ex.operation)) {
                vertx.cancelTimer(id);
                pipe.refusePrepay(new IllegalStateException("site bandwidth shares expired while waiting for the first"
                        + " permits (failing closed, docs/design.md §10)"));
            }
        });
    }

    /** Whether a transfer of {@code op} would be refused now because its direction's site shares expired. */
    private boolean failingClosed(S3Operation op) {
        return (TransferPolicy.chargesDownload(op) && governance.failingClosed(Direction.DOWNLOAD))
                || (TransferPolicy.chargesUpload(op) && governance.failingClosed(Direction.UPLOAD));
    }

    /** Returns the S3 listener's port. */
    public int port() {
        return s3Server.actualPort();
    }

    /** Returns the admin listener's port. */
    public int adminPort() {
        return adminServer.actualPort();
    }

    /** Returns requests being handled now (checked, waiting for admission or proxied). */
    public int inFlight() {
        return Math.max(0, inFlight.get());
    }

    /**
     * Shuts down gracefully (docs/design.md §8 {@code preClose}, issue 10): the S3 listener stops
     * accepting connections (a new connection is refused) and idle keep-alive connections close; a
     * new request on a connection still open is answered {@code 503 SlowDown} with
     * {@code Connection: close}; the admission queues are closed, so requests waiting for a slot are
     * answered {@code 503} at once. Transfers in flight, governed or not, go on to their end and
     * keep being granted permits (the governors stay open during the drain; "cancel waiting chunks"
     * is read as: chunks of requests that hold no transfer yet). The stop completes as soon as the
     * last in-flight exchange ended, or at {@code deadline}, when the connections still open are
     * closed (their transfers are cut); then the admin listener, the backend client, the governors
     * and their timer thread are closed. Idempotent: a second call returns the first call's future.
     *
     * @param deadline the longest wait for in-flight requests (the CLI's default: 10 s)
     * @return completes when everything is closed
     */
    public synchronized Future<Void> stop(Duration deadline) {
        if (stopped != null) {
            return stopped;
        }
        closing = true;
        if (siteWatch >= 0) {
            vertx.cancelTimer(siteWatch);
        }
        if (governance != null) {
            governance.closeAdmission();
        }
        long t0 = ticker.read();
        int atStart = inFlight();
        stopped = s3Server.shutdown(deadline.isNegative() ? Duration.ZERO : deadline)
                .transform(ar -> {
                    long ms = (ticker.read() - t0) / 1_000_000;
                    if (ar.failed()) {
                        LOG.warn("closing the S3 listener failed: {}", ar.cause().toString());
                    }
                    // an exchange whose last response ended as the connection closed may not have
                    // counted itself out yet: only the clock says whether the deadline cut anything
                    if (inFlight() > 0 && ms >= deadline.toMillis()) {
                        LOG.warn("shutdown deadline of {} ms reached with {} requests in flight: their connections are closed",
                                deadline.toMillis(), inFlight());
                    } else {
                        LOG.info("drained {} in-flight requests in {} ms", atStart, ms);
                    }
                    return Future.<Void>succeededFuture();
                })
                .eventually(() -> adminServer.close())
                .eventually(() -> backend.close())
                .eventually(() -> {
                    if (governance != null) {
                        return vertx.executeBlocking(() -> {
                            governance.close();
                            return null;
                        }).mapEmpty();
                    }
                    return Future.succeededFuture();
                });
        return stopped;
    }

    @Override
    public void close() {
        stop(Duration.ofSeconds(5));
    }
}
