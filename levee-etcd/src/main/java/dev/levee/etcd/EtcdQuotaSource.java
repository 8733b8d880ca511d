package dev.levee.etcd;

import dev.levee.config.QuotaLayout;
import dev.levee.config.AbstractQuotaSource;
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
 * Keeps the quota configuration in step with etcd (SPEC.md §4, issue 3, issue 10 defect 3).
 *
 * <h2>Model</h2>
 * The source mirrors every quota key under the prefix ({@code factor}, {@code quotas/…},
 * {@code resources/…}) in a map of raw values, exactly as etcd holds them. It loads a consistent
 * snapshot at one revision, read in pages ({@link EtcdSnapshot}), then watches the prefix from the
 * next revision. After each watch response the map is rebuilt, on the source's own thread, into a
 * {@link QuotaConfig} and validated whole (responses that arrive during a rebuild are folded into the
 * next one; a value unchanged since the last rebuild is not parsed, validated or compiled again: its bucket's
 * built entry is shared with the new snapshot, see {@link QuotaConfig}, "Memory and incremental builds"): a valid result is swapped in atomically; an invalid one is refused with a log line
 * naming the etcd key and field and counted, and the last good configuration stays in force. Because
 * the raw map always equals etcd's state, a later fix of the bad key makes the whole configuration
 * valid again, and the final state always equals etcd's.
 *
 * <h2>Size</h2>
 * A value larger than {@code maxValueBytes} (default {@link Etcd#DEFAULT_MAX_VALUE_BYTES}) is not
 * decoded: the key is marked oversized, and the configuration is refused naming the key and both
 * sizes until the key is overwritten with a smaller value or deleted. A watch response larger than the
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
    private final ScheduledExecutorService timer;
    private final Map<String, String> raw = new TreeMap<>();
    private final Map<String, ConfigProblem> oversized = new TreeMap<>(); // relative key → why it is refused
    private String importing; // value of the import marker while an import runs, else null
    private boolean holdLogged;
    private volatile long seenRevision; // last etcd revision received, where a watch resumes
    private volatile boolean reachable;
    private volatile boolean closed;
    private volatile String lastRejection;
    private volatile long watchGeneration;
    private boolean rebuildPending; // guarded by this
    private final QuotaLayout.ParseCache parseCache; // timer thread only
    private Watch.Watcher watcher;

    private EtcdQuotaSource(Client client, String prefix, QuotaConfig initial, long revision, int maxValueBytes,
            long timeoutMs, QuotaLayout.ParseCache parseCache) {
        super(initial, revision);
        this.parseCache = parseCache;
        this.client = client;
        this.prefix = Etcd.normalisePrefix(prefix);
        this.maxValueBytes = maxValueBytes;
        this.timeoutMs = timeoutMs;
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
     * @see #start(Client, String, long, long, int)
     */
    public static EtcdQuotaSource start(Client client, String prefix, long probeMillis, long timeoutMs) {
        return start(client, prefix, probeMillis, timeoutMs, Etcd.DEFAULT_MAX_VALUE_BYTES);
    }

    /**
     * Loads the snapshot and starts watching.
     *
     * @param client        the etcd client (owned by the caller)
     * @param prefix        key prefix, default {@code /levee}
     * @param probeMillis   readiness probe interval, ≥ 100 ms
     * @param timeoutMs     how long the first load may take (also bounds later snapshot reloads, at least 10 s)
     * @param maxValueBytes largest value accepted, in bytes (default {@link Etcd#DEFAULT_MAX_VALUE_BYTES})
     * @return the running source
     * @throws QuotaConfigException when etcd's configuration is invalid at start (an oversized value
     *                              included, named by key)
     * @throws IllegalStateException when etcd cannot be read within {@code timeoutMs}, or an import is
     *                               still in progress when it ends
     */
    public static EtcdQuotaSource start(Client client, String prefix, long probeMillis, long timeoutMs, int maxValueBytes) {
        String p = Etcd.normalisePrefix(prefix);
        long startNs = System.nanoTime();
        long deadline = startNs + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        EtcdSnapshot snapshot;
        boolean waited = false;
        while (true) {
            try {
                long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
                snapshot = EtcdSnapshot.read(client, p, maxValueBytes, EtcdSnapshot.DEFAULT_PAGE_KEYS, left);
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
            if (System.nanoTime() - deadline > 0) {
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
        long readNs = System.nanoTime();
        long rev = snapshot.revision();
        EtcdQuotaSource s;
        Map<String, String> values = new TreeMap<>();
        Map<String, ConfigProblem> big = new TreeMap<>();
        fill(p, snapshot, maxValueBytes, values, big);
        QuotaLayout.ParseCache cache = new QuotaLayout.ParseCache();
        QuotaConfig initial = validate(p, values, big, cache); // invalid at start: refuse to start
        s = new EtcdQuotaSource(client, p, initial, rev, maxValueBytes, timeoutMs, cache);
        synchronized (s) {
            s.raw.putAll(values);
            s.oversized.putAll(big);
            s.seenRevision = rev;
        }
        s.reachable = true;
        long builtNs = System.nanoTime();
        LOG.info("quotas loaded from etcd prefix {} at revision {}: {} keys read in {} ms, validated in {} ms", p, rev,
                values.size(), TimeUnit.NANOSECONDS.toMillis(readNs - startNs), TimeUnit.NANOSECONDS.toMillis(builtNs - readNs));
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

    /** Validates the whole configuration: oversized keys first, then every value. */
    private static QuotaConfig validate(String prefix, Map<String, String> values, Map<String, ConfigProblem> big,
            QuotaLayout.ParseCache cache) {
        List<ConfigProblem> problems = new ArrayList<>(big.values());
        QuotaConfig cfg = null;
        try {
            cfg = QuotaLayout.fromValues(prefix, values, cache);
        } catch (QuotaConfigException e) {
            problems.addAll(e.problems());
        }
        if (!problems.isEmpty()) {
            throw new QuotaConfigException(problems);
        }
        return cfg;
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
        QuotaConfig next;
        long t0 = System.nanoTime();
        try {
            next = validate(prefix, values, big, parseCache);
        } catch (QuotaConfigException e) {
            countRejected();
            lastRejection = String.join("; ", e.errors());
            LOG.error("etcd quota update at revision {} refused, keeping the last good configuration: {}", rev,
                    lastRejection);
            return;
        }
        lastRejection = null;
        synchronized (this) {
            if (next.equals(current())) {
                revision(rev);
                return;
            }
            swap(next, rev);
        }
        LOG.info("quotas updated from etcd at revision {} ({} keys validated in {} ms)", rev, values.size(),
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
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
                    Math.max(10_000, timeoutMs));
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
     * Returns the errors of the refusal in force: non-null while etcd's current state is refused
     * (the configuration in force is older), null once a valid state has been applied.
     */
    public String lastRejection() {
        return lastRejection;
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
