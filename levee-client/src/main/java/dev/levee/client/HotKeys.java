package dev.levee.client;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.time.Duration;

/**
 * A per-limit-key estimate of the rate of checks this client sees, answering "is this key above the lease threshold"
 * (issue 23 item 2: only keys whose recent rate is above a threshold are worth a request lease; docs/quotas.md,
 * "Request leases"). Pure: no clock read (every call takes {@code now}, a reading of the client's
 * {@link dev.levee.core.Ticker}), no I/O.
 *
 * <h2>Model</h2>
 * Each key holds an exponentially decayed count with time constant {@code τ = window}: a check at {@code t} turns the
 * estimate {@code r} into {@code r·e^-(t - t0)/τ + 1/τ}, and {@link #rate} reads {@code r·e^-(now - t0)/τ}. Under a
 * steady rate λ with {@code 1/λ ≪ τ} the estimate stays within {@code λ ± 1/(2τ)} (just after a check
 * {@code (1/τ)/(1 - e^-1/(λτ))}, just before the next {@code e^-1/(λτ)} of that), and after a rate change it moves
 * 63 % of the way in one window: the usual exponentially weighted moving average, taken over time rather than over
 * checks so that a burst and a silence weigh by how long they last. Two numbers per key, no window of samples.
 *
 * <h2>Hot</h2>
 * A key is hot when its estimate is above {@code threshold}; it turns cold again only below half of it, so that a key
 * hovering at the threshold does not flip at every check ({@link #record} says when a key turns hot, for one log line
 * per turn).
 *
 * <h2>Memory</h2>
 * At most {@code maxKeys} keys are held (Caffeine's size bound, W-TinyLFU: frequently checked keys stay, the
 * one-off keys of per-object wildcard quotas are evicted first); an evicted key starts again from nothing, which
 * only delays its turning hot. Eviction runs on the calling thread, so nothing here starts a thread. Thread-safe.
 */
public final class HotKeys {

    /** Keys held at most, by default: 65 536 (a few MiB). */
    public static final long DEFAULT_MAX_KEYS = 65_536;

    private final double threshold;
    private final double tauNanos;
    private final Cache<String, Estimate> estimates;

    /**
     * Creates an empty estimator.
     *
     * @param threshold the lease threshold in checks per second: finite and &gt; 0
     * @param window    the time constant τ of the estimate: positive, at most one day
     * @param maxKeys   keys held at most, ≥ 1
     * @throws IllegalArgumentException if a value is out of range
     */
    public HotKeys(double threshold, Duration window, long maxKeys) {
        if (!(threshold > 0) || Double.isInfinite(threshold)) {
            throw new IllegalArgumentException("threshold must be a finite number > 0 (requests per second), got " + threshold);
        }
        if (window == null || window.isNegative() || window.isZero() || window.compareTo(Duration.ofDays(1)) > 0) {
            throw new IllegalArgumentException("window must be positive and at most one day, got " + window);
        }
        if (maxKeys < 1) {
            throw new IllegalArgumentException("maxKeys must be ≥ 1, got " + maxKeys);
        }
        this.threshold = threshold;
        this.tauNanos = window.toNanos();
        this.estimates = Caffeine.newBuilder().maximumSize(maxKeys).executor(Runnable::run).build();
    }

    /** What {@link #record} found: the estimate after counting the check, and whether the key turned hot with it. */
    public record Seen(double rate, boolean hot, boolean turnedHot) {
    }

    /**
     * Counts one check on {@code key} at {@code now}.
     *
     * @param key the limit key (as the limiter names the counter), not null
     * @param now a reading of the client's ticker, in nanoseconds
     * @return the key's estimate in checks per second after this check, whether it is hot, and whether it just turned so
     */
    public Seen record(String key, long now) {
        return record(key, now, 1);
    }

    /**
     * Counts {@code n} checks on {@code key} at {@code now} (arrivals reported in a lump, as NGINX's batch uses).
     *
     * @param key the limit key, not null
     * @param now a reading of the client's ticker, in nanoseconds
     * @param n   how many, ≥ 0
     * @return as {@link #record(String, long)}
     */
    public Seen record(String key, long now, int n) {
        return estimates.get(key, k -> new Estimate(now)).add(now, n, this);
    }

    /**
     * Reads the estimate of {@code key} at {@code now} without counting a check.
     *
     * @param key the limit key
     * @param now a reading of the client's ticker, in nanoseconds
     * @return checks per second; 0 for a key not held
     */
    public double rate(String key, long now) {
        Estimate e = estimates.getIfPresent(key);
        return e == null ? 0 : e.read(now, this);
    }

    /**
     * Tells whether {@code key} is hot at {@code now}: its estimate above the threshold, or above half of it after it
     * was.
     *
     * @param key the limit key
     * @param now a reading of the client's ticker, in nanoseconds
     * @return whether a client with leases on would ask for a lease for this key
     */
    public boolean isHot(String key, long now) {
        Estimate e = estimates.getIfPresent(key);
        return e != null && e.hot(now, this);
    }

    /** Returns the threshold in checks per second. */
    public double threshold() {
        return threshold;
    }

    /** Returns how many keys are held now (after pending evictions). */
    public long size() {
        estimates.cleanUp();
        return estimates.estimatedSize();
    }

    private double decay(long elapsedNanos) {
        return elapsedNanos <= 0 ? 1 : Math.exp(-elapsedNanos / tauNanos);
    }

    /** One key's decayed count, per second, at {@code at}. */
    private static final class Estimate {
        private long at;
        private double rate;
        private boolean hot;

        Estimate(long now) {
            this.at = now;
        }

        synchronized Seen add(long now, int n, HotKeys k) {
            long elapsed = now - at;
            rate = rate * k.decay(elapsed) + n * 1e9 / k.tauNanos;
            if (elapsed > 0) {
                at = now; // a reading older than the last (another thread's) is counted at the last
            }
            boolean was = hot;
            hot = rate > k.threshold || (hot && rate > k.threshold / 2);
            return new Seen(rate, hot, hot && !was);
        }

        synchronized double read(long now, HotKeys k) {
            return rate * k.decay(now - at);
        }

        synchronized boolean hot(long now, HotKeys k) {
            double r = read(now, k);
            return r > k.threshold || (hot && r > k.threshold / 2);
        }
    }
}
