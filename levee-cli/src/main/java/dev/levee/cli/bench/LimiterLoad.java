package dev.levee.cli.bench;

import dev.levee.runtime.HostPort;
import dev.levee.runtime.SystemTicker;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.HdrHistogram.Recorder;

/**
 * The load generator of {@code levee bench limiter} (docs/BENCHMARKS.md): checks to a limiter over HTTP (JSON or
 * the binary encoding) or the check wire, in a closed loop (a fixed number outstanding, for throughput) or an open
 * loop (checks at a fixed rate, each at its scheduled time, for latency), with latencies in an HdrHistogram. It
 * measures; it decides nothing, and times itself with {@link System#nanoTime()}. The command
 * ({@code BenchCommand}) parses the flags, starts the limiters and prints the phases.
 */
public final class LimiterLoad {

    /**
     * What one phase measured.
     *
     * @param rate       checks answered (accepted or rejected) per second of the phase
     * @param firstError the first error of a closed-loop phase, in the CLI's words, or null
     */
    public record Phase(double rate, double p50Ms, double p99Ms, double p999Ms, double maxMs, long errors, String firstError) {
    }

    /** A request to the limiter that gets no answer this long counts as an error: 10 s. */
    public static final long REQUEST_TIMEOUT_MS = 10_000;

    private final int keys;
    private final boolean binary;
    private final boolean timeline;
    private final Function<Throwable, String> describe;
    /** The check-wire load, with {@code --encoding wire}; null for HTTP. */
    private WireLoad wire;

    /**
     * A generator of checks of resource {@code bench}, keys {@code k/0 … k/(keys-1)}, operation GetObject, g 1.
     *
     * @param keys     distinct object keys ({@code --keys})
     * @param binary   HTTP checks in the binary encoding rather than JSON ({@code --encoding binary})
     * @param timeline record the worst latency of each second of the open loop and print it ({@code --timeline})
     * @param describe an error in the CLI's words (for the first error of a phase)
     */
    public LimiterLoad(int keys, boolean binary, boolean timeline, Function<Throwable, String> describe) {
        this.keys = keys;
        this.binary = binary;
        this.timeline = timeline;
        this.describe = describe;
    }

    /**
     * Sends the checks over the check wire from {@code load}'s event loop instead of HTTP ({@code --encoding wire}):
     * {@code connections} connections to each target opened with {@link #connectWire}.
     */
    public void useWire(Vertx load, int connections) {
        wire = new WireLoad(load, keys, connections, describe);
    }

    /**
     * Opens the wire connections to {@code a}; from a thread other than the generator's event loop.
     *
     * @throws IllegalArgumentException saying what to check when the wire cannot be opened
     */
    public void connectWire(HostPort a) throws Exception {
        wire.connect(a);
    }

    /** This JVM's collections and milliseconds spent in them so far. */
    public static long[] ownGc() {
        long n = 0;
        long ms = 0;
        for (var gc : java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()) {
            n += Math.max(0, gc.getCollectionCount());
            ms += Math.max(0, gc.getCollectionTime());
        }
        return new long[] {n, ms};
    }

    /** The target's GC pauses from its /metrics: count, total seconds, longest (Micrometer's decaying max); null if unreachable. */
    public static double[] targetGc(HostPort a) {
        try {
            var http = java.net.http.HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
            String text = http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://" + a + "/metrics"))
                    .timeout(Duration.ofSeconds(5)).build(), java.net.http.HttpResponse.BodyHandlers.ofString()).body();
            double[] out = new double[3];
            if (!text.contains("jvm_gc_pause_seconds_count")) {
                return null; // not a JVM's Prometheus page (or no collection metric in it): unknown, not zero
            }
            for (String line : text.split("\n")) {
                int sp = line.lastIndexOf(' ');
                if (sp < 0 || line.startsWith("#")) {
                    continue;
                }
                double v = Double.parseDouble(line.substring(sp + 1));
                if (line.startsWith("jvm_gc_pause_seconds_count")) {
                    out[0] += v;
                } else if (line.startsWith("jvm_gc_pause_seconds_sum")) {
                    out[1] += v;
                } else if (line.startsWith("jvm_gc_pause_seconds_max")) {
                    out[2] = Math.max(out[2], v);
                }
            }
            return out;
        } catch (java.io.IOException | RuntimeException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    private Future<Integer> one(HttpClientAgent http, HostPort a, long seq) {
        if (wire != null) {
            return wire.one(a, seq);
        }
        Buffer body;
        if (binary) {
            io.netty.buffer.ByteBuf b = dev.levee.wire.BinaryChecks.start(1, 32);
            dev.levee.wire.BinaryChecks.writeCheck(b, "bench", "k/" + (seq % keys), "GetObject", 1);
            body = dev.levee.runtime.Http.buffer(b);
        } else {
            body = Buffer.buffer("{\"resource\":\"bench\",\"key\":\"k/" + (seq % keys) + "\",\"operation\":\"GetObject\",\"g\":1}");
        }
        return http.request(new RequestOptions().setMethod(HttpMethod.POST).setHost(a.host()).setPort(a.port())
                        .setURI("/v1/check").putHeader("Content-Type",
                                binary ? dev.levee.wire.BinaryChecks.CONTENT_TYPE : "application/json")
                        .setIdleTimeout(REQUEST_TIMEOUT_MS))
                .compose(r -> r.send(body))
                .compose(resp -> resp.body().map(b -> {
                    // a 200 or 429 is a check's answer only in the content type a limiter answers in
                    String type = resp.getHeader("Content-Type");
                    String want = binary ? dev.levee.wire.BinaryChecks.CONTENT_TYPE : "application/json";
                    if (type == null || !type.startsWith(want)) {
                        throw new IllegalStateException("HTTP " + resp.statusCode() + " with "
                                + (type == null ? "no content type" : "content type " + type)
                                + ", not a limiter's answer");
                    }
                    return resp.statusCode();
                }));
    }

    /** Runs {@code concurrency} checks at a time for {@code d}, each sent when the previous one is answered. */
    public Phase closedLoop(HttpClientAgent http, HostPort a, int concurrency, Duration d) throws InterruptedException {
        Recorder rec = new Recorder(3);
        AtomicLong done = new AtomicLong();
        AtomicLong errors = new AtomicLong();
        AtomicLong seq = new AtomicLong();
        java.util.concurrent.atomic.AtomicReference<String> firstError = new java.util.concurrent.atomic.AtomicReference<>();
        long start = System.nanoTime();
        long end = start + d.toNanos();
        CountDownLatch finished = new CountDownLatch(concurrency);
        for (int i = 0; i < concurrency; i++) {
            loop(http, a, rec, done, errors, firstError, seq, end, finished);
        }
        finished.await(d.toSeconds() + 30, TimeUnit.SECONDS);
        double secs = (System.nanoTime() - start) / 1e9;
        var h = rec.getIntervalHistogram();
        return new Phase(done.get() / secs, h.getValueAtPercentile(50) / 1e6, h.getValueAtPercentile(99) / 1e6,
                h.getValueAtPercentile(99.9) / 1e6, h.getMaxValue() / 1e6, errors.get(), firstError.get());
    }

    private void loop(HttpClientAgent http, HostPort a, Recorder rec, AtomicLong done, AtomicLong errors,
                      java.util.concurrent.atomic.AtomicReference<String> firstError, AtomicLong seq, long end,
                      CountDownLatch finished) {
        long t0 = System.nanoTime();
        if (t0 - end >= 0) {
            finished.countDown();
            return;
        }
        one(http, a, seq.getAndIncrement()).onComplete(ar -> {
            rec.recordValue(Math.max(1, System.nanoTime() - t0));
            if (ar.succeeded() && (ar.result() == 200 || ar.result() == 429)) {
                done.incrementAndGet();
            } else {
                errors.incrementAndGet();
                firstError.compareAndSet(null, ar.failed() ? describe.apply(ar.cause()) : "HTTP " + ar.result());
            }
            loop(http, a, rec, done, errors, firstError, seq, end, finished);
        });
    }

    /**
     * Sends checks at {@code rate} per second for {@code d}, each at its scheduled time; latency is measured from
     * that time (no coordinated omission).
     */
    public Phase openLoop(Vertx load, HttpClientAgent http, HostPort a, double rate, Duration d)
            throws InterruptedException {
        Recorder rec = new Recorder(3);
        AtomicLong done = new AtomicLong();
        AtomicLong errors = new AtomicLong();
        long start = System.nanoTime();
        long total = Math.max(1, (long) (rate * d.toNanos() / 1e9)); // at least one: the phase ends when all are back
        CountDownLatch finished = new CountDownLatch(1);
        // each request is issued at its scheduled time (Pacer: to the ~50 µs); latency is measured from the
        // scheduled time, so queueing in the generator counts (no coordinated omission)
        Pacer.start(((io.vertx.core.internal.ContextInternal) load.getOrCreateContext()).nettyEventLoop(), start, rate,
                total, n -> {
            long scheduled = Pacer.scheduled(start, rate, n);
            one(http, a, n).onComplete(ar -> {
                long latency = Math.max(1, System.nanoTime() - scheduled);
                rec.recordValue(latency);
                if (timeline) {
                    int sec = (int) Math.min(worstPerSecond.length - 1, (scheduled - start) / 1_000_000_000L);
                    if (latency > worstPerSecond[sec]) {
                        worstPerSecond[sec] = latency;
                    }
                }
                if (ar.succeeded() && (ar.result() == 200 || ar.result() == 429)) {
                    done.incrementAndGet();
                } else {
                    if (errors.getAndIncrement() == 0) {
                        System.err.println("first error of the latency phase: " + (ar.failed()
                                ? describe.apply(ar.cause()) : "HTTP " + ar.result()));
                    }
                }
                if (done.get() + errors.get() == total) {
                    finished.countDown();
                }
            });
        });
        finished.await(d.toSeconds() + 30, TimeUnit.SECONDS);
        double secs = (System.nanoTime() - start) / 1e9;
        var h = rec.getIntervalHistogram();
        if (timeline) {
            StringBuilder b = new StringBuilder("worst latency per second of the latency phase (ms):");
            for (int i = 0; i < Math.min(worstPerSecond.length, (int) Math.ceil(secs)); i++) {
                b.append(String.format(Locale.ROOT, " %.1f", worstPerSecond[i] / 1e6));
            }
            System.out.println(b);
        }
        return new Phase(done.get() / secs, h.getValueAtPercentile(50) / 1e6, h.getValueAtPercentile(99) / 1e6,
                h.getValueAtPercentile(99.9) / 1e6, h.getMaxValue() / 1e6, errors.get(), null);
    }

    /** The worst latency of each second of the latency phase (ns), with {@code --timeline}. */
    private final long[] worstPerSecond = new long[3600];

    /**
     * Checks over the check wire ({@link dev.levee.wire.WireConnection}) from the generator's event loop: an answer
     * completes its check's future with 200 (accepted) or 429 (rejected), anything else fails it.
     */
    static final class WireLoad implements dev.levee.wire.WireConnection.Peer<WireLoad.Check> {
        record Check(long seq, io.vertx.core.Promise<Integer> done) {
        }

        private final io.netty.channel.EventLoop loop;
        private final Class<? extends io.netty.channel.Channel> channelClass;
        private final int keys;
        private final java.util.Map<HostPort, java.util.List<dev.levee.wire.WireConnection<Check>>> pools =
                new java.util.HashMap<>();
        private final int connections;
        private final Function<Throwable, String> describe;
        private long next;

        WireLoad(Vertx load, int keys, int connections, Function<Throwable, String> describe) {
            this.loop = ((io.vertx.core.internal.ContextInternal) load.getOrCreateContext()).nettyEventLoop();
            this.channelClass = dev.levee.runtime.Http.socketChannelClass(load);
            this.keys = keys;
            this.connections = connections;
            this.describe = describe;
        }

        Future<Integer> one(HostPort a, long seq) {
            io.vertx.core.Promise<Integer> p = io.vertx.core.Promise.promise();
            Check c = new Check(seq, p);
            if (loop.inEventLoop()) {
                send(a, c);
            } else {
                loop.execute(() -> send(a, c));
            }
            return p.future();
        }

        /** Opens the connections to {@code a}; from a thread other than the generator's event loop. */
        void connect(HostPort a) throws Exception {
            java.util.List<dev.levee.wire.WireConnection<Check>> pool = new java.util.ArrayList<>();
            for (int i = 0; i < connections; i++) {
                try {
                    pool.add(dev.levee.wire.WireConnection.<Check>connect(this, loop, channelClass, a.host(), a.port(),
                            SystemTicker.INSTANCE, Duration.ofSeconds(10), 256).get(15, TimeUnit.SECONDS));
                } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                    Throwable cause = e.getCause() == null ? e : e.getCause();
                    throw new IllegalArgumentException("cannot open the check wire to " + a + ": " + describe.apply(cause)
                            + "; is a limiter listening there (its --listen, not levee-client's)? (--encoding binary or json"
                            + " for a limiter without the wire)");
                }
            }
            loop.submit(() -> pools.put(a, pool)).get(5, TimeUnit.SECONDS);
        }

        private void send(HostPort a, Check c) {
            var pool = pools.get(a);
            if (pool == null || pool.isEmpty()) {
                c.done().fail("no check-wire connection to " + a);
                return;
            }
            var w = pool.get((int) (next++ % pool.size()));
            if (!w.send(c)) {
                c.done().fail("check wire to " + a + " takes no more checks");
            }
        }

        @Override
        public int size(Check c) {
            return 40;
        }

        @Override
        public void write(Check c, io.netty.buffer.ByteBuf frame) {
            dev.levee.wire.BinaryChecks.writeCheck(frame, "bench", "k/" + (c.seq() % keys), "GetObject", 1);
        }

        @Override
        public void answered(Check c, dev.levee.wire.BinaryChecks.AnswerCursor a) {
            if (a.result == dev.levee.wire.BinaryChecks.ACCEPTED) {
                c.done().complete(200);
            } else if (a.result == dev.levee.wire.BinaryChecks.REJECTED) {
                c.done().complete(429);
            } else {
                c.done().fail("limiter answered " + a.result + (a.error == null ? "" : ": " + a.error));
            }
        }

        @Override
        public void failed(java.util.List<Check> checks, Throwable cause) {
            for (Check c : checks) {
                c.done().fail(cause);
            }
        }

        @Override
        public void closed(dev.levee.wire.WireConnection<Check> connection, boolean clean) {
            pools.values().forEach(p -> p.remove(connection));
        }

        @Override
        public void noWire(int status) {
            // connect() fails with the reason and says what to check
        }
    }
}
