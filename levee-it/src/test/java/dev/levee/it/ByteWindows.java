package dev.levee.it;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Measures bytes per window (1 s unless told) from cumulative byte counters, and keeps a time series of
 * other observations, for the site bandwidth tests (issue 11: "bytes in any 1 s window ≤ 1.05 × B + one
 * quantum per stream", "Σ unexpired shares ≤ B at every observation").
 *
 * <p>Model: every {@link #sampleNow()} (on its own daemon thread every sample period after
 * {@link #start(Duration, Duration)}) reads every counter at one instant of the injected clock and keeps
 * the values. A counter's value at any instant between two samples is taken by linear interpolation
 * between them (its bytes are assumed spread evenly over the sample period); so window boundaries fall
 * exactly on multiples of the window after the first sample, whatever the sampling thread's jitter.
 * {@link #windows(String)} gives the bytes in each complete consecutive window; {@link #maxSlidingWindow(String)}
 * and {@link #maxSlidingWindowSum()} the most bytes in any window-long interval starting at a sample,
 * which is "any 1 s window" at the resolution of the sample period. Counters must not decrease.
 *
 * <p>Observations ({@link #observe(String, Callable)}) are taken on a second daemon thread, so that a
 * slow probe (an HTTP call to a gateway) never delays the byte samples; each keeps its time, its value
 * or the failure's message. {@link #reset()} forgets every sample and observation (the end of a warm-up).
 * All methods are thread-safe.
 */
final class ByteWindows implements AutoCloseable {

    /** One observation: when (clock nanoseconds), and a value or, when the probe failed, an error message. */
    record Observation<T>(long atNanos, T value, String error) {
        boolean ok() {
            return error == null;
        }
    }

    private final long windowNanos;
    private final LongSupplier clock;
    private final Map<String, LongSupplier> counters = new LinkedHashMap<>();
    private final Map<String, Callable<?>> probes = new LinkedHashMap<>();
    private final List<long[]> samples = new ArrayList<>(); // [0] = time, [1..] = counters in counters' order
    private final Map<String, List<Observation<?>>> observed = new LinkedHashMap<>();
    private ScheduledExecutorService sampler;
    private ScheduledExecutorService observer;

    /**
     * Creates an instance with a window and a clock.
     *
     * @param window the window's length (1 s in the assertions)
     * @param clock  nanoseconds of a monotonic clock ({@code System::nanoTime}, or a fake in unit tests)
     * @throws IllegalArgumentException when the window is not positive
     */
    ByteWindows(Duration window, LongSupplier clock) {
        if (window.isNegative() || window.isZero()) {
            throw new IllegalArgumentException("window must be positive, got " + window);
        }
        this.windowNanos = window.toNanos();
        this.clock = clock;
    }

    /** Returns an instance with 1 s windows on {@code System.nanoTime()}. */
    static ByteWindows perSecond() {
        return new ByteWindows(Duration.ofSeconds(1), System::nanoTime);
    }

    /**
     * Adds a cumulative byte counter (before the first sample).
     *
     * @param name  its name in {@link #windows(String)}
     * @param bytes reads its value; must not decrease
     * @return this
     * @throws IllegalStateException when sampling has begun or the name is taken
     */
    synchronized ByteWindows counter(String name, LongSupplier bytes) {
        if (!samples.isEmpty()) {
            throw new IllegalStateException("counters must be added before the first sample");
        }
        if (counters.putIfAbsent(name, bytes) != null) {
            throw new IllegalStateException("counter " + name + " already added");
        }
        return this;
    }

    /**
     * Adds a probe observed on every observation tick (for example Σ shares from the gateways' {@code /health/ready}).
     *
     * @param name  its name in {@link #observations(String)}
     * @param probe returns the value; a thrown exception is kept as the observation's error
     * @return this
     */
    synchronized <T> ByteWindows observe(String name, Callable<T> probe) {
        probes.put(name, probe);
        observed.putIfAbsent(name, new ArrayList<>());
        return this;
    }

    /**
     * Starts sampling the counters every {@code samplePeriod} and the probes every {@code observePeriod},
     * each on its own daemon thread (a fixed-rate schedule; a late run is not repeated).
     *
     * @return this
     * @throws IllegalStateException when already started
     */
    synchronized ByteWindows start(Duration samplePeriod, Duration observePeriod) {
        if (sampler != null) {
            throw new IllegalStateException("already started");
        }
        sampler = Executors.newSingleThreadScheduledExecutor(r -> Thread.ofPlatform().daemon().name("byte-windows-sample").unstarted(r));
        sampler.scheduleAtFixedRate(this::sampleNow, 0, samplePeriod.toNanos(), TimeUnit.NANOSECONDS);
        observer = Executors.newSingleThreadScheduledExecutor(r -> Thread.ofPlatform().daemon().name("byte-windows-observe").unstarted(r));
        observer.scheduleAtFixedRate(this::observeNow, 0, observePeriod.toNanos(), TimeUnit.NANOSECONDS);
        return this;
    }

    /** Starts like {@link #start(Duration, Duration)} with 50 ms samples and 200 ms observations. */
    ByteWindows start() {
        return start(Duration.ofMillis(50), Duration.ofMillis(200));
    }

    /** Reads every counter now and keeps the values. */
    synchronized void sampleNow() { // under the lock, so that samples are kept in clock order; counters must be cheap
        long[] s = new long[counters.size() + 1];
        s[0] = clock.getAsLong();
        int i = 1;
        for (LongSupplier c : counters.values()) {
            s[i++] = c.getAsLong();
        }
        samples.add(s);
    }

    /** Runs every probe now and keeps what each returned. */
    void observeNow() {
        Map<String, Callable<?>> ps;
        synchronized (this) {
            ps = new LinkedHashMap<>(probes);
        }
        for (Map.Entry<String, Callable<?>> p : ps.entrySet()) {
            Observation<?> o;
            try {
                Object v = p.getValue().call();
                o = new Observation<>(clock.getAsLong(), v, null);
            } catch (Exception e) {
                o = new Observation<>(clock.getAsLong(), null, e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            synchronized (this) {
                observed.get(p.getKey()).add(o);
            }
        }
    }

    /** Forgets every sample and observation so far; windows start again at the next sample. */
    synchronized void reset() {
        samples.clear();
        observed.values().forEach(List::clear);
    }

    /** Returns the number of samples kept. */
    synchronized int sampleCount() {
        return samples.size();
    }

    /**
     * Returns the bytes of counter {@code name} in each complete window since the first sample, in order.
     *
     * @throws IllegalArgumentException when there is no such counter
     */
    synchronized List<Long> windows(String name) {
        return windows(column(name));
    }

    /** Returns the bytes of all counters together in each complete window since the first sample. */
    synchronized List<Long> sumWindows() {
        return windows(0);
    }

    /** Returns the largest of {@link #sumWindows()}, or 0 when no window is complete. */
    synchronized long maxWindowSum() {
        return sumWindows().stream().mapToLong(Long::longValue).max().orElse(0);
    }

    /**
     * Returns the most bytes of counter {@code name} in any window-long interval starting at a sample
     * (and ending before the last one), or 0 when no such interval is complete.
     *
     * @throws IllegalArgumentException when there is no such counter
     */
    synchronized long maxSlidingWindow(String name) {
        return maxSliding(column(name));
    }

    /** Returns the most bytes of all counters together in any window-long interval starting at a sample. */
    synchronized long maxSlidingWindowSum() {
        return maxSliding(0);
    }

    /**
     * Returns the mean rate of counter {@code name} over the last {@code span} of samples, in bytes per
     * second (over all samples when they span less).
     *
     * @throws IllegalArgumentException when there is no such counter
     */
    synchronized double recentRate(String name, Duration span) {
        int c = column(name);
        if (samples.size() < 2) {
            return 0;
        }
        long end = samples.getLast()[0];
        long first = samples.getFirst()[0];
        long start = end - span.toNanos() - first > 0 ? end - span.toNanos() : first;
        double bytes = value(c, end) - value(c, start);
        return bytes * 1e9 / (end - start);
    }

    /**
     * Returns the observations of probe {@code name}, oldest first.
     *
     * @throws IllegalArgumentException when there is no such probe
     */
    @SuppressWarnings("unchecked")
    synchronized <T> List<Observation<T>> observations(String name) {
        List<Observation<?>> os = observed.get(name);
        if (os == null) {
            throw new IllegalArgumentException("no probe named " + name + "; probes: " + observed.keySet());
        }
        List<Observation<T>> copy = new ArrayList<>();
        for (Observation<?> o : os) {
            copy.add((Observation<T>) o);
        }
        return copy;
    }

    /** Returns a table of the windows, one line per window: each counter's bytes and the sum (MiB, 2 decimals). */
    synchronized String table() {
        StringBuilder sb = new StringBuilder("window");
        counters.keySet().forEach(n -> sb.append('\t').append(n));
        sb.append("\tsum (MiB)\n");
        List<List<Long>> cols = new ArrayList<>();
        for (String n : counters.keySet()) {
            cols.add(windows(n));
        }
        List<Long> sum = sumWindows();
        for (int w = 0; w < sum.size(); w++) {
            sb.append(w);
            for (List<Long> col : cols) {
                sb.append('\t').append(String.format("%.2f", col.get(w) / 1048576.0));
            }
            sb.append('\t').append(String.format("%.2f", sum.get(w) / 1048576.0)).append('\n');
        }
        return sb.toString();
    }

    /** Stops both threads; samples and observations stay readable. */
    @Override
    public void close() {
        ScheduledExecutorService s;
        ScheduledExecutorService o;
        synchronized (this) {
            s = sampler;
            o = observer;
        }
        for (ScheduledExecutorService e : new ScheduledExecutorService[] {s, o}) {
            if (e != null) {
                e.shutdownNow();
                try {
                    e.awaitTermination(5, TimeUnit.SECONDS);
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    // ---------------------------------------------------------------- internals

    /** Column of a counter in a sample (1-based); 0 means the sum of all. */
    private int column(String name) {
        int i = 1;
        for (String n : counters.keySet()) {
            if (n.equals(name)) {
                return i;
            }
            i++;
        }
        throw new IllegalArgumentException("no counter named " + name + "; counters: " + counters.keySet());
    }

    private List<Long> windows(int col) {
        List<Long> out = new ArrayList<>();
        if (samples.isEmpty()) {
            return out;
        }
        long t0 = samples.getFirst()[0];
        long last = samples.getLast()[0];
        for (long k = 0; last - (t0 + (k + 1) * windowNanos) >= 0; k++) {
            out.add(Math.round(value(col, t0 + (k + 1) * windowNanos) - value(col, t0 + k * windowNanos)));
        }
        return out;
    }

    private long maxSliding(int col) {
        long max = 0;
        long last = samples.isEmpty() ? 0 : samples.getLast()[0];
        for (long[] s : samples) {
            if (last - (s[0] + windowNanos) < 0) {
                break;
            }
            max = Math.max(max, Math.round(value(col, s[0] + windowNanos) - at(s, col)));
        }
        return max;
    }

    private static double at(long[] s, int col) {
        if (col > 0) {
            return s[col];
        }
        long sum = 0;
        for (int i = 1; i < s.length; i++) {
            sum += s[i];
        }
        return sum;
    }

    /** The counter's value at time {@code t} (within the samples), interpolated between the samples around it. */
    private double value(int col, long t) {
        int lo = 0;
        int hi = samples.size() - 1;
        if (t - samples.get(hi)[0] >= 0) {
            return at(samples.get(hi), col);
        }
        if (t - samples.get(lo)[0] <= 0) {
            return at(samples.get(lo), col);
        }
        while (hi - lo > 1) { // invariant: samples[lo].t < t < samples[hi].t
            int mid = (lo + hi) >>> 1;
            long tm = samples.get(mid)[0];
            if (t - tm == 0) {
                return at(samples.get(mid), col);
            } else if (t - tm > 0) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        long[] a = samples.get(lo);
        long[] b = samples.get(hi);
        double va = at(a, col);
        double vb = at(b, col);
        return va + (vb - va) * (double) (t - a[0]) / (double) (b[0] - a[0]);
    }
}
