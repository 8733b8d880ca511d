package dev.levee.observer;

import dev.levee.core.Member;
import dev.levee.core.MembershipSource;
import dev.levee.core.MembershipView;
import dev.levee.core.Ticker;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * Tracks limiter membership from heartbeats, expiring members whose last heartbeat is older than
 * the TTL (docs/design.md §7, embedded default without etcd). Pure: time comes from the injected ticker.
 *
 * <p>The revision increases by one on every change of the list (join, leave, expiry, address
 * change) and of the factor, so clients can tell whether their cached list is current.
 * Thread-safe (all methods synchronised; the table is small).
 */
public final class HeartbeatMembership implements MembershipSource {

    /** Ids: 1–128 characters of {@code [A-Za-z0-9._:-]}. */
    public static final Pattern ID = Pattern.compile("[A-Za-z0-9._:-]{1,128}");

    private record Entry(String address, long lastSeenNs) {
    }

    private final Ticker ticker;
    private final long ttlNs;
    private final int maxMembers;
    private final Map<String, Entry> members = new TreeMap<>();
    private long revision = 1;
    private int factor;

    /**
     * Creates an empty membership.
     *
     * @param ticker     monotonic clock (ns)
     * @param ttlNs      a member without heartbeat for this long is dropped, &gt; 0
     * @param factor     the group factor DF, ≥ 1
     * @param maxMembers the most members held (further joins are refused), ≥ 1
     * @throws IllegalArgumentException when an argument is out of range
     */
    public HeartbeatMembership(Ticker ticker, long ttlNs, int factor, int maxMembers) {
        if (ttlNs <= 0 || factor < 1 || maxMembers < 1) {
            throw new IllegalArgumentException("ttl, factor and maxMembers must be positive");
        }
        this.ticker = ticker;
        this.ttlNs = ttlNs;
        this.factor = factor;
        this.maxMembers = maxMembers;
    }

    /**
     * Records a heartbeat.
     *
     * @param id      the limiter id, matching {@link #ID}
     * @param address {@code host:port}
     * @throws IllegalArgumentException when the id or address is malformed, or the table is full
     */
    public synchronized void heartbeat(String id, String address) {
        if (id == null || !ID.matcher(id).matches()) {
            throw new IllegalArgumentException("id must be 1-128 characters of A-Z a-z 0-9 . _ : -");
        }
        dev.levee.runtime.HostPort.parse(address, "address");
        expire();
        Entry prior = members.get(id);
        if (prior == null && members.size() >= maxMembers) {
            throw new IllegalArgumentException("membership is full (" + maxMembers + " limiters)");
        }
        members.put(id, new Entry(address, ticker.read()));
        if (prior == null || !prior.address().equals(address)) {
            revision++;
        }
    }

    /** Removes a member that leaves gracefully; returns whether it was present. */
    public synchronized boolean leave(String id) {
        boolean removed = members.remove(id) != null;
        if (removed) {
            revision++;
        }
        return removed;
    }

    /** Sets the group factor DF (≥ 1); a change bumps the revision. */
    public synchronized void factor(int newFactor) {
        if (newFactor < 1) {
            throw new IllegalArgumentException("factor must be >= 1");
        }
        if (newFactor != factor) {
            factor = newFactor;
            revision++;
        }
    }

    /** Drops members whose TTL ran out and returns the current view. */
    @Override
    public synchronized MembershipView view() {
        expire();
        List<Member> list = new ArrayList<>(members.size());
        members.forEach((id, e) -> list.add(new Member(id, e.address())));
        list.sort(Comparator.comparing(Member::id));
        return new MembershipView(revision, factor, list);
    }

    private void expire() {
        long now = ticker.read();
        if (members.values().removeIf(e -> now - e.lastSeenNs() > ttlNs)) {
            revision++;
        }
    }
}
