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
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Streams S3 requests to a backend (SPEC.md §1, §2 levee-gateway, §8): a reverse proxy that never
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
 *   <li>Enforcement on: the request-rate check (SPEC.md §1); refusal is {@code 503 SlowDown}.</li>
 *   <li>Governance on: {@code PutObject}, {@code UploadPart}, {@code PostObject} wait for a
 *       mutating-upload slot of their principal, {@code GetObject} for a download slot; a full
 *       queue or the wait's timeout is {@code 503 SlowDown} with {@code Retry-After}.</li>
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
 * {@link #stop}: new requests get 503; the admission queues and then the governors are closed
 * (waiters are answered 503, waiting permit requests fail); then in-flight requests are given
 * until the deadline; then the listeners, the backend client and the timer thread are closed.
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
    /** Seconds a client is told to wait after a governance refusal (Retry-After). */
    private static final long RETRY_AFTER_SECONDS = 1;

    /** What to do when no limiter answers (SPEC.md §1 step 5). */
    public enum OnFailure {
        /** Let the request through (default). */
        ALLOW,
        /** Refuse it with 503 SlowDown. */
        DENY
    }

    /**
     * Settings of a gateway.
     *
     * @param listen         S3 listener (default 127.0.0.1:9000)
     * @param admin          admin listener for /health, /health/ready, /metrics (default 127.0.0.1:9001)
     * @param backend        S3 backend {@code host:port} (HTTP)
     * @param enforce        check each request with the limiter cluster (off when NGINX checks)
     * @param onFailure      policy when the check fails
     * @param backendTimeout idle timeout towards the backend (default 60 s)
     * @param maxConnections connections to the backend (default 256)
     * @param governance     bandwidth governors and admission; {@link GovernanceSettings#off()} by default
     * @param healthToken    the bearer token of {@code GET /health/ready}; null = that endpoint
     *                       answers 401 to everyone
     */
    public record Options(HostPort listen, HostPort admin, HostPort backend, boolean enforce, OnFailure onFailure,
                          Duration backendTimeout, int maxConnections, GovernanceSettings governance,
                          String healthToken) {
        /** Validates. @throws IllegalArgumentException when a value is out of range */
        public Options {
            if (backendTimeout.isNegative() || backendTimeout.isZero()) {
                throw new IllegalArgumentException("backend timeout must be positive");
            }
            if (maxConnections < 1) {
                throw new IllegalArgumentException("max connections must be >= 1");
            }
            java.util.Objects.requireNonNull(governance, "governance");
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
            this(listen, admin, backend, enforce, onFailure, backendTimeout, maxConnections, GovernanceSettings.off(), null);
        }

        /** Returns these settings with {@code governance}. */
        public Options withGovernance(GovernanceSettings settings) {
            return new Options(listen, admin, backend, enforce, onFailure, backendTimeout, maxConnections, settings, healthToken);
        }

        /** Returns these settings with the bearer token of {@code /health/ready}. */
        public Options withHealthToken(String token) {
            return new Options(listen, admin, backend, enforce, onFailure, backendTimeout, maxConnections, governance, token);
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
    private volatile Promise<Void> drained;
    private volatile boolean closing;
    private HttpServer s3Server;
    private HttpServer adminServer;

    private GatewayService(Vertx vertx, Options options, LeveeClient client, MeterRegistry registry) {
        this.vertx = vertx;
        this.options = options;
        this.client = client;
        this.registry = registry;
        this.governance = options.governance().enabled() ? new Governance(options.governance(), SystemTicker.INSTANCE) : null;
        this.healthToken = options.healthToken() == null ? null : options.healthToken().getBytes(StandardCharsets.UTF_8);
        this.backend = vertx.createHttpClient(new HttpClientOptions()
                        .setKeepAlive(true)
                        .setTcpNoDelay(true)
                        .setIdleTimeout((int) options.backendTimeout().toSeconds())
                        .setConnectTimeout(5000)
                        .setMaxInitialLineLength(16 * 1024)
                        .setMaxHeaderSize(64 * 1024)
                        .setMaxChunkSize(BODY_CHUNK_BYTES),
                new PoolOptions().setHttp1MaxSize(options.maxConnections()).setMaxWaitQueueSize(-1));
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
        return Http.listen(vertx, s3Options, g::proxy)
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
                    return g;
                })
                .onFailure(e -> {
                    if (g.governance != null) {
                        g.governance.close();
                    }
                });
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
                + " queue=" + s.admission().maxWaiters() + " timeout=" + s.admission().waitTimeoutNanos() / 1_000_000 + "ms";
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
                Http.json(req.response(), closing ? 503 : 200, readyReport());
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
        return new ReadyReport(closing ? "closing" : "ready", inFlight(),
                governance == null ? ReadyReport.GovernanceReport.off() : governance.report());
    }

    // ---------------------------------------------------------------- S3 listener

    /** One request and what it holds; every field is used on the request's event-loop context only. */
    private final class Exchange {
        final HttpServerRequest req;
        final Context context;
        String principal;
        S3Operation operation = S3Operation.Unknown;
        CompletableFuture<Admission> pendingAdmission;
        Admission admission;
        GovernedPipe upload;
        GovernedPipe download;
        HttpClientRequest unfinishedBackendRequest;
        boolean finished;

        Exchange(HttpServerRequest req, Context context) {
            this.req = req;
            this.context = context;
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
                unfinishedBackendRequest.reset();
            }
            if (inFlight.decrementAndGet() == 0 && closing) {
                Promise<Void> d = drained;
                if (d != null) {
                    d.tryComplete();
                }
            }
        }
    }

    private void proxy(HttpServerRequest req) {
        req.pause();
        if (closing) {
            refuse(req, 1, "gateway shutting down");
            return;
        }
        Exchange ex = new Exchange(req, vertx.getOrCreateContext());
        inFlight.incrementAndGet();
        HttpServerResponse resp = req.response();
        resp.closeHandler(v -> ex.finish());
        resp.endHandler(v -> ex.finish());
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
                refuse(req, d.retryAfter(), "rate limit");
            } else {
                count("accepted");
                admit(ex);
            }
        });
    }

    /** Takes the exchange's admission slot, if its operation needs one, then forwards it. */
    private void admit(Exchange ex) {
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

    /** Takes the first upload permits when the body is charged, then opens the backend request. */
    private void forward(Exchange ex) {
        HttpServerRequest req = ex.req;
        long length = contentLength(req.headers());
        boolean chunked = length < 0 && req.headers().contains("Transfer-Encoding");
        if (ex.governed() && (length > 0 || chunked) && TransferPolicy.chargesUpload(ex.operation)) {
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
        req.headers().forEach((k, v) -> {
            if (!HOP_BY_HOP.contains(k.toLowerCase(Locale.ROOT))) {
                headers.add(k, v);
            }
        });
        boolean expectContinue = "100-continue".equalsIgnoreCase(req.getHeader("Expect"));
        RequestOptions ro = new RequestOptions()
                .setMethod(req.method())
                .setHost(options.backend().host())
                .setPort(options.backend().port())
                .setURI(req.uri())
                .setHeaders(headers)
                .setIdleTimeout(options.backendTimeout().toMillis());
        backend.request(ro).onComplete(ar -> {
            if (ar.failed()) {
                if (retriable(ex, attempt)) {
                    LOG.debug("backend request failed ({}), sending it once more", ar.cause().toString());
                    openBackend(ex, attempt + 1);
                    return;
                }
                badGateway(req, ar.cause());
                return;
            }
            HttpClientRequest out = ar.result();
            if (ex.finished) {
                out.reset();
                return;
            }
            String host = req.getHeader("Host");
            if (host != null) {
                out.authority(io.vertx.core.net.HostAndPort.parseAuthority(host, -1));
            }
            boolean hasLength = req.headers().contains("Content-Length");
            if (!hasLength && req.headers().contains("Transfer-Encoding")) {
                out.setChunked(true);
            }
            if (expectContinue && attempt == 0) {
                resp.writeContinue();
            }
            out.response().onComplete(rr -> {
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
            if (ex.upload != null) {
                ex.upload.start(req, out, new GovernedPipe.Listener() {
                    @Override
                    public void ended() {
                        // the backend answers; relay() takes it from there
                    }

                    @Override
                    public void failed(Throwable cause) {
                        out.reset();
                        if (cause instanceof RefusedException) {
                            count("bandwidth_refused");
                            refuse(req, RETRY_AFTER_SECONDS, "upload bandwidth: " + cause.getMessage());
                        } else if (!resp.headWritten() && !resp.closed()) {
                            badGateway(req, cause);
                        } else {
                            req.connection().close();
                        }
                    }
                }, out::reset);
            } else if (attempt > 0) {
                out.end(); // a bodiless request read the first time: nothing left to pipe
            } else {
                req.resume();
                req.pipeTo(out).onFailure(e -> {
                    if (!resp.ended() && !retriable(ex, attempt)) {
                        badGateway(req, e);
                    }
                });
            }
        });
    }

    private void relay(Exchange ex, HttpClientResponse in) {
        HttpServerRequest req = ex.req;
        HttpServerResponse resp = req.response();
        if (resp.ended() || resp.closed() || ex.finished) {
            in.request().reset();
            return;
        }
        if (ex.upload != null && !ex.upload.ended()) {
            // the backend answered before the whole body was sent: stop reading it, relay the
            // answer, then drop both connections (neither can carry another request)
            ex.upload.detach();
            ex.unfinishedBackendRequest = in.request();
            resp.putHeader("Connection", "close");
        }
        long length = contentLength(in.headers());
        boolean body = req.method() != HttpMethod.HEAD && in.statusCode() >= 200 && in.statusCode() != 204
                && in.statusCode() != 304 && length != 0;
        if (!ex.governed() || !body || !TransferPolicy.chargesDownload(ex.operation)) {
            writeHead(req, in);
            in.pipeTo(resp).onFailure(e -> {
                LOG.debug("response stream ended early: {}", e.toString());
                req.connection().close();
            });
            return;
        }
        in.pause();
        try {
            ex.download = governance.openPipe(Direction.DOWNLOAD, ex.principal, ex.context);
        } catch (RefusedException e) {
            in.request().reset();
            count("bandwidth_refused");
            refuse(req, RETRY_AFTER_SECONDS, "download bandwidth: " + e.getMessage());
            return;
        }
        GovernedPipe pipe = ex.download;
        pipe.prepay(length > 0 ? Math.min(length, pipe.quantum()) : pipe.quantum(), e -> {
            if (e != null) {
                in.request().reset();
                count("bandwidth_refused");
                refuse(req, RETRY_AFTER_SECONDS, "download bandwidth: " + e.getMessage());
                return;
            }
            writeHead(req, in);
            pipe.start(in, resp, new GovernedPipe.Listener() {
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

    private static void writeHead(HttpServerRequest req, HttpClientResponse in) {
        HttpServerResponse resp = req.response();
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

    private void refuse(HttpServerRequest req, long retryAfter, String why) {
        HttpServerResponse resp = req.response();
        if (resp.ended() || resp.closed()) {
            return;
        }
        if (resp.headWritten()) {
            req.connection().close();
            return;
        }
        String rid = SlowDown.newRequestId();
        resp.setStatusCode(503)
                .putHeader("Content-Type", "application/xml")
                .putHeader("Retry-After", Long.toString(Math.max(1, retryAfter)))
                .putHeader("x-amz-request-id", rid);
        endUnread(req, req.method() == HttpMethod.HEAD ? null
                : SlowDown.xml("SlowDown", "Please reduce your request rate.", req.path(), rid));
        LOG.debug("refused {} {} ({})", req.method(), LogText.escape(req.uri()), why);
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
        LOG.debug("refused {} {} (unknown principal)", req.method(), LogText.escape(req.uri()));
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
        LOG.warn("backend {} failed for {} {}: {}", options.backend(), req.method(), LogText.escape(req.uri()),
                e.toString());
        HttpServerResponse resp = req.response();
        if (resp.ended() || resp.closed()) {
            return;
        }
        if (resp.headWritten()) {
            req.connection().close();
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
     * Shuts down gracefully, in the order of SPEC.md §8 ({@code preClose}): new requests get 503;
     * the admission queues and then the governors are closed, so waiting requests are answered 503
     * and waiting permit requests fail; in-flight requests may finish until {@code deadline}; then
     * the listeners and the backend client are closed and the governors' timer thread stops.
     *
     * @param deadline the longest wait for in-flight requests
     * @return completes when everything is closed
     */
    public Future<Void> stop(Duration deadline) {
        Promise<Void> d = Promise.promise();
        drained = d;
        closing = true;
        if (governance != null) {
            governance.closeGates();
        }
        if (inFlight.get() == 0) {
            d.tryComplete();
        }
        long timer = vertx.setTimer(Math.max(1, deadline.toMillis()), t -> d.tryComplete());
        return d.future()
                .compose(v -> {
                    vertx.cancelTimer(timer);
                    if (inFlight.get() > 0) {
                        LOG.warn("shutdown deadline reached with {} requests in flight: closing their connections", inFlight.get());
                    }
                    return s3Server.close();
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
    }

    @Override
    public void close() {
        stop(Duration.ofSeconds(5));
    }
}
