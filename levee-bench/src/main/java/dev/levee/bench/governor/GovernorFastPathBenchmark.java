package dev.levee.bench.governor;

import com.google.common.util.concurrent.RateLimiter;
import dev.levee.governor.BandwidthGovernor;
import dev.levee.governor.Direction;
import dev.levee.governor.GovernedStream;
import dev.levee.governor.GovernorConfig;
import dev.levee.governor.GovernorTimer;
import dev.levee.runtime.SystemTicker;
import io.github.bucket4j.Bandwidth;
import io.github.bucket4j.Bucket;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Measures one uncontended acquire → grant of the {@link BandwidthGovernor} (the fast path: tokens
 * available, nobody waiting), beside single token buckets doing the same: Guava's {@link
 * RateLimiter#tryAcquire(int)} and Bucket4j's {@code tryConsume}, each once (one bucket) and twice
 * (two buckets, like the governor's shared + principal pair, but not atomic).
 *
 * <p>Every bucket runs at 2<sup>40</sup> bytes/s (Bucket4j: 2<sup>39</sup>, its ceiling) and each
 * grant is 1 KiB, so the buckets refill faster than one thread can drain them and the fast path is
 * always taken; the cost of a grant does not depend on its size. The governor reads the real clock ({@link SystemTicker}) under its
 * lock, like the others. Run with {@code -prof gc}: the governor's fast path allocates nothing.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class GovernorFastPathBenchmark {

    static final int BYTES = 1024;
    static final long RATE = GovernorConfig.MAX_RATE_BYTES_PER_SECOND;

    private ScheduledExecutorService timerThread;
    private BandwidthGovernor governor;
    private GovernedStream stream;
    private RateLimiter guavaShared;
    private RateLimiter guavaPrincipal;
    private Bucket bucket4jShared;
    private Bucket bucket4jPrincipal;

    @Setup(Level.Trial)
    public void setUp() {
        timerThread = new ScheduledThreadPoolExecutor(1); // a safety net: the fast path never schedules
        GovernorTimer timer = (delayNs, task) -> {
            ScheduledFuture<?> f = timerThread.schedule(task, delayNs, TimeUnit.NANOSECONDS);
            return () -> f.cancel(false);
        };
        governor = BandwidthGovernor.create(GovernorConfig.of(Direction.DOWNLOAD, RATE, RATE), SystemTicker.INSTANCE,
                timer);
        stream = governor.openStream("svc-bench");
        guavaShared = RateLimiter.create(RATE);
        guavaPrincipal = RateLimiter.create(RATE);
        bucket4jShared = bucket4j();
        bucket4jPrincipal = bucket4j();
    }

    /**
     * Bucket4j refills at most one token per ns, so its tokens are KiB here: 1 MiB burst (1 024
     * tokens), 512 GiB/s (2<sup>29</sup> tokens/s); one grant consumes one token (1 KiB).
     */
    private static Bucket bucket4j() {
        return Bucket.builder().addLimit(Bandwidth.builder().capacity(GovernorConfig.MAX_BURST_BYTES / BYTES)
                .refillGreedy((1L << 29) / 1000, Duration.ofMillis(1)).build()).build();
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        governor.close();
        timerThread.shutdownNow();
    }

    /** The governor's non-blocking fast path: both buckets checked and debited under one lock. */
    @Benchmark
    public boolean leveeTryAcquire() {
        return stream.tryAcquire(BYTES);
    }

    /** The blocking API when the bytes are available: returns at once, no allocation. */
    @Benchmark
    public void leveeAcquire() throws InterruptedException {
        stream.acquire(BYTES);
    }

    /** The asynchronous API when the bytes are available: one shared, completed stage. */
    @Benchmark
    public CompletionStage<Void> leveeAcquireAsync() {
        return stream.acquireAsync(BYTES);
    }

    /** Guava, one bucket (its own clock read and lock). */
    @Benchmark
    public boolean guavaTryAcquireOneBucket() {
        return guavaShared.tryAcquire(BYTES);
    }

    /** Guava, two buckets one after the other: the governor's work, without its atomicity. */
    @Benchmark
    public boolean guavaTryAcquireTwoBuckets() {
        return guavaShared.tryAcquire(BYTES) & guavaPrincipal.tryAcquire(BYTES);
    }

    /** Bucket4j, one bucket (lock-free CAS). */
    @Benchmark
    public boolean bucket4jTryConsumeOneBucket() {
        return bucket4jShared.tryConsume(1);
    }

    /** Bucket4j, two buckets one after the other (not atomic). */
    @Benchmark
    public boolean bucket4jTryConsumeTwoBuckets() {
        return bucket4jShared.tryConsume(1) & bucket4jPrincipal.tryConsume(1);
    }
}
