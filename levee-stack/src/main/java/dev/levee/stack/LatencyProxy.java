package dev.levee.stack;

import dev.levee.core.Ticker;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetSocket;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * A loopback TCP forwarder that holds every chunk the backend answers for a fixed latency before
 * passing it on: a slow S3 backend for {@code levee demo --backend-latency} and tests. Requests go
 * through at once; answers keep their order and arrive {@code latency} later.
 */
public final class LatencyProxy implements AutoCloseable {

    private final Vertx vertx;
    private final NetServer server;
    private final NetClient client;
    private final long latencyNs;
    private final Ticker ticker;
    private final List<NetSocket[]> links = new CopyOnWriteArrayList<>();
    private volatile boolean ownVertx;

    private LatencyProxy(Vertx vertx, NetServer server, NetClient client, Duration latency, Ticker ticker) {
        this.vertx = vertx;
        this.server = server;
        this.client = client;
        this.latencyNs = latency.toNanos();
        this.ticker = ticker;
    }

    /**
     * Starts forwarding from a free port on 127.0.0.1 to {@code host:port}, delaying answers by
     * {@code latency}, on a Vert.x instance of its own (closed with the proxy).
     *
     * @param latency added to every answer, at least 1 ms
     * @throws IllegalArgumentException when {@code latency} is below 1 ms
     * @throws IllegalStateException    when it cannot listen within 10 s
     */
    public static LatencyProxy start(String host, int port, Duration latency) {
        Vertx vertx = dev.levee.runtime.Http.vertx();
        try {
            LatencyProxy p = start(vertx, host, port, latency, dev.levee.runtime.SystemTicker.INSTANCE);
            p.ownVertx = true;
            return p;
        } catch (RuntimeException e) {
            vertx.close();
            throw e;
        }
    }

    /**
     * Starts forwarding from a free port on 127.0.0.1 to {@code host:port}, delaying answers by {@code latency}.
     *
     * @param latency added to every answer, at least 1 ms
     * @param ticker  the clock of the delays
     * @throws IllegalArgumentException when {@code latency} is below 1 ms
     * @throws IllegalStateException    when it cannot listen within 10 s
     */
    public static LatencyProxy start(Vertx vertx, String host, int port, Duration latency, Ticker ticker) {
        if (latency.toMillis() < 1) {
            throw new IllegalArgumentException("latency must be at least 1 ms, got " + latency.toMillis() + " ms");
        }
        LoopbackRelay relay = LoopbackRelay.create(vertx);
        LatencyProxy p = new LatencyProxy(vertx, relay.server(), relay.client(), latency, ticker);
        relay.listen(host, port, p::link, "latency proxy");
        return p;
    }

    private record Held(long dueNs, Buffer data) {
    }

    private void link(NetSocket in, NetSocket out) {
        NetSocket[] pair = {in, out};
        links.add(pair);
        ArrayDeque<Held> held = new ArrayDeque<>(); // touched on out's event loop only
        boolean[] closing = {false};
        in.handler(out::write);
        out.handler(b -> {
            held.addLast(new Held(ticker.read() + latencyNs, b));
            if (held.size() == 1) {
                schedule(held, in, closing);
            }
        });
        in.closeHandler(v -> {
            out.close();
            links.remove(pair);
        });
        out.closeHandler(v -> {
            links.remove(pair);
            if (held.isEmpty()) {
                in.close();
            } else {
                closing[0] = true; // the answers still held go out first
            }
        });
        in.resume();
    }

    private void schedule(ArrayDeque<Held> held, NetSocket in, boolean[] closing) {
        long waitMs = Math.max(1, TimeUnit.NANOSECONDS.toMillis(held.peekFirst().dueNs() - ticker.read()));
        vertx.setTimer(waitMs, t -> {
            long now = ticker.read();
            while (!held.isEmpty() && held.peekFirst().dueNs() - now <= 0) {
                in.write(held.pollFirst().data());
            }
            if (!held.isEmpty()) {
                schedule(held, in, closing);
            } else if (closing[0]) {
                in.close();
            }
        });
    }

    /** The local port to connect to. */
    public int port() {
        return server.actualPort();
    }

    @Override
    public void close() {
        server.close();
        client.close();
        links.forEach(p -> {
            p[0].close();
            p[1].close();
        });
        if (ownVertx) {
            try {
                vertx.close().toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
            } catch (Exception e) {
                // closing anyway
            }
        }
    }
}
