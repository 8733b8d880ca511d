package dev.levee.limiter;

import static dev.levee.limiter.LimiterService.WARMUP_CHECKS;
import static dev.levee.limiter.LimiterService.WARMUP_RESOURCE;
import static dev.levee.limiter.LimiterService.WARMUP_WIRE_CHECKS;

import dev.levee.config.QuotaSource;
import dev.levee.core.Ticker;
import dev.levee.runtime.Http;
import dev.levee.wire.BinaryChecks;
import dev.levee.wire.WireConnection;
import io.netty.buffer.ByteBuf;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Warms a limiter's decision path before it announces itself (issue 10: a cold limiter answered its first checks
 * after the clients' 250 ms timeout): waits until the configuration source is ready, then sends self-checks over
 * its own listener on loopback — first over HTTP, single checks and batches in JSON and binary, four at a time,
 * until {@value LimiterService#WARMUP_CHECKS} were decided; then over the check wire, the path a levee-client's
 * checks take, until {@value LimiterService#WARMUP_WIRE_CHECKS} were — or until the warm-up's bound passed. Never
 * fails: the limiter starts anyway, with a warning, when the bound is reached first. The self-checks are on
 * {@link LimiterService#WARMUP_RESOURCE}, neither logged nor counted. Time through the limiter's ticker.
 */
final class LimiterWarmup {

    private static final Logger LOG = LoggerFactory.getLogger("levee.limiter");

    private final Vertx vertx;
    private final String id;
    private final QuotaSource config;
    private final Ticker ticker;

    LimiterWarmup(Vertx vertx, String id, QuotaSource config, Ticker ticker) {
        this.vertx = vertx;
        this.id = id;
        this.config = config;
        this.ticker = ticker;
    }

    /**
     * Runs the warm-up against the limiter's listener.
     *
     * @param bound longest time to spend; zero: none
     * @param host  the host the limiter listens on (a wildcard address is reached through 127.0.0.1)
     * @param port  the port it listens on
     * @return completes (never fails) once the warm-up is over
     */
    Future<Void> run(Duration bound, String host, int port) {
        if (bound.isZero()) {
            return Future.succeededFuture();
        }
        long startNs = ticker.read();
        long deadline = startNs + bound.toNanos();
        String loopback = host.equals("0.0.0.0") || host.equals("::") || host.equals("[::]") ? "127.0.0.1" : host;
        HttpClientAgent http = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true).setTcpNoDelay(true)
                .setConnectTimeout(1000), new PoolOptions().setHttp1MaxSize(4));
        String one = "{\"resource\":\"" + WARMUP_RESOURCE + "\",\"key\":\"k\",\"operation\":\"GetObject\",\"g\":1}";
        Buffer single = Buffer.buffer(one);
        Buffer batch = Buffer.buffer("{\"checks\":[" + String.join(",", Collections.nCopies(8, one)) + "]}");
        ByteBuf b1 = BinaryChecks.start(1, 64);
        BinaryChecks.writeCheck(b1, WARMUP_RESOURCE, "k", "GetObject", 1);
        ByteBuf b8 = BinaryChecks.start(8, 256);
        for (int i = 0; i < 8; i++) {
            BinaryChecks.writeCheck(b8, WARMUP_RESOURCE, "k", "GetObject", 1);
        }
        Buffer[] bodies = {single, batch, Http.buffer(b1), Http.buffer(b8)};
        AtomicInteger decided = new AtomicInteger();
        AtomicInteger failures = new AtomicInteger();
        Promise<Void> ready = Promise.promise();
        awaitReady(deadline, ready);
        return ready.future().compose(v -> {
            List<Future<Void>> loops = new ArrayList<>();
            for (int w = 0; w < 4; w++) {
                Promise<Void> loop = Promise.promise();
                warmLoop(http, loopback, port, bodies, w, deadline, decided, failures, loop);
                loops.add(loop.future());
            }
            return Future.join(loops).<Void>mapEmpty();
        }).eventually(() -> http.close()).recover(e -> Future.succeededFuture())
                .compose(v -> warmWire(loopback, port, deadline)).onComplete(ar -> {
            long ms = (ticker.read() - startNs) / 1_000_000;
            int wire = ar.succeeded() ? ar.result() : 0;
            if (decided.get() < WARMUP_CHECKS) {
                LOG.warn("limiter {} warm-up bound reached: {} of {} self-checks in {} ms ({} failed), {} over the check"
                        + " wire; starting anyway", id, decided.get(), WARMUP_CHECKS, ms, failures.get(), wire);
            } else {
                LOG.info("limiter {} warmed up: {} self-checks over HTTP and {} over the check wire in {} ms", id,
                        decided.get(), wire, ms);
            }
        }).mapEmpty();
    }

    /**
     * The warm-up's second part: self-checks over the check wire until {@value LimiterService#WARMUP_WIRE_CHECKS}
     * are decided or the deadline passes, so that the frame handling and the decision path are compiled before the
     * limiter is listed. Never fails.
     *
     * @return how many checks were decided over the wire
     */
    private Future<Integer> warmWire(String host, int port, long deadline) {
        Promise<Integer> done = Promise.promise();
        if (ticker.read() - deadline >= 0) {
            done.complete(0);
            return done.future();
        }
        io.netty.channel.EventLoop loop = ((io.vertx.core.internal.ContextInternal) vertx.getOrCreateContext())
                .nettyEventLoop();
        WireWarmup peer = new WireWarmup(deadline, done, ticker);
        WireConnection.connect(peer, loop, Http.socketChannelClass(vertx), host, port,
                ticker, Duration.ofSeconds(2), 64).addListener(f -> {
                    if (f.isSuccess()) {
                        @SuppressWarnings("unchecked")
                        var w = (WireConnection<Integer>) f.getNow();
                        peer.start(w);
                    } else {
                        LOG.debug("check-wire warm-up not started: {}", f.cause().toString());
                        done.tryComplete(0);
                    }
                });
        return done.future();
    }

    /** Keeps 256 warm-up checks outstanding on one wire connection until the count or the deadline is reached. */
    private static final class WireWarmup implements WireConnection.Peer<Integer> {
        private final long deadline;
        private final Promise<Integer> done;
        private final Ticker ticker;
        private WireConnection<Integer> wire;
        private int sent;
        private int decided;
        private int outstanding;

        WireWarmup(long deadline, Promise<Integer> done, Ticker ticker) {
            this.deadline = deadline;
            this.done = done;
            this.ticker = ticker;
        }

        void start(WireConnection<Integer> w) {
            wire = w;
            for (int i = 0; i < 256; i++) {
                more();
            }
        }

        private void more() {
            if (sent < WARMUP_WIRE_CHECKS && ticker.read() - deadline < 0 && wire.send(sent)) {
                sent++;
                outstanding++;
            } else if (outstanding == 0) {
                wire.close(new IllegalStateException("warm-up over"));
                done.tryComplete(decided);
            }
        }

        @Override
        public int size(Integer check) {
            return 32;
        }

        @Override
        public void write(Integer check, ByteBuf frame) {
            BinaryChecks.writeCheck(frame, WARMUP_RESOURCE, (check & 1) == 0 ? "k" : "k/" + (check & 1023),
                    (check & 3) == 3 ? "PutObject" : "GetObject", 1);
        }

        @Override
        public void answered(Integer check, BinaryChecks.AnswerCursor answer) {
            decided++;
            outstanding--;
            more();
        }

        @Override
        public void failed(List<Integer> checks, Throwable cause) {
            outstanding -= checks.size();
            done.tryComplete(decided);
        }

        @Override
        public void closed(WireConnection<Integer> connection, boolean clean) {
            done.tryComplete(decided);
        }

        @Override
        public void noWire(int status) {
            done.tryComplete(decided);
        }
    }

    /** Completes {@code ready} once the configuration source is ready, or at the deadline. */
    private void awaitReady(long deadline, Promise<Void> ready) {
        if (config.ready() || ticker.read() - deadline >= 0) {
            ready.tryComplete();
        } else {
            vertx.setTimer(20, t -> awaitReady(deadline, ready));
        }
    }

    /** One warm-up loop: JSON and binary bodies ({@code bodies}: JSON single, JSON batch, binary single, binary batch). */
    private void warmLoop(HttpClientAgent http, String host, int port, Buffer[] bodies, int n, long deadline,
                          AtomicInteger decided, AtomicInteger failures, Promise<Void> loop) {
        if (decided.get() >= WARMUP_CHECKS || ticker.read() - deadline >= 0) {
            loop.tryComplete();
            return;
        }
        boolean many = n % 2 == 1;
        boolean binary = n % 4 >= 2; // each loop alternates JSON and binary rounds
        // an idle timeout only: a request's connect-timeout timer outlives the request and, once the client
        // is closed, fails an already completed promise (Vert.x 5.1 logs "Promise already completed")
        http.request(new RequestOptions().setMethod(HttpMethod.POST).setHost(host).setPort(port)
                        .setURI(many ? "/v1/checks" : "/v1/check").setIdleTimeout(1000)
                        .putHeader("Content-Type", binary ? BinaryChecks.CONTENT_TYPE : "application/json"))
                .compose(r -> r.send(bodies[(binary ? 2 : 0) + (many ? 1 : 0)].copy()))
                .compose(resp -> resp.body().map(b -> resp.statusCode()))
                .onComplete(ar -> {
                    if (ar.succeeded() && (ar.result() == 200 || ar.result() == 429)) { // 429: a small default quota
                        decided.addAndGet(many ? 8 : 1);
                    } else {
                        failures.incrementAndGet();
                        if (failures.get() > 100) {
                            loop.tryComplete(); // something is wrong with the path itself: do not spin
                            return;
                        }
                    }
                    warmLoop(http, host, port, bodies, n + 2, deadline, decided, failures, loop);
                });
    }
}
