package dev.levee.core;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;
import com.github.benmanes.caffeine.cache.RemovalCause;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * Keeps the GCRA state of every active limit key, bounded in memory (docs/design.md §6).
 *
 * <p>Memory follows the active keys: a key's entry expires once its TAT can no longer be ahead of
 * the clock (the limit's {@link GcraLimit#horizonNs() horizon} after its last use), which is exactly
 * when its state equals that of a fresh key, so expiry never forgets a debt. A hard cap bounds the
 * table when more keys are active than that: eviction is Caffeine's weighted size policy (W-TinyLFU,
 * which admits by frequency and evicts by recency), chosen over a hand-written LRU; an evicted key
 * restarts with one burst. See docs/decisions.md.
 *
 * <h2>Memory bound</h2>
 * The cap counts heap, not keys, so that long keys cannot exhaust it (issue 10): an entry holds about
 * {@value #ENTRY_OVERHEAD_BYTES} bytes of structure (Caffeine node with variable expiry, hash-table
 * node, {@link Gcra.State}, the key's {@code String}) plus its characters (one byte each when they are
 * all Latin-1, two otherwise), measured by {@code dev.levee.bench.memory.TableMemory}. Each entry
 * weighs one <em>key slot</em> per started {@value #SLOT_BYTES} bytes, and {@code maxKeys} is the
 * number of slots: a table of {@code maxKeys} holds that many keys of up to about 80 characters, fewer
 * longer ones, and never more than about {@code maxKeys × }{@value #SLOT_BYTES}{@code  bytes} of
 * entries (256 MiB per million slots).
 *
 * <h2>After a flood</h2>
 * Caffeine's hash table and frequency sketch grow with the keys held and never shrink: a table that held a
 * million keys kept 24 MiB of arrays (G1; 28 MiB under ZGC) once every key had expired (issue 22; measured by
 * {@code dev.levee.bench.memory.TableMemory} and {@code GcraTableTest}). {@link #cleanUp()} therefore rebuilds the table — a
 * new Caffeine cache of the same policy, the live entries moved into it — once it holds fewer than an eighth of
 * the most keys it held since the last rebuild, and that most was at least {@value #TRIM_MIN_KEYS}. A decision
 * racing with a rebuild moves its key's state into the new table itself, so no state is lost or doubled.
 *
 * <p>Time comes only from the injected {@link Ticker}; maintenance runs on the calling thread.
 * Thread-safe: decisions on one key are serialised by locking that key's state; different keys
 * proceed in parallel.
 */
public final class GcraTable {

    /** Default hard cap: 1 000 000 key slots (256 MiB of entries at most). */
    public static final long DEFAULT_MAX_KEYS = 1_000_000L;

    /** Heap one entry holds besides its key's characters, bytes (measured, rounded up). */
    public static final int ENTRY_OVERHEAD_BYTES = 176;

    /** Heap one key slot stands for, bytes. */
    public static final int SLOT_BYTES = 256;

    /** Fewest keys a table must have held before it is rebuilt to release its grown arrays. */
    public static final long TRIM_MIN_KEYS = 65_536;

    /** The table in use; replaced by {@link #cleanUp()} when a flood has left it mostly empty. */
    private volatile Cache<String, Gcra.State> states;
    /** The table being emptied into {@link #states} by a rebuild, else null. */
    private volatile Cache<String, Gcra.State> moving;
    private final Ticker ticker;
    private final long maxKeys;
    private final LongAdder evictions = new LongAdder();
    private final LongAdder expirations = new LongAdder();
    private final LongAdder freshWithinHorizon = new LongAdder();
    /** When the table was made (ticker ns): the start of this incarnation's state. */
    private final long createdNs;
    private final LongAdder rebuilds = new LongAdder();
    /** Most keys seen held by {@link #cleanUp()} since the last rebuild; guarded by {@code this}. */
    private long mostKeys;

    private GcraTable(Ticker ticker, long maxKeys) {
        this.ticker = ticker;
        this.createdNs = ticker.read();
        this.maxKeys = maxKeys;
        this.states = newStates();
    }

    private Cache<String, Gcra.State> newStates() {
        return Caffeine.newBuilder()
                .ticker(ticker::read)
                .executor(Runnable::run)
                .maximumWeight(maxKeys)
                .weigher((String key, Gcra.State state) -> slots(key))
                .expireAfter(new HorizonExpiry())
                .evictionListener((String key, Gcra.State state, RemovalCause cause) -> {
                    if (cause == RemovalCause.EXPIRED) {
                        // a state moved into a rebuilt table lives on there: its copy left in the old one is not counted
                        if (states == null || states.policy().getIfPresentQuietly(key) != state) {
                            expirations.increment();
                        }
                    } else if (cause == RemovalCause.SIZE) {
                        evictions.increment();
                    }
                })
                .build();
    }

    /**
     * Returns the key slots an entry for {@code key} weighs: one per started {@link #SLOT_BYTES} of its
     * estimated heap ({@link #ENTRY_OVERHEAD_BYTES} plus one byte per Latin-1 character, two per other).
     *
     * @param key the limit key, not null
     * @return the weight, ≥ 1
     */
    public static int slots(String key) {
        int n = key.length();
        int perChar = 1;
        for (int i = 0; i < n; i++) {
            if (key.charAt(i) > 0xFF) {
                perChar = 2;
                break;
            }
        }
        long bytes = ENTRY_OVERHEAD_BYTES + (long) n * perChar;
        return (int) ((bytes + SLOT_BYTES - 1) / SLOT_BYTES);
    }

    /**
     * Creates a table.
     *
     * @param ticker  the monotonic clock (ns)
     * @param maxKeys hard cap in key slots ({@link #slots}), ≥ 1: that many keys of up to ~80 characters
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
        Cache<String, Gcra.State> held = states;
        Gcra.State state = held.getIfPresent(key);
        if (state == null) {
            // during a rebuild a key not yet moved is still in the old table, with its debt
            Cache<String, Gcra.State> old = moving;
            Gcra.State known = old == null ? null : old.policy().getIfPresentQuietly(key);
            Gcra.State candidate = known != null ? known : new Gcra.State(limit.horizonNs());
            Gcra.State prior = held.asMap().putIfAbsent(key, candidate);
            state = prior == null ? candidate : prior;
            if (prior == null && known == null && now - createdNs < limit.horizonNs()) {
                freshWithinHorizon.increment();
            }
        }
        // rebuilt since this decision read the table (cleanUp): the state goes into the new table unless one is
        // there already, and the one there is used, so that every later decision on this key locks the same state
        for (Cache<String, Gcra.State> current = states; current != held; current = states) {
            Gcra.State there = current.asMap().putIfAbsent(key, state);
            state = there == null ? state : there;
            held = current;
        }
        long result;
        long before;
        long after;
        synchronized (state) {
            before = state.horizonNs;
            result = Gcra.attempt(state, limit, now);
            after = state.horizonNs;
        }
        if (after != before) {
            // the read above set the entry's expiry from the old horizon; a longer one must not let it expire with its
            // debt (rate 1/s, group 1 then 4: the key started again with a full burst 0.9 s early, GcraTableTest)
            String k = key;
            held.policy().expireVariably().ifPresent(v -> v.setExpiresAfter(k, Math.max(1, after), TimeUnit.NANOSECONDS));
        }
        return result;
    }

    /**
     * Returns how many keys started from a fresh state within one horizon ({@link GcraLimit#horizonNs()}, τ + T,
     * of the limit they were first decided with) of the table's creation (issue 22, item 8). A previous
     * incarnation's state of such a key (a limiter restarted, or the member that served it before) could still
     * have held a debt when this table started, and it was not carried over: the key began with a full burst.
     * Keys first seen later cannot have lost anything (any earlier debt had run out). An upper bound: a key never
     * seen before counts too.
     */
    public long freshWithinHorizon() {
        return freshWithinHorizon.sum();
    }

    /** Returns the approximate number of keys held (expired entries may linger until maintenance). */
    public long size() {
        return states.estimatedSize();
    }

    /** Returns how many keys the cap evicted while they were still in use (each restarts with one burst). */
    public long evictions() {
        return evictions.sum();
    }

    /** Returns how many idle keys expired (their state equalled a fresh key's). */
    public long expirations() {
        return expirations.sum();
    }

    /** Returns how many times the table was rebuilt to release what a flood had grown ({@link #cleanUp()}). */
    public long rebuilds() {
        return rebuilds.sum();
    }

    /**
     * Runs pending maintenance now: drops expired keys and enforces the cap, then rebuilds the table when it
     * holds fewer than an eighth of the most keys it held (at least {@value #TRIM_MIN_KEYS}) since the last
     * rebuild. Caffeine runs its maintenance as a side effect of use; a table that sees no traffic keeps its
     * expired entries until this is called, so the service calls it periodically (memory comes back after a
     * key flood without further requests).
     */
    public synchronized void cleanUp() {
        Cache<String, Gcra.State> held = states;
        held.cleanUp();
        long size = held.estimatedSize();
        mostKeys = Math.max(mostKeys, size);
        if (mostKeys < TRIM_MIN_KEYS || size > mostKeys / 8) {
            return;
        }
        // a new table of the same policy, whose arrays fit the keys now held; decisions that still hold the
        // old one move their key's state over themselves (attempt), these moves cover every other key
        Cache<String, Gcra.State> fresh = newStates();
        moving = held;
        states = fresh;
        held.asMap().forEach(fresh.asMap()::putIfAbsent);
        moving = null;
        // keys expired in the old table but not yet dropped (Caffeine's timer wheel drops them by buckets of ~1 s) were
        // not moved; emptying it reports them as expired, so that each is counted once
        held.invalidateAll();
        mostKeys = fresh.estimatedSize();
        rebuilds.increment();
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
