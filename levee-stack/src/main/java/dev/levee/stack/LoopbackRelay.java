package dev.levee.stack;

import io.vertx.core.Vertx;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetClientOptions;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetServerOptions;
import io.vertx.core.net.NetSocket;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;

/**
 * The listening half shared by the test proxies ({@link LatencyProxy}, {@link PartitionProxy}): a TCP listener on
 * 127.0.0.1 (a free port) whose every accepted connection is paused, connected on to {@code host:port} and handed,
 * with its new peer, to the proxy's own relay; a connection whose peer cannot be reached is closed.
 *
 * @param server the listener (TCP_NODELAY)
 * @param client the connector to the target (connect timeout 5 s, TCP_NODELAY)
 */
record LoopbackRelay(NetServer server, NetClient client) {

    /** Creates the listener and the connector, not yet listening. */
    static LoopbackRelay create(Vertx vertx) {
        NetServerOptions listen = new NetServerOptions().setHost("127.0.0.1").setPort(0).setTcpNoDelay(true);
        return new LoopbackRelay(vertx.createNetServer(listen),
                vertx.createNetClient(new NetClientOptions().setConnectTimeout(5000).setTcpNoDelay(true)));
    }

    /**
     * Listens, relaying each accepted connection through {@code link}.
     *
     * @param what names the proxy in the error
     * @throws IllegalStateException when the listener is not up within 10 s
     */
    void listen(String host, int port, BiConsumer<NetSocket, NetSocket> link, String what) {
        server.connectHandler(in -> {
            in.pause();
            client.connect(port, host).onSuccess(out -> link.accept(in, out)).onFailure(e -> in.close());
        });
        try {
            server.listen().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException(what + " could not listen", e);
        }
    }
}
