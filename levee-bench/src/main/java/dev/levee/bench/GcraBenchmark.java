package dev.levee.bench;

import com.google.common.util.concurrent.RateLimiter;
import dev.levee.core.Gcra;
import dev.levee.core.GcraLimit;
import dev.levee.core.GcraTable;
import dev.levee.runtime.SystemTicker;
import io.github.bucket4j.Bandwidth;
import io.github.bucket4j.Bucket;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * GCRA decisions per second: Levee's full decision (key lookup in the bounded {@link GcraTable} +
 * GCRA) and the bare algorithm, beside Bucket4j and Guava's RateLimiter behind the same kind of
 * key lookup (a {@link ConcurrentHashMap} of per-key limiters), over 1 key and 100 000 keys.
 *
 * <p>Every limiter is set to 1000 req/s with burst 1000 per key, so that keys stay in the table (a
 * key's state lives about one second after its last use) and the measurement is the decision on an
 * existing key: over one key nearly every decision rejects (the key is hot), over 100 000 keys
 * nearly every decision admits. Run with {@code -t 1} and {@code -t 2}, and {@code -prof gc} for allocation per
 * decision (docs/BENCHMARKS.md).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class GcraBenchmark {

    @Param({"1", "100000"})
    public int keys;

    private String[] names;
    private GcraTable table;
    private GcraLimit limit;
    private Gcra.State[] states;
    private ConcurrentHashMap<String, Bucket> buckets;
    private ConcurrentHashMap<String, RateLimiter> guava;

    @Setup(Level.Trial)
    public void setUp() {
        names = new String[keys];
        for (int i = 0; i < keys; i++) {
            names[i] = "prefix:bench/objects/*@key-" + i;
        }
        limit = GcraLimit.of(1000, 1000, 1);
        table = GcraTable.create(SystemTicker.INSTANCE, 1_000_000);
        states = new Gcra.State[keys];
        buckets = new ConcurrentHashMap<>();
        guava = new ConcurrentHashMap<>();
        for (int i = 0; i < keys; i++) {
            states[i] = new Gcra.State(limit.horizonNs());
            table.attempt(names[i], limit);
            buckets.put(names[i], Bucket.builder().addLimit(Bandwidth.builder().capacity(1000)
                    .refillGreedy(1000, Duration.ofSeconds(1)).build()).build());
            guava.put(names[i], RateLimiter.create(1000));
        }
    }

    private int next() {
        return keys == 1 ? 0 : ThreadLocalRandom.current().nextInt(keys);
    }

    /** Levee: table lookup + GCRA, as the limiter runs it. */
    @Benchmark
    public long leveeTable() {
        return table.attempt(names[next()], limit);
    }

    /** Levee: GCRA alone on a pre-fetched state (with one clock read), synchronised as in the table. */
    @Benchmark
    public long leveeGcraOnly() {
        Gcra.State s = states[next()];
        synchronized (s) {
            return Gcra.attempt(s, limit, System.nanoTime());
        }
    }

    /** Bucket4j 8 (lock-free token bucket) behind a ConcurrentHashMap lookup. */
    @Benchmark
    public boolean bucket4j() {
        return buckets.get(names[next()]).tryConsume(1);
    }

    /** Guava RateLimiter (SmoothBursty) behind a ConcurrentHashMap lookup. */
    @Benchmark
    public boolean guavaRateLimiter() {
        return guava.get(names[next()]).tryAcquire();
    }
}
