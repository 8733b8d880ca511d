package dev.levee.client;

import dev.levee.runtime.HostPort;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.internal.ContextInternal;
import io.vertx.core.internal.net.NetSocketInternal;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetServerOptions;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The line endpoint of levee-client (levee-line/1; docs/nginx.md, "Transports: subrequest and cosocket"): a
 * Vert.x {@link NetServer} whose connections are served by a {@link LineConnection} placed in each socket's
 * Netty pipeline before Vert.x's {@code "handler"}, so reads never become Vert.x buffers.
 *
 * <p>Started from inside the Vert.x context of {@link ClientService}'s HTTP server, it accepts its
 * connections on the same event loop, and every check is made on that context: the {@link LeveeClient}'s
 * limiter connections are used from one thread whichever listener a check came in on. A connection that
 * sends nothing for the idle timeout is closed (Vert.x's idle handler, ahead of ours in the pipeline); a graceful
 * {@link #shutdown(Duration)} stops accepting and has each connection {@linkplain LineConnection#drain()
 * drain}.
 */
final class LineServer {

    private static final Logger LOG = LoggerFactory.getLogger("levee.client");

    private final NetServer server;

    private LineServer(NetServer server) {
        this.server = server;
    }

    /**
     * Listens; call it on the Vert.x context the checks are to be made on.
     *
     * @param vertx       the Vert.x instance
     * @param listen      address to bind (port 0 picks a free port)
     * @param idleTimeout how long a connection may be idle before it is closed
     * @param client      decides the checks
     * @return the server once it listens
     */
    static Future<LineServer> listen(Vertx vertx, HostPort listen, Duration idleTimeout, LeveeClient client) {
        ContextInternal context = (ContextInternal) vertx.getOrCreateContext();
        LineConnection.Checks checks = (request, done) -> {
            // Netty calls LineConnection outside any Vert.x dispatch: make the check on this context, as the
            // HTTP endpoint does, rather than let the client hop to a context of its own
            ContextInternal previous = context.beginDispatch();
            try {
                // classified from the received bytes, then checked with the connection's slot as the callback:
                // no request string, no future (docs/decisions.md, "Allocation per check on the line path")
                client.check(request.classify(client.classifier()), done);
            } finally {
                context.endDispatch(previous);
            }
        };
        NetServerOptions options = new NetServerOptions()
                .setHost(listen.host())
                .setPort(listen.port())
                // idle = no request bytes for that long; a read-only idle timer also keeps Netty's IdleStateHandler
                // off the write path, where an all-idle one turns each write's void promise into a new one
                .setReadIdleTimeout((int) Math.min(Integer.MAX_VALUE, Math.max(1, idleTimeout.toMillis())))
                .setIdleTimeoutUnit(TimeUnit.MILLISECONDS)
                .setTcpNoDelay(true)
                .setReuseAddress(true);
        NetServer server = vertx.createNetServer(options).connectHandler(so -> {
            NetSocketInternal socket = (NetSocketInternal) so;
            ChannelPipeline pipeline = socket.channelHandlerContext().pipeline();
            // a peer that shuts down its output after its last request still reads the answers (LineConnection)
            socket.channelHandlerContext().channel().config().setOption(ChannelOption.ALLOW_HALF_CLOSURE, true);
            LineConnection connection = new LineConnection(checks);
            pipeline.addBefore("handler", "levee-line", connection);
            socket.shutdownHandler(timeout -> connection.drain());
        });
        return server.listen().map(s -> {
            LOG.info("line endpoint listening on {}", new HostPort(listen.host(), s.actualPort()));
            return new LineServer(s);
        });
    }

    /** Returns the bound port. */
    int port() {
        return server.actualPort();
    }

    /** Stops listening and closes every connection at once. */
    Future<Void> close() {
        return server.close();
    }

    /**
     * Stops accepting, answers every request already received, then closes each connection; after
     * {@code timeout} the connections left are closed.
     */
    Future<Void> shutdown(Duration timeout) {
        return server.shutdown(timeout);
    }
}
