package dev.levee.client;

import dev.levee.client.LeveeClient.Member;
import dev.levee.client.LeveeClient.Options;
import dev.levee.core.Ticker;
import dev.levee.runtime.HostPort;
import dev.levee.wire.BinaryChecks;
import dev.levee.wire.WireConnection;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The checks bound for one limiter: its transport (docs/design.md §1 step 2, §5). Over the check wire
 * ({@link WireConnection}) where the limiter takes it and {@link Options#wire()} is on, one connection per event
 * loop that sends checks; else over HTTP. A check is sent at once while fewer than
 * {@link Options#maxInFlight()} requests to the limiter are outstanding; otherwise it waits, and
 * when a request comes back the waiting checks go out together as one {@code POST /v1/checks}
 * (at most {@link Options#maxBatch()}). Under light load nothing waits; under heavy load the
 * round trips, parses and system calls of many checks are shared. A check that waited longer than
 * the check timeout fails over to the next member without being sent. The bodies and what an answer
 * means are {@link CheckBodies}'; where a check goes after a failure is the client's ({@link Owner#attempt}).
 */
final class LimiterChannel {

    private static final Logger LOG = LoggerFactory.getLogger("levee.client");

    /** Most checks waiting for one limiter; beyond it a check fails over at once: 16 384. */
    static final int MAX_QUEUED = 16_384;

    /** The client's side of its channels: where a check goes next. */
    @FunctionalInterface
    interface Owner {
        /** Makes attempt {@code i} of a check: the next limiter of its order, or the check's end. */
        void attempt(Plan p, int i);
    }

    /**
     * What every channel of one client shares.
     *
     * @param backedOffUntil  per limiter address, until when (ticker ns) it is skipped after a failure
     * @param wireChannelClass the socket channel class of the check wire's connections, fitting Vert.x's event loops
     * @param stopped         whether the client was stopped: checks then fail without a request
     */
    record Shared(Options options, Ticker ticker, HttpClientAgent http, CheckResults results,
                  Map<String, Long> backedOffUntil, Class<? extends io.netty.channel.Channel> wireChannelClass,
                  Owner owner, java.util.function.BooleanSupplier stopped) {
    }

    private final String address;
    private final HostPort addr;
    private final Options options;
    private final Ticker ticker;
    private final HttpClientAgent http;
    private final CheckResults results;
    private final Map<String, Long> backedOffUntil;
    private final Class<? extends io.netty.channel.Channel> wireChannelClass;
    private final Owner owner;
    private final java.util.function.BooleanSupplier stopped;
    private final java.util.ArrayDeque<Plan> waiting = new java.util.ArrayDeque<>();
    private int inFlight;
    /** Set when the limiter has no {@code /v1/checks} (an older version): checks go one by one. */
    private volatile boolean single;
    /**
     * Whether checks go in the binary encoding ({@link BinaryChecks}): set once the limiter's answer
     * to a JSON check lists the binary type in {@code Accept-Post} (a limiter of issue 12 or later);
     * cleared for good when a binary body is refused with an answer that is not binary (the limiter
     * at this address was replaced by an older one): JSON then.
     */
    private volatile boolean binary;
    private volatile boolean noBinary;

    /** Request options by encoding (binary: +2) and form (batch: +1), built once: not one per request. */
    private final RequestOptions[] requests = new RequestOptions[4];

    /**
     * The check-wire connections of this limiter, one per event loop that sends checks (usually one: the client
     * endpoint's). Touched only on its own loop.
     */
    private final Map<io.netty.channel.EventLoop, WireSlot> wires = new ConcurrentHashMap<>();
    /** Set when the limiter answered the upgrade with anything but 101 (an older version): HTTP from then on. */
    private volatile boolean noWire;

    LimiterChannel(String address, HostPort addr, Shared shared) {
        this.address = address;
        this.addr = addr;
        this.options = shared.options();
        this.ticker = shared.ticker();
        this.http = shared.http();
        this.results = shared.results();
        this.backedOffUntil = shared.backedOffUntil();
        this.wireChannelClass = shared.wireChannelClass();
        this.owner = shared.owner();
        this.stopped = shared.stopped();
        long timeout = options.checkTimeout().toMillis();
        for (int k = 0; k < 4; k++) {
            requests[k] = new RequestOptions().setMethod(HttpMethod.POST).setHost(addr.host()).setPort(addr.port())
                    .setURI(k % 2 == 0 ? "/v1/check" : "/v1/checks").setIdleTimeout(timeout)
                    .putHeader(io.vertx.core.http.HttpHeaders.CONTENT_TYPE, k >= 2 ? CheckBodies.BINARY : CheckBodies.JSON);
        }
    }

    /** Returns the HTTP client of a client's channels and observer polls (one pool of 64 connections per address). */
    static HttpClientAgent httpClient(io.vertx.core.Vertx vertx, Options options) {
        return vertx.httpClientBuilder()
                .with(new HttpClientOptions()
                        .setKeepAlive(true)
                        .setTcpNoDelay(true)
                        .setConnectTimeout((int) Math.max(1, options.checkTimeout().toMillis())))
                .with(new PoolOptions().setHttp1MaxSize(64).setMaxWaitQueueSize(4096))
                // a limiter that goes away resets its connections: the checks on them fail over and
                // are logged there; the reset itself is not an error worth a line of its own
                .withConnectHandler(conn -> conn.exceptionHandler(e -> LOG.debug("connection to {} failed: {}",
                        conn.remoteAddress(), e.getMessage())))
                .build();
    }

    /** Drops the channels of limiters {@code v} does not list: each still finishes its own requests, then its wires close. */
    static void retireUnlisted(Map<String, LimiterChannel> channels, LeveeClient.View v) {
        java.util.Set<String> listed = new java.util.HashSet<>();
        for (Member m : v.limiters()) {
            listed.add(m.address());
        }
        for (var it = channels.entrySet().iterator(); it.hasNext(); ) {
            var e = it.next();
            if (!listed.contains(e.getKey())) {
                e.getValue().retire(); // a dropped channel still finishes its own requests, then its wires close
                it.remove();
            }
        }
    }

    /**
     * Starts a request; a closed HTTP client (after the client's stop) throws {@code IllegalStateException}
     * instead of failing the future, which left the checks waiting behind the request unanswered.
     */
    static Future<io.vertx.core.http.HttpClientRequest> request(HttpClientAgent http, RequestOptions o) {
        try {
            return http.request(o);
        } catch (RuntimeException e) {
            return Future.failedFuture(e);
        }
    }

    void submit(Plan p) {
        if (!noWire && options.wire()) {
            io.netty.channel.EventLoop loop = p.loop;
            if (!loop.inEventLoop()) {
                loop.execute(() -> submit(p));
                return;
            }
            WireSlot slot = wires.get(loop);
            if (slot == null) {
                slot = wires.computeIfAbsent(loop, WireSlot::new);
            }
            if (slot.send(p)) {
                return;
            }
        }
        boolean now;
        synchronized (this) {
            now = inFlight < options.maxInFlight();
            if (now) {
                inFlight++;
            } else if (waiting.size() < MAX_QUEUED) {
                waiting.add(p);
                return;
            }
        }
        if (now) {
            send(List.of(p), binary, null);
        } else {
            results.count("queue_full");
            owner.attempt(p, p.i + 1);
        }
    }

    /** Called when a request finished: sends the next batch on the same slot, or frees it. */
    private void next() {
        List<Plan> batch = new java.util.ArrayList<>();
        List<Plan> expired = null;
        List<byte[]> jsons = null; // the batch's JSON forms, made once, when it goes in JSON
        long now = ticker.read();
        long timeout = options.checkTimeout().toNanos();
        int max = single ? 1 : options.maxBatch();
        boolean bin = binary;
        long bytes = 0;
        synchronized (this) {
            while (batch.size() < max && !waiting.isEmpty()) {
                byte[] json = bin ? null : waiting.peek().json();
                int size = bin ? waiting.peek().binarySize() : json.length + 1;
                if (!batch.isEmpty() && bytes + size > CheckBodies.MAX_BATCH_BYTES) {
                    break; // the rest goes in the next batch
                }
                Plan p = waiting.poll();
                if (now - p.queuedAt > timeout) {
                    if (expired == null) {
                        expired = new java.util.ArrayList<>();
                    }
                    expired.add(p);
                } else {
                    batch.add(p);
                    if (json != null) {
                        if (jsons == null) {
                            jsons = new java.util.ArrayList<>();
                        }
                        jsons.add(json);
                    }
                    bytes += size;
                }
            }
            if (batch.isEmpty()) {
                inFlight--;
            }
        }
        if (expired != null) {
            results.count("queue_timeout", expired.size());
            for (Plan p : expired) {
                owner.attempt(p, p.i + 1);
            }
        }
        if (!batch.isEmpty()) {
            send(batch, bin, jsons); // in the encoding its size was counted in
        }
    }

    /** Sends a batch; {@code jsons}: the checks' JSON forms when made already, else null. */
    private void send(List<Plan> batch, boolean bin, List<byte[]> jsons) {
        boolean one = batch.size() == 1;
        Buffer body = CheckBodies.body(batch, bin, jsons);
        long timeout = options.checkTimeout().toMillis();
        request(http, requests[(bin ? 2 : 0) + (one ? 0 : 1)])
                .compose(r -> r.send(body))
                .compose(resp -> resp.body().map(b -> {
                    if (!bin && !noBinary && BinaryChecks.accepts(resp.getHeader(CheckBodies.ACCEPT_POST))) {
                        binary = true; // from the next request on
                    }
                    return CheckBodies.parse(resp.statusCode(),
                            resp.getHeader(io.vertx.core.http.HttpHeaders.CONTENT_TYPE), b, one, bin, batch.size());
                }))
                .timeout(timeout + 50, java.util.concurrent.TimeUnit.MILLISECONDS)
                .onComplete(ar -> {
                    try {
                        if (ar.succeeded()) {
                            backedOffUntil.remove(address);
                            List<CheckBodies.LimiterAnswer> answers = ar.result();
                            for (int k = 0; k < batch.size(); k++) {
                                answered(batch.get(k), answers.get(k));
                            }
                        } else if (ar.cause() instanceof CheckBodies.NoBinary) {
                            binary = false;
                            noBinary = true;
                            LOG.info("limiter {} does not take the binary check encoding: JSON from now on", addr);
                            for (int k = batch.size() - 1; k >= 0; k--) {
                                submitAfterSlot(batch.get(k)); // to the front, in the original order
                            }
                        } else if (ar.cause() instanceof CheckBodies.NoBatches) {
                            single = true;
                            LOG.warn("limiter {} refused a batch (no /v1/checks, or a smaller body limit):"
                                    + " sending checks one by one", addr);
                            for (int k = batch.size() - 1; k >= 0; k--) {
                                submitAfterSlot(batch.get(k)); // to the front, in the original order
                            }
                        } else {
                            failed(batch, ar.cause());
                        }
                    } finally {
                        next();
                    }
                });
    }

    /** Re-queues a check at the front (its slot is freed by {@link #next()} right after). */
    private void submitAfterSlot(Plan p) {
        synchronized (this) {
            waiting.addFirst(p);
        }
    }

    private void answered(Plan p, CheckBodies.LimiterAnswer a) {
        String r = a.result() == null ? "" : a.result();
        switch (r) {
            case "accepted", "rejected" -> decided(p, r.equals("accepted"), a.retryAfter(), a.remaining(), a.level(),
                    a.limitKey(), a.rate(), a.burst(), a.reset(), "would_reject".equals(a.shadow()));
            case "invalid" -> refused(p, "limiter refused the check: " + a.error());
            default -> failed(List.of(p), new IllegalStateException("limiter answered '" + r + "'"));
        }
    }

    /** A check's answer from the wire (the cursor holds it). */
    private void answered(Plan p, BinaryChecks.AnswerCursor a) {
        switch (a.result) {
            case BinaryChecks.ACCEPTED, BinaryChecks.REJECTED -> decided(p, a.result == BinaryChecks.ACCEPTED,
                    a.retryAfter, a.remaining, a.level, a.limitKey, a.rate, a.burst, a.reset,
                    a.shadow == BinaryChecks.SHADOW_WOULD_REJECT);
            case BinaryChecks.INVALID -> refused(p, "limiter refused the check: " + a.error);
            default -> failed(List.of(p), new IllegalStateException("limiter answered 'failed'"));
        }
    }

    private void decided(Plan p, boolean ok, long retryAfter, long remaining, String level, String limitKey,
                         double rate, int burst, long reset, boolean wouldReject) {
        boolean spilled = p.beyond(p.i);
        if (spilled) {
            results.count("spilled");
        }
        if (wouldReject) {
            results.count("would_reject"); // admitted (or refused by an enforced quota); the shadow quota refused
        }
        p.decision.succeed(results.done(new ClientDecision(ok ? ClientDecision.Result.ACCEPTED
                : ClientDecision.Result.REJECTED, ok ? 0 : Math.max(1, retryAfter), remaining,
                address, level, limitKey, p.c, p.i + 1, rate, burst, reset,
                wouldReject), null, spilled));
    }

    /** Ends this channel's wire connections once their outstanding checks are answered (the limiter left the list). */
    void retire() {
        for (WireSlot slot : wires.values()) {
            slot.loop.execute(slot::retire);
        }
    }

    /** Closes this channel's wire connections at once; their outstanding checks fail over (or fail: stopped). */
    void closeWires(Throwable cause) {
        for (WireSlot slot : wires.values()) {
            slot.loop.execute(() -> slot.close(cause));
        }
    }

    /**
     * The check-wire connection of this limiter on one event loop ({@link WireConnection}): sends while it is
     * up; otherwise starts connecting (at most one attempt at a time, and after a failure not before
     * {@code backoff} has passed) and the check goes over HTTP meanwhile.
     */
    private final class WireSlot implements WireConnection.Peer<Plan> {
        final io.netty.channel.EventLoop loop;
        private WireConnection<Plan> wire;
        private boolean connecting;
        private boolean retired;
        private long retryAt;

        WireSlot(io.netty.channel.EventLoop loop) {
            this.loop = loop;
            this.retryAt = ticker.read();
        }

        /** Sends over the wire; false: send it over HTTP. On {@link #loop}. */
        boolean send(Plan p) {
            if (wire != null && wire.send(p)) {
                return true;
            }
            if (wire == null && !connecting && !noWire && !retired && !stopped.getAsBoolean() && ticker.read() - retryAt >= 0) {
                connecting = true;
                WireConnection.connect(this, loop, wireChannelClass, addr.host(), addr.port(), ticker,
                        options.checkTimeout(), options.maxBatch()).addListener(f -> {
                            connecting = false;
                            if (f.isSuccess()) {
                                @SuppressWarnings("unchecked")
                                WireConnection<Plan> w = (WireConnection<Plan>) f.getNow();
                                if (retired || stopped.getAsBoolean()) {
                                    w.close(new IllegalStateException("levee-client is stopped"));
                                } else {
                                    wire = w;
                                }
                            } else {
                                retryAt = ticker.read() + options.backoff().toNanos();
                                LOG.debug("check wire to {} not up: {}", addr, f.cause().toString());
                            }
                        });
            }
            return false;
        }

        void retire() {
            retired = true;
            if (wire != null) {
                wire.retire();
            }
        }

        void close(Throwable cause) {
            retired = true;
            if (wire != null) {
                wire.close(cause);
            }
        }

        @Override
        public int size(Plan p) {
            return p.binarySize();
        }

        @Override
        public void write(Plan p, io.netty.buffer.ByteBuf frame) {
            BinaryChecks.writeCheck(frame, p.c.resource(), p.c.key(), p.c.operation().name(), p.g());
        }

        @Override
        public void answered(Plan p, BinaryChecks.AnswerCursor answer) {
            backedOffUntil.remove(address);
            LimiterChannel.this.answered(p, answer);
        }

        @Override
        public void failed(List<Plan> checks, Throwable cause) {
            LimiterChannel.this.failed(checks, cause);
        }

        @Override
        public void closed(WireConnection<Plan> connection, boolean clean) {
            if (wire == connection) {
                wire = null;
            }
            // after a failure not at once again; an idle connection the limiter closed comes back with the next check
            retryAt = clean ? ticker.read() : ticker.read() + options.backoff().toNanos();
        }

        @Override
        public void noWire(int status) {
            if (!noWire) {
                noWire = true;
                LOG.info("limiter {} does not take the check wire (upgrade answered HTTP {}): HTTP from now on",
                        addr, status);
            }
        }
    }

    private void refused(Plan p, String why) {
        // asking another member would get the same answer; the limiter is healthy
        results.count("limiter_refused");
        p.decision.succeed(results.done(new ClientDecision(ClientDecision.Result.FAILED, 0, 0, address, null,
                null, p.c, p.i + 1), why));
    }

    private void failed(List<Plan> batch, Throwable e) {
        if (stopped.getAsBoolean()) {
            for (Plan p : batch) {
                owner.attempt(p, p.i + 1); // fails as stopped: the limiter is not to blame
            }
            return;
        }
        if (e instanceof CheckBodies.Refused) {
            for (Plan p : batch) {
                refused(p, "limiter refused the check: " + e.getMessage());
            }
            return;
        }
        Member m = batch.get(0).member(batch.get(0).i);
        backedOffUntil.put(address, ticker.read() + options.backoff().toNanos());
        LOG.warn("limiter {} ({}) failed: {}; backing off {} ms ({} checks fail over)", m.id(), addr,
                e.getMessage(), options.backoff().toMillis(), batch.size());
        results.count("limiter_failure", batch.size());
        for (Plan p : batch) {
            owner.attempt(p, p.i + 1);
        }
    }
}
