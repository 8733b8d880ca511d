package dev.levee.etcd;

import dev.levee.core.Member;
import dev.levee.core.MembershipSource;
import dev.levee.core.MembershipView;
import dev.levee.core.Ticker;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
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
import java.util.function.IntSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves limiter membership from etcd (docs/design.md §7): watches {@code <prefix>limiters/} and keeps the
 * list with etcd's revision (loaded in pages at one revision, {@link EtcdSnapshot}); the factor comes from the quota source. Values are
 * {@code {"address": "host:port"}}; a malformed value is logged and the member skipped.
 */
public final class EtcdMembership implements MembershipSource, AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger("levee.membership.etcd");
    private static final Pattern ADDRESS = Pattern.compile("\\{\\s*\"?address\"?\\s*:\\s*\"?([^\"\\s}]+)\"?\\s*}");

    private final Client client;
    private final String prefix;
    private final IntSupplier factor;
    private final Ticker ticker;
    private final ScheduledExecutorService timer;
    private final Map<String, String> members = new TreeMap<>();
    private volatile long revision;
    private volatile boolean closed;
    private Watch.Watcher watcher;

    private EtcdMembership(Client client, String prefix, IntSupplier factor, Ticker ticker) {
        this.client = client;
        this.prefix = Etcd.normalisePrefix(prefix) + "limiters/";
        this.factor = factor;
        this.ticker = ticker;
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "levee-etcd-membership");
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Loads the members and starts watching.
     *
     * @param factor supplies the current group factor DF
     * @param ticker the monotonic clock of the snapshot reads' 10 s deadline ({@code SystemTicker} in production)
     * @return the running membership
     * @throws IllegalStateException when etcd cannot be reached within 10 s
     */
    public static EtcdMembership start(Client client, String prefix, IntSupplier factor, Ticker ticker) {
        EtcdMembership m = new EtcdMembership(client, prefix, factor, ticker);
        if (!m.load()) {
            m.timer.shutdownNow();
            throw new IllegalStateException("etcd unreachable: cannot read " + m.prefix);
        }
        return m;
    }

    private boolean load() {
        try {
            EtcdSnapshot r = EtcdSnapshot.read(client, prefix, Etcd.DEFAULT_MAX_VALUE_BYTES, EtcdSnapshot.DEFAULT_PAGE_KEYS,
                    10_000, ticker);
            synchronized (this) {
                members.clear();
                r.values().forEach(this::put);
                for (String id : r.oversized().keySet()) {
                    LOG.warn("ignoring oversized limiter entry {}{}", prefix, dev.levee.runtime.LogText.escape(id));
                }
                for (String id : r.tooLarge()) {
                    LOG.warn("ignoring oversized limiter entry {}{}", prefix, dev.levee.runtime.LogText.escape(id));
                }
                revision = r.revision();
            }
            watchFrom(revision + 1);
            return true;
        } catch (Exception e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            LOG.warn("reading limiters from etcd failed: {}", e.toString());
            return false;
        }
    }

    private void put(KeyValue kv) {
        if (kv.getValue().size() > Etcd.DEFAULT_MAX_VALUE_BYTES) {
            String id = Etcd.string(kv.getKey()).substring(prefix.length());
            LOG.warn("ignoring oversized limiter entry {}{}", prefix, dev.levee.runtime.LogText.escape(id));
            members.remove(id);
            return;
        }
        put(Etcd.string(kv.getKey()).substring(prefix.length()), Etcd.string(kv.getValue()));
    }

    private void put(String id, String value) {
        Matcher m = ADDRESS.matcher(value);
        if (id.isEmpty() || !m.matches()) {
            LOG.warn("ignoring malformed limiter entry {}{}", prefix, dev.levee.runtime.LogText.escape(id));
            members.remove(id);
            return;
        }
        members.put(id, m.group(1));
    }

    private synchronized void watchFrom(long rev) {
        if (closed) {
            return;
        }
        if (watcher != null) {
            watcher.close();
        }
        watcher = client.getWatchClient().watch(Etcd.bytes(prefix),
                WatchOption.builder().isPrefix(true).withRevision(rev).build(),
                Watch.listener(this::onWatch, this::onError, () -> { }));
    }

    private void onWatch(WatchResponse r) {
        synchronized (this) {
            for (WatchEvent ev : r.getEvents()) {
                if (ev.getEventType() == WatchEvent.EventType.PUT) {
                    put(ev.getKeyValue());
                } else if (ev.getEventType() == WatchEvent.EventType.DELETE) {
                    members.remove(Etcd.string(ev.getKeyValue().getKey()).substring(prefix.length()));
                }
            }
            revision = Math.max(revision, r.getHeader().getRevision());
        }
    }

    private void onError(Throwable t) {
        if (closed) {
            return;
        }
        if (t instanceof CompactedException || String.valueOf(t.getMessage()).contains("compacted")
                || Etcd.messageTooLarge(t)) {
            // a revision compacted away, or a watch response above the client's message limit: re-read a
            // paginated snapshot and watch from the revision after it
            timer.execute(() -> {
                if (!load()) {
                    timer.schedule(this::load, 1, TimeUnit.SECONDS);
                }
            });
        } else {
            LOG.warn("etcd membership watch failed ({}); resuming from revision {}", t.toString(), revision + 1);
            timer.schedule(() -> watchFrom(revision + 1), 1, TimeUnit.SECONDS);
        }
    }

    @Override
    public synchronized MembershipView view() {
        List<Member> list = new ArrayList<>(members.size());
        members.forEach((id, address) -> list.add(new Member(id, address)));
        return new MembershipView(revision, Math.max(1, factor.getAsInt()), list);
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (watcher != null) {
            watcher.close();
        }
        timer.shutdownNow();
    }
}
