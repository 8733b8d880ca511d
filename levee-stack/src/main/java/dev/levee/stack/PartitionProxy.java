package dev.levee.stack;

import io.vertx.core.Vertx;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetSocket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A loopback TCP forwarder that can cut the link like a network partition, for {@code levee demo
 * --gateways} and tests: while partitioned, nothing is forwarded in either direction but no
 * connection is closed (both sides stop reading, so bytes wait in the kernel's buffers as behind a
 * dead link, and new connections hang); healing resumes every stream where it stopped.
 */
public final class PartitionProxy implements AutoCloseable {

    private final NetServer server;
    private final NetClient client;
    private final List<NetSocket[]> links = new CopyOnWriteArrayList<>();
    private volatile boolean partitioned;

    private PartitionProxy(NetServer server, NetClient client) {
        this.server = server;
        this.client = client;
    }

    /**
     * Starts forwarding from a free port on 127.0.0.1 to {@code host:port}.
     *
     * @throws IllegalStateException when it cannot listen within 10 s
     */
    public static PartitionProxy start(Vertx vertx, String host, int port) {
        LoopbackRelay relay = LoopbackRelay.create(vertx);
        PartitionProxy p = new PartitionProxy(relay.server(), relay.client());
        relay.listen(host, port, p::link, "partition proxy");
        return p;
    }

    private void link(NetSocket in, NetSocket out) {
        NetSocket[] pair = {in, out};
        links.add(pair);
        in.handler(out::write);
        out.handler(in::write);
        in.closeHandler(v -> {
            out.close();
            links.remove(pair);
        });
        out.closeHandler(v -> {
            in.close();
            links.remove(pair);
        });
        if (partitioned) {
            out.pause();
        } else {
            in.resume();
        }
    }

    /** The local port to connect to. */
    public int port() {
        return server.actualPort();
    }

    /** Cuts ({@code true}) or heals ({@code false}) the link. */
    public void partition(boolean on) {
        partitioned = on;
        for (NetSocket[] pair : links) {
            for (NetSocket s : pair) {
                if (on) {
                    s.pause();
                } else {
                    s.resume();
                }
            }
        }
    }

    /** Whether the link is cut. */
    public boolean partitioned() {
        return partitioned;
    }

    @Override
    public void close() {
        server.close();
        client.close();
        links.forEach(p -> {
            p[0].close();
            p[1].close();
        });
    }
}
