package dev.levee.gateway;

import dev.levee.client.ClientDecision;
import dev.levee.client.LeveeClient;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Http;
import dev.levee.runtime.LogText;
import dev.levee.s3.S3Request;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;
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
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Streams S3 requests to a backend (SPEC.md §1, §2 levee-gateway): a reverse proxy that never
 * buffers a body whole (request and response bodies are piped with back-pressure), and, when no
 * NGINX is in front, checks each request with a {@link LeveeClient} first.
 *
 * <p>Refusal: {@code 503}, S3 XML error {@code <Code>SlowDown</Code>}, {@code Retry-After}. A
 * failed check follows {@code onFailure}: {@code allow} (default) proxies the request,
 * {@code deny} refuses it with 503 SlowDown. The request line, Host and headers reach the backend
 * as the client sent them (so SigV4 signatures stay valid), minus hop-by-hop headers.
 *
 * <p>A second listener (admin) serves {@code GET /health} and {@code GET /metrics}, so that no S3
 * path (a bucket called {@code metrics}) is shadowed.
 */
public final class GatewayService implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger("levee.gateway");
    private static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-authenticate",
            "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "expect");

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
     * @param admin          admin listener for /health and /metrics (default 127.0.0.1:9001)
     * @param backend        S3 backend {@code host:port} (HTTP)
     * @param enforce        check each request with the limiter cluster (off when NGINX checks)
     * @param onFailure      policy when the check fails
     * @param backendTimeout idle timeout towards the backend (default 60 s)
     * @param maxConnections connections to the backend (default 256)
     */
    public record Options(HostPort listen, HostPort admin, HostPort backend, boolean enforce, OnFailure onFailure,
                          Duration backendTimeout, int maxConnections) {
        /** Validates. @throws IllegalArgumentException when a value is out of range */
        public Options {
            if (backendTimeout.isNegative() || backendTimeout.isZero()) {
                throw new IllegalArgumentException("backend timeout must be positive");
            }
            if (maxConnections < 1) {
                throw new IllegalArgumentException("max connections must be >= 1");
            }
        }
    }

    private final Options options;
    private final LeveeClient client;
    private final HttpClientAgent backend;
    private final MeterRegistry registry;
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();
    private final AtomicInteger inFlight = new AtomicInteger();
    private volatile boolean closing;
    private HttpServer s3Server;
    private HttpServer adminServer;

    private GatewayService(Vertx vertx, Options options, LeveeClient client, MeterRegistry registry) {
        this.options = options;
        this.client = client;
        this.registry = registry;
        this.backend = vertx.createHttpClient(new HttpClientOptions()
                        .setKeepAlive(true)
                        .setTcpNoDelay(true)
                        .setIdleTimeout((int) options.backendTimeout().toSeconds())
                        .setConnectTimeout(5000)
                        .setMaxInitialLineLength(16 * 1024)
                        .setMaxHeaderSize(64 * 1024),
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
                .setHandle100ContinueAutomatically(false)
                .setHttp2ClearTextEnabled(false);
        return vertx.createHttpServer(s3Options).requestHandler(g::proxy).listen()
                .compose(s -> {
                    g.s3Server = s;
                    return Http.listen(vertx, options.admin(), g::admin);
                })
                .map(a -> {
                    g.adminServer = a;
                    LOG.info("gateway S3 listener on {}:{} admin on {}:{} backend {} enforce={} on_failure={}",
                            options.listen().host(), g.s3Server.actualPort(), options.admin().host(), a.actualPort(),
                            options.backend(), options.enforce(), options.onFailure());
                    return g;
                });
    }

    private void admin(HttpServerRequest req) {
        if (req.path().equals("/health") && req.method() == HttpMethod.GET) {
            Http.json(req.response(), closing ? 503 : 200, Map.of("status", closing ? "closing" : "ready",
                    "inFlight", inFlight.get()));
        } else if (req.path().equals("/metrics") && req.method() == HttpMethod.GET) {
            Http.metrics(req, registry);
        } else {
            Http.error(req.response(), 404, "no such endpoint");
        }
    }

    private void proxy(HttpServerRequest req) {
        req.pause();
        if (closing) {
            refuse(req, 1, "gateway shutting down");
            return;
        }
        if (!options.enforce()) {
            forward(req);
            return;
        }
        String host = req.getHeader("Host");
        S3Request s3 = S3Request.fromRequestUri(req.method().name(), host, req.uri(), req.getHeader("x-amz-copy-source"));
        client.check(s3).onComplete(ar -> {
            ClientDecision d = ar.succeeded() ? ar.result() : null;
            if (d == null || d.result() == ClientDecision.Result.FAILED) {
                count("failed");
                if (options.onFailure() == OnFailure.DENY) {
                    refuse(req, 1, "rate check failed");
                } else {
                    forward(req);
                }
            } else if (d.result() == ClientDecision.Result.REJECTED) {
                count("rejected");
                refuse(req, d.retryAfter(), "rate limit");
            } else {
                count("accepted");
                forward(req);
            }
        });
    }

    private void refuse(HttpServerRequest req, long retryAfter, String why) {
        HttpServerResponse resp = req.response();
        String rid = SlowDown.newRequestId();
        boolean hasBody = req.headers().contains("Content-Length") && !"0".equals(req.getHeader("Content-Length"))
                || req.headers().contains("Transfer-Encoding");
        resp.setStatusCode(503)
                .putHeader("Content-Type", "application/xml")
                .putHeader("Retry-After", Long.toString(Math.max(1, retryAfter)))
                .putHeader("x-amz-request-id", rid);
        if (hasBody) {
            // the body was never read: close the connection rather than read and discard it
            resp.putHeader("Connection", "close");
        }
        if (req.method() == HttpMethod.HEAD) {
            resp.end();
        } else {
            resp.end(SlowDown.xml("SlowDown", "Please reduce your request rate.", req.path(), rid));
        }
        if (hasBody) {
            resp.endHandler(v -> req.connection().close());
        }
        LOG.debug("refused {} {} ({})", req.method(), LogText.escape(req.uri()), why);
    }

    private void forward(HttpServerRequest req) {
        inFlight.incrementAndGet();
        HttpServerResponse resp = req.response();
        java.util.concurrent.atomic.AtomicBoolean finished = new java.util.concurrent.atomic.AtomicBoolean();
        Runnable done = () -> {
            if (finished.compareAndSet(false, true)) {
                inFlight.decrementAndGet();
            }
        };
        resp.closeHandler(v -> done.run());
        resp.endHandler(v -> done.run());
        MultiMap headers = MultiMap.caseInsensitiveMultiMap();
        req.headers().forEach((k, v) -> {
            if (!HOP_BY_HOP.contains(k.toLowerCase(java.util.Locale.ROOT))) {
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
                badGateway(req, ar.cause());
                return;
            }
            HttpClientRequest out = ar.result();
            String host = req.getHeader("Host");
            if (host != null) {
                out.authority(io.vertx.core.net.HostAndPort.parseAuthority(host, -1));
            }
            boolean hasLength = req.headers().contains("Content-Length");
            if (!hasLength && req.headers().contains("Transfer-Encoding")) {
                out.setChunked(true);
            }
            if (expectContinue) {
                resp.writeContinue();
            }
            out.response().onComplete(rr -> {
                if (rr.failed()) {
                    badGateway(req, rr.cause());
                    return;
                }
                relay(req, rr.result());
            });
            req.resume();
            req.pipeTo(out).onFailure(e -> {
                if (!resp.ended()) {
                    badGateway(req, e);
                }
            });
        });
    }

    private void relay(HttpServerRequest req, HttpClientResponse in) {
        HttpServerResponse resp = req.response();
        if (resp.ended() || resp.closed()) {
            in.request().reset();
            return;
        }
        resp.setStatusCode(in.statusCode());
        resp.setStatusMessage(in.statusMessage());
        in.headers().forEach((k, v) -> {
            if (!HOP_BY_HOP.contains(k.toLowerCase(java.util.Locale.ROOT))) {
                resp.headers().add(k, v);
            }
        });
        if (!in.headers().contains("Content-Length") && req.method() != HttpMethod.HEAD) {
            resp.setChunked(true);
        }
        in.pipeTo(resp).onFailure(e -> {
            LOG.debug("response stream ended early: {}", e.toString());
            req.connection().close();
        });
    }

    private void badGateway(HttpServerRequest req, Throwable e) {
        count("backend_error");
        LOG.warn("backend {} failed for {} {}: {}", options.backend(), req.method(), LogText.escape(req.uri()),
                e.toString());
        HttpServerResponse resp = req.response();
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

    /** Returns requests being proxied now. */
    public int inFlight() {
        return Math.max(0, inFlight.get());
    }

    /**
     * Shuts down gracefully: new requests get 503, in-flight requests may finish until {@code deadline}.
     *
     * @param deadline the longest wait for in-flight requests
     * @return completes when both listeners are closed
     */
    public Future<Void> stop(Duration deadline) {
        closing = true;
        return s3Server.shutdown(deadline.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)
                .compose(v -> adminServer.close())
                .compose(v -> backend.close());
    }

    @Override
    public void close() {
        stop(Duration.ofSeconds(5));
    }
}
