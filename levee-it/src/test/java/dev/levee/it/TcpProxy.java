package dev.levee.it;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * A loopback TCP forwarder for fault tests: listens on a free loopback port and forwards each
 * accepted connection to a target {@code host:port}, one thread per direction and connection, counting
 * the bytes it forwards in each direction. It plays the network between two processes:
 *
 * <ul>
 *   <li>{@link #blackhole(boolean) blackhole(true)} is a partition: no byte is forwarded in either
 *       direction on any connection and nothing is closed, as when packets are lost; a new connection
 *       is accepted (the kernel completes the handshake) but the proxy neither connects it to the
 *       target nor forwards anything. Bytes already read stay in the proxy and, with TCP retransmitting
 *       beneath, arrive after {@code blackhole(false)} — unless the peers gave up meanwhile. An end of
 *       stream or an error seen during the partition is passed on only after it heals, so neither side
 *       learns of the other's close through the partition.</li>
 *   <li>{@link #cut()} resets every open connection on both sides (RST: linger 0, then close); new
 *       connections are served as before.</li>
 * </ul>
 *
 * <p>Counters ({@link #bytesToClient()}, {@link #bytesToTarget()}) count bytes written to the other
 * side, are cumulative since start and are safe to read from any thread at any time. While
 * blackholed they do not move, except that a write already blocked when the partition began finishes
 * (at most {@link #BUFFER_BYTES} per connection and direction).
 */
final class TcpProxy implements AutoCloseable {

    /** The proxy's own send (to the client) and receive (from the target) buffer, bytes. */
    static final int SOCKET_BUFFER_BYTES = 256 * 1024;

    /** Bytes read and written at a time, per connection and direction. */
    static final int BUFFER_BYTES = 16 * 1024;
    /** Timeout for connecting to the target, in milliseconds. */
    static final int CONNECT_TIMEOUT_MS = 2000;

    private final String targetHost;
    private final int targetPort;
    private final ServerSocket server;
    private final Thread acceptor;
    private final Object gate = new Object();
    private final Set<Conn> conns = ConcurrentHashMap.newKeySet();
    private final LongAdder toClient = new LongAdder();
    private final LongAdder toTarget = new LongAdder();
    private final LongAdder accepted = new LongAdder();
    private volatile boolean blackholed;
    private volatile boolean closed;

    private TcpProxy(ServerSocket server, String targetHost, int targetPort) {
        this.server = server;
        this.targetHost = targetHost;
        this.targetPort = targetPort;
        this.acceptor = Thread.ofPlatform().daemon().name("tcp-proxy-accept-" + server.getLocalPort()).unstarted(this::acceptLoop);
    }

    /**
     * Starts a proxy on a free loopback port to {@code 127.0.0.1:targetPort}.
     *
     * @param targetPort the target's port on loopback
     * @return the running proxy (close it)
     * @throws UncheckedIOException when no port can be bound
     */
    static TcpProxy start(int targetPort) {
        return start(0, "127.0.0.1", targetPort);
    }

    /**
     * Starts a proxy on loopback port {@code listenPort} ({@code 0}: a free one) to
     * {@code targetHost:targetPort}. A fixed port lets a test replace a proxy on the port its clients know.
     *
     * @param listenPort port to listen on, 0 for a free one
     * @param targetHost host to connect to
     * @param targetPort port to connect to
     * @return the running proxy (close it)
     * @throws UncheckedIOException when the port cannot be bound
     */
    static TcpProxy start(int listenPort, String targetHost, int targetPort) {
        try {
            ServerSocket s = new ServerSocket();
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), listenPort), 128);
            TcpProxy p = new TcpProxy(s, targetHost, targetPort);
            p.acceptor.start();
            return p;
        } catch (IOException e) {
            throw new UncheckedIOException("tcp proxy cannot listen on 127.0.0.1:" + listenPort, e);
        }
    }

    /** Returns the port the proxy listens on (loopback). */
    int port() {
        return server.getLocalPort();
    }

    /** Returns {@code 127.0.0.1:PORT}, the proxy's listening address. */
    String address() {
        return "127.0.0.1:" + port();
    }

    /** Returns {@code http://127.0.0.1:PORT}, for example as an etcd endpoint. */
    String endpoint() {
        return "http://" + address();
    }

    /** Returns the target, {@code host:port}. */
    String target() {
        return targetHost + ":" + targetPort;
    }

    /**
     * Turns the partition on or off. Off wakes every stalled connection, which then forwards what it
     * holds and goes on.
     *
     * @param on true to stop forwarding (without closing anything), false to resume
     */
    void blackhole(boolean on) {
        synchronized (gate) {
            blackholed = on;
            gate.notifyAll();
        }
    }

    /** Returns whether the proxy is blackholed. */
    boolean blackholed() {
        return blackholed;
    }

    /** Resets every open connection on both sides (RST); the proxy keeps accepting new ones. */
    void cut() {
        for (Conn c : conns) {
            c.abort();
        }
        synchronized (gate) {
            gate.notifyAll();
        }
    }

    /** Returns the bytes forwarded from the target to clients since start. */
    long bytesToClient() {
        return toClient.sum();
    }

    /** Returns the bytes forwarded from clients to the target since start. */
    long bytesToTarget() {
        return toTarget.sum();
    }

    /** Returns the number of connections accepted since start. */
    long acceptedConnections() {
        return accepted.sum();
    }

    /** Returns the number of connections open now (accepted and not yet closed on both sides). */
    int openConnections() {
        return conns.size();
    }

    /** Stops listening and resets every connection. */
    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException e) {
            // closing
        }
        cut();
        try {
            acceptor.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ---------------------------------------------------------------- internals

    private void acceptLoop() {
        while (!closed) {
            Socket client;
            try {
                client = server.accept();
            } catch (IOException e) {
                if (closed) {
                    return;
                }
                continue;
            }
            accepted.increment();
            Conn c = new Conn(client);
            conns.add(c);
            Thread.ofPlatform().daemon().name("tcp-proxy-" + port() + "-conn").start(c::connect);
        }
    }

    /** Waits while blackholed; returns false when {@code c} was closed meanwhile. */
    private boolean awaitOpen(Conn c) {
        synchronized (gate) {
            while (blackholed && !c.aborted && !closed) {
                try {
                    gate.wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
            return !c.aborted && !closed;
        }
    }

    private final class Conn {
        final Socket client;
        volatile Socket target;
        volatile boolean aborted;
        final AtomicInteger halvesDone = new AtomicInteger();

        Conn(Socket client) {
            this.client = client;
        }

        void connect() {
            try {
                client.setTcpNoDelay(true);
                // fixed, modest socket buffers on the proxy's side (Linux then does not autotune them to several
                // MiB on loopback): the process behind the proxy feels its client's back-pressure about as it
                // would over a network, instead of filling ~10 MiB of kernel buffers first
                client.setSendBufferSize(SOCKET_BUFFER_BYTES);
                if (!awaitOpen(this)) {
                    abort();
                    return;
                }
                Socket t = new Socket();
                t.setTcpNoDelay(true);
                t.setReceiveBufferSize(SOCKET_BUFFER_BYTES);
                t.connect(new InetSocketAddress(targetHost, targetPort), CONNECT_TIMEOUT_MS);
                target = t;
                if (aborted) {
                    abort();
                    return;
                }
                Thread.ofPlatform().daemon().name("tcp-proxy-" + port() + "-up").start(() -> pump(client, t, toTarget));
                pump(t, client, toClient);
            } catch (IOException e) {
                abort();
            }
        }

        void pump(Socket from, Socket to, LongAdder counter) {
            byte[] buf = new byte[BUFFER_BYTES];
            try {
                InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream();
                while (true) {
                    int n = in.read(buf);
                    if (!awaitOpen(this)) {
                        return;
                    }
                    if (n < 0) {
                        to.shutdownOutput();
                        if (halvesDone.incrementAndGet() == 2) {
                            closeQuietly();
                        }
                        return;
                    }
                    out.write(buf, 0, n);
                    counter.add(n);
                }
            } catch (IOException e) {
                if (awaitOpen(this)) {
                    abort();
                }
            }
        }

        /** Resets both sides (linger 0, then close). */
        void abort() {
            aborted = true;
            for (Socket s : new Socket[] {client, target}) {
                if (s != null) {
                    try {
                        s.setSoLinger(true, 0);
                    } catch (SocketException e) {
                        // already closed
                    }
                    try {
                        s.close();
                    } catch (IOException e) {
                        // closing
                    }
                }
            }
            conns.remove(this);
        }

        private void closeQuietly() {
            for (Socket s : new Socket[] {client, target}) {
                try {
                    if (s != null) {
                        s.close();
                    }
                } catch (IOException e) {
                    // closing
                }
            }
            conns.remove(this);
        }
    }
}
