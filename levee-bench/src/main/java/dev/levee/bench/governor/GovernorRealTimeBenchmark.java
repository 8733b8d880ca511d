package dev.levee.bench.governor;

import dev.levee.governor.BandwidthGovernor;
import dev.levee.governor.Direction;
import dev.levee.governor.GovernedStream;
import dev.levee.governor.GovernorConfig;
import dev.levee.governor.GovernorTimer;
import dev.levee.runtime.SystemTicker;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
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
 * Shapes 256 MiB at 1 GiB/s in real time, end to end: {@code streams} streams asking for 64 KiB
 * at a time — virtual threads blocking in {@link GovernedStream#acquire}, or asynchronous
 * continuations of {@link GovernedStream#acquireAsync} — with a real clock and a real timer
 * thread ({@link ScheduledThreadPoolExecutor}) — park/unpark, timer hand-offs and all — with
 * the timer exact to the nanosecond (one wake-up per 64 KiB quantum, 16 384 per second) or
 * rounding up to 250 µs or 1 ms (about 4 or 16 quanta per wake-up).
 *
 * <p>The score (single shot) is the wall time to shape 256 MiB: about 0.25 s (less the 1 MiB
 * burst) shows that the ceiling is reached and not exceeded. After each iteration the CPU time
 * used is printed as CPU per GiB shaped (at 1 GiB/s, ms per GiB / 10 is the percentage of one
 * core): summed over the live Java threads (the timer thread, the virtual threads' carriers and
 * JMH's own, at nanosecond resolution), and for the whole process (10 ms ticks; adds JIT and GC).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3)
@Measurement(iterations = 5)
@Fork(1)
public class GovernorRealTimeBenchmark {

    static final long KiB = 1024;
    static final long MiB = 1024 * KiB;
    static final long GiB = 1024 * MiB;
    static final long TOTAL = 256 * MiB;
    static final long QUANTUM = 64 * KiB;

    @Param({"64"})
    public int streams;

    /**
     * The timer adapter's resolution, ns: delays are rounded up to a multiple of it, as a
     * millisecond timer (Vert.x {@code setTimer}) does; 1 = exact. Coarser wake-ups batch grants.
     */
    @Param({"1", "250000", "1000000"})
    public long timerResolutionNs;

    private ScheduledThreadPoolExecutor timerThread;
    private BandwidthGovernor governor;
    private com.sun.management.OperatingSystemMXBean os;
    private ThreadMXBean threads;
    private long cpuBefore;
    private Map<Long, Long> threadCpuBefore;

    @Setup(Level.Iteration)
    public void setUp() {
        timerThread = new ScheduledThreadPoolExecutor(1);
        timerThread.setRemoveOnCancelPolicy(true);
        GovernorTimer timer = (delayNs, task) -> {
            ScheduledFuture<?> f = timerThread.schedule(task, round(delayNs), TimeUnit.NANOSECONDS);
            return () -> f.cancel(false);
        };
        governor = BandwidthGovernor.create(GovernorConfig.of(Direction.DOWNLOAD, GiB, 0), SystemTicker.INSTANCE, timer);
        os = ManagementFactory.getPlatformMXBean(com.sun.management.OperatingSystemMXBean.class);
        threads = ManagementFactory.getThreadMXBean();
        threadCpuBefore = threadCpu();
        cpuBefore = os.getProcessCpuTime();
    }

    /** CPU time of every live Java (platform) thread, ns: the timer, the virtual threads' carriers, JMH. */
    private Map<Long, Long> threadCpu() {
        Map<Long, Long> m = new HashMap<>();
        for (long id : threads.getAllThreadIds()) {
            long t = threads.getThreadCpuTime(id);
            if (t >= 0) {
                m.put(id, t);
            }
        }
        return m;
    }

    /** Blocking streams: one virtual thread each, parked between quanta. */
    @Benchmark
    public long virtualThreads() throws InterruptedException {
        AtomicLong left = new AtomicLong(TOTAL / QUANTUM);
        try (ExecutorService vts = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < streams; i++) {
                GovernedStream s = governor.openStream("svc-" + i);
                vts.execute(() -> {
                    try {
                        while (left.getAndDecrement() > 0) {
                            s.acquire(QUANTUM);
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
            }
        }
        return governor.stats().grantedBytes();
    }

    /**
     * Asynchronous streams, as on an event loop: each grant's continuation asks for the next
     * quantum on the thread that completed it (here the timer's), so no thread is parked per stream.
     */
    @Benchmark
    public long async() {
        AtomicLong left = new AtomicLong(TOTAL / QUANTUM);
        CompletableFuture<Void> done = new CompletableFuture<>();
        AtomicLong running = new AtomicLong(streams);
        for (int i = 0; i < streams; i++) {
            GovernedStream s = governor.openStream("svc-" + i);
            new Runnable() {
                @Override
                public void run() {
                    if (left.getAndDecrement() > 0) {
                        s.acquireAsync(QUANTUM).thenRun(this);
                    } else if (running.decrementAndGet() == 0) {
                        done.complete(null);
                    }
                }
            }.run();
        }
        done.join();
        return governor.stats().grantedBytes();
    }

    /**
     * Baseline (experimental control): the same timer waking as often as the governor makes it
     * wake at this resolution — every 61 035 ns (one quantum at 1 GiB/s) rounded up — for the
     * same 249 ms, doing nothing else. Its CPU is the price of the wake-ups alone on this machine.
     */
    @Benchmark
    public long timerOnly() {
        long period = round(QUANTUM * 1_000_000_000L / GiB);
        long end = SystemTicker.INSTANCE.read() + (TOTAL - GovernorConfig.MAX_BURST_BYTES) * 1_000_000_000L / GiB;
        CompletableFuture<Void> done = new CompletableFuture<>();
        AtomicLong wakeUps = new AtomicLong();
        new Runnable() {
            @Override
            public void run() {
                wakeUps.incrementAndGet();
                if (SystemTicker.INSTANCE.read() - end >= 0) {
                    done.complete(null);
                } else {
                    timerThread.schedule(this, period, TimeUnit.NANOSECONDS);
                }
            }
        }.run();
        done.join();
        return wakeUps.get();
    }

    private long round(long delayNs) {
        return (delayNs + timerResolutionNs - 1) / timerResolutionNs * timerResolutionNs;
    }

    @TearDown(Level.Iteration)
    public void tearDown() {
        long cpu = os.getProcessCpuTime() - cpuBefore;
        long javaThreads = 0;
        for (Map.Entry<Long, Long> e : threadCpu().entrySet()) {
            javaThreads += e.getValue() - threadCpuBefore.getOrDefault(e.getKey(), 0L);
        }
        long granted = governor.stats().grantedBytes();
        if (granted == 0) {
            granted = TOTAL; // timerOnly: per 256 MiB shaped by the same wake-ups
        }
        double perGiB = (double) GiB / granted;
        System.out.printf("%n    %d MiB in %d grants; CPU per GiB: Java threads %.1f ms (%.2f %% of a core at 1 GiB/s),"
                        + " whole process %.0f ms (%.1f %%, 10 ms ticks, includes JIT and GC)%n",
                granted / MiB, governor.stats().grantedQuanta(), javaThreads / 1e6 * perGiB,
                javaThreads / 1e6 * perGiB / 10, cpu / 1e6 * perGiB, cpu / 1e6 * perGiB / 10);
        governor.close();
        timerThread.shutdownNow();
    }
}
