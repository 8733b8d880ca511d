package dev.levee.etcd;

import dev.levee.config.QuotaLayout;
import dev.levee.config.AbstractQuotaSource;
import dev.levee.core.Ticker;
import dev.levee.quota.ConfigProblem;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaConfigException;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.CompactedException;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the quota configuration in step with etcd (docs/design.md §4, issue 3, issue 10 defect 3).
 *
 * <h2>Model</h2>
 * The source mirrors every quota key under the prefix ({@code factor}, {@code quotas/…},
 * {@code resources/…}) in a map of raw values, exactly as etcd holds them. It loads a consistent
 * snapshot at one revision, read in pages ({@link EtcdSnapshot}), then watches the prefix from the
 * next revision. After each watch response the map is rebuilt, on the source's own thread, into a
 * {@link QuotaConfig} and validated whole (responses that arrive during a rebuild are folded into the
 * next one; a value unchanged since the last rebuild is not parsed, validated or compiled again: its bucket's
 * built entry is shared with the new snapshot, see {@link QuotaConfig}, "Memory and incremental builds"), and
 * the result is swapped in atomically.
 *
 * <h2>Invalid values (issue 22)</h2>
 * Values are validated key by key: every valid value applies, and a refused one (invalid, or above the
 * value limit) is reported — an ERROR line naming the key, the field and what is done meanwhile, once per
 * refused value; {@link #rejectedUpdates()}; {@link #invalidKeys()} for {@code /health} and a gauge — while its
 * key keeps the last good value this process applied (or its absence). A key this process never saw valid is
 * left out: a bucket then gets the fallback quotas like any bucket without a key; a key every decision needs
 * ({@code factor}, {@code mode}, {@code quotas/default}, {@code quotas/methods_default}) leaves no configuration,
 * {@link #usable()} is false and a placeholder that refuses everything is in force until the key is fixed.
 * Because the raw map always equals etcd's state, fixing the key applies it at the next watch response, with
 * no restart. One tenant's bad key thus never stops a role from starting, nor holds back other keys' updates.
 *
 * <h2>Size</h2>
 * A value larger than {@code maxValueBytes} (default {@link Etcd#DEFAULT_MAX_VALUE_BYTES}) is not
 * decoded: the key is marked oversized and refused like an invalid value, naming the key and both
 * sizes, until the key is overwritten with a smaller value or deleted. A watch response larger than the
 * client's inbound message limit cannot be received at all; the source then re-reads a paginated
 * snapshot at etcd's current revision (which names any single value too large to read) and watches
 * from the revision after it, so it never stays on a revision it cannot receive.
 *
 * <h2>Import</h2>
 * While the import marker {@code <prefix>import} exists ({@code levee quota import} writes its chunks),
 * updates are mirrored but not applied; when the marker is deleted the whole result is validated and
 * applied at once, so a limiter goes from the configuration before the import to the one after it.
 * {@link #start} waits (within its timeout) for a running import to end rather than start on half of it.
 *
 * <p>If the watch fails, it is re-created from the last revision seen (nothing is lost or applied
 * twice: etcd delivers each revision once per watch, and the map is idempotent per key). If that
 * revision has been compacted away, the source reloads a full snapshot and watches from there. A
 * probe reads the factor key every {@code probeMillis} (default 1000 ms) and sets {@link #ready()}.
 */
public final class EtcdQuotaSource extends AbstractQuotaSource {

    private static final Logger LOG = LoggerFactory.getLogger("levee.config.etcd");

    private final Client client;
    private final String prefix;
    private final int maxValueBytes;
    private final long timeoutMs;
    private final Ticker ticker;
    private final ScheduledExecutorService timer;
    private final Map<String, String> raw = new TreeMap<>();
    private final Map<String, ConfigProblem> oversized = new TreeMap<>(); // relative key → why it is refused
    private String importing; // value of the import marker while an import runs, else null
    private boolean holdLogged;
    private volatile long seenRevision; // last etcd revision received, where a watch resumes
    private volatile boolean reachable;
    private volatile boolean closed;
    /** Full key → why it is refused, in etcd's current state (issue 22); empty when every value is valid. */
    private volatile java.util.SortedMap<String, String> invalid = java.util.Collections.emptySortedMap();
    /** False while no configuration can be built (a key every decision needs is invalid, no earlier value known). */
    private volatile boolean usable = true;
    /** False while {@code factor} is invalid and no earlier value of it is known: the factor in force is a placeholder. */
    private volatile boolean factorKnown = true;
    /** The values of the configuration in force, by relative key; null before the first (timer thread, after start). */
    private Map<String, String> lastGood;
    /** Full key → the refusal last logged and counted for it, so that each refused value is said once. */
    private Map<String, String> reported = Map.of();
    private volatile long watchGeneration;
    private boolean rebuildPending; // guarded by this
    private final QuotaLayout.ParseCache parseCache; // timer thread only
    private Watch.Watcher watcher;

    private EtcdQuotaSource(Client client, String prefix, QuotaConfig initial, long revision, int maxValueBytes,
            long timeoutMs, Ticker ticker, QuotaLayout.ParseCache parseCache) {
        super(initial, revision);
        this.parseCache = parseCache;
        this.client = client;
        this.prefix = Etcd.normalisePrefix(prefix);
        this.maxValueBytes = maxValueBytes;
        this.timeoutMs = timeoutMs;
        this.ticker = ticker;
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "levee-etcd-quotas");
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Loads the snapshot and starts watching, with the default value limit
     * ({@link Etcd#DEFAULT_MAX_VALUE_BYTES}).
     *
     * @see #start(Client, String, long, long, int, Ticker)
     */
    public static EtcdQuotaSource start(Client client, String prefix, long probeMillis, long timeoutMs, Ticker ticker) {
        return start(client, prefix, probeMillis, timeoutMs, Etcd.DEFAULT_MAX_VALUE_BYTES, ticker);
    }

    /**
     * Loads the snapshot and starts watching.
     *
     * @param client        the etcd client (owned by the caller)
     * @param prefix        key prefix, default {@code /levee}
     * @param probeMillis   readiness probe interval, ≥ 100 ms
     * @param timeoutMs     how long the first load may take (also bounds later snapshot reloads, at least 10 s)
     * @param maxValueBytes largest value accepted, in bytes (default {@link Etcd#DEFAULT_MAX_VALUE_BYTES})
     * @param ticker        the monotonic clock of the load's deadline and of the times logged
     *                      ({@code SystemTicker} in production)
     * @return the running source, also when values are refused (see "Invalid values" above)
     * @throws IllegalStateException when etcd cannot be read within {@code timeoutMs}, or an import is
     *                               still in progress when it ends
     */
    public static EtcdQuotaSource start(Client client, String prefix, long probeMillis, long timeoutMs, int maxValueBytes,
                                        Ticker ticker) {
        String p = Etcd.normalisePrefix(prefix);
        long startNs = ticker.read();
        long deadline = startNs + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        EtcdSnapshot snapshot;
        boolean waited = false;
        while (true) {
            try {
                long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - ticker.read()));
                snapshot = EtcdSnapshot.read(client, p, maxValueBytes, EtcdSnapshot.DEFAULT_PAGE_KEYS, left, ticker);
            } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                throw new IllegalStateException("etcd unreachable: " + (e.getCause() == null ? e : e.getCause()).toString());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while loading quotas from etcd");
            }
            if (!snapshot.values().containsKey(QuotaLayout.IMPORT)) {
                break;
            }
            if (!waited) {
                LOG.info("an import is in progress ({}{}): waiting for it to end", p, QuotaLayout.IMPORT);
                waited = true;
            }
            if (ticker.read() - deadline > 0) {
                throw new IllegalStateException("an import into etcd is in progress (" + p + QuotaLayout.IMPORT
                        + " exists) for longer than " + timeoutMs + " ms; not starting on a half-imported configuration");
            }
            try {
                TimeUnit.MILLISECONDS.sleep(200); // polls the marker, bounded by the deadline
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for an import to end");
            }
        }
        long readNs = ticker.read();
        long rev = snapshot.revision();
        EtcdQuotaSource s;
        Map<String, String> values = new TreeMap<>();
        Map<String, ConfigProblem> big = new TreeMap<>();
        fill(p, snapshot, maxValueBytes, values, big);
        QuotaLayout.ParseCache cache = new QuotaLayout.ParseCache();
        // an invalid value does not stop the start (issue 22): it is reported by key and the rest applies
        Built built = build(p, values, big, null, cache);
        QuotaConfig initial = built.config() != null ? built.config() : placeholder(values);
        s = new EtcdQuotaSource(client, p, initial, rev, maxValueBytes, timeoutMs, ticker, cache);
        synchronized (s) {
            s.raw.putAll(values);
            s.oversized.putAll(big);
            s.seenRevision = rev;
        }
        s.reachable = true;
        s.report(built, rev);
        if (built.config() != null) {
            s.lastGood = built.effective();
        } else {
            s.usable = false;
        }
        long builtNs = ticker.read();
        LOG.info("quotas loaded from etcd prefix {} at revision {}: {} keys read in {} ms, validated in {} ms{}", p, rev,
                values.size(), TimeUnit.NANOSECONDS.toMillis(readNs - startNs), TimeUnit.NANOSECONDS.toMillis(builtNs - readNs),
                built.invalid().isEmpty() ? "" : "; " + built.invalid().size() + " key(s) refused: " + String.join(", ",
                        built.invalid().keySet()) + (s.usable ? "" : "; NO configuration in force (not serving)"));
        s.watchFrom(rev + 1);
        s.timer.scheduleWithFixedDelay(s::probe, probeMillis, Math.max(100, probeMillis), TimeUnit.MILLISECONDS);
        return s;
    }

    private static void fill(String prefix, EtcdSnapshot snapshot, int maxValueBytes, Map<String, String> values,
            Map<String, ConfigProblem> big) {
        snapshot.values().forEach((rel, v) -> {
            if (QuotaLayout.isQuotaKey(rel)) {
                values.put(rel, v);
            }
        });
        snapshot.oversized().forEach((rel, size) -> {
            if (QuotaLayout.isQuotaKey(rel)) {
                big.put(rel, Etcd.oversized(prefix + rel, size, maxValueBytes));
            }
        });
        for (String rel : snapshot.tooLarge()) {
            if (QuotaLayout.isQuotaKey(rel)) {
                big.put(rel, Etcd.tooLarge(prefix + rel));
            }
        }
    }

    /** Relative keys every decision needs: without a valid or earlier value of each, no configuration is built. */
    private static final java.util.Set<String> GLOBAL_KEYS = java.util.Set.of(QuotaLayout.FACTOR, QuotaLayout.MODE,
            QuotaLayout.DEFAULT, QuotaLayout.METHODS_DEFAULT);

    /**
     * The result of one build: the configuration (null when none can be built), the values it was built from
     * (relative key → value, with last good values standing in for refused ones), and every refused key (full
     * key → why, and what is done meanwhile).
     */
    private record Built(QuotaConfig config, Map<String, String> effective, java.util.SortedMap<String, String> invalid,
                         Map<String, String> meanwhile, boolean factorKnown) {
    }

    /**
     * Builds the configuration key by key (issue 22): every valid value applies; a refused value (invalid, or above
     * the value limit) is replaced by the last good value of its key in {@code lastGood}, if this process applied
     * one (or its absence, for a key that was absent from it); else a bucket's key is left out (the bucket gets the fallback quotas, as any bucket without a key), an
     * unknown key is ignored, and a key every decision needs ({@link #GLOBAL_KEYS}) leaves no configuration at all.
     */
    private static Built build(String prefix, Map<String, String> values, Map<String, ConfigProblem> big,
            Map<String, String> lastGood, QuotaLayout.ParseCache cache) { // lastGood: null before a first configuration
        Map<String, List<ConfigProblem>> byKey = new TreeMap<>();
        big.forEach((rel, problem) -> byKey.computeIfAbsent(rel, k -> new ArrayList<>()).add(problem));
        Map<String, String> effective = new TreeMap<>(values);
        QuotaConfig cfg = null;
        try {
            cfg = QuotaLayout.fromValues(prefix, effective, cache, byKey);
        } catch (QuotaConfigException e) {
            // every problem is in byKey, by key
        }
        if (byKey.isEmpty()) {
            return new Built(cfg, effective, java.util.Collections.emptySortedMap(), Map.of(), true);
        }
        java.util.SortedMap<String, String> invalid = new TreeMap<>();
        Map<String, String> meanwhile = new TreeMap<>();
        boolean missing = false;
        boolean factorKnown = true;
        for (Map.Entry<String, List<ConfigProblem>> e : byKey.entrySet()) {
            String rel = e.getKey();
            String good = lastGood == null ? null : lastGood.get(rel);
            String action;
            if (good != null) {
                effective.put(rel, good);
                action = "its last good value stays in force";
            } else {
                effective.remove(rel);
                if (lastGood != null && GLOBAL_KEYS.contains(rel) && !rel.equals(QuotaLayout.DEFAULT)) {
                    action = "it was absent from the configuration in force, which stays so";
                } else if (GLOBAL_KEYS.contains(rel)) {
                    missing = true;
                    factorKnown &= !rel.equals(QuotaLayout.FACTOR);
                    action = "no earlier value is known to this process: no configuration can be built, not serving";
                } else if (rel.startsWith(QuotaLayout.RESOURCES)) {
                    action = "no earlier value is known to this process: the bucket gets the fallback quotas"
                            + " (methods_default, default) meanwhile";
                } else if (rel.equals(QuotaLayout.LEASE)) {
                    // not a key every decision needs: leases never change what is admitted above the bound
                    // (docs/quotas.md, "Request leases"), so a typo here must not stop a role
                    action = "no earlier value is known to this process: quotas that do not say are eligible for"
                            + " request leases (lease: true, the default) meanwhile";
                } else {
                    action = "ignored";
                }
            }
            invalid.put(prefix + rel, String.join("; ", e.getValue().stream().map(ConfigProblem::toString).toList()));
            meanwhile.put(prefix + rel, action);
        }
        cfg = null;
        if (!missing) {
            try {
                cfg = QuotaLayout.fromValues(prefix, effective, cache);
            } catch (QuotaConfigException e) { // not expected: every value left was valid on its own
                invalid.put(prefix, String.join("; ", e.errors()));
                meanwhile.put(prefix, "no configuration can be built, not serving");
            }
        }
        return new Built(cfg, effective, invalid, meanwhile, factorKnown);
    }

    /**
     * The configuration in force while none can be built: every request refused (rate 0), with etcd's factor when
     * that key is valid (else 1). A limiter holding it does not join the membership ({@link #usable()}).
     */
    private static QuotaConfig placeholder(Map<String, String> values) {
        int factor = 1;
        String f = values.get(QuotaLayout.FACTOR);
        if (f != null) {
            try {
                factor = dev.levee.config.QuotaConfigLoader.parseFactor(f, QuotaLayout.FACTOR);
            } catch (QuotaConfigException e) {
                // reported by build(); the placeholder refuses everything anyway
            }
        }
        return QuotaConfig.builder().factor(factor).defaultQuota(new dev.levee.quota.Quota(0, 0)).build();
    }

    /**
     * Says each newly refused value once (ERROR naming the key, the field and what is done meanwhile) and counts it in
     * {@link #rejectedUpdates()}; says when a key refused before is valid again. Timer thread (or start).
     */
    private void report(Built b, long rev) {
        for (Map.Entry<String, String> e : b.invalid().entrySet()) {
            if (!e.getValue().equals(reported.get(e.getKey()))) {
                countRejected();
                LOG.error("etcd key {} refused at revision {}: {}; {}", e.getKey(), rev, e.getValue(),
                        b.meanwhile().get(e.getKey()));
            }
        }
        for (String k : reported.keySet()) {
            if (!b.invalid().containsKey(k)) {
                LOG.info("etcd key {} valid again at revision {}", k, rev);
            }
        }
        reported = b.invalid();
        invalid = java.util.Collections.unmodifiableSortedMap(b.invalid());
        factorKnown = b.factorKnown();
    }

    private synchronized void watchFrom(long rev) {
        if (closed) {
            return;
        }
        if (watcher != null) {
            watcher.close();
        }
        long generation = ++watchGeneration;
        WatchOption opt = WatchOption.builder().isPrefix(true).withRevision(rev).build();
        watcher = client.getWatchClient().watch(Etcd.bytes(prefix), opt, Watch.listener(r -> {
            if (generation == watchGeneration) {
                onWatch(r);
            }
        }, t -> {
            if (generation == watchGeneration) {
                onWatchError(t);
            }
        }, () -> { }));
    }

    private synchronized void stopWatching() {
        watchGeneration++;
        if (watcher != null) {
            watcher.close();
            watcher = null;
        }
    }

    private void onWatch(WatchResponse r) {
        boolean changed = false;
        long rev;
        synchronized (this) {
            for (WatchEvent ev : r.getEvents()) {
                String rel = Etcd.string(ev.getKeyValue().getKey()).substring(prefix.length());
                boolean put = ev.getEventType() == WatchEvent.EventType.PUT;
                if (rel.equals(QuotaLayout.IMPORT)) {
                    importing = put ? Etcd.string(ev.getKeyValue().getValue()) : null;
                    changed = true;
                    continue;
                }
                if (!QuotaLayout.isQuotaKey(rel)) {
                    continue;
                }
                if (put && ev.getKeyValue().getValue().size() > maxValueBytes) {
                    raw.remove(rel);
                    oversized.put(rel, Etcd.oversized(prefix + rel, ev.getKeyValue().getValue().size(), maxValueBytes));
                } else if (put) {
                    raw.put(rel, Etcd.string(ev.getKeyValue().getValue()));
                    oversized.remove(rel);
                } else if (ev.getEventType() == WatchEvent.EventType.DELETE) {
                    raw.remove(rel);
                    oversized.remove(rel);
                }
                changed = true;
            }
            rev = r.getHeader().getRevision();
            if (rev > seenRevision) {
                seenRevision = rev;
            }
        }
        reachable = true;
        if (changed) {
            scheduleRebuild();
        }
    }

    /**
     * Rebuilds on the timer thread, off the watch thread; responses that arrive meanwhile are folded
     * into the next rebuild (it always builds etcd's latest state, so changes still apply in order).
     */
    private void scheduleRebuild() {
        synchronized (this) {
            if (rebuildPending || closed) {
                return;
            }
            rebuildPending = true;
            timer.execute(this::rebuild); // close() shuts the timer down under the same lock
        }
    }

    private void rebuild() {
        Map<String, String> values;
        Map<String, ConfigProblem> big;
        long rev;
        synchronized (this) {
            rebuildPending = false;
            rev = seenRevision;
            if (importing != null) {
                if (!holdLogged) {
                    LOG.info("an import is in progress ({}{} = {}): holding etcd updates until it ends", prefix,
                            QuotaLayout.IMPORT, dev.levee.runtime.LogText.escape(importing));
                    holdLogged = true;
                }
                return;
            }
            if (holdLogged) {
                LOG.info("import ended at revision {}: applying its result", rev);
                holdLogged = false;
            }
            values = new TreeMap<>(raw);
            big = new TreeMap<>(oversized);
        }
        long t0 = ticker.read();
        Built built = build(prefix, values, big, lastGood, parseCache);
        report(built, rev);
        QuotaConfig next = built.config();
        if (next == null) {
            if (usable) { // only before the first configuration: later every needed key has a last good value
                LOG.error("no quota configuration can be built from etcd at revision {}; not serving", rev);
            }
            return;
        }
        lastGood = built.effective();
        boolean wasUsable = usable;
        synchronized (this) {
            if (wasUsable && next.equals(current())) {
                revision(rev);
                return;
            }
            swap(next, rev);
            usable = true;
        }
        LOG.info("quotas updated from etcd at revision {} ({} keys validated in {} ms){}", rev, values.size(),
                TimeUnit.NANOSECONDS.toMillis(ticker.read() - t0), wasUsable ? ""
                        : ": a configuration is in force again");
        notifyListeners(next);
    }

    private void onWatchError(Throwable t) {
        if (closed) {
            return;
        }
        if (t instanceof CompactedException || String.valueOf(t.getMessage()).contains("compacted")) {
            LOG.warn("etcd watch from revision {} compacted away: reloading a full snapshot", seenRevision + 1);
            timer.execute(this::reload);
        } else if (Etcd.messageTooLarge(t)) {
            LOG.warn("etcd watch response after revision {} exceeds the client's message limit (--etcd-max-message-size):"
                    + " re-reading a paginated snapshot", seenRevision);
            timer.execute(() -> {
                stopWatching();
                reload();
            });
        } else {
            reachable = false;
            LOG.warn("etcd watch failed ({}); resuming from revision {} in 1 s", t.toString(), seenRevision + 1);
            timer.schedule(() -> watchFrom(seenRevision + 1), 1, TimeUnit.SECONDS);
        }
    }

    private void reload() {
        try {
            EtcdSnapshot snapshot = EtcdSnapshot.read(client, prefix, maxValueBytes, EtcdSnapshot.DEFAULT_PAGE_KEYS,
                    Math.max(10_000, timeoutMs), ticker);
            long rev = snapshot.revision();
            synchronized (this) {
                raw.clear();
                oversized.clear();
                fill(prefix, snapshot, maxValueBytes, raw, oversized);
                importing = snapshot.values().get(QuotaLayout.IMPORT);
                seenRevision = rev;
            }
            reachable = true;
            rebuild();
            watchFrom(rev + 1);
        } catch (Exception e) {
            reachable = false;
            LOG.warn("etcd snapshot reload failed ({}); retrying in 1 s", e.toString());
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
                return;
            }
            if (!closed) {
                timer.schedule(this::reload, 1, TimeUnit.SECONDS);
            }
        }
    }

    private void probe() {
        try {
            client.getKVClient().get(Etcd.bytes(prefix + QuotaLayout.FACTOR)).get(1, TimeUnit.SECONDS);
            if (!reachable) {
                LOG.info("etcd reachable again");
                reachable = true;
            }
        } catch (Exception e) {
            if (reachable) {
                LOG.warn("etcd unreachable: {}", e.toString());
            }
            reachable = false;
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public boolean ready() {
        return reachable && !closed;
    }

    /**
     * Returns the refused keys of etcd's current state with why, on one line ({@code key: problems; …}), or null
     * when every value is valid.
     */
    public String lastRejection() {
        java.util.SortedMap<String, String> now = invalid;
        return now.isEmpty() ? null : String.join("; ", now.entrySet().stream()
                .map(e -> e.getKey() + ": " + e.getValue()).toList());
    }

    @Override
    public java.util.SortedMap<String, String> invalidKeys() {
        return invalid;
    }

    @Override
    public boolean usable() {
        return usable;
    }

    /**
     * Returns whether the factor in force is etcd's (valid, absent = 1, or its last good value): false while the
     * {@code factor} key is invalid and no earlier value is known, when the observer must not hand a factor out.
     */
    public boolean factorKnown() {
        return factorKnown;
    }

    @Override
    public synchronized void close() {
        super.close();
        closed = true;
        if (watcher != null) {
            watcher.close();
        }
        timer.shutdownNow();
    }
}
