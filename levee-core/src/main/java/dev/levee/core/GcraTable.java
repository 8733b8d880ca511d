package dev.levee.core;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;

/**
 * Keeps the GCRA state of every active limit key, bounded in memory (SPEC.md §6).
 *
 * <p>Memory follows the active keys: a key's entry expires once its TAT can no longer be ahead of
 * the clock (the limit's {@link GcraLimit#horizonNs() horizon} after its last use), which is exactly
 * when its state equals that of a fresh key, so expiry never forgets a debt. A hard cap
 * ({@code maxKeys}) bounds the table when more keys are active than that: eviction is Caffeine's
 * size policy (W-TinyLFU, which admits by frequency and evicts by recency), chosen over a
 * hand-written LRU; an evicted key restarts with one burst. See docs/decisions.md.
 *
 * <p>Time comes only from the injected {@link Ticker}; maintenance runs on the calling thread.
 * Thread-safe: decisions on one key are serialised by locking that key's state; different keys
 * proceed in parallel.
 */
public final class GcraTable {

    /** Default hard cap on keys: 1 000 000 (about 150 MB of heap at most). */
    public static final long DEFAULT_MAX_KEYS = 1_000_000L;

    private final Cache<String, Gcra.State> states;
    private final Ticker ticker;

    private GcraTable(Ticker ticker, long maxKeys) {
        this.ticker = ticker;
        this.states = Caffeine.newBuilder()
                .ticker(ticker::read)
                .executor(Runnable::run)
                .maximumSize(maxKeys)
                .expireAfter(new HorizonExpiry())
                .build();
    }

    /**
     * Creates a table.
     *
     * @param ticker  the monotonic clock (ns)
     * @param maxKeys hard cap on the number of keys held, ≥ 1
     * @return an empty table
     * @throws IllegalArgumentException when {@code maxKeys < 1}
     * @throws NullPointerException     when {@code ticker} is null
     */
    public static GcraTable create(Ticker ticker, long maxKeys) {
        if (maxKeys < 1) {
            throw new IllegalArgumentException("maxKeys must be >= 1, got " + maxKeys);
        }
        return new GcraTable(java.util.Objects.requireNonNull(ticker, "ticker"), maxKeys);
    }

    /**
     * Decides one request for {@code key} now (one reading of the ticker).
     *
     * @return the {@link Gcra#attempt} encoding: ≥ 0 admitted (remaining), &lt; 0 rejected (−wait ns)
     */
    public long attempt(String key, GcraLimit limit) {
        return attempt(key, limit, ticker.read());
    }

    /**
     * Decides one request for {@code key} at {@code now}.
     *
     * @param key   the limit key (not null)
     * @param limit the per-limiter GCRA parameters of the key's quota
     * @param now   monotonic time in ns
     * @return the {@link Gcra#attempt} encoding: ≥ 0 admitted (remaining), &lt; 0 rejected (−wait ns)
     */
    public long attempt(String key, GcraLimit limit, long now) {
        if (limit.blocked()) {
            return -GcraLimit.BLOCKED_RETRY_NS;
        }
        Gcra.State state = states.getIfPresent(key);
        if (state == null) {
            Gcra.State fresh = new Gcra.State(limit.horizonNs());
            Gcra.State prior = states.asMap().putIfAbsent(key, fresh);
            state = prior == null ? fresh : prior;
        }
        synchronized (state) {
            return Gcra.attempt(state, limit, now);
        }
    }

    /** Returns the approximate number of keys held (expired entries may linger until maintenance). */
    public long size() {
        return states.estimatedSize();
    }

    /** Runs pending maintenance now: drops expired keys and enforces the cap. */
    public void cleanUp() {
        states.cleanUp();
    }

    /** Returns the state held for {@code key}, or null; for tests and diagnostics. */
    public Gcra.State peek(String key) {
        return states.asMap().get(key);
    }

    private static final class HorizonExpiry implements Expiry<String, Gcra.State> {
        @Override
        public long expireAfterCreate(String key, Gcra.State value, long currentTime) {
            return Math.max(1, value.horizonNs);
        }

        @Override
        public long expireAfterUpdate(String key, Gcra.State value, long currentTime, long currentDuration) {
            return Math.max(1, value.horizonNs);
        }

        @Override
        public long expireAfterRead(String key, Gcra.State value, long currentTime, long currentDuration) {
            return Math.max(1, value.horizonNs);
        }
    }
}
