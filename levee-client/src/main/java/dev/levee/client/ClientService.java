package dev.levee.client;

import dev.levee.runtime.HostPort;
import dev.levee.runtime.Http;
import dev.levee.runtime.Json;
import dev.levee.runtime.LogText;
import dev.levee.s3.S3Request;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerRequest;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The endpoint NGINX's {@code rate.lua} calls (docs/design.md §1 steps 1–4): raw S3 request facts in,
 * accepted / rejected / failed out, by way of a {@link LeveeClient}.
 *
 * <p>{@code GET /v1/s3check} with headers {@code X-Levee-Method}, {@code X-Levee-Host},
 * {@code X-Levee-Uri} (the raw request URI with query) and optionally {@code X-Levee-Copy-Source};
 * or {@code POST /v1/s3check} with JSON {@code {method, host, uri, copySource}}. Answers 200 / 429
 * (with {@code Retry-After} and the RateLimit header fields, {@link RateLimitFields}; on a 200 too when the
 * query is {@value #RATELIMIT_ON_ACCEPT}) / 500 and header {@code X-Levee-Result}; the GET form (NGINX's
 * subrequest, which reads only the status and headers) has an empty body, the POST form a JSON body
 * with the limiter, resource, operation and matched quota level. A request missing method or URI
 * gets 400. Also {@code GET /health} (503 while no limiter is known — every check then fails and passes by
 * NGINX's failure policy — or no observer is reachable, with the reason; 200 while one of several answers) and
 * {@code GET /metrics}.
 *
 * <p>Optionally a second listener speaks levee-line/1, the line protocol of rate.lua's cosocket transport
 * ({@link Line}; docs/nginx.md, "Transports: subrequest and cosocket"): the same checks by the same
 * {@link LeveeClient} with the same answers, without HTTP. Both listeners run on one event loop.
 */
public final class ClientService implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger("levee.client");

    private final LeveeClient client;
    private final HttpServer server;
    /** The line endpoint, or null when off. */
    private final LineServer line;

    private ClientService(LeveeClient client, HttpServer server, LineServer line) {
        this.client = client;
        this.server = server;
        this.line = line;
    }

    /**
     * The line endpoint's settings (levee-line/1; CLI {@code --line-listen}, {@code --line-idle-timeout}).
     *
     * @param listen      address to bind (port 0 picks a free port, see {@link #linePort()})
     * @param idleTimeout how long a connection may send nothing, with no check pending, before it is closed
     *                    (default 60 s, as the HTTP listener; keep it above rate.lua's {@code keepalive})
     */
    public record Line(HostPort listen, Duration idleTimeout) {

        /** The default idle timeout: 60 s. */
        public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(60);

        /**
         * Validates the settings.
         *
         * @throws IllegalArgumentException when the idle timeout is not positive
         */
        public Line {
            java.util.Objects.requireNonNull(listen, "listen");
            if (idleTimeout == null || idleTimeout.isNegative() || idleTimeout.isZero()) {
                throw new IllegalArgumentException("the line idle timeout must be positive, got " + idleTimeout);
            }
        }
    }

    /** The JSON form of a check. */
    public record S3Facts(String method, String host, String uri, String copySource) {
    }

    /**
     * Starts the endpoint over an existing client.
     *
     * @param listen address to bind (default 127.0.0.1:7200)
     * @return the running service once it listens
     */
    public static Future<ClientService> start(Vertx vertx, HostPort listen, LeveeClient client, MeterRegistry registry) {
        return start(vertx, listen, null, client, registry);
    }

    /**
     * Starts the endpoint and, when {@code line} is given, the line endpoint beside it, both on one event loop
     * of their own (so the client's limiter connections are used from one thread for both).
     *
     * @param listen address of the HTTP endpoint (default 127.0.0.1:7200)
     * @param line   the line endpoint, or null for none
     * @return the running service once both listen; when one cannot, a failure naming it (and neither runs)
     */
    public static Future<ClientService> start(Vertx vertx, HostPort listen, Line line, LeveeClient client,
                                              MeterRegistry registry) {
        return start(vertx, listen, line, client, registry, Duration.ZERO);
    }

    /**
     * Starts the endpoints as {@link #start(Vertx, HostPort, Line, LeveeClient, MeterRegistry)} and then warms the
     * check path with self-checks through them ({@link EndpointWarmup}): {@code /health} answers 503 "warming up"
     * until that is over. The future completes once the listeners are up, not when the warm-up ends.
     *
     * @param warmup longest time the self-checks take once the first limiter list is in (CLI {@code --warmup},
     *               default 15 s); zero for none
     * @return the running service once both listen
     */
    public static Future<ClientService> start(Vertx vertx, HostPort listen, Line line, LeveeClient client,
                                              MeterRegistry registry, Duration warmup) {
        java.util.concurrent.atomic.AtomicBoolean warming = new java.util.concurrent.atomic.AtomicBoolean(!warmup.isZero());
        return Http.onOwnEventLoop(vertx, () -> vertx.createHttpServer(Http.defaults(listen))
                .requestHandler(req -> handle(req, client, registry, warming)).listen()
                .compose(http -> {
                    LOG.info("client endpoint listening on {}", new HostPort(listen.host(), http.actualPort()));
                    if (line == null) {
                        return Future.succeededFuture(new ClientService(client, http, null));
                    }
                    return LineServer.listen(vertx, line.listen(), line.idleTimeout(), client)
                            .map(l -> new ClientService(client, http, l))
                            .recover(e -> http.close().transform(v -> Future.failedFuture(
                                    new IllegalStateException("line endpoint " + line.listen() + ": " + e.getMessage(), e))));
                })).onSuccess(s -> {
                    if (warming.get()) {
                        EndpointWarmup.run(vertx, client, new HostPort(listen.host(), s.port()),
                                line == null ? null : new HostPort(line.listen().host(), s.linePort()), warmup)
                                .onComplete(ar -> warming.set(false));
                    }
                });
    }

    private static void handle(HttpServerRequest req, LeveeClient client, MeterRegistry registry,
                               java.util.concurrent.atomic.AtomicBoolean warming) {
        String path = req.path();
        if (path.equals("/v1/s3check") && req.method() == HttpMethod.GET) {
            String query = req.query();
            int batch = -1;
            if (query != null && query.startsWith(BATCH_QUERY)) {
                batch = batchUsed(query);
                if (batch < 0) {
                    Http.error(req.response(), 400, "batch must be a whole number from 0 to " + MAX_BATCH_USED
                            + " (the requests admitted from the caller's last batch), got \"" + LogText.escape(
                            query.substring(BATCH_QUERY.length()), 40) + "\"");
                    return;
                }
            }
            decide(req, client, new S3Facts(req.getHeader(METHOD), req.getHeader(HOST), req.getHeader(URI),
                    req.getHeader(COPY_SOURCE)), false, RATELIMIT_ON_ACCEPT.equals(query), batch);
        } else if (path.equals("/v1/s3check") && req.method() == HttpMethod.POST) {
            Http.withBody(req, body -> {
                try {
                    decide(req, client, Json.parse(body, S3Facts.class), true, RATELIMIT_ON_ACCEPT.equals(req.query()),
                            -1);
                } catch (IllegalArgumentException e) {
                    Http.error(req.response(), 400, e.getMessage());
                }
            });
        } else if (path.equals("/health") && req.method() == HttpMethod.GET) {
            // not ready while failing open (no limiter known) or the observer is unreachable (docs/design.md §11), or while
            // the check path warms up (checks are served meanwhile)
            String degraded = client.degradedReason();
            if (degraded == null && warming.get()) {
                degraded = "warming up the check path with self-checks (--warmup)";
            }
            Http.json(req.response(), degraded == null ? 200 : 503, Map.of(
                    "status", degraded == null ? "ready" : client.failingOpen() ? "no limiters known"
                            : warming.get() && client.observerReachable() ? "warming up" : "observer unreachable",
                    "revision", client.view().revision(), "observerReachable", client.observerReachable(),
                    "failOpen", client.failingOpen(), "reason", degraded == null ? "" : degraded,
                    // which observer the list came from, and any other that does not answer (still 200: issue 22)
                    "observer", client.observerInUse() == null ? "" : client.observerInUse().toString(),
                    "observersDown", client.observersDownReason() == null ? "" : client.observersDownReason()));
        } else if (path.equals("/metrics") && req.method() == HttpMethod.GET) {
            Http.metrics(req, registry);
        } else {
            Http.error(req.response(), 404, "no such endpoint: " + req.method() + " " + path);
        }
    }

    private static final CharSequence METHOD = io.vertx.core.http.HttpHeaders.createOptimized("X-Levee-Method");
    private static final CharSequence HOST = io.vertx.core.http.HttpHeaders.createOptimized("X-Levee-Host");
    private static final CharSequence URI = io.vertx.core.http.HttpHeaders.createOptimized("X-Levee-Uri");
    private static final CharSequence COPY_SOURCE = io.vertx.core.http.HttpHeaders.createOptimized("X-Levee-Copy-Source");
    private static final CharSequence RESULT = io.vertx.core.http.HttpHeaders.createOptimized("X-Levee-Result");
    private static final CharSequence RETRY_AFTER = io.vertx.core.http.HttpHeaders.createOptimized("Retry-After");
    private static final CharSequence CONTENT_LENGTH = io.vertx.core.http.HttpHeaders.CONTENT_LENGTH;
    private static final CharSequence ZERO = io.vertx.core.http.HttpHeaders.createOptimized("0");

    /**
     * The query of a check that also wants the RateLimit fields on an accepted answer ({@value}); a rejected
     * answer always carries them (docs/nginx.md, "RateLimit header fields").
     */
    public static final String RATELIMIT_ON_ACCEPT = "ratelimit=1";
    private static final CharSequence RATELIMIT_POLICY = io.vertx.core.http.HttpHeaders.createOptimized(
            RateLimitFields.POLICY_HEADER);
    private static final CharSequence RATELIMIT = io.vertx.core.http.HttpHeaders.createOptimized(RateLimitFields.LIMIT_HEADER);

    /**
     * The query of a check from a caller that takes batches of leased slots, {@code batch=<n>}: {@code n} is how many
     * requests to the bucket it admitted from its last batch since its last check (docs/design.md §12, "Batches in
     * NGINX"). An admission that comes with a batch carries {@code X-Levee-Batch: <slots> <life µs> <label>}.
     */
    public static final String BATCH_QUERY = "batch=";
    /** The largest {@code n} of {@value #BATCH_QUERY}: {@value}. */
    public static final int MAX_BATCH_USED = 1_000_000;
    private static final CharSequence BATCH = io.vertx.core.http.HttpHeaders.createOptimized("X-Levee-Batch");

    /** Returns {@code n} of a {@code batch=<n>} query, or -1 when it is not a whole number in [0, MAX_BATCH_USED]. */
    static int batchUsed(String query) {
        int n = 0;
        int len = query.length() - BATCH_QUERY.length();
        if (len < 1 || len > 7) {
            return -1;
        }
        for (int i = BATCH_QUERY.length(); i < query.length(); i++) {
            char ch = query.charAt(i);
            if (ch < '0' || ch > '9') {
                return -1;
            }
            n = n * 10 + (ch - '0');
        }
        return n <= MAX_BATCH_USED ? n : -1;
    }

    private static void decide(HttpServerRequest req, LeveeClient client, S3Facts f, boolean withBody,
                               boolean rateLimitOnAccept, int batch) {
        if (f.method() == null || f.method().isEmpty()) {
            Http.error(req.response(), 400, "missing S3 request method (X-Levee-Method or 'method')");
            return;
        }
        if (f.uri() == null || f.uri().isEmpty()) {
            Http.error(req.response(), 400, "missing S3 request URI (X-Levee-Uri or 'uri')");
            return;
        }
        S3Request s3 = S3Request.fromRequestUri(f.method(), f.host(), f.uri(), f.copySource());
        io.vertx.core.Promise<ClientDecision> checked = io.vertx.core.Promise.promise();
        client.check(s3, batch, checked);
        checked.future().onComplete(ar -> {
            var resp = req.response();
            if (resp.ended() || resp.closed()) {
                return;
            }
            if (ar.failed()) {
                resp.putHeader(RESULT, "failed");
                if (withBody) {
                    Http.json(resp, 500, Map.of("result", "failed"));
                } else {
                    resp.setStatusCode(500).putHeader(CONTENT_LENGTH, ZERO).end();
                }
                return;
            }
            ClientDecision d = ar.result();
            if (d.result() == ClientDecision.Result.REJECTED) {
                resp.putHeader(RETRY_AFTER, Long.toString(d.retryAfter()));
            }
            if (d.result() == ClientDecision.Result.REJECTED || rateLimitOnAccept) {
                String policy = d.rateLimitPolicy();
                if (policy != null) {
                    resp.putHeader(RATELIMIT_POLICY, policy).putHeader(RATELIMIT, d.rateLimit());
                }
            }
            resp.putHeader(RESULT, d.result().word());
            ClientDecision.Batch b = d.batch();
            if (b != null) {
                resp.putHeader(BATCH, b.slots() + " " + b.lifeNs() / 1000 + " " + b.label());
            }
            if (!withBody) {
                resp.setStatusCode(d.result().status()).putHeader(CONTENT_LENGTH, ZERO).end();
                return;
            }
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("result", d.result().word());
            body.put("retryAfter", d.retryAfter());
            body.put("limiter", d.limiter());
            body.put("resource", d.classification().resource());
            body.put("operation", d.classification().operation().name());
            body.put("level", d.level());
            Http.json(resp, d.result().status(), body);
        });
    }

    /** Returns the bound port. */
    public int port() {
        return server.actualPort();
    }

    /** Returns the bound port of the line endpoint, or -1 when there is none. */
    public int linePort() {
        return line == null ? -1 : line.port();
    }

    /** Returns the client library behind the endpoint. */
    public LeveeClient client() {
        return client;
    }

    /** Stops listening at once, closing connections with checks in flight (the client is closed by its owner). */
    public Future<Void> stop() {
        return line == null ? server.close() : Future.join(server.close(), line.close()).mapEmpty();
    }

    /**
     * Stops gracefully (issue 10): stops accepting connections, answers every check already received
     * — including those queued in the {@link LeveeClient} to be batched — and closes each connection
     * once its checks are answered, or after {@code timeout} at the latest; the line endpoint alike (every
     * request already received is answered). The client library is closed by its owner, after this completes.
     *
     * @param timeout longest wait for checks in flight (CLI {@code --shutdown-deadline}, default 5 s)
     * @return completes once every connection is closed
     */
    public Future<Void> stop(Duration timeout) {
        return line == null ? server.shutdown(timeout)
                : Future.join(server.shutdown(timeout), line.shutdown(timeout)).mapEmpty();
    }

    @Override
    public void close() {
        stop();
    }
}
