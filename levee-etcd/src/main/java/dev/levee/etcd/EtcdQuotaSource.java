package dev.levee.etcd;

import dev.levee.config.QuotaLayout;
import dev.levee.config.AbstractQuotaSource;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaConfigException;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.CompactedException;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the quota configuration in step with etcd (SPEC.md §4, issue 3).
 *
 * <h2>Model</h2>
 * The source mirrors every quota key under the prefix ({@code factor}, {@code quotas/…},
 * {@code resources/…}) in a map of raw values, exactly as etcd holds them. It loads a consistent
 * snapshot with one range read (one revision), then watches the prefix from the next revision. After
 * every watch response the map is rebuilt into a {@link QuotaConfig} and validated whole: a valid
 * result is swapped in atomically; an invalid one is refused with a log line naming the etcd key and
 * field and counted, and the last good configuration stays in force. Because the raw map always
 * equals etcd's state, a later fix of the bad key makes the whole configuration valid again, and the
 * final state always equals etcd's.
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
    private final ScheduledExecutorService timer;
    private final Map<String, String> raw = new TreeMap<>();
    private volatile long seenRevision; // last etcd revision received, where a watch resumes
    private volatile boolean reachable;
    private volatile boolean closed;
    private volatile String lastRejection;
    private Watch.Watcher watcher;

    private EtcdQuotaSource(Client client, String prefix, QuotaConfig initial, long revision) {
        super(initial, revision);
        this.client = client;
        this.prefix = Etcd.normalisePrefix(prefix);
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "levee-etcd-quotas");
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Loads the snapshot and starts watching.
     *
     * @param client      the etcd client (owned by the caller)
     * @param prefix      key prefix, default {@code /levee}
     * @param probeMillis readiness probe interval, ≥ 100 ms
     * @param timeoutMs   how long the first load may take
     * @return the running source
     * @throws QuotaConfigException when etcd's configuration is invalid at start
     * @throws IllegalStateException when etcd cannot be reached within {@code timeoutMs}
     */
    public static EtcdQuotaSource start(Client client, String prefix, long probeMillis, long timeoutMs) {
        String p = Etcd.normalisePrefix(prefix);
        GetResponse snapshot;
        try {
            snapshot = client.getKVClient().get(Etcd.bytes(p), GetOption.builder().isPrefix(true).build())
                    .get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException("etcd unreachable: " + (e.getCause() == null ? e : e.getCause()).toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while loading quotas from etcd");
        }
        Map<String, String> values = quotaValues(p, snapshot);
        QuotaConfig initial = QuotaLayout.fromValues(p, values); // invalid at start: refuse to start
        long rev = snapshot.getHeader().getRevision();
        EtcdQuotaSource s = new EtcdQuotaSource(client, p, initial, rev);
        synchronized (s) {
            s.raw.putAll(values);
            s.seenRevision = rev;
        }
        s.reachable = true;
        LOG.info("quotas loaded from etcd prefix {} at revision {}", p, rev);
        s.watchFrom(rev + 1);
        s.timer.scheduleWithFixedDelay(s::probe, probeMillis, Math.max(100, probeMillis), TimeUnit.MILLISECONDS);
        return s;
    }

    private static Map<String, String> quotaValues(String prefix, GetResponse snapshot) {
        Map<String, String> out = new TreeMap<>();
        for (KeyValue kv : snapshot.getKvs()) {
            String rel = Etcd.string(kv.getKey()).substring(prefix.length());
            if (QuotaLayout.isQuotaKey(rel)) {
                out.put(rel, Etcd.string(kv.getValue()));
            }
        }
        return out;
    }

    private void fill(GetResponse snapshot) {
        raw.clear();
        raw.putAll(quotaValues(prefix, snapshot));
    }

    private synchronized void watchFrom(long rev) {
        if (closed) {
            return;
        }
        if (watcher != null) {
            watcher.close();
        }
        WatchOption opt = WatchOption.builder().isPrefix(true).withRevision(rev).build();
        watcher = client.getWatchClient().watch(Etcd.bytes(prefix), opt,
                Watch.listener(this::onWatch, this::onWatchError, () -> { }));
    }

    private void onWatch(WatchResponse r) {
        boolean changed = false;
        long rev;
        synchronized (this) {
            for (WatchEvent ev : r.getEvents()) {
                String rel = Etcd.string(ev.getKeyValue().getKey()).substring(prefix.length());
                if (!QuotaLayout.isQuotaKey(rel)) {
                    continue;
                }
                if (ev.getEventType() == WatchEvent.EventType.PUT) {
                    raw.put(rel, Etcd.string(ev.getKeyValue().getValue()));
                } else if (ev.getEventType() == WatchEvent.EventType.DELETE) {
                    raw.remove(rel);
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
            rebuild(rev);
        }
    }

    private void rebuild(long rev) {
        QuotaConfig next;
        synchronized (this) {
            try {
                next = QuotaLayout.fromValues(prefix, raw);
            } catch (QuotaConfigException e) {
                countRejected();
                lastRejection = String.join("; ", e.errors());
                LOG.error("etcd quota update at revision {} refused, keeping the last good configuration: {}", rev,
                        lastRejection);
                return;
            }
            if (next.equals(current())) {
                revision(rev);
                return;
            }
            swap(next, rev);
        }
        LOG.info("quotas updated from etcd at revision {}", rev);
        notifyListeners(next);
    }

    private void onWatchError(Throwable t) {
        if (closed) {
            return;
        }
        if (t instanceof CompactedException || String.valueOf(t.getMessage()).contains("compacted")) {
            LOG.warn("etcd watch from revision {} compacted away: reloading a full snapshot", seenRevision + 1);
            timer.execute(this::reload);
        } else {
            reachable = false;
            LOG.warn("etcd watch failed ({}); resuming from revision {} in 1 s", t.toString(), seenRevision + 1);
            timer.schedule(() -> watchFrom(seenRevision + 1), 1, TimeUnit.SECONDS);
        }
    }

    private void reload() {
        try {
            GetResponse snapshot = client.getKVClient().get(Etcd.bytes(prefix),
                    GetOption.builder().isPrefix(true).build()).get(5, TimeUnit.SECONDS);
            long rev = snapshot.getHeader().getRevision();
            synchronized (this) {
                fill(snapshot);
                seenRevision = rev;
            }
            reachable = true;
            rebuild(rev);
            watchFrom(rev + 1);
        } catch (Exception e) {
            reachable = false;
            LOG.warn("etcd snapshot reload failed ({}); retrying in 1 s", e.toString());
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

    /** Returns the errors of the last refused update, or null. */
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
