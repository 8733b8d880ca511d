package dev.levee.gateway;

import dev.levee.client.ClientDecision;
import dev.levee.client.LeveeClient;
import dev.levee.core.S3Operation;
import dev.levee.governor.Admission;
import dev.levee.governor.AdmissionClass;
import dev.levee.governor.Direction;
import dev.levee.governor.RefusedException;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Http;
import dev.levee.runtime.LogText;
import dev.levee.runtime.SystemTicker;
import dev.levee.s3.S3Request;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.streams.Pipe;
import io.vertx.core.streams.ReadStream;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Clock;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Streams S3 requests to a backend (docs/design.md §1, §2 levee-gateway, §8): a reverse proxy that never
 * buffers a body whole, checks each request with a {@link LeveeClient} when no NGINX is in front,
 * and, when {@linkplain GovernanceSettings governance} is on, shapes every body through the
 * bandwidth governor of its direction and admits uploads and downloads per principal.
 *
 * <h2>One request</h2>
 * <ol>
 *   <li>The request is paused: nothing of its body is read yet.</li>
 *   <li>Governance on: its principal is the account owning the access key id it claims (SigV4
 *       {@code Authorization}, presigned {@code X-Amz-Credential}, SigV2 forms), else the
 *       anonymous principal, or it is refused with {@code 403 AccessDenied} when anonymous
 *       requests are refused. When that key has a secret in the principals file, the claim
 *       counts only if the request's SigV4 signature verifies ({@link SigV4Verifier}); otherwise
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
    private static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-authenticate",
            "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "expect");
    /**
     * Largest body chunk the HTTP decoders deliver, bytes: one quantum. Vert.x's default (8 KiB)
     * costs a write and a flush per 8 KiB on the other connection (docs/BENCHMARKS.md).
     */
    private static final int BODY_CHUNK_BYTES = 64 * 1024;
    /**
     * Longest time, ms, the gateway reads and discards the rest of a request body after answering
     * it early, before it closes the connection (closeAfterLinger).
     */
    private static final long LINGER_MILLIS = 2_000;
    /**
     * Bytes of a backend's early answer (it answered before the request body was sent) read ahead of the client and
     * held, so that the backend's close right after it cannot destroy it (EarlyAnswer); error documents are far
     * smaller.
     */
    private static final long EARLY_ANSWER_MAX_HELD = 1 << 20;
    /** Seconds a client is told to wait after a governance refusal (Retry-After). */
    private static final long RETRY_AFTER_SECONDS = 1;

    /** What to do when no limiter answers (docs/design.md §1 step 5). */
    public enum OnFailure {
        /** Let the request through (default). */
        ALLOW,
        /** Refuse it with 503 SlowDown. */
        DENY
    }

    /**
     * How long the gateway waits for a slow client (issue 10, defect 6): every one frees what the
     * request holds (its admission slot, its permits, its backend connection) and is counted.
     *
     * @param requestHeaderTimeout the longest time from a connection's accept, or from the end of
     *                             its previous response, to a complete request head (request line
     *                             and headers); also the idle limit of a keep-alive connection
     *                             (default 60 s, as NGINX's {@code client_header_timeout})
     * @param requestBodyTimeout   the longest time the gateway reads a request body without
     *                             progress (default 30 s); time the gateway itself does not read
     *                             (the governor withholding permits, the backend's connection
     *                             full, {@code 100 Continue} not yet sent) does not count
     * @param minBodyRate          the rate, bytes/s, below which a body loses reading time (default
     *                             1 KiB/s; 0 = idle timeout only); see {@link ProgressDeadline}
     * @param sendTimeout          longest wait for a client to read more of its response while the
     *                             gateway's write queue for it is full (default 60 s, as NGINX's
     *                             {@code send_timeout}); then the connection is closed and the request's
     *                             admission slot and bandwidth permits are freed
     */
    public record ClientDeadlines(Duration requestHeaderTimeout, Duration requestBodyTimeout, long minBodyRate,
                                  Duration sendTimeout) {
        /** The defaults: 60 s, 30 s, 1 KiB/s, 60 s. */
        public static final ClientDeadlines DEFAULTS = new ClientDeadlines(Duration.ofSeconds(60), Duration.ofSeconds(30),
                1024, Duration.ofSeconds(60));

        /** The deadlines with the default send timeout (60 s). */
        public ClientDeadlines(Duration requestHeaderTimeout, Duration requestBodyTimeout, long minBodyRate) {
            this(requestHeaderTimeout, requestBodyTimeout, minBodyRate, Duration.ofSeconds(60));
        }

        /** Validates. @throws IllegalArgumentException when a timeout is not positive or the rate is negative */
        public ClientDeadlines {
            if (requestHeaderTimeout.isNegative() || requestHeaderTimeout.isZero()) {
                throw new IllegalArgumentException("the request header timeout must be positive");
            }
            if (requestBodyTimeout.isNegative() || requestBodyTimeout.isZero()) {
                throw new IllegalArgumentException("the request body timeout must be positive");
            }
            if (minBodyRate < 0) {
                throw new IllegalArgumentException("the minimum body rate must be >= 0");
            }
            if (sendTimeout.isNegative() || sendTimeout.isZero()) {
                throw new IllegalArgumentException("the send timeout must be positive");
            }
        }
    }

    /**
     * Settings of a gateway.
     *
     * @param listen         S3 listener (default 127.0.0.1:9000)
     * @param admin          admin listener for /health, /health/ready, /metrics (default 127.0.0.1:9001)
     * @param backend        S3 backend {@code host:port} (HTTP)
     * @param enforce        check each request with the limiter cluster (off when NGINX checks)
     * @param onFailure      policy when the check fails
     * @param backendTimeout the longest time the backend may make no progress while the gateway waits for it
     *                       (default 60 s; {@link BackendWatch}): taking none of the request body, from the
     *                       request's end to the status line, sending nothing of a response being read; time the
     *                       gateway itself holds the body or does not read does not count. Then {@code 504}
     * @param maxConnections connections to the backend (default 256)
     * @param governance     bandwidth governors and admission; {@link GovernanceSettings#off()} by default
     * @param healthToken    the bearer token of {@code GET /health/ready}; null = that endpoint
     *                       answers 401 to everyone
     * @param clientDeadlines how long slow clients are waited for; {@link ClientDeadlines#DEFAULTS} by default
     * @param continueTimeout how long a request body waits for the backend's {@code 100 Continue}
     *                        before it is sent anyway (default 1 s, {@link #DEFAULT_CONTINUE_TIMEOUT})
     * @param rateLimitOnAccept whether accepted requests' responses also carry the RateLimit header fields (a
     *                        {@code 503 SlowDown} of the rate check always does; default off, CLI
     *                        {@code --ratelimit-headers-on-accept}; docs/gateway.md)
     */
    public record Options(HostPort listen, HostPort admin, HostPort backend, boolean enforce, OnFailure onFailure,
                          Duration backendTimeout, int maxConnections, GovernanceSettings governance,
                          String healthToken, ClientDeadlines clientDeadlines, Duration continueTimeout,
                          boolean rateLimitOnAccept) {
        /** The default continue timeout: 1 s (as curl waits for 100 Continue). */
        public static final Duration DEFAULT_CONTINUE_TIMEOUT = Duration.ofSeconds(1);

        /** Validates. @throws IllegalArgumentException when a value is out of range */
        public Options {
            if (backendTimeout.isNegative() || backendTimeout.isZero()) {
                throw new IllegalArgumentException("backend timeout must be positive");
            }
            if (maxConnections < 1) {
                throw new IllegalArgumentException("max connections must be >= 1");
            }
            java.util.Objects.requireNonNull(governance, "governance");
            java.util.Objects.requireNonNull(clientDeadlines, "clientDeadlines");
            if (continueTimeout.isNegative() || continueTimeout.isZero()) {
                throw new IllegalArgumentException("the continue timeout must be positive");
            }
            if (listen.port() != 0 && listen.port() == admin.port() && listen.host().equals(admin.host())) {
                throw new IllegalArgumentException("the S3 listener and the admin listener cannot share " + listen);
            }
            if (healthToken != null && healthToken.isBlank()) {
                throw new IllegalArgumentException("the health token is blank");
            }
        }

        /** Settings without governance and without a health token (the gateway of issue 2). */
        public Options(HostPort listen, HostPort admin, HostPort backend, boolean enforce, OnFailure onFailure,
                       Duration backendTimeout, int maxConnections) {
            this(listen, admin, backend, enforce, onFailure, backendTimeout, maxConnections, GovernanceSettings.off(), null,
                    ClientDeadlines.DEFAULTS, DEFAULT_CONTINUE_TIMEOUT, false);
        }

        /** Returns these settings with {@code governance}. */
        public Options withGovernance(GovernanceSettings settings) {
            return new Options(listen, admin, backend, enforce, onFailure, backendTimeout, maxConnections, settings, healthToken,
                    clientDeadlines, continueTimeout, rateLimitOnAccept);
        }

        /** Returns these settings with the bearer token of {@code /health/ready}. */
        public Options withHealthToken(String token) {
            return new Options(listen, admin, backend, enforce, onFailure, backendTimeout, maxConnections, governance, token,
                    clientDeadlines, continueTimeout, rateLimitOnAccept);
        }

        /** Returns these settings with the slow-client deadlines {@code deadlines}. */
        public Options withClientDeadlines(ClientDeadlines deadlines) {
            return new Options(listen, admin, backend, enforce, onFailure, backendTimeout, maxConnections, governance,
                    healthToken, deadlines, continueTimeout, rateLimitOnAccept);
        }

        /** Returns these settings with the continue timeout {@code timeout}. */
        public Options withContinueTimeout(Duration timeout) {
            return new Options(listen, admin, backend, enforce, onFailure, backendTimeout, maxConnections, governance,
                    healthToken, clientDeadlines, timeout, rateLimitOnAccept);
        }

        /** Returns these settings with the RateLimit header fields on accepted responses on or off. */
        public Options withRateLimitOnAccept(boolean on) {
            return new Options(listen, admin, backend, enforce, onFailure, backendTimeout, maxConnections, governance,
                    healthToken, clientDeadlines, continueTimeout, on);
        }
    }

    private final Vertx vertx;
    private final Options options;
    private final LeveeClient client;
    private final HttpClientAgent backend;
    private final MeterRegistry registry;
    private final Governance governance;
    /** The wall clock that signed requests' times are compared with (SigV4 dates are wall-clock times). */
    private final Clock wallClock = Clock.systemUTC();
    private final byte[] healthToken;
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();
    private final AtomicInteger inFlight = new AtomicInteger();
    /** The S3 listener's open connections and what they wait for; each entry is used on its connection's loop. */
    private final Map<HttpConnection, Conn> connections = new ConcurrentHashMap<>();
    private final LongAdder headerTimeouts = new LongAdder();
    private final LongAdder bodyTimeouts = new LongAdder();
    private final LongAdder sendTimeouts = new LongAdder();
    private final LongAdder malformedRequests = new LongAdder();
    private final LongAdder connectionErrors = new LongAdder();
    private volatile boolean closing;
    private Future<Void> stopped;
    private HttpServer s3Server;
    private HttpServer adminServer;

    private GatewayService(Vertx vertx, Options options, LeveeClient client, MeterRegistry registry) {
        this.vertx = vertx;
        this.options = options;
        this.client = client;
        this.registry = registry;
        this.governance = options.governance().enabled() ? new Governance(options.governance(), SystemTicker.INSTANCE) : null;
        if (governance != null) {
            governance.bind(registry);
        }
        if (governance != null && governance.site() != null) {
            governance.site().bind(registry);
        }
        this.healthToken = options.healthToken() == null ? null : options.healthToken().getBytes(StandardCharsets.UTF_8);
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
    }

    /**
     * Keeps a backend connection open for reading when a write to it fails (issue 22, item 5). A backend that
     * answers early (404 NoSuchBucket, 403) closes its connection with the request body unread, and its kernel
     * resets it; the gateway's next write of the body then fails, and Netty's default (auto-close) closed the
     * socket at once — before the answer, already in the socket's receive buffer, was read (Netty handles a
     * channel's writes before its reads): the client got {@code 502} ("Connection was closed") for an answer that
     * had arrived. Without auto-close, a failed write only shuts the output down: the answer is read, then the
     * reset or the end of the stream closes the connection. Uses Vert.x's {@code ConnectionBase} (implementation,
     * as {@link #closeNow}); another connection type keeps Netty's default.
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
     * @param client the check client; may be null only when {@code options.enforce()} is false
     * @return the running service once both listeners are bound
     * @throws IllegalArgumentException when enforcement is on and no client is given
     */
    public static Future<GatewayService> start(Vertx vertx, Options options, LeveeClient client, MeterRegistry registry) {
        if (options.enforce() && client == null) {
            throw new IllegalArgumentException("enforcement needs a levee client");
        }
        GatewayService g = new GatewayService(vertx, options, client, registry);
        HttpServerOptions s3Options = new HttpServerOptions()
                .setHost(options.listen().host()).setPort(options.listen().port())
                .setTcpNoDelay(true).setReuseAddress(true)
                .setIdleTimeout(120)
                .setMaxInitialLineLength(16 * 1024).setMaxHeaderSize(64 * 1024)
                .setMaxChunkSize(BODY_CHUNK_BYTES)
                .setHandle100ContinueAutomatically(false)
                .setHttp2ClearTextEnabled(false);
        return g.listenS3(s3Options)
                .compose(s -> {
                    g.s3Server = s;
                    return Http.listen(vertx, options.admin(), g::admin);
                })
                .map(a -> {
                    g.adminServer = a;
                    LOG.info("gateway S3 listener on {}:{} admin on {}:{} backend {} enforce={} on_failure={} {}",
                            options.listen().host(), g.s3Server.actualPort(), options.admin().host(), a.actualPort(),
                            options.backend(), options.enforce(), options.onFailure(), describe(options.governance()));
                    if (options.healthToken() == null) {
                        LOG.warn("no health token configured: GET /health/ready answers 401 to every request");
                    }
                    if (g.governance != null && g.governance.site() != null) {
                        g.siteWatchSince = SystemTicker.INSTANCE.read();
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
                headerTimeouts.increment();
                count("header_timeout");
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
        malformedRequests.increment();
        count("malformed");
        Throwable cause = req.decoderResult() == null ? null : req.decoderResult().cause();
        LOG.debug("malformed request from {}: {}", req.remoteAddress(),
                LogText.escape(cause == null ? "undecodable request" : String.valueOf(cause.getMessage())));
        HttpServerRequest.DEFAULT_INVALID_REQUEST_HANDLER.handle(req);
    }

    /** A client connection failed (reset, bad framing): one DEBUG line, counted. */
    private void connectionError(HttpConnection c, Throwable e) {
        connectionErrors.increment();
        count("connection_error");
        LOG.debug("client connection {} failed: {}", c == null ? "" : c.remoteAddress(), LogText.escape(e.toString()));
    }

    private static String describe(GovernanceSettings s) {
        if (!s.enabled()) {
            return "governance=off";
        }
        return "governance=on accounts=" + s.principals().accounts().size() + " keys=" + s.principals().keyCount()
                + " verified_keys=" + s.principals().verifiedKeyCount()
                + " max_clock_skew=" + s.maxClockSkew().toSeconds() + "s anonymous=" + s.anonymous() + " upload=" + ByteUnits.formatRate(s.uploadRate())
                + " download=" + ByteUnits.formatRate(s.downloadRate())
                + " principal_upload=" + ByteUnits.formatRate(s.principalUploadRate())
                + " principal_download=" + ByteUnits.formatRate(s.principalDownloadRate())
                + " admission=" + s.admission().maxUploadsPerPrincipal() + "/" + s.admission().maxDownloadsPerPrincipal()
                + " queue=" + s.admission().maxWaiters() + " timeout=" + s.admission().waitTimeoutNanos() / 1_000_000 + "ms"
                + (s.site() == null ? " site=off" : " site=etcd" + s.site().etcdEndpoints() + s.site().prefix()
                        + " gateway_id=" + s.site().keeper().gatewayId() + " lease_ttl=" + s.site().keeper().ttl().toSeconds()
                        + "s renew=" + s.site().keeper().renewInterval().toMillis() + "ms");
    }

    // ---------------------------------------------------------------- admin listener

    private void admin(HttpServerRequest req) {
        String path = req.path();
        if (req.method() != HttpMethod.GET) {
            Http.error(req.response(), 404, "no such endpoint");
        } else if (path.equals("/health")) {
            Http.json(req.response(), closing ? 503 : 200, Map.of("status", closing ? "closing" : "ready",
                    "inFlight", inFlight.get()));
        } else if (path.equals("/health/ready")) {
            if (!authorized(req.getHeader("Authorization"))) {
                req.response().putHeader("WWW-Authenticate", "Bearer realm=\"levee\"");
                Http.error(req.response(), 401, "a valid bearer token is required");
            } else {
                ReadyReport r = readyReport();
                Http.json(req.response(), r.status().equals("ready") ? 200 : 503, r);
            }
        } else if (path.equals("/metrics")) {
            Http.metrics(req, registry);
        } else if (path.equals("/openapi.yaml")) {
            openApi(req.response());
        } else {
            Http.error(req.response(), 404, "no such endpoint");
        }
    }

    private boolean authorized(String header) {
        if (healthToken == null || header == null || !header.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return false;
        }
        byte[] presented = header.substring(7).strip().getBytes(StandardCharsets.UTF_8);
        return MessageDigest.isEqual(presented, healthToken); // constant time in the token's content
    }

    private static void openApi(HttpServerResponse resp) {
        try (InputStream in = GatewayService.class.getResourceAsStream("openapi.yaml")) {
            if (in == null) {
                Http.error(resp, 404, "no OpenAPI document in this build");
                return;
            }
            resp.putHeader("Content-Type", "application/yaml").end(Buffer.buffer(in.readAllBytes()));
        } catch (IOException e) {
            Http.error(resp, 500, "cannot read the OpenAPI document");
        }
    }

    /** Returns what {@code GET /health/ready} reports now: aggregated counters, no principal ids. */
    public ReadyReport readyReport() {
        // with enforcement and no limiter known, every check fails: requests pass (allow) or are refused
        // (deny) by --on-failure, and the gateway is not ready (docs/design.md §11); the client warns in its log.
        // With site budgets, expired shares also make it not ready (docs/design.md §10)
        String status = closing ? "closing"
                : governance != null && governance.site() != null && governance.site().failingClosed() ? "site_shares_expired"
                : options.enforce() && client != null && client.failingOpen()
                        ? (options.onFailure() == OnFailure.DENY ? "failing_closed" : "failing_open")
                : options.enforce() && client != null && !client.observerReachable() ? "observer_unreachable"
                : "ready";
        return new ReadyReport(status, inFlight(),
                governance == null ? ReadyReport.GovernanceReport.off() : governance.report(),
                new ReadyReport.ClientFaults(headerTimeouts.sum(), bodyTimeouts.sum(), sendTimeouts.sum(), malformedRequests.sum(),
                        connectionErrors.sum()));
    }

    // ---------------------------------------------------------------- S3 listener

    /** One request and what it holds; every field is used on the request's event-loop context only. */
    private final class Exchange {
        final HttpServerRequest req;
        final Context context;
        final Conn conn;
        String principal;
        S3Operation operation = S3Operation.Unknown;
        CompletableFuture<Admission> pendingAdmission;
        Admission admission;
        GovernedPipe upload;
        GovernedPipe download;
        /** The request body as the pipes read it, with its progress deadline; null without a body. */
        WatchedBody body;
        ProgressDeadline bodyDeadline;
        long bodyTimer = -1;
        /** The plain (ungoverned) pipe of the request body, if any. */
        Pipe<Buffer> plainPipe;
        HttpClientRequest backendRequest;
        HttpClientRequest unfinishedBackendRequest;
        /** Whether the request body was read to its end (or there is none). */
        boolean bodyDone;
        /** Whether the client was told to send its body ({@code 100 Continue}), when it asked. */
        boolean continued;
        boolean expectContinue;
        /** Whether the backend request carries {@code Expect: 100-continue} (not when the client signed its own Expect). */
        boolean backendExpects;
        /** Whether the body is being streamed to the backend (after its 100 Continue or the continue timeout). */
        boolean proceeded;
        long continueTimer = -1;
        /** Answered by the gateway because of its client (too slow, bad body): the backend's answer is not wanted. */
        boolean abandoned;
        /** The backend answered before the body was read: close the connection after the response. */
        boolean lingerAfterResponse;
        /** The backend's response failed (its connection closed or was reset) before it was relayed whole. */
        Throwable backendResponseFailure;
        /** {@code --backend-timeout}: the backend's slowness while the gateway waits for it; null before the request. */
        BackendWatch backendWatch;
        long backendTimer = -1;
        boolean finished;

        Exchange(HttpServerRequest req, Context context, Conn conn) {
            this.req = req;
            this.context = context;
            this.conn = conn;
        }

        boolean governed() {
            return principal != null;
        }

        /** Releases everything the exchange holds; runs once, when the response ends or the connection closes. */
        void finish() {
            if (finished) {
                return;
            }
            finished = true;
            stopBodyDeadline();
            stopBackendWatch();
            if (continueTimer >= 0) {
                vertx.cancelTimer(continueTimer);
            }
            if (pendingAdmission != null) {
                pendingAdmission.cancel(false); // a slot granted meanwhile is closed by admitted()
            }
            if (admission != null) {
                admission.close();
            }
            if (upload != null) {
                upload.abort();
            }
            if (download != null) {
                download.abort();
            }
            if (unfinishedBackendRequest != null) {
                quiet(unfinishedBackendRequest).reset();
            } else if (backendRequest != null && !bodyDone && !req.response().headWritten()) {
                // the client went away before its body was sent (a malformed body, a reset) and before an
                // answer: the backend's work is not wanted, and its connection is freed now rather than at
                // its answer; the request is not ended (its body was not), and quiet() since its creation
                backendRequest.reset();
            }
            inFlight.decrementAndGet();
            if (lingerAfterResponse && !req.response().closed()) {
                closeAfterLinger(this);
            } else if (conn != null && connections.containsKey(conn.connection) && !closing) {
                conn.awaitHead(); // a keep-alive connection waits for its next request head
            }
        }

        void stopBackendWatch() {
            if (backendTimer >= 0) {
                vertx.cancelTimer(backendTimer);
                backendTimer = -1;
            }
        }

        void stopBodyDeadline() {
            if (bodyTimer >= 0) {
                vertx.cancelTimer(bodyTimer);
                bodyTimer = -1;
            }
            if (body != null) {
                body.disarm();
            }
        }
    }

    private void proxy(HttpServerRequest req) {
        req.pause();
        Conn conn = connections.get(req.connection());
        if (conn != null) {
            conn.cancelHead();
        }
        req.exceptionHandler(e -> clientFault(req, e));
        if (closing) {
            refuse(req, 1, "gateway shutting down");
            return;
        }
        Exchange ex = new Exchange(req, vertx.getOrCreateContext(), conn);
        inFlight.incrementAndGet();
        HttpServerResponse resp = req.response();
        resp.closeHandler(v -> ex.finish());
        resp.endHandler(v -> ex.finish());
        resp.exceptionHandler(e -> LOG.debug("writing to the client failed: {}", LogText.escape(e.toString())));
        String host = req.getHeader("Host");
        if (governance != null) {
            ex.operation = governance.classify(req.method().name(), host, req.uri(), req.getHeader("x-amz-copy-source"))
                    .operation();
            Governance.Identity id = governance.identify(req.method().name(), req.path(), req.query(), req.headers(),
                    wallClock.millis());
            if (id.refusal() != null) {
                count("signature_refused");
                signatureRefused(req, id.refusal());
                return;
            }
            ex.principal = id.principal();
            if (ex.principal == null) {
                count("principal_refused");
                accessDenied(req);
                return;
            }
        }
        if (!options.enforce()) {
            admit(ex);
            return;
        }
        S3Request s3 = S3Request.fromRequestUri(req.method().name(), host, req.uri(), req.getHeader("x-amz-copy-source"));
        client.check(s3).onComplete(ar -> {
            ClientDecision d = ar.succeeded() ? ar.result() : null;
            if (d == null || d.result() == ClientDecision.Result.FAILED) {
                count("failed");
                if (options.onFailure() == OnFailure.DENY) {
                    refuse(req, 1, "rate check failed");
                } else {
                    admit(ex);
                }
            } else if (d.result() == ClientDecision.Result.REJECTED) {
                count("rejected");
                rateLimitFields(req.response(), d);
                refuse(req, d.retryAfter(), "rate limit");
            } else {
                count("accepted");
                if (options.rateLimitOnAccept()) {
                    rateLimitFields(req.response(), d); // kept: the backend's answer is added to these headers
                }
                admit(ex);
            }
        });
    }

    /** Takes the exchange's admission slot, if its operation needs one, then forwards it. */
    private void admit(Exchange ex) {
        if (ex.governed() && !ex.finished && failingClosed(ex.operation)) {
            count("site_failing_closed");
            refuse(ex.req, RETRY_AFTER_SECONDS, "site bandwidth shares expired (failing closed, docs/design.md §10)");
            return;
        }
        AdmissionClass c = ex.governed() ? TransferPolicy.admissionClass(ex.operation) : null;
        if (c == null || ex.finished) {
            if (!ex.finished) {
                forward(ex);
            }
            return;
        }
        CompletableFuture<Admission> f = governance.admit(ex.principal, c).toCompletableFuture();
        if (f.isDone() && !f.isCompletedExceptionally()) {
            ex.admission = f.join();
            forward(ex);
            return;
        }
        ex.pendingAdmission = f;
        f.whenComplete((a, e) -> ex.context.runOnContext(v -> admitted(ex, a, e)));
    }

    private void admitted(Exchange ex, Admission a, Throwable e) {
        ex.pendingAdmission = null;
        if (ex.finished) {
            if (a != null) {
                a.close(); // granted while the client was going away
            }
            return;
        }
        if (e != null) {
            Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
            count("admission_refused");
            refuse(ex.req, RETRY_AFTER_SECONDS, "admission: " + cause.getMessage());
            return;
        }
        ex.admission = a;
        forward(ex);
    }

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
        long now = SystemTicker.INSTANCE.read();
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

    /** Takes the first upload permits when the body is charged, then opens the backend request. */
    private void forward(Exchange ex) {
        HttpServerRequest req = ex.req;
        long length = contentLength(req.headers());
        boolean chunked = length < 0 && req.headers().contains("Transfer-Encoding");
        ex.bodyDone = !(length > 0 || chunked);
        ex.expectContinue = !ex.bodyDone && "100-continue".equalsIgnoreCase(req.getHeader("Expect"));
        if (ex.governed() && !ex.bodyDone && TransferPolicy.chargesUpload(ex.operation)) {
            try {
                ex.upload = governance.openPipe(Direction.UPLOAD, ex.principal, ex.context);
            } catch (RefusedException e) {
                count("bandwidth_refused");
                refuse(req, RETRY_AFTER_SECONDS, "upload bandwidth: " + e.getMessage());
                return;
            }
            ex.upload.prepay(length > 0 ? Math.min(length, ex.upload.quantum()) : ex.upload.quantum(), e -> {
                if (e != null) {
                    count("bandwidth_refused");
                    refuse(req, RETRY_AFTER_SECONDS, "upload bandwidth: " + e.getMessage());
                } else {
                    openBackend(ex);
                }
            });
            refusePrepayWhenFailingClosed(ex, ex.upload);
            return;
        }
        openBackend(ex);
    }

    private void openBackend(Exchange ex) {
        openBackend(ex, 0);
    }

    /** Methods that may be sent again (RFC 9110 §9.2.2) when they carry no body. */
    private static final java.util.Set<HttpMethod> IDEMPOTENT = java.util.Set.of(HttpMethod.GET, HttpMethod.HEAD,
            HttpMethod.DELETE, HttpMethod.OPTIONS);

    /**
     * Whether a failed backend request may be sent once more on another connection: an idempotent
     * method without a body, no answer from the backend yet, and the first try. A pooled keep-alive
     * connection the backend closed as it was reused fails that way (as {@code proxy_next_upstream
     * error} retries in NGINX).
     */
    private static boolean retriable(Exchange ex, int attempt) {
        HttpServerRequest req = ex.req;
        return attempt == 0 && !ex.finished && ex.upload == null && IDEMPOTENT.contains(req.method())
                && !req.headers().contains("Transfer-Encoding") && contentLength(req.headers()) <= 0
                && !req.response().headWritten() && !req.response().closed();
    }

    private void openBackend(Exchange ex, int attempt) {
        HttpServerRequest req = ex.req;
        HttpServerResponse resp = req.response();
        MultiMap headers = MultiMap.caseInsensitiveMultiMap();
        // a header the client signed goes on exactly as sent, hop-by-hop or not, else the store refuses the
        // signature (issue 24: curl -H 'Expect:' signs expect); Transfer-Encoding is the body's framing, which the
        // backend request carries itself (setChunked below)
        java.util.Set<String> signed = Credentials.signedHeaders(req.getHeader("Authorization"), req.query());
        req.headers().forEach((k, v) -> {
            String name = k.toLowerCase(Locale.ROOT);
            if (!HOP_BY_HOP.contains(name) || signed.contains(name) && !name.equals("transfer-encoding")) {
                headers.add(k, v);
            }
        });
        ex.backendExpects = !ex.bodyDone && (signed.contains("expect")
                ? "100-continue".equalsIgnoreCase(req.getHeader("Expect")) : true);
        if (!ex.bodyDone && !signed.contains("expect")) {
            // the backend decides whether the body is wanted before a byte of it is sent: an early
            // answer (404 NoSuchBucket, 403) is then relayed rather than cut by the backend's close
            headers.add("Expect", "100-continue");
        }
        RequestOptions ro = new RequestOptions()
                .setMethod(req.method())
                .setHost(options.backend().host())
                .setPort(options.backend().port())
                .setURI(req.uri())
                .setHeaders(headers);
        backend.request(ro).onComplete(ar -> {
            if (ar.failed()) {
                if (retriable(ex, attempt)) {
                    LOG.debug("backend request failed ({}), sending it once more", ar.cause().toString());
                    openBackend(ex, attempt + 1);
                    return;
                }
                if (!ex.finished && !ex.abandoned) {
                    badGateway(req, ar.cause());
                }
                return;
            }
            HttpClientRequest out = ar.result();
            quiet(out);
            if (ex.finished || ex.abandoned) {
                out.reset();
                return;
            }
            ex.backendRequest = out;
            watchBackend(ex);
            String host = req.getHeader("Host");
            if (host != null) {
                out.authority(io.vertx.core.net.HostAndPort.parseAuthority(host, -1));
            }
            boolean hasLength = req.headers().contains("Content-Length");
            if (!hasLength && req.headers().contains("Transfer-Encoding")) {
                out.setChunked(true);
            }
            out.response().onComplete(rr -> {
                if (ex.finished || ex.abandoned) {
                    if (rr.succeeded()) {
                        // a late answer nobody reads: the reset reaches it too, and without a handler of its
                        // own Vert.x would log that at ERROR ("Stream reset: 0")
                        rr.result().exceptionHandler(e -> LOG.debug("late backend response dropped: {}", e.toString()));
                        rr.result().request().reset();
                    }
                    return; // the client went away, or was answered already
                }
                if (rr.failed()) {
                    if (retriable(ex, attempt)) {
                        LOG.debug("backend request failed ({}), sending it once more", rr.cause().toString());
                        openBackend(ex, attempt + 1);
                        return;
                    }
                    badGateway(req, rr.cause());
                    return;
                }
                relay(ex, rr.result());
            });
            if (ex.bodyDone) {
                req.resume(); // reads the end of a bodiless request
                new BackendSink(out, ex.backendWatch, SystemTicker.INSTANCE::read).end();
                return;
            }
            streamBody(ex, out);
        });
    }

    /**
     * Streams the request body to the backend under its progress deadline, once the backend asked
     * for it ({@code 100 Continue}) or did not answer within the continue timeout: through the upload
     * governor when charged, else as it comes. A failure of the client's side (reset, bad chunked
     * framing) resets the backend request and is answered {@code 400}; a failure of the backend's
     * side is left to the backend's response, which is relayed when it came (an early answer) and
     * answered {@code 502} otherwise.
     */
    private void streamBody(Exchange ex, HttpClientRequest out) {
        HttpServerRequest req = ex.req;
        HttpServerResponse resp = req.response();
        ClientDeadlines d = options.clientDeadlines();
        ex.bodyDeadline = new ProgressDeadline(d.requestBodyTimeout().toNanos(), d.minBodyRate());
        ex.body = new WatchedBody(req, ex.bodyDeadline, SystemTicker.INSTANCE::read, true, () -> {
            ex.bodyDone = true;
            ex.stopBodyDeadline();
        });
        long check = Math.max(10, Math.min(1000, d.requestBodyTimeout().toMillis() / 5));
        ex.bodyTimer = vertx.setPeriodic(check, t -> {
            if (ex.bodyDeadline.expired(SystemTicker.INSTANCE.read())) {
                bodyTimedOut(ex);
            }
        });
        // the body is read from the client only once the backend wants it (100 Continue), or after
        // the continue timeout for a backend that ignores Expect
        out.continueHandler(v -> proceed(ex, out));
        out.sendHead();
        if (!ex.backendExpects) {
            // the client signed its Expect (or its absence): the backend gets none and will not ask for the body, so
            // it is streamed at once; an answer the backend gives while it comes is still relayed (its connection is
            // read after a failed write: issue 22, item 5)
            proceed(ex, out);
            return;
        }
        ex.continueTimer = vertx.setTimer(options.continueTimeout().toMillis(), t -> proceed(ex, out));
    }

    /** The backend wants the body (or did not answer within the continue timeout): start streaming it. */
    private void proceed(Exchange ex, HttpClientRequest out) {
        HttpServerRequest req = ex.req;
        HttpServerResponse resp = req.response();
        if (ex.proceeded || ex.finished || ex.abandoned || resp.headWritten() || resp.ended()) {
            return;
        }
        ex.proceeded = true;
        vertx.cancelTimer(ex.continueTimer);
        if (ex.expectContinue) {
            ex.continued = true;
            resp.writeContinue();
        }
        BackendSink sink = new BackendSink(out, ex.backendWatch, SystemTicker.INSTANCE::read);
        if (ex.upload != null) {
            ex.upload.start(ex.body, sink, new GovernedPipe.Listener() {
                @Override
                public void ended() {
                    // the backend answers; relay() takes it from there
                }

                @Override
                public void failed(Throwable cause) {
                    if (cause instanceof RefusedException) {
                        out.reset();
                        count("bandwidth_refused");
                        refuse(req, RETRY_AFTER_SECONDS, "upload bandwidth: " + cause.getMessage());
                    } else if (ex.body.failure() != null) {
                        clientBodyFault(ex, cause);
                    }
                    // else the backend's side failed: its response (or its failure) answers
                }
            }, out::reset);
        } else {
            Pipe<Buffer> pipe = ex.body.pipe();
            pipe.endOnFailure(false); // a body cut by the client must never reach the backend as complete
            ex.plainPipe = pipe;
            pipe.to(sink).onFailure(e -> {
                if (ex.body.failure() != null) {
                    clientBodyFault(ex, ex.body.failure());
                }
                // else the backend's side failed: its response (or its failure) answers
            });
        }
    }

    /**
     * Starts watching the backend's side of an exchange with {@code --backend-timeout} ({@link BackendWatch}): only
     * time the gateway waits for the backend counts, never time it holds the body itself (issue 22, item 3).
     */
    private void watchBackend(Exchange ex) {
        ex.stopBackendWatch(); // a retry on another connection starts afresh
        long timeout = options.backendTimeout().toNanos();
        ex.backendWatch = new BackendWatch(timeout);
        long check = Math.max(10, Math.min(1000, options.backendTimeout().toMillis() / 10));
        ex.backendTimer = vertx.setPeriodic(check, t -> {
            if (ex.backendWatch.expired(SystemTicker.INSTANCE.read())) {
                backendTimedOut(ex);
            }
        });
    }

    /**
     * The backend made no progress for {@code --backend-timeout} while the gateway waited for it: {@code 504
     * GatewayTimeout} when the status line is not out yet, else the client's connection is closed (only a cut tells
     * it); the backend request is reset (an upload is not stored) and what the request holds is freed.
     */
    private void backendTimedOut(Exchange ex) {
        ex.stopBackendWatch();
        if (ex.finished || ex.abandoned) {
            return;
        }
        count("backend_timeout");
        LOG.warn("backend {} timed out for {} {}: no progress for {} ms while {}", options.backend(), ex.req.method(),
                LogText.escape(ex.req.path()), options.backendTimeout().toMillis(), ex.backendWatch.phase());
        abandon(ex, 504, "GatewayTimeout", "The S3 backend did not answer in time.");
    }

    /** The client sent its body too slowly (docs/design.md §8 admission; issue 10): frees what the request holds. */
    private void bodyTimedOut(Exchange ex) {
        if (ex.finished || ex.bodyDone || ex.abandoned) {
            ex.stopBodyDeadline();
            return;
        }
        bodyTimeouts.increment();
        count("body_timeout");
        LOG.debug("{} {} from {}: request body too slow (under {} B/s for {} ms of reading), aborted",
                ex.req.method(), LogText.escape(ex.req.path()), ex.req.remoteAddress(), options.clientDeadlines().minBodyRate(),
                options.clientDeadlines().requestBodyTimeout().toMillis());
        abandon(ex, 400, "RequestTimeout",
                "Your socket connection to the server was not read from or written to within the timeout period.");
    }

    /**
     * The request failed on the client's side before its body was piped (a reset while it waits
     * for admission): one DEBUG line, counted; the close handler releases what it holds.
     */
    private void clientFault(HttpServerRequest req, Throwable e) {
        connectionErrors.increment();
        count("client_error");
        LOG.debug("{} {} from {} failed on the client's side: {}", req.method(), LogText.escape(req.path()),
                req.remoteAddress(), LogText.escape(e.toString()));
    }

    /** Reading the client's body failed (reset, bad chunked framing): one DEBUG line, counted. */
    private void clientBodyFault(Exchange ex, Throwable cause) {
        if (ex.finished || ex.abandoned) {
            return;
        }
        connectionErrors.increment();
        count("client_error");
        LOG.debug("{} {} from {}: reading the request body failed: {}", ex.req.method(), LogText.escape(ex.req.path()),
                ex.req.remoteAddress(), LogText.escape(cause.toString()));
        abandon(ex, 400, "IncompleteBody", "The request body could not be read.");
    }

    /**
     * Gives up an exchange because of its client: stops the body, resets the backend request (no
     * object is created), answers {@code status} when the status line is not out yet, then closes
     * the connection. The slot and permits are released when the response ends.
     */
    private void abandon(Exchange ex, int status, String code, String message) {
        ex.abandoned = true;
        ex.stopBodyDeadline();
        if (ex.upload != null) {
            ex.upload.detach();
        }
        if (ex.plainPipe != null) {
            ex.plainPipe.close();
            ex.req.pause();
        }
        if (ex.backendRequest != null) {
            if (ex.backendWatch == null || !ex.backendWatch.requestEnded()) {
                quiet(ex.backendRequest); // an ended request takes no handler (Vert.x throws): it keeps its own
            }
            ex.backendRequest.reset();
        }
        HttpServerRequest req = ex.req;
        HttpServerResponse resp = req.response();
        if (!canAnswer(req)) {
            return;
        }
        String rid = SlowDown.newRequestId();
        resp.setStatusCode(status).putHeader("Content-Type", "application/xml").putHeader("x-amz-request-id", rid)
                .putHeader("Connection", "close")
                .end(SlowDown.xml(code, message, req.path(), rid))
                .onComplete(v -> req.connection().close());
    }

    /**
     * Closes a connection whose request body was not read to its end, after its response: reads
     * and discards what the client still sends for at most {@value #LINGER_MILLIS} ms (or until the
     * body ends), so that closing with unread bytes does not reset the connection before the client
     * has read the answer (as NGINX's {@code lingering_close}). A client that waits for
     * {@code 100 Continue} sent nothing: its connection is closed at once.
     */
    private void closeAfterLinger(Exchange ex) {
        HttpServerRequest req = ex.req;
        if ((ex.expectContinue && !ex.continued) || req.isEnded()) { // nothing (more) to read
            req.connection().close();
            return;
        }
        req.handler(b -> { });
        req.exceptionHandler(e -> { });
        req.endHandler(v -> req.connection().close());
        req.resume();
        vertx.setTimer(LINGER_MILLIS, t -> req.connection().close());
    }

    private void relay(Exchange ex, HttpClientResponse in) {
        HttpServerRequest req = ex.req;
        HttpServerResponse resp = req.response();
        ex.backendWatch.answered(SystemTicker.INSTANCE.read());
        // the response body as the pipes read it: --backend-timeout counts while the gateway reads it and nothing
        // comes, not while the gateway does not read (the download governor, a slow client)
        WatchedBody watched = new WatchedBody(in, ex.backendWatch.deadline(), SystemTicker.INSTANCE::read, true,
                ex::stopBackendWatch);
        boolean early = !ex.bodyDone;
        // an early answer is read at once and held: the backend's close right after it must not destroy it
        EarlyAnswer held = early ? new EarlyAnswer(watched, EARLY_ANSWER_MAX_HELD) : null;
        ReadStream<Buffer> source = early ? held : watched;
        source.exceptionHandler(e -> {
            ex.backendResponseFailure = e;
            LOG.debug("backend response failed: {}", e.toString());
        });
        if (resp.ended() || resp.closed() || ex.finished) {
            in.request().reset();
            return;
        }
        if (early) {
            // the backend answered before the whole body was sent (404 NoSuchBucket, 403): stop
            // reading it, relay the answer, then close both connections (neither can carry another
            // request); closing the client's waits for what it still sends (closeAfterLinger)
            ex.stopBodyDeadline();
            if (ex.upload != null) {
                ex.upload.detach();
            }
            if (ex.plainPipe != null) {
                ex.plainPipe.close();
                req.pause();
                quiet(ex.backendRequest);
            }
            ex.unfinishedBackendRequest = in.request();
            ex.lingerAfterResponse = true;
            resp.putHeader("Connection", "close");
            LOG.debug("backend answered {} to {} {} before the request body was sent: relayed", in.statusCode(),
                    req.method(), LogText.escape(req.path()));
        }
        long length = contentLength(in.headers());
        boolean body = req.method() != HttpMethod.HEAD && in.statusCode() >= 200 && in.statusCode() != 204
                && in.statusCode() != 304 && length != 0;
        if (!ex.governed() || !body || !TransferPolicy.chargesDownload(ex.operation)) {
            writeHead(req, in);
            source.pipeTo(sink(ex, in)).onFailure(e -> {
                LOG.debug("response stream ended early: {}", e.toString());
                req.connection().close();
            });
            return;
        }
        source.pause();
        try {
            ex.download = governance.openPipe(Direction.DOWNLOAD, ex.principal, ex.context);
        } catch (RefusedException e) {
            in.request().reset();
            count("bandwidth_refused");
            refuse(req, RETRY_AFTER_SECONDS, "download bandwidth: " + e.getMessage());
            return;
        }
        GovernedPipe pipe = ex.download;
        vertx.runOnContext(v -> refusePrepayWhenFailingClosed(ex, pipe)); // once prepay below is waiting
        pipe.prepay(length > 0 ? Math.min(length, pipe.quantum()) : pipe.quantum(), e -> {
            if (e != null) {
                in.request().reset();
                count("bandwidth_refused");
                refuse(req, RETRY_AFTER_SECONDS, "download bandwidth: " + e.getMessage());
                return;
            }
            if (ex.finished) {
                return; // the client went away while the permits were on their way
            }
            Throwable lost = early ? held.failure() : ex.backendResponseFailure;
            if (lost != null) {
                // the answer was lost (its connection closed before its end) while it waited for its permits: nothing
                // of it is out yet, so the client is told so; a pipe started on it would fail on the ended stream. An
                // early answer received whole is held and relayed whatever happened to its connection afterwards
                badGateway(req, lost);
                return;
            }
            writeHead(req, in);
            pipe.start(source, sink(ex, in), new GovernedPipe.Listener() {
                @Override
                public void ended() {
                    // the pipe ended the response; its end handler finishes the exchange
                }

                @Override
                public void failed(Throwable cause) {
                    LOG.debug("download stopped: {}", cause.toString());
                    in.request().reset();
                    req.connection().close(); // the status line is out: only a cut tells the client
                }
            }, () -> in.request().reset());
        });
    }

    /** The client's response as a pipe's sink, with the send timeout of {@link ClientDeadlines#sendTimeout()}. */
    private ResponseSink sink(Exchange ex, HttpClientResponse in) {
        return new ResponseSink(ex.req.response(), vertx, options.clientDeadlines().sendTimeout().toMillis(),
                SystemTicker.INSTANCE::read, () -> {
            sendTimeouts.increment();
            count("send_timeout");
            LOG.debug("{} {} to {}: the client read nothing of its response for {} ms, closed", ex.req.method(),
                    LogText.escape(ex.req.path()), ex.req.remoteAddress(), options.clientDeadlines().sendTimeout().toMillis());
            ex.finish(); // frees the slot and permits now
            in.request().reset();
            closeNow(ex.req.connection());
        });
    }

    /**
     * Aborts a connection at once with a TCP reset, dropping what its outbound queue and the kernel's
     * send buffer hold, as NGINX's {@code reset_timedout_connection}. Vert.x 5.1 defers {@code close()}
     * until the connection's outbound queue has drained, which never happens for a client that does not
     * read (it held the socket until the idle timeout, ~2 minutes), and a plain close would leave the
     * kernel holding and trickling the buffered bytes: the Netty channel is closed directly with
     * {@code SO_LINGER = 0}. Uses Vert.x's {@code ConnectionBase} (implementation, not API); other
     * connection types fall back to {@code close()}.
     */
    static void closeNow(io.vertx.core.http.HttpConnection connection) {
        if (connection instanceof io.vertx.core.net.impl.ConnectionBase base) {
            base.channel().config().setOption(io.netty.channel.ChannelOption.SO_LINGER, 0);
            base.channel().close();
        } else {
            connection.close();
        }
    }

    private void writeHead(HttpServerRequest req, HttpClientResponse in) {
        HttpServerResponse resp = req.response();
        if (closing) {
            resp.putHeader("Connection", "close"); // draining: the connection carries no other request
        }
        resp.setStatusCode(in.statusCode());
        resp.setStatusMessage(in.statusMessage());
        in.headers().forEach((k, v) -> {
            if (!HOP_BY_HOP.contains(k.toLowerCase(Locale.ROOT))) {
                resp.headers().add(k, v);
            }
        });
        if (!in.headers().contains("Content-Length") && req.method() != HttpMethod.HEAD) {
            resp.setChunked(true);
        }
    }

    /**
     * Gives a backend request an exception handler that logs at DEBUG: a reset or a failure of a
     * request no pipe watches any more must not reach Vert.x's unhandled-exception ERROR log.
     */
    private static HttpClientRequest quiet(HttpClientRequest out) {
        return out.exceptionHandler(e -> LOG.debug("backend request failed: {}", e.toString()));
    }

    /** Returns the Content-Length, or -1 when absent or malformed. */
    private static long contentLength(MultiMap headers) {
        String cl = headers.get("Content-Length");
        if (cl == null) {
            return -1;
        }
        try {
            long n = Long.parseLong(cl.strip());
            return n < 0 ? -1 : n;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /**
     * Says whether an error answer can still be given: not when the response ended or its connection
     * closed, nor once the status line is out (then only closing the connection tells the client, which
     * this does).
     */
    private static boolean canAnswer(HttpServerRequest req) {
        HttpServerResponse resp = req.response();
        if (resp.ended() || resp.closed()) {
            return false;
        }
        if (resp.headWritten()) {
            req.connection().close();
            return false;
        }
        return true;
    }

    /** Puts the RateLimit header fields of a rate decision on the response (docs/gateway.md). */
    private static void rateLimitFields(HttpServerResponse resp, ClientDecision d) {
        String policy = d.rateLimitPolicy();
        if (policy != null) {
            resp.putHeader(dev.levee.client.RateLimitFields.POLICY_HEADER, policy)
                    .putHeader(dev.levee.client.RateLimitFields.LIMIT_HEADER, d.rateLimit());
        }
    }

    private void refuse(HttpServerRequest req, long retryAfter, String why) {
        HttpServerResponse resp = req.response();
        if (!canAnswer(req)) {
            return;
        }
        String rid = SlowDown.newRequestId();
        if (closing) {
            resp.putHeader("Connection", "close"); // draining: the connection carries no other request
        }
        long seconds = Math.max(1, retryAfter);
        // the reason phrase S3 sends: SDKs tell a throttled HEAD, which has no body, by it (issue 24)
        resp.setStatusCode(503).setStatusMessage(SlowDown.REASON_PHRASE)
                .putHeader("Content-Type", "application/xml")
                .putHeader("Retry-After", Long.toString(seconds))
                .putHeader(SlowDown.RETRY_AFTER_MS_HEADER, Long.toString(SlowDown.retryAfterMillis(seconds)))
                .putHeader("x-amz-request-id", rid);
        endUnread(req, req.method() == HttpMethod.HEAD ? null
                : SlowDown.xml("SlowDown", "Please reduce your request rate.", req.path(), rid));
        LOG.debug("refused {} {} ({})", req.method(), LogText.escape(req.path()), why);
    }

    private void signatureRefused(HttpServerRequest req, SigV4Verifier.Verdict v) {
        HttpServerResponse resp = req.response();
        String rid = SlowDown.newRequestId();
        resp.setStatusCode(v.status()).putHeader("Content-Type", "application/xml").putHeader("x-amz-request-id", rid);
        endUnread(req, req.method() == HttpMethod.HEAD ? null : SlowDown.xml(v.code(), v.message(), req.path(), rid));
        // the path only: a presigned query is a credential until it expires
        LOG.debug("refused {} {} ({} {}: {})", req.method(), LogText.escape(req.path()), v.status(), v.code(),
                LogText.escape(v.reason()));
    }

    private void accessDenied(HttpServerRequest req) {
        HttpServerResponse resp = req.response();
        String rid = SlowDown.newRequestId();
        resp.setStatusCode(403).putHeader("Content-Type", "application/xml").putHeader("x-amz-request-id", rid);
        endUnread(req, req.method() == HttpMethod.HEAD ? null
                : SlowDown.xml("AccessDenied", "Unknown or missing access key: this gateway refuses anonymous requests.",
                        req.path(), rid));
        LOG.debug("refused {} {} (unknown principal)", req.method(), LogText.escape(req.path()));
    }

    /**
     * Ends a response whose request body may not have been read: the connection is then closed
     * rather than the body read and discarded, and never forwarded.
     */
    private static void endUnread(HttpServerRequest req, String body) {
        HttpServerResponse resp = req.response();
        boolean hasBody = req.headers().contains("Content-Length") && !"0".equals(req.getHeader("Content-Length"))
                || req.headers().contains("Transfer-Encoding");
        if (hasBody) {
            resp.putHeader("Connection", "close");
        }
        Future<Void> end = body == null ? resp.end() : resp.end(body);
        if (hasBody) {
            end.onComplete(v -> req.connection().close());
        }
    }

    private void badGateway(HttpServerRequest req, Throwable e) {
        count("backend_error");
        LOG.warn("backend {} failed for {} {}: {}", options.backend(), req.method(), LogText.escape(req.path()),
                e.toString());
        HttpServerResponse resp = req.response();
        if (!canAnswer(req)) {
            return;
        }
        String rid = SlowDown.newRequestId();
        resp.setStatusCode(502).putHeader("Content-Type", "application/xml").putHeader("Connection", "close")
                .end(SlowDown.xml("BadGateway", "The S3 backend could not be reached.", req.path(), rid));
    }

    private void count(String what) {
        counters.computeIfAbsent(what, k -> Counter.builder("levee_gateway_requests_total")
                .description("gateway requests by check result").tag("result", what).register(registry)).increment();
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
        long t0 = System.nanoTime();
        int atStart = inFlight();
        stopped = s3Server.shutdown(deadline.isNegative() ? Duration.ZERO : deadline)
                .transform(ar -> {
                    long ms = (System.nanoTime() - t0) / 1_000_000;
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
