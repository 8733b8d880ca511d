package dev.levee.lease;

import dev.levee.core.ByteUnits;
import dev.levee.core.Ticker;
import dev.levee.governor.Direction;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Holds one gateway's shares of the site-wide bandwidth budgets through a finite lease (docs/design.md
 * §10). Every renew interval it runs one round:
 * <ol>
 *   <li><b>Renew.</b> It sends a keep-alive for its lease (granting a new lease first if it has
 *   none). When the store acknowledges a time to live {@code ttl}, the local deadline becomes
 *   {@code sent + ttl × (1 − ρ) − ε}, where {@code sent} is when this gateway <em>sent</em> the
 *   renewal, read on its monotonic clock, ρ the drift margin and ε a fixed margin. The store
 *   counts the lease from when it <em>received</em> the renewal, so the gateway stops using its
 *   shares before the store can expire them, as long as the two clocks drift apart by less than ρ.
 *   No wall-clock time is ever used.</li>
 *   <li><b>Read.</b> It reads the budget and every live gateway's claims (share, demand).</li>
 *   <li><b>Divide.</b> For each budgeted resource it computes the max-min fair division of the
 *   budget by the demands ({@link MaxMinFair}). A share above its fair target is lowered
 *   <em>locally first</em> (the governors stop using it), then written. A share below its target
 *   is raised to at most the budget minus every other live share, by a write that is
 *   conditional on the guard revision of the read; a conflict re-reads and retries.</li>
 * </ol>
 * Hence at every revision of the store, Σ live shares ≤ budget, and at every moment Σ shares in
 * use ≤ Σ live shares: a share is used only after the write that raised it, a lowered share stops
 * being used before the write, and a share whose lease may have expired is not used at all.
 *
 * <p><b>One value.</b> What the gateway may use — lease id, local deadline, budget with its
 * per-principal ceilings, shares — is one immutable {@link SiteLease}, replaced whole through one
 * atomic reference ({@link #lease()}). The listener is handed the value just published; {@link
 * #owned}, {@link #shares()}, {@link #budget()} and {@link #status()} each read one value.
 *
 * <p><b>Fail closed.</b> {@link #owned(Direction)} answers false for a budgeted direction while
 * the local deadline has passed, before the first budget has been read, and after the lease was
 * lost: the gateway's governors then grant nothing (docs/design.md §8 fencing). It recovers by itself
 * when the store answers again; it never falls back to its local rate.
 *
 * <p>Threads: rounds run on the {@link Loop}; {@link #owned}, {@link #shares()} and {@link
 * #status()} may be called from any thread.
 */
public final class ShareKeeper implements AutoCloseable {

    /**
     * Timing and identity.
     *
     * @param gatewayId       the gateway's id, unique in the site (default: its listen address)
     * @param ttl             the lease's time to live; default 5 s
     * @param renewInterval   time between rounds; default 1 s; less than a third of the TTL
     * @param drift           ρ, the largest relative drift between this clock and the store's; default 0.01
     * @param margin          ε, subtracted from every deadline; default 100 ms
     * @param callTimeout     longest wait for one store call; default: the renew interval
     * @param conflictRetries raising writes retried at once after a conflict, per round, while the round is
     *                        less than a renew interval old; default 3
     */
    public record Settings(String gatewayId, Duration ttl, Duration renewInterval, double drift, Duration margin,
                           Duration callTimeout, int conflictRetries) {
        public Settings {
            Objects.requireNonNull(gatewayId, "gatewayId");
            if (gatewayId.isBlank() || gatewayId.contains("/") || gatewayId.chars().anyMatch(c -> c <= 0x20)) {
                throw new IllegalArgumentException("gateway id must be printable, without spaces or '/': '" + gatewayId + "'");
            }
            if (ttl.toSeconds() < 2 || ttl.toMillis() % 1000 != 0) {
                throw new IllegalArgumentException("lease TTL must be a whole number of seconds ≥ 2s, got " + ttl);
            }
            if (renewInterval.isNegative() || renewInterval.isZero() || renewInterval.multipliedBy(3).compareTo(ttl) > 0) {
                throw new IllegalArgumentException("renew interval must be > 0 and at most a third of the lease TTL ("
                        + ttl + "), got " + renewInterval);
            }
            if (!(drift >= 0 && drift < 0.5)) {
                throw new IllegalArgumentException("drift must be in [0, 0.5), got " + drift);
            }
            if (margin.isNegative() || margin.compareTo(ttl.dividedBy(2)) >= 0) {
                throw new IllegalArgumentException("margin must be ≥ 0 and less than half the TTL, got " + margin);
            }
            if (callTimeout.isNegative() || callTimeout.isZero()) {
                throw new IllegalArgumentException("call timeout must be > 0, got " + callTimeout);
            }
            if (conflictRetries < 0) {
                throw new IllegalArgumentException("conflict retries must be ≥ 0, got " + conflictRetries);
            }
        }

        /** The defaults for {@code gatewayId}: TTL 5 s, renew 1 s, ρ 1 %, ε 100 ms, call timeout 1 s, 3 retries. */
        public static Settings defaults(String gatewayId) {
            return new Settings(gatewayId, Duration.ofSeconds(5), Duration.ofSeconds(1), 0.01, Duration.ofMillis(100),
                    Duration.ofSeconds(1), 3);
        }
    }

    /** Runs the keeper's tasks one at a time (an event loop); time is the keeper's {@link Ticker}. */
    public interface Loop {
        /** Runs {@code task} soon, after the tasks before it. */
        void execute(Runnable task);

        /** Runs {@code task} after {@code delayNanos}. */
        void schedule(Runnable task, long delayNanos);
    }

    /** Estimates this gateway's demands, on the loop, once per round. */
    @FunctionalInterface
    public interface DemandSource {
        /**
         * @param budget   the budget in force
         * @param shares   this gateway's shares in use, by resource
         * @param gateways live gateways in the site (≥ 1, this one included)
         * @param now      the ticker's reading, ns
         * @return demand by resource, bytes/s: every budgeted direction this gateway serves, and every
         *         principal with a site ceiling that is active here; resources left out demand 0
         */
        Map<Resource, Long> demands(SiteBudget budget, Map<Resource, Long> shares, int gateways, long now);

        /**
         * Like {@link #demands(SiteBudget, Map, int, long)}, also given what no live gateway holds.
         *
         * @param free per resource, the budget minus every live share (this gateway's included), bytes/s, ≥ 0
         */
        default Map<Resource, Long> demands(SiteBudget budget, Map<Resource, Long> shares, Map<Resource, Long> free,
                                            int gateways, long now) {
            return demands(budget, shares, gateways, now);
        }
    }

    /** Applies shares to the governors; called on the loop whenever shares or ownership change. */
    @FunctionalInterface
    public interface ShareListener {
        /**
         * @param lease the value just published (its budget is not null): the budget in force and the
         *              shares to use now, by resource (absent = none yet: hold)
         */
        void apply(SiteLease lease);
    }

    /**
     * A snapshot for {@code /health/ready} and metrics: aggregated, no principal ids.
     *
     * @param gatewayId        the gateway id
     * @param incarnation      this process's incarnation
     * @param budgetKnown      whether a budget has been read
     * @param leaseHeld        whether a lease is held
     * @param validForNanos    time left before the shares stop being used, ns (≤ 0: failing closed)
     * @param shares           shares of each direction's budget, bytes/s
     * @param demands          demands last reported per direction, bytes/s
     * @param budgets          each direction's budget, bytes/s
     * @param principalShares  number of principal shares held, per direction
     * @param renewalsOk       renewals acknowledged
     * @param renewalsFailed   renewals failed or timed out
     * @param writes           entries written
     * @param conflicts        raising writes that met a conflict
     * @param leaseLosses      leases found expired
     * @param budgetRejected   budget documents refused (the last good stays in force)
     * @param gateways         live gateways seen at the last read
     * @param closed           the directions failing closed at the snapshot's instant: those whose
     *                         governors the same {@link SiteLease} refuses ({@link SiteLease#owned})
     */
    public record Status(String gatewayId, String incarnation, boolean budgetKnown, boolean leaseHeld,
                         long validForNanos, Map<Direction, Long> shares, Map<Direction, Long> demands,
                         Map<Direction, Long> budgets, Map<Direction, Integer> principalShares, long renewalsOk,
                         long renewalsFailed, long writes, long conflicts, long leaseLosses, long budgetRejected,
                         int gateways, Set<Direction> closed) {
        public Status {
            closed = Set.copyOf(closed);
        }

        /** Whether a budgeted direction is failing closed now: its governors grant nothing. */
        public boolean failingClosed(Direction d) {
            return closed.contains(d);
        }
    }

    private final Settings settings;
    private final ShareStore store;
    private final Ticker ticker;
    private final Loop loop;
    private final DemandSource demandSource;
    private final ShareListener listener;
    private final LeaseLog log;
    private final String incarnation = UUID.randomUUID().toString();

    /** What may be used now: written on the loop only (one writer), read anywhere. */
    private final AtomicReference<SiteLease> lease;
    // written on the loop, read anywhere
    private volatile Map<Resource, Long> lastDemands = Map.of();
    private volatile int gateways = 1;
    private volatile boolean closed;

    // loop only
    private String budgetText;
    private GatewayEntry lastWritten;
    /** A write whose outcome is unknown (timed out, failed) may still land: no raise without a write. */
    private boolean writeInDoubt;
    private long roundGeneration;
    private boolean roundRunning;
    private boolean earlyPending;
    private long lastRoundStart;
    private boolean wasValid;
    private Map<Resource, Long> roundDemands;

    private final AtomicLong renewalsOk = new AtomicLong();
    private final AtomicLong renewalsFailed = new AtomicLong();
    private final AtomicLong writes = new AtomicLong();
    private final AtomicLong conflicts = new AtomicLong();
    private final AtomicLong leaseLosses = new AtomicLong();
    private final AtomicLong budgetRejected = new AtomicLong();

    /**
     * Creates a keeper that logs nothing; {@link #start()} runs its first round.
     *
     * @throws NullPointerException if an argument is null
     */
    public ShareKeeper(Settings settings, ShareStore store, Ticker ticker, Loop loop, DemandSource demandSource,
                       ShareListener listener) {
        this(settings, store, ticker, loop, demandSource, listener, LeaseLog.none());
    }

    /**
     * Creates a keeper; {@link #start()} runs its first round.
     *
     * @param log where grants, losses, budgets and failed store calls are said
     * @throws NullPointerException if an argument is null
     */
    public ShareKeeper(Settings settings, ShareStore store, Ticker ticker, Loop loop, DemandSource demandSource,
                       ShareListener listener, LeaseLog log) {
        this.settings = Objects.requireNonNull(settings, "settings");
        this.store = Objects.requireNonNull(store, "store");
        this.ticker = Objects.requireNonNull(ticker, "ticker");
        this.loop = Objects.requireNonNull(loop, "loop");
        this.demandSource = Objects.requireNonNull(demandSource, "demandSource");
        this.listener = Objects.requireNonNull(listener, "listener");
        this.log = Objects.requireNonNull(log, "log");
        // expired: 0 is not "long ago" on a ticker whose origin is arbitrary
        this.lease = new AtomicReference<>(SiteLease.initial(ticker.read()));
    }

    /** Starts the rounds. */
    public void start() {
        loop.execute(() -> runRound(roundGeneration));
    }

    /** This process's incarnation id (random per start). */
    public String incarnation() {
        return incarnation;
    }

    /**
     * Returns whether the gateway may grant quanta in {@code d} now: true for a direction without
     * site budgets; for a budgeted one, only while the lease is held and its local deadline has not
     * passed (docs/design.md §10 fail closed). Cheap: one clock read.
     */
    public boolean owned(Direction d) {
        return lease.get().owned(d, ticker.read());
    }

    /** Returns the value in force now: lease id, local deadline, budget, shares (see {@link SiteLease}). */
    public SiteLease lease() {
        return lease.get();
    }

    /** Returns the budget in force, or null before the first read. */
    public SiteBudget budget() {
        return lease.get().budget();
    }

    /** Returns the shares in use, by resource, bytes/s. */
    public Map<Resource, Long> shares() {
        return lease.get().shares();
    }

    /**
     * Asks for a round soon (for example a principal with a site ceiling arrived with no share):
     * at once if the last round started at least a quarter of the renew interval ago.
     */
    public void requestRound() {
        loop.execute(() -> {
            if (closed) {
                return;
            }
            if (roundRunning) {
                earlyPending = true;
                return;
            }
            long quarter = settings.renewInterval().toNanos() / 4;
            long since = ticker.read() - lastRoundStart;
            long gen = ++roundGeneration;
            if (since >= quarter) {
                runRound(gen);
            } else {
                loop.schedule(() -> runRound(gen), quarter - since);
            }
        });
    }

    /** Returns a snapshot of the keeper's state, aggregated per direction. */
    public Status status() {
        SiteLease l = lease.get();
        long now = ticker.read();
        SiteBudget b = l.budget();
        Map<Resource, Long> s = l.shares();
        Set<Direction> closed = new HashSet<>();
        Map<Resource, Long> dm = lastDemands;
        Map<Direction, Long> sh = new TreeMap<>();
        Map<Direction, Long> de = new TreeMap<>();
        Map<Direction, Long> bu = new TreeMap<>();
        Map<Direction, Integer> ps = new TreeMap<>();
        for (Direction d : Direction.values()) {
            sh.put(d, s.getOrDefault(Resource.of(d), 0L));
            de.put(d, dm.getOrDefault(Resource.of(d), 0L));
            bu.put(d, b == null ? 0 : b.budget(d));
            int n = 0;
            for (Resource r : s.keySet()) {
                if (r.direction() == d && r.perPrincipal()) {
                    n++;
                }
            }
            ps.put(d, n);
            if (!l.owned(d, now)) {
                closed.add(d);
            }
        }
        return new Status(settings.gatewayId(), incarnation, b != null, l.held(), l.validFor(now), sh, de, bu, ps,
                renewalsOk.get(), renewalsFailed.get(), writes.get(), conflicts.get(), leaseLosses.get(),
                budgetRejected.get(), gateways, closed);
    }

    /**
     * Stops the rounds and revokes the lease, so that other gateways may take this one's shares at
     * once (graceful stop). Waits at most the call timeout. Idempotent.
     */
    @Override
    public void close() {
        CompletableFuture<Void> done = new CompletableFuture<>();
        loop.execute(() -> {
            if (closed) {
                done.complete(null);
                return;
            }
            closed = true;
            SiteLease l = lease.get();
            long id = l.id();
            lease.set(l.lost(ticker.read()));
            if (id == 0) {
                done.complete(null);
                return;
            }
            timed(store.revoke(id)).whenComplete((v, e) -> done.complete(null));
        });
        try {
            done.get(settings.callTimeout().toMillis() + 500, java.util.concurrent.TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            log.debug("lease revoke on stop did not finish: {}", e.toString());
        }
    }

    // ------------------------------------------------------------------------------ rounds (loop)

    private void runRound(long generation) {
        if (closed || generation != roundGeneration || roundRunning) {
            return;
        }
        roundRunning = true;
        earlyPending = false;
        roundDemands = null;
        long start = ticker.read();
        lastRoundStart = start;
        renew(start).thenCompose(v -> readAndDivide(settings.conflictRetries()))
                .whenComplete((v, e) -> hop(() -> {
                    if (e != null) {
                        log.debug("site share round failed: {}", e.toString());
                    }
                    roundRunning = false;
                    if (closed) {
                        return;
                    }
                    long gen = ++roundGeneration;
                    long next = earlyPending ? settings.renewInterval().toNanos() / 4
                            : start + settings.renewInterval().toNanos() - ticker.read();
                    loop.schedule(() -> runRound(gen), Math.max(0, next));
                }));
    }

    private CompletionStage<Void> renew(long sent) {
        CompletableFuture<Void> out = new CompletableFuture<>();
        long id = lease.get().id();
        if (id == 0) {
            timed(store.grant(settings.ttl().toSeconds())).whenComplete((granted, e) -> hop(() -> {
                if (e != null || granted == null || granted.ttlSeconds() <= 0) {
                    renewalsFailed.incrementAndGet();
                    log.debug("lease grant failed: {}", e == null ? "no TTL" : e.toString());
                } else if (closed) {
                    store.revoke(granted.id());
                } else {
                    // a new lease: no earlier deadline carries over
                    this.lease.set(this.lease.get().granted(granted.id(), ticker.read()));
                    lastWritten = null;
                    wasValid = false;
                    extend(sent, granted.ttlSeconds());
                    renewalsOk.incrementAndGet();
                    log.info("site lease {} granted to gateway {} (incarnation {}), TTL {} s", Long.toHexString(granted.id()),
                            settings.gatewayId(), incarnation, granted.ttlSeconds());
                }
                out.complete(null);
            }));
        } else {
            timed(store.keepAlive(id)).whenComplete((ttl, e) -> hop(() -> {
                if (e != null) {
                    renewalsFailed.incrementAndGet();
                    log.debug("lease renewal failed: {}", e.toString());
                } else if (ttl == null || ttl <= 0) {
                    renewalsFailed.incrementAndGet();
                    leaseLost("the store no longer has it (expired)");
                } else if (lease.get().id() == id) {
                    extend(sent, ttl);
                    renewalsOk.incrementAndGet();
                }
                out.complete(null);
            }));
        }
        return out;
    }

    /** deadline = sent + ttl × (1 − ρ) − ε, never moved earlier by a late answer. */
    private void extend(long sent, long ttlSeconds) {
        long ttlNanos = ttlSeconds * 1_000_000_000L;
        long d = sent + (long) (ttlNanos * (1 - settings.drift())) - settings.margin().toNanos();
        SiteLease l = lease.get();
        boolean valid = l.deadline() - ticker.read() > 0;
        if (!valid || d - l.deadline() > 0) {
            l = l.withDeadline(d);
            lease.set(l);
        }
        boolean nowValid = l.deadline() - ticker.read() > 0;
        if (nowValid && !wasValid && l.budget() != null) {
            log.info("site shares of gateway {} valid again", settings.gatewayId());
            listener.apply(l); // wakes governors that stalled while fenced
        }
        wasValid = nowValid;
    }

    private void leaseLost(String why) {
        SiteLease l = lease.get();
        if (l.id() == 0) {
            return;
        }
        leaseLosses.incrementAndGet();
        log.warn("site lease of gateway {} lost ({}): failing closed until a new lease and shares are granted",
                settings.gatewayId(), why);
        l = l.lost(ticker.read());
        lease.set(l);
        wasValid = false;
        lastWritten = null;
        writeInDoubt = false; // a late write under the lost lease is refused (LEASE_GONE)
        if (l.budget() != null) {
            listener.apply(l);
        }
    }

    private CompletionStage<Void> readAndDivide(int retriesLeft) {
        return timed(store.read()).thenCompose(view -> {
            CompletableFuture<Void> next = new CompletableFuture<>();
            hop(() -> {
                try {
                    divide(view, retriesLeft).whenComplete((v, e) -> {
                        if (e != null) {
                            next.completeExceptionally(e);
                        } else {
                            next.complete(null);
                        }
                    });
                } catch (RuntimeException e) {
                    next.completeExceptionally(e);
                }
            });
            return next;
        });
    }

    private CompletionStage<Void> divide(ShareStore.View view, int retriesLeft) {
        updateBudget(view);
        SiteBudget b = lease.get().budget();
        if (b == null || closed) {
            return CompletableFuture.completedFuture(null);
        }
        GatewayEntry own = null;
        Set<String> ids = new HashSet<>();
        ids.add(settings.gatewayId());
        for (GatewayEntry e : view.entries()) {
            ids.add(e.gatewayId());
            if (e.gatewayId().equals(settings.gatewayId()) && e.incarnation().equals(incarnation)) {
                own = e;
            }
        }
        gateways = ids.size();
        long id = lease.get().id();
        if (id == 0) {
            return CompletableFuture.completedFuture(null);
        }
        long now = ticker.read();
        Map<Resource, Long> current = lease.get().shares();
        if (roundDemands == null) { // once per round: a conflict's retry reuses it
            Map<Resource, Long> free = new HashMap<>();
            for (Direction d : Direction.values()) {
                Resource r = Resource.of(d);
                long sum = 0;
                for (GatewayEntry e : view.entries()) {
                    sum += e.claim(r).share();
                }
                free.put(r, Math.max(0, b.budget(r) - sum));
            }
            roundDemands = Map.copyOf(demandSource.demands(b, current, free, gateways, now));
            lastDemands = roundDemands;
        }
        Map<Resource, Long> demands = roundDemands;
        Set<Resource> resources = new HashSet<>();
        for (Direction d : Direction.values()) {
            if (b.budget(d) > 0) {
                resources.add(Resource.of(d));
            }
        }
        for (Resource r : demands.keySet()) {
            if (r.perPrincipal() && b.budget(r) > 0) {
                resources.add(r);
            }
        }
        for (Resource r : current.keySet()) {
            if (b.budget(r) > 0) {
                resources.add(r);
            }
        }
        Map<Resource, Long> lowered = new HashMap<>();
        Map<Resource, Long> target = new HashMap<>();
        Map<Resource, Claim> claims = new TreeMap<>();
        boolean raises = false;
        for (Resource r : resources) {
            long budgetR = b.budget(r);
            List<GatewayEntry> others = view.entries().stream()
                    .filter(e -> !(e.gatewayId().equals(settings.gatewayId()) && e.incarnation().equals(incarnation)))
                    .toList();
            long[] dem = new long[others.size() + 1];
            long sumOthers = 0;
            for (int i = 0; i < others.size(); i++) {
                Claim c = others.get(i).claim(r);
                dem[i] = c.demand();
                sumOthers += c.share();
            }
            long mine = Math.max(0, demands.getOrDefault(r, 0L));
            dem[others.size()] = Math.min(mine, budgetR);
            long fair = MaxMinFair.allocate(budgetR, dem)[others.size()];
            long cur = current.getOrDefault(r, 0L);
            long room = budgetR - sumOthers;
            long next;
            if (fair <= cur) {
                next = fair;
            } else {
                next = Math.max(cur, Math.min(fair, room));
            }
            long inStore = own == null ? 0 : own.claim(r).share();
            if (next > inStore) {
                raises = true;
            }
            if (Math.min(cur, next) > 0) {
                lowered.put(r, Math.min(cur, next));
            }
            target.put(r, next);
            if (next > 0 || mine > 0) {
                claims.put(r, new Claim(next, mine));
            }
        }
        // lower locally first
        if (!lowered.equals(current)) {
            publishShares(lowered);
        }
        GatewayEntry entry = new GatewayEntry(settings.gatewayId(), incarnation, claims);
        if (own != null && !worthWriting(own, entry) && !(writeInDoubt && raisesLocally(target))) {
            raiseLocally(target);
            return CompletableFuture.completedFuture(null);
        }
        if (own == null && claims.isEmpty() && lastWritten != null && lastWritten.claims().isEmpty()) {
            return CompletableFuture.completedFuture(null);
        }
        boolean guarded = raises;
        CompletableFuture<Void> out = new CompletableFuture<>();
        long entryRevision = own == null ? 0 : view.entryRevision(own);
        timed(store.write(entry, id, guarded, view.guardRevision(), entryRevision)).whenComplete((res, e) -> hop(() -> {
            if (e != null) {
                writeInDoubt = true;
                log.debug("site share write failed: {}", e.toString());
                out.complete(null);
                return;
            }
            switch (res) {
                case OK -> {
                    writes.incrementAndGet();
                    lastWritten = entry;
                    writeInDoubt = false; // the entry's revision moved: every earlier write of it is refused
                    if (lease.get().id() == id) {
                        raiseLocally(target);
                    }
                    out.complete(null);
                }
                case CONFLICT -> {
                    conflicts.incrementAndGet();
                    // retry at once, but not past a renew interval: the lease is renewed only at a round's
                    // start, and a slow store's retries must not outlast the TTL (the next round starts at once)
                    boolean early = ticker.read() - lastRoundStart < settings.renewInterval().toNanos();
                    if (retriesLeft > 0 && !closed && early) {
                        readAndDivide(retriesLeft - 1).whenComplete((v, e2) -> out.complete(null));
                    } else {
                        out.complete(null);
                    }
                }
                case LEASE_GONE -> {
                    leaseLost("its key could not be written");
                    out.complete(null);
                }
            }
        }));
        return out;
    }

    /** Whether {@link #raiseLocally} would raise a share in use. */
    private boolean raisesLocally(Map<Resource, Long> target) {
        Map<Resource, Long> cur = lease.get().shares();
        for (Map.Entry<Resource, Long> t : target.entrySet()) {
            if (t.getValue() > cur.getOrDefault(t.getKey(), 0L)) {
                return true;
            }
        }
        return false;
    }

    private void raiseLocally(Map<Resource, Long> target) {
        Map<Resource, Long> cur = lease.get().shares();
        Map<Resource, Long> next = new HashMap<>(cur);
        boolean changed = false;
        for (Map.Entry<Resource, Long> t : target.entrySet()) {
            long have = cur.getOrDefault(t.getKey(), 0L);
            if (t.getValue() > have) {
                next.put(t.getKey(), t.getValue());
                changed = true;
            }
        }
        if (changed) {
            publishShares(next);
        }
    }

    /** Publishes {@code next} as the shares in use and hands the new value to the listener (loop only). */
    private void publishShares(Map<Resource, Long> next) {
        SiteLease l = lease.get().withShares(next);
        lease.set(l);
        listener.apply(l);
    }

    /**
     * Writes when a share differs, a claim appears or goes, a demand moved by more than 10 %, or a demand above the
     * share changed at all: the others make room only for a demand they can read, and a share held below its demand
     * can rise only once they have (issue 22: a 9.5 % rise stayed unwritten, the share stayed below what the clients
     * read for 3 s, and the estimate, seeing only limited rounds, probed to 1.5 × their rate). The demand estimate
     * moves only on evidence (docs/site-bandwidth.md "Demand"), so this adds a write only when it does.
     */
    private static boolean worthWriting(GatewayEntry own, GatewayEntry next) {
        if (!own.claims().keySet().equals(next.claims().keySet())) {
            return true;
        }
        for (Map.Entry<Resource, Claim> e : next.claims().entrySet()) {
            Claim was = own.claim(e.getKey());
            Claim now = e.getValue();
            if (was.share() != now.share()) {
                return true;
            }
            long a = was.demand();
            long d = now.demand();
            if ((a == 0) != (d == 0) || Math.abs(a - d) * 10 > Math.max(a, d) || (d != a && d > now.share())) {
                return true;
            }
        }
        return false;
    }

    private void updateBudget(ShareStore.View view) {
        String text = view.budgetText();
        SiteBudget budget = lease.get().budget();
        if (budget != null && Objects.equals(text, budgetText)) {
            return;
        }
        String where = store.budgetLocation();
        try {
            SiteBudget parsed = text == null ? SiteBudget.NONE : SiteBudget.parse(where, text);
            Set<String> ids = new HashSet<>();
            ids.add(settings.gatewayId());
            view.entries().forEach(e -> ids.add(e.gatewayId()));
            List<String> problems = parsed.checkGateways(where, ids.size());
            if (!problems.isEmpty()) {
                throw new SiteBudget.InvalidBudgetException(problems);
            }
            if (budget == null || !parsed.equals(budget)) {
                log.info("site budget in force: download {}, upload {}{}", ByteUnits.formatRate(parsed.download()),
                        ByteUnits.formatRate(parsed.upload()),
                        parsed.principalCeilings(Direction.DOWNLOAD) || parsed.principalCeilings(Direction.UPLOAD)
                                ? ", with per-principal site ceilings" : "");
            }
            boolean changed = !parsed.equals(budget);
            budgetText = text;
            if (changed) {
                SiteLease l = lease.get().withBudget(parsed);
                lease.set(l);
                listener.apply(l);
            }
        } catch (SiteBudget.InvalidBudgetException e) {
            budgetText = text; // do not repeat the message every round
            budgetRejected.incrementAndGet();
            log.error("site budget refused, {} stays in force:\n{}", budget == null ? "no budget (failing closed)"
                    : "the last good budget", e.getMessage());
        }
    }

    // ------------------------------------------------------------------------------ plumbing

    private void hop(Runnable r) {
        loop.execute(r);
    }

    private <T> CompletionStage<T> timed(CompletionStage<T> stage) {
        CompletableFuture<T> out = new CompletableFuture<>();
        loop.schedule(() -> out.completeExceptionally(new TimeoutException("store call took longer than "
                + settings.callTimeout())), settings.callTimeout().toNanos());
        stage.whenComplete((v, e) -> {
            if (e != null) {
                out.completeExceptionally(e);
            } else {
                out.complete(v);
            }
        });
        return out;
    }
}
