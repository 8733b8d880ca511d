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
 * restarts with one burst, or, when decided behind a restart fence, no earlier than the latest TAT the cap evicted
 * (a request lease's slots outlive their key's eviction: docs/design.md §12). See docs/decisions.md.
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
    /**
     * The latest TAT of a leased state the cap evicted while it was still ahead of the clock ({@link #evicted}), and
     * whether there was one: fenced keys made later start no earlier (a key's reserved slots outlive its eviction).
     */
    private volatile long evictedTat;
    private volatile boolean evictedDebt;
    private final Object evictedLock = new Object();
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
                        evicted(state);
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
        return attempt(key, limit, now, 0);
    }

    /**
     * Decides one request for {@code key} at {@code now} behind a restart fence (docs/design.md §12, "Fail
     * closed"): a key this table has no state for, first decided less than {@code fenceNs} after the table was
     * made ({@code S}), starts as used with {@code TAT = S + fenceNs}, so that no virtual time it gives is below
     * {@code S + fenceNs} (per request it admits again from {@code S + fenceNs − τ}). A previous incarnation's
     * slots and admissions of a key whose {@code τ + T ≤ fenceNs} have virtual times below its end plus
     * {@code fenceNs − T}, so the new ones stay {@code T} apart from them. A state already held, or made later,
     * is not touched; {@code fenceNs = 0} is {@link #attempt(String, GcraLimit, long)}.
     *
     * @param fenceNs the fence, ns after the table's creation, ≥ 0 (0: none)
     * @return the {@link Gcra#attempt} encoding: ≥ 0 admitted (remaining), &lt; 0 rejected (−wait ns)
     */
    public long attempt(String key, GcraLimit limit, long now, long fenceNs) {
        if (limit.blocked()) {
            return -GcraLimit.BLOCKED_RETRY_NS;
        }
        Gcra.State state = state(key, limit, now, fenceNs);
        long result;
        long before;
        synchronized (state) {
            before = state.horizonNs;
            result = Gcra.attempt(state, limit, now);
        }
        keepFor(key, state, before);
        return result;
    }

    /**
     * Reserves up to {@code slots} conformance slots of {@code key} at {@code now} for a request lease
     * ({@link Gcra#reserve}; docs/design.md §12), on the same state per-request decisions use, found, made and moved
     * across a rebuild exactly as {@link #attempt} does. The entry's expiry grows to the reserved debt
     * ({@code TAT − now}), so a key is never dropped while slots of it are outstanding. A fresh key is fenced as by
     * {@link #attempt(String, GcraLimit, long, long)} with {@code fenceNs = maxLifetimeNs}: only keys whose
     * {@code τ + T ≤ maxLifetimeNs} may be leased (the fence of docs/design.md §12 for them is that lifetime).
     *
     * @param key           the limit key (not null)
     * @param limit         the per-limiter GCRA parameters of the key's quota
     * @param now           monotonic time in ns
     * @param leadNs        earliest virtual time of the first slot after {@code now}, ns, ≥ 0
     * @param slots         slots asked for, ≥ 1
     * @param maxLifetimeNs the longest time after {@code now} a slot's window may end, ns, ≥ 0; also the fence
     * @return the grant or the refusal with its wait ({@link Gcra#reserve})
     * @throws IllegalArgumentException when {@code leadNs < 0}, {@code slots < 1} or {@code maxLifetimeNs < 0}
     */
    public Gcra.Reservation reserve(String key, GcraLimit limit, long now, long leadNs, int slots, long maxLifetimeNs) {
        if (leadNs < 0 || slots < 1 || maxLifetimeNs < 0 || limit.blocked()) {
            // the arguments are refused, or the blocked answer given, before any state is made
            return Gcra.reserve(new Gcra.State(limit.horizonNs()), limit, now, leadNs, slots, maxLifetimeNs);
        }
        Gcra.State state = state(key, limit, now, maxLifetimeNs);
        Gcra.Reservation result;
        long before;
        synchronized (state) {
            before = state.horizonNs;
            result = Gcra.reserve(state, limit, now, leadNs, slots, maxLifetimeNs);
            state.leased |= result.granted();
        }
        keepFor(key, state, before);
        return result;
    }

    /**
     * Returns the state of {@code key}, the one every decision on it locks: the table's, else (during a rebuild) the
     * old table's, else a fresh one ({@link #fresh}); a state read before a rebuild is moved into the new table.
     */
    private Gcra.State state(String key, GcraLimit limit, long now, long fenceNs) {
        Cache<String, Gcra.State> held = states;
        Gcra.State state = held.getIfPresent(key);
        if (state == null) {
            // during a rebuild a key not yet moved is still in the old table, with its debt
            Cache<String, Gcra.State> old = moving;
            Gcra.State known = old == null ? null : old.policy().getIfPresentQuietly(key);
            Gcra.State candidate = known != null ? known : fresh(limit, now, fenceNs);
            Gcra.State prior = held.asMap().putIfAbsent(key, candidate);
            state = prior == null ? candidate : prior;
            if (prior == null && known == null && !candidate.used && now - createdNs < limit.horizonNs()) {
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
        return state;
    }

    /**
     * Returns the state of a key first seen at {@code now}: unused, or — less than {@code fenceNs} after the table was
     * made — used with {@code TAT} at the fence's end and a horizon that covers it.
     */
    private Gcra.State fresh(GcraLimit limit, long now, long fenceNs) {
        Gcra.State s = new Gcra.State(limit.horizonNs());
        long ahead = fenceNs - (now - createdNs); // TAT − now for TAT = created + fence
        if (fenceNs > 0 && evictedDebt) {
            ahead = Math.max(ahead, evictedTat - now); // an evicted key may be this one: its slots may be in use
        }
        if (fenceNs > 0 && ahead > 0) {
            s.tat = now + ahead;
            s.used = true;
            s.horizonNs = Math.max(s.horizonNs, ahead);
        }
        return s;
    }

    /**
     * Notes a state the cap evicted (docs/design.md §12, "What the integration must do"): a key that was leased
     * ({@link #reserve}) and is evicted with its TAT ahead of the clock may have slots outstanding, and would start
     * again with a full burst. The eviction is treated as a restart of that key: since the table does not keep the
     * key, every key decided behind a fence ({@link #attempt(String, GcraLimit, long, long)}, {@link #reserve}) that
     * is made before the latest such TAT starts at it. A key never leased restarts with one burst, as before (a flood
     * of per-request keys that evicts its own keys fences nothing), and so do keys decided without a fence.
     */
    private void evicted(Gcra.State state) {
        long tat;
        boolean leased;
        synchronized (state) {
            tat = state.tat;
            leased = state.leased;
        }
        if (!leased || tat - ticker.read() <= 0) {
            return;
        }
        synchronized (evictedLock) { // not the table's monitor: cleanUp holds it while Caffeine's own lock is taken
            if (!evictedDebt || tat - evictedTat > 0) {
                evictedTat = tat;
                evictedDebt = true;
            }
        }
    }

    /**
     * Moves the entry's expiry to a horizon a decision changed. The read that found the state set its expiry from the
     * old horizon; a longer one must not let it expire with its debt (rate 1/s, group 1 then 4: the key started
     * again with a full burst 0.9 s early, GcraTableTest), nor a reservation's slots be forgotten.
     */
    private void keepFor(String key, Gcra.State state, long before) {
        long after = state.horizonNs; // volatile: a later decision's horizon, if one came between, is as good
        if (after != before) {
            states.policy().expireVariably().ifPresent(v -> v.setExpiresAfter(key, Math.max(1, after),
                    TimeUnit.NANOSECONDS));
        }
    }

    /**
     * Returns how long ago, in ns of the table's ticker, the table was made (the start of this incarnation's state):
     * {@code now − S}. A restart fence of {@code F} ns is in force while this is below {@code F}.
     *
     * @param now monotonic time in ns
     */
    public long sinceCreatedNs(long now) {
        return now - createdNs;
    }

    /**
     * Returns how many keys started from a fresh state within one horizon ({@link GcraLimit#horizonNs()}, τ + T,
     * of the limit they were first decided with) of the table's creation (issue 22, item 8). A previous
     * incarnation's state of such a key (a limiter restarted, or the member that served it before) could still
     * have held a debt when this table started, and it was not carried over: the key began with a full burst.
     * Keys first seen later cannot have lost anything (any earlier debt had run out). An upper bound: a key never
     * seen before counts too. A key started behind a restart fence ({@link #attempt(String, GcraLimit, long, long)})
     * did not begin with a burst and is not counted.
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
