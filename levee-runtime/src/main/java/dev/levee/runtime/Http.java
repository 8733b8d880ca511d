package dev.levee.runtime;

import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import java.util.Map;

/** Small helpers shared by Levee's HTTP endpoints (Vert.x core, no router). */
public final class Http {

    /** Largest JSON request body accepted by Levee's APIs: 16 KiB. */
    public static final int MAX_JSON_BODY = 16 * 1024;

    private Http() {
    }

    /**
     * Creates the Vert.x instance of a Levee process: Netty's native epoll transport on Linux (fewer
     * system calls and wake-ups per request than Java NIO; measured in docs/BENCHMARKS.md), NIO
     * elsewhere or when the native library cannot load.
     *
     * @param eventLoops event-loop threads; 0 keeps Vert.x's default (2 × cores)
     * @return a new Vert.x instance
     */
    public static Vertx vertx(int eventLoops) {
        io.vertx.core.VertxOptions options = new io.vertx.core.VertxOptions().setPreferNativeTransport(true);
        if (eventLoops > 0) {
            options.setEventLoopPoolSize(eventLoops);
        }
        Vertx vertx = Vertx.vertx(options);
        if (!vertx.isNativeTransportEnabled()) {
            Throwable why = vertx.unavailableNativeTransportCause();
            org.slf4j.LoggerFactory.getLogger("levee.runtime").info("native transport unavailable, using Java NIO: {}",
                    why == null ? "unknown reason" : why.getMessage());
        }
        return vertx;
    }

    /**
     * Returns the socket channel class that fits {@code vertx}'s event loops, for connections Levee opens with
     * Netty itself on them (the check wire): epoll when Vert.x runs Netty's native transport, else NIO.
     */
    public static Class<? extends io.netty.channel.Channel> socketChannelClass(Vertx vertx) {
        return vertx.isNativeTransportEnabled() && io.netty.channel.epoll.Epoll.isAvailable()
                ? io.netty.channel.epoll.EpollSocketChannel.class : io.netty.channel.socket.nio.NioSocketChannel.class;
    }

    /** Creates the Vert.x instance of a Levee process with the default event loops (see {@link #vertx(int)}). */
    public static Vertx vertx() {
        return vertx(0);
    }

    /**
     * Starts an HTTP/1.1 server.
     *
     * @param vertx   the Vert.x instance
     * @param listen  address to bind (port 0 picks a free port)
     * @param handler request handler
     * @return the listening server
     */
    public static Future<HttpServer> listen(Vertx vertx, HostPort listen, Handler<HttpServerRequest> handler) {
        return listen(vertx, defaults(listen), handler);
    }

    /**
     * Starts an HTTP server on an event loop of its own: the server is created inside a verticle
     * deployment, so that the services of one process (the demo runs a whole stack) are spread over
     * Vert.x's event loops instead of sharing the loop of whichever thread started them.
     *
     * @param vertx   the Vert.x instance
     * @param options server options (host, port, limits)
     * @param handler request handler
     * @return the listening server
     */
    public static Future<HttpServer> listen(Vertx vertx, HttpServerOptions options, Handler<HttpServerRequest> handler) {
        return onOwnEventLoop(vertx, () -> vertx.createHttpServer(options).requestHandler(handler).listen());
    }

    /**
     * Runs {@code start} inside a new verticle deployment, so that the servers it creates live on one event loop
     * of their own (see {@link #listen(Vertx, HttpServerOptions, Handler)}); servers started together by one
     * {@code start} share that event loop and its Vert.x context.
     *
     * @param vertx the Vert.x instance
     * @param start creates and starts the servers; called on the new context
     * @return what {@code start} completes with; a failure undeploys what it created
     */
    public static <T> Future<T> onOwnEventLoop(Vertx vertx, java.util.function.Supplier<Future<T>> start) {
        io.vertx.core.Promise<T> done = io.vertx.core.Promise.promise();
        vertx.deployVerticle(new io.vertx.core.VerticleBase() {
            @Override
            public Future<?> start() {
                return start.get().onComplete(done);
            }
        }).onFailure(done::tryFail);
        return done.future();
    }

    /** Returns Levee's default HTTP/1.1 server options for {@code listen}. */
    public static HttpServerOptions defaults(HostPort listen) {
        return new HttpServerOptions()
                .setHost(listen.host())
                .setPort(listen.port())
                .setIdleTimeout(60)
                .setMaxInitialLineLength(16 * 1024)
                .setMaxHeaderSize(32 * 1024)
                .setTcpNoDelay(true)
                .setReuseAddress(true)
                .setHttp2ClearTextEnabled(false); // HTTP/1.1 only: NGINX and the client speak it, h2c adds nothing
    }

    /**
     * Waits for a start-up step (a service starting, a server stopping) up to 30 s.
     *
     * @param what what is awaited, for the message
     * @return its result
     * @throws IllegalStateException {@code what: } the failure's message, {@code timed out} or {@code interrupted}
     */
    public static <T> T await(Future<T> f, String what) {
        try {
            return f.toCompletionStage().toCompletableFuture().get(30, java.util.concurrent.TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable c = e.getCause();
            throw new IllegalStateException(what + ": " + (c.getMessage() == null ? c.toString() : c.getMessage()));
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException(what + ": timed out");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(what + ": interrupted");
        }
    }

    /** Wraps a written Netty buffer (a check-wire body, levee-wire's {@code BinaryChecks}) as a Vert.x buffer (no copy). */
    public static Buffer buffer(io.netty.buffer.ByteBuf b) {
        return io.vertx.core.internal.buffer.BufferInternal.buffer(b);
    }

    /** Writes {@code body} as JSON with {@code status}. */
    public static void json(HttpServerResponse resp, int status, Object body) {
        if (resp.ended() || resp.closed()) {
            return;
        }
        resp.setStatusCode(status).putHeader("Content-Type", "application/json").end(Buffer.buffer(Json.write(body)));
    }

    /** Writes {@code {"error": message}} with {@code status}. */
    public static void error(HttpServerResponse resp, int status, String message) {
        json(resp, status, Map.of("error", message));
    }

    /**
     * Reads a JSON body of at most {@link #MAX_JSON_BODY} bytes and hands the bytes on; replies 413
     * when it is larger and 400 when it is unreadable.
     */
    public static void withBody(HttpServerRequest req, Handler<byte[]> then) {
        withBody(req, MAX_JSON_BODY, then);
    }

    /**
     * Reads a JSON body of at most {@code maxBytes} bytes and hands the bytes on; replies 413 when it
     * is larger and 400 when it is unreadable.
     *
     * @param maxBytes largest body accepted, in bytes
     */
    public static void withBody(HttpServerRequest req, int maxBytes, Handler<byte[]> then) {
        String cl = req.getHeader("Content-Length");
        if (cl != null) {
            try {
                if (Long.parseLong(cl.trim()) > maxBytes) {
                    error(req.response().putHeader("Connection", "close"), 413, "body larger than " + maxBytes + " bytes");
                    return;
                }
            } catch (NumberFormatException e) {
                error(req.response(), 400, "malformed Content-Length");
                return;
            }
        }
        Buffer acc = Buffer.buffer();
        boolean[] tooLarge = {false};
        req.handler(chunk -> {
            if (tooLarge[0]) {
                return;
            }
            if (acc.length() + chunk.length() > maxBytes) {
                tooLarge[0] = true;
                error(req.response().putHeader("Connection", "close"), 413, "body larger than " + maxBytes + " bytes");
                return;
            }
            acc.appendBuffer(chunk);
        });
        req.exceptionHandler(e -> {
            if (!req.response().ended()) {
                error(req.response(), 400, "unreadable body");
            }
        });
        req.endHandler(v -> {
            if (!tooLarge[0]) {
                then.handle(acc.getBytes());
            }
        });
    }

    /** Serves {@code GET /metrics} in the Prometheus text format. */
    public static void metrics(HttpServerRequest req, MeterRegistry registry) {
        req.response().putHeader("Content-Type", "text/plain; version=0.0.4; charset=utf-8").end(Metrics.scrape(registry));
    }
}
