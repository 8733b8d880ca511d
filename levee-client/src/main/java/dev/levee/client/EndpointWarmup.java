package dev.levee.client;

import dev.levee.core.Ticker;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Warmup;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.net.NetClientOptions;
import io.vertx.core.net.NetSocket;
import io.vertx.core.parsetools.RecordParser;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Warms levee-client's check path before it reports ready (issue 12, item 5: a fresh stack near its warm
 * throughput within seconds of traffic, not a minute): once the first limiter list is in, the client sends
 * self-checks through its own listeners on loopback — {@code GET /v1/s3check} as NGINX's subrequest does, and
 * levee-line/1 lines as the cosocket transport does — for the warm-up resource ({@link Warmup#RESOURCE}: not
 * counted, not logged, by the client or the limiters), with several methods and keys, closed loop, until their
 * rate stops rising: the best one-second rate has not grown by {@value #GAIN_PERCENT} % for
 * {@value #PATIENCE_MS} ms (and at least {@value #MIN_MS} ms have passed) — the JIT compilers have done the hot
 * path — or the bound passes. The classification, the HRW routing, the check wire and both endpoints are then
 * compiled before the first real check, and the limiters' paths with them (the warm-up resource's group is every
 * limiter up to the factor). Real checks are served meanwhile; only {@code /health} says "warming up". Never fails.
 * Time is read from the client's {@link Ticker}.
 */
final class EndpointWarmup {

    private static final Logger LOG = LoggerFactory.getLogger("levee.client");

    /** Most self-checks: {@value}. */
    static final int CHECKS = 2_000_000;
    /** The rate counts as still rising while its best one-second value grows by this much: {@value} %. */
    static final int GAIN_PERCENT = 5;
    /** How long the rate must not rise before the warm-up ends: {@value} ms. */
    static final long PATIENCE_MS = 3_000;
    /** Shortest warm-up, whatever the rate does: {@value} ms. */
    static final long MIN_MS = 3_000;
    /** The rate is sampled every {@value} ms; a one-second rate is the sum of the last four samples. */
    private static final long SAMPLE_MS = 250;
    /** Self-checks in flight on each listener. */
    private static final int CONCURRENCY = 16;
    /** How often the first limiter list is looked for: every {@value} ms. */
    private static final long LIST_POLL_MS = 100;

    private static final String[] METHODS = {"GET", "PUT", "HEAD", "GET", "DELETE", "GET"};

    private final Vertx vertx;
    private final LeveeClient client;
    /** The client's clock: the bound, the samples and the plateau are measured on it. */
    private final Ticker ticker;
    private final HostPort http;
    private final HostPort line;
    private final long boundNs;
    private final AtomicInteger answered = new AtomicInteger();
    private final AtomicInteger issued = new AtomicInteger();
    private long deadline;
    private long startedAt;
    /** The answers of the last four samples, and the best one-second rate so far with when it was reached. */
    private final long[] samples = new long[4];
    private long sampled;
    private long lastCount;
    private double best;
    private long bestAt;
    private volatile boolean plateau;

    private EndpointWarmup(Vertx vertx, LeveeClient client, HostPort http, HostPort line, Duration bound) {
        this.vertx = vertx;
        this.client = client;
        this.ticker = client.ticker();
        this.http = http;
        this.line = line;
        this.boundNs = bound.toNanos();
    }

    /**
     * Warms the endpoints.
     *
     * @param http  the HTTP endpoint's bound address
     * @param line  the line endpoint's bound address, or null when it is off
     * @param bound longest time the self-checks take, from the first limiter list on (CLI {@code --warmup})
     * @return completes with the number of self-checks answered; never fails
     */
    static Future<Integer> run(Vertx vertx, LeveeClient client, HostPort http, HostPort line, Duration bound) {
        EndpointWarmup w = new EndpointWarmup(vertx, client, loopback(http), line == null ? null : loopback(line), bound);
        Promise<Integer> done = Promise.promise();
        long started = w.ticker.read();
        w.awaitList(done);
        return done.future().map(n -> {
            long now = w.ticker.read();
            LOG.info("levee-client warmed up: {} self-checks in {} ms ({}; best rate {} checks/s){}", n,
                    (now - w.startedAt) / 1_000_000, w.plateau ? "the rate stopped rising" : "bound reached",
                    (long) w.best, w.startedAt - started > 1_000_000_000L
                            ? ", after " + (w.startedAt - started) / 1_000_000 + " ms waiting for the first limiter list" : "");
            return n;
        });
    }

    private static HostPort loopback(HostPort a) {
        String h = a.host();
        return h.equals("0.0.0.0") || h.equals("::") ? new HostPort("127.0.0.1", a.port()) : a;
    }

    /**
     * Starts once the first limiter list is in, however long that takes: self-checks against no limiter would
     * warm only the path that fails them, and spend the bound before the first limiter comes (a client started
     * before its limiters, as at boot). Until then {@code /health} says no limiter is known.
     */
    private void awaitList(Promise<Integer> done) {
        if (!client.view().limiters().isEmpty()) {
            start(done);
        } else {
            vertx.setTimer(LIST_POLL_MS, t -> awaitList(done));
        }
    }

    private void start(Promise<Integer> done) {
        startedAt = ticker.read();
        deadline = startedAt + boundNs;
        bestAt = startedAt;
        long timer = vertx.setPeriodic(SAMPLE_MS, t -> sample());
        HttpClientAgent agent = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true).setTcpNoDelay(true)
                .setConnectTimeout(1000), new PoolOptions().setHttp1MaxSize(CONCURRENCY));
        java.util.List<Future<Void>> loops = new java.util.ArrayList<>();
        for (int i = 0; i < CONCURRENCY; i++) {
            Promise<Void> p = Promise.promise();
            httpLoop(agent, p);
            loops.add(p.future());
        }
        if (line != null) {
            Promise<Void> p = Promise.promise();
            lineLoops(p);
            loops.add(p.future());
        }
        Future.join(loops).onComplete(ar -> {
            vertx.cancelTimer(timer);
            agent.close().onComplete(v -> done.complete(answered.get()));
        });
    }

    /** Every {@value #SAMPLE_MS} ms: the one-second rate, and whether it has stopped rising. */
    private void sample() {
        long count = answered.get();
        samples[(int) (sampled++ % samples.length)] = count - lastCount;
        lastCount = count;
        if (sampled < samples.length) {
            return;
        }
        double rate = 0;
        for (long n : samples) {
            rate += n;
        }
        long now = ticker.read();
        if (rate > best * (1 + GAIN_PERCENT / 100.0)) {
            best = rate;
            bestAt = now;
        }
        if ((now - bestAt) / 1_000_000 >= PATIENCE_MS && (now - startedAt) / 1_000_000 >= MIN_MS) {
            plateau = true;
        }
    }

    private boolean more() {
        return !plateau && issued.get() < CHECKS && ticker.read() - deadline < 0;
    }

    private String uri(int n) {
        return (n % 5 == 4 ? "/" + Warmup.RESOURCE + "?list-type=2&prefix=k" : "/" + Warmup.RESOURCE + "/k/" + (n & 1023));
    }

    private void httpLoop(HttpClientAgent agent, Promise<Void> loop) {
        if (!more()) {
            loop.tryComplete();
            return;
        }
        int n = issued.getAndIncrement();
        agent.request(new RequestOptions().setMethod(HttpMethod.GET).setHost(http.host()).setPort(http.port())
                        .setURI(n % 7 == 6 ? "/v1/s3check?" + ClientService.RATELIMIT_ON_ACCEPT : "/v1/s3check")
                        .setIdleTimeout(2000)
                        .putHeader("X-Levee-Method", METHODS[n % METHODS.length]).putHeader("X-Levee-Host", "127.0.0.1")
                        .putHeader("X-Levee-Uri", uri(n)))
                .compose(r -> r.send()).compose(r -> r.body())
                .onComplete(ar -> {
                    if (ar.succeeded()) {
                        answered.incrementAndGet();
                        httpLoop(agent, loop);
                    } else {
                        loop.tryComplete(); // the path itself is broken: do not spin
                    }
                });
    }

    /** {@value #CONCURRENCY} lines in flight on one connection, as rate.lua's pooled cosockets send them. */
    private void lineLoops(Promise<Void> loop) {
        vertx.createNetClient(new NetClientOptions().setConnectTimeout(1000).setTcpNoDelay(true))
                .connect(line.port(), line.host()).onComplete(ar -> {
                    if (ar.failed()) {
                        loop.tryComplete();
                        return;
                    }
                    NetSocket so = ar.result();
                    int[] inFlight = {0};
                    so.handler(RecordParser.newDelimited("\n", answer -> {
                        answered.incrementAndGet();
                        inFlight[0]--;
                        if (more()) {
                            inFlight[0]++;
                            so.write(lineRequest(issued.getAndIncrement()));
                        } else if (inFlight[0] == 0) {
                            so.close();
                        }
                    }));
                    so.closeHandler(v -> loop.tryComplete());
                    for (int i = 0; i < CONCURRENCY && more(); i++) {
                        inFlight[0]++;
                        so.write(lineRequest(issued.getAndIncrement()));
                    }
                    if (inFlight[0] == 0) {
                        so.close();
                    }
                });
    }

    private Buffer lineRequest(int n) {
        return Buffer.buffer(LineRequests.encode(n % 7 == 6, METHODS[n % METHODS.length], "127.0.0.1", uri(n), ""));
    }

    /** The levee-line/1 request encoding (docs/nginx.md), for self-checks and tests. */
    static final class LineRequests {
        private LineRequests() {
        }

        static byte[] encode(boolean rateLimitOnAccept, String method, String host, String uri, String copySource) {
            StringBuilder b = new StringBuilder("C ").append(rateLimitOnAccept ? '1' : '0').append(' ');
            for (String f : new String[] {method, host, uri, copySource}) {
                b.append(f.getBytes(StandardCharsets.ISO_8859_1).length).append(':').append(f);
            }
            return b.append('\n').toString().getBytes(StandardCharsets.ISO_8859_1);
        }
    }
}
