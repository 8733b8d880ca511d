package dev.levee.bench.governor;

import dev.levee.core.Ticker;
import dev.levee.governor.BandwidthGovernor;
import dev.levee.governor.Direction;
import dev.levee.governor.GovernedStream;
import dev.levee.governor.GovernorConfig;
import dev.levee.governor.GovernorStats;
import dev.levee.governor.GovernorTimer;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
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
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Measures the governor's slow path at saturation: grants per second with 1 000 principals in the
 * table and 256 requests always waiting (the bound per direction), shaped at 1 GiB/s in 64 KiB
 * quanta — the state of a busy gateway, where every grant goes through the scheduler.
 *
 * <p>Time is simulated so that the benchmark measures CPU, not waiting: each operation advances a
 * fake clock by {@code wakeEveryNs} and runs the governor's timer task if it is due (deficit
 * round robin, heap of blocked principals, publication outside the lock, completion of the
 * caller's future), and each completed request immediately asks for its next 64 KiB, as an
 * asynchronous gateway stream would. {@code grants} (an auxiliary counter) is the number of
 * quanta granted per second of CPU; divide 10⁹ by it for ns per grant. A wake-up every 61 035 ns
 * (one quantum at 1 GiB/s) is the worst case, one grant per wake-up; every 1 ms models a
 * millisecond timer, about 16 grants per wake-up.
 *
 * <p>{@code principalRate}: 0 = no per-principal ceiling (the shared bucket is the bottleneck);
 * 16 MiB/s = both buckets charged, shared still the bottleneck; 2 MiB/s = 256 × 2 MiB/s = 512 MiB/s,
 * so principals wait for their own buckets and the heap does the work.
 *
 * <p>No like-for-like baseline: Guava's RateLimiter and Bucket4j have no queue, no fairness between
 * principals and no one-timer scheduling; the fast-path benchmark compares single buckets.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class GovernorSchedulerBenchmark {

    static final long KiB = 1024;
    static final long GiB = 1024 * 1024 * KiB;
    static final int PRINCIPALS = 1000;
    static final int WAITING = 256;
    static final long QUANTUM = 64 * KiB;

    @Param({"61035", "1000000"})
    public long wakeEveryNs;

    @Param({"0", "16777216", "2097152"})
    public long principalRate;

    private long now = 1L << 62; // far from 0; the governor compares by subtraction anyway
    private Runnable task;
    private long taskDue;
    private BandwidthGovernor governor;
    private long completed;

    /** Reports grants per second beside the wake-ups per second. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Grants {
        public long grants;
    }

    @Setup(Level.Trial)
    public void setUp() {
        Ticker ticker = () -> now;
        GovernorTimer timer = (delayNs, t) -> {
            Runnable scheduled = t;
            task = scheduled;
            taskDue = now + delayNs;
            return () -> {
                if (task == scheduled) {
                    task = null;
                }
            };
        };
        governor = BandwidthGovernor.create(GovernorConfig.builder(Direction.DOWNLOAD).rate(GiB)
                .principalRate(principalRate).maxPrincipals(PRINCIPALS).maxWaitingQuanta(WAITING).build(),
                ticker, timer);
        GovernedStream[] streams = new GovernedStream[PRINCIPALS];
        for (int i = 0; i < PRINCIPALS; i++) {
            streams[i] = governor.openStream("svc-" + i);
        }
        for (int i = 0; i < WAITING; i++) {
            new Pump(streams[i * PRINCIPALS / WAITING]).next();
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        governor.close();
    }

    @Benchmark
    public void wakeUp(Grants counters) {
        long before = completed;
        now += wakeEveryNs;
        while (task != null && taskDue - now <= 0) {
            Runnable t = task;
            task = null;
            t.run();
        }
        counters.grants += completed - before;
    }

    /** Checks that the pumps kept 256 requests waiting and every grant was one quantum. */
    @TearDown(Level.Iteration)
    public void check() {
        GovernorStats st = governor.stats();
        if (st.waitingQuanta() < WAITING - 16 || st.grantedBytes() != st.grantedQuanta() * QUANTUM) {
            throw new IllegalStateException("benchmark lost its waiters: " + st);
        }
    }

    /** One asynchronous stream: asks for the next quantum as soon as the previous one is granted. */
    private final class Pump implements Runnable {
        private final GovernedStream stream;

        Pump(GovernedStream stream) {
            this.stream = stream;
        }

        void next() {
            stream.acquireAsync(QUANTUM).thenRun(this);
        }

        @Override
        public void run() {
            completed++;
            next();
        }
    }
}
