package dev.levee.limiter;

import dev.levee.runtime.Http;
import dev.levee.wire.CheckWire;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpVersion;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code GET /v1/checks} with {@code Upgrade: }{@value CheckWire#PROTOCOL}: the switch of an HTTP/1.1 connection
 * to the check wire ({@link CheckWire}). A well-formed upgrade is answered 101 and the connection's reads go to a
 * {@link WireHandler} (frames in, answers out); one without {@code Connection: Upgrade} or with a body → 400, a
 * plain {@code GET} → 405, a stopping limiter → 503.
 */
final class WireUpgrade {

    private static final Logger LOG = LoggerFactory.getLogger("levee.limiter");

    private final String id;
    private final Checks checks;
    private final BooleanSupplier stopping;

    /**
     * @param id       the limiter's id (in the 503 of a stopping limiter)
     * @param checks   what decides the frames' checks
     * @param stopping whether the limiter is stopping
     */
    WireUpgrade(String id, Checks checks, BooleanSupplier stopping) {
        this.id = id;
        this.checks = checks;
        this.stopping = stopping;
    }

    /** True when {@code req} is a {@code GET} of {@link CheckWire#PATH}: an upgrade, or the 405 that says how. */
    static boolean isFor(HttpServerRequest req) {
        return req.path().equals(CheckWire.PATH) && req.method() == HttpMethod.GET;
    }

    /** Answers a {@code GET} of {@link CheckWire#PATH} (see {@link #isFor}): upgrades it, or says why not. */
    void handle(HttpServerRequest req) {
        if (offersWire(req)) {
            if (!hasToken(req, HttpHeaders.CONNECTION, "upgrade")) {
                // RFC 9110 §7.8: an Upgrade header is only sent with the "upgrade" connection option; without it
                // Vert.x would not switch and the request would wait for the idle timeout
                Http.error(req.response(), 400, "an upgrade to " + CheckWire.PROTOCOL + " needs Connection: Upgrade");
            } else if (req.headers().contains(HttpHeaders.CONTENT_LENGTH)
                    && !"0".equals(req.getHeader(HttpHeaders.CONTENT_LENGTH).trim())
                    || req.headers().contains(HttpHeaders.TRANSFER_ENCODING)) {
                // its body would be read as frames after the switch
                Http.error(req.response().putHeader(HttpHeaders.CONNECTION, HttpHeaders.CLOSE), 400,
                        "an upgrade to " + CheckWire.PROTOCOL + " has no body");
            } else {
                upgrade(req);
            }
        } else {
            Http.error(req.response().putHeader("Allow", "POST"), 405, "GET " + CheckWire.PATH + " is the check wire:"
                    + " HTTP/1.1 with Connection: Upgrade and Upgrade: " + CheckWire.PROTOCOL + " (POST for a batch of"
                    + " checks)");
        }
    }

    /**
     * True when {@code req} asks for the check wire: HTTP/1.1 (RFC 9110 §7.8: an Upgrade in an HTTP/1.0 request is
     * ignored) with {@value CheckWire#PROTOCOL} among the protocols of its Upgrade header.
     */
    private static boolean offersWire(HttpServerRequest req) {
        return req.version() == HttpVersion.HTTP_1_1 && hasToken(req, HttpHeaders.UPGRADE, CheckWire.PROTOCOL);
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
     * Upgrades a connection to the check wire: 101, then the connection's reads go to a {@link WireHandler} and a
     * stop sends GOAWAY on it. A stopping limiter answers 503.
     */
    private void upgrade(HttpServerRequest req) {
        if (stopping.getAsBoolean()) {
            Http.error(req.response(), 503, "limiter " + id + " is stopping");
            return;
        }
        req.response().putHeader(HttpHeaders.UPGRADE, CheckWire.PROTOCOL)
                .putHeader(HttpHeaders.CONNECTION, HttpHeaders.UPGRADE);
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
            WireHandler wire = new WireHandler(checks);
            pipeline.addBefore("handler", "levee-frames", CheckWire.frameDecoder());
            pipeline.addBefore("handler", "levee-wire", wire);
            early.release();
            io.netty.channel.ChannelHandlerContext ctx = pipeline.context(wire);
            // graceful stop: GOAWAY; Vert.x closes the connection once the client closed it, or at the timeout
            so.shutdownHandler(timeout -> wire.goAway(ctx));
        });
    }
}
