package dev.levee.lease;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * The request leases one client holds for one limit key, and the local admission from them (docs/design.md §12).
 * Mutable and not thread-safe: the caller serialises access to one holder (as {@code GcraTable} locks a key's
 * state). Allocates nothing per admission.
 *
 * <h2>Admission</h2>
 * At local time {@code now}, slots whose local window has ended are dropped (lost: never returned), and the
 * request takes the usable slot whose window ends first, over all leases held (a lease's slots are used in
 * order). Without a usable slot, {@link #waitNs} says when the next held slot's window opens, or that no lease
 * holds one and the limiter must be asked. Windows come from {@link RequestLeaseRules}.
 *
 * <h2>Epochs</h2>
 * The holder has a current {@link RequestLease.Epoch}; {@link #epoch} moving it drops every lease of another
 * epoch, and {@link #offer} refuses one. So once the client knows a new quota revision or membership, nothing
 * is admitted under the old one.
 */
public final class RequestLeaseHolder {

    /** {@link #waitNs} when no held lease has a slot left: ask the limiter. */
    public static final long NO_LEASE = -1;

    private final RequestLeaseRules rules;
    private RequestLease.Epoch epoch;
    private final List<RequestLease> leases = new ArrayList<>();
    /** Per lease (same index), the next unused slot, 1-based. */
    private int[] next = new int[4];
    private int lastSlot;

    /**
     * Creates an empty holder.
     *
     * @param rules the window rules (not null)
     * @param epoch the client's current epoch (not null)
     */
    public RequestLeaseHolder(RequestLeaseRules rules, RequestLease.Epoch epoch) {
        this.rules = Objects.requireNonNull(rules, "rules");
        this.epoch = Objects.requireNonNull(epoch, "epoch");
    }

    /**
     * Moves the holder to {@code newEpoch}, dropping every lease taken under another one.
     *
     * @return how many leases were dropped
     */
    public int epoch(RequestLease.Epoch newEpoch) {
        Objects.requireNonNull(newEpoch, "newEpoch");
        if (newEpoch.equals(epoch)) {
            return 0;
        }
        epoch = newEpoch;
        int dropped = 0;
        for (int i = leases.size() - 1; i >= 0; i--) {
            if (!leases.get(i).epoch().equals(newEpoch)) {
                remove(i);
                dropped++;
            }
        }
        return dropped;
    }

    /** Returns the current epoch. */
    public RequestLease.Epoch epoch() {
        return epoch;
    }

    /**
     * Adds a grant. Refused (false) when it is of another epoch than the current one, or a lease with the same id
     * from the same limiter is held — a duplicated reply. A lease is held until its last slot's window ends, used
     * up or not, so a duplicate that arrives after its slots were used is still refused, and one that arrives
     * later has no window left. So lease ids must not repeat per limiter within a lease's lifetime (a restarted
     * limiter grants nothing for that long, {@link RequestLeaseRules#restartFenceNs}). The grant must have passed
     * {@link RequestLeaseRules#problem}.
     */
    public boolean offer(RequestLease lease) {
        if (!lease.epoch().equals(epoch)) {
            return false;
        }
        for (RequestLease held : leases) {
            if (held.id() == lease.id() && held.limiterId().equals(lease.limiterId())) {
                return false;
            }
        }
        if (leases.size() == next.length) {
            next = Arrays.copyOf(next, next.length * 2);
        }
        next[leases.size()] = 1;
        leases.add(lease);
        return true;
    }

    /**
     * Admits one request at local time {@code now} from a held slot, if one is usable.
     *
     * @param now the client's monotonic clock, ns
     * @return the lease the slot was taken from (for the log: its id and limiter), or null when no slot is usable
     */
    public RequestLease admit(long now) {
        expire(now);
        int best = firstToEnd(now);
        if (best < 0) {
            return null;
        }
        RequestLease used = leases.get(best);
        lastSlot = next[best]++; // a used-up lease stays until its last window ends: see offer
        return used;
    }

    /**
     * A run of consecutive slots of one lease taken at once, to be used by another admitter that has no slot windows
     * of its own — NGINX's batch (docs/design.md §12, "Batches in NGINX"). Every slot of it is usable from the
     * instant it was taken until {@code endNs}, the end of its first slot's window (the later slots' windows end
     * later), so the taker needs one deadline only.
     *
     * @param lease     the lease the slots are of (its id and limiter, for the logs)
     * @param firstSlot the first slot taken, 1-based
     * @param slots     how many were taken, ≥ 1
     * @param endNs     the local instant (client clock, ns) from which none of them may be used
     */
    public record Batch(RequestLease lease, int firstSlot, int slots, long endNs) {
    }

    /**
     * Takes up to {@code max} slots usable at {@code now} from the lease whose next usable slot's window ends first
     * (as {@link #admit} would take them, in order), for use until the first one's window ends.
     *
     * @param now       the client's monotonic clock, ns
     * @param max       the most slots to take, ≥ 1
     * @param minLifeNs the least time the batch must leave to use it, ns: no batch when the first slot's window ends
     *                  sooner
     * @return the batch, or null when no slot is usable now or the first one's window ends within {@code minLifeNs}
     * @throws IllegalArgumentException when {@code max < 1} or {@code minLifeNs < 0}
     */
    public Batch take(long now, int max, long minLifeNs) {
        if (max < 1 || minLifeNs < 0) {
            throw new IllegalArgumentException("max must be >= 1 and minLifeNs >= 0, got " + max + " and " + minLifeNs);
        }
        expire(now);
        int best = firstToEnd(now);
        if (best < 0) {
            return null;
        }
        RequestLease l = leases.get(best);
        long bestEnd = rules.slotEndNs(l, next[best]);
        if (bestEnd - now < minLifeNs || bestEnd - now <= 0) {
            return null;
        }
        int first = next[best];
        int k = first;
        while (k - first < max && k <= l.slots() && now - rules.slotStartNs(l, k) >= 0) {
            k++;
        }
        next[best] = k; // a used-up lease stays until its last window ends: see offer
        return new Batch(l, first, k - first, bestEnd);
    }

    /**
     * Returns, at local time {@code now}, how long until a held slot becomes usable: 0 when one is usable now,
     * {@code ≥ 1} ns otherwise (the Retry-After of a refusal), or {@link #NO_LEASE} when no held lease has a slot
     * left.
     */
    public long waitNs(long now) {
        expire(now);
        long wait = NO_LEASE;
        for (int i = 0; i < leases.size(); i++) {
            if (next[i] > leases.get(i).slots()) {
                continue;
            }
            long w = Math.max(0, rules.slotStartNs(leases.get(i), next[i]) - now);
            if (wait < 0 || w < wait) {
                wait = w;
            }
        }
        return wait;
    }

    /** Returns how many slots the held leases still have (unused and not yet past their window at {@code now}). */
    public long unused(long now) {
        expire(now);
        long n = 0;
        for (int i = 0; i < leases.size(); i++) {
            n += leases.get(i).slots() - next[i] + 1;
        }
        return n;
    }

    /** Returns the slot (1-based) the last successful {@link #admit} took from its lease, for the log line. */
    public int lastSlot() {
        return lastSlot;
    }

    /**
     * Returns how many slots the leases granted by {@code limiterId} still have at {@code now}: what a client weighs
     * against its demand to decide when to ask that limiter again.
     */
    public long unused(long now, String limiterId) {
        expire(now);
        long n = 0;
        for (int i = 0; i < leases.size(); i++) {
            if (leases.get(i).limiterId().equals(limiterId)) {
                n += leases.get(i).slots() - next[i] + 1;
            }
        }
        return n;
    }

    /**
     * Returns how many leases are held, used-up ones included until their last window ends (some may be past it
     * until the next call with a time).
     */
    public int held() {
        return leases.size();
    }

    /** Drops every lease (a client that forgets, or switches leases off). */
    public void clear() {
        leases.clear();
    }

    /**
     * Returns the index of the held lease whose next slot is usable at {@code now} and whose window ends first, or -1
     * when no slot is usable. The caller has expired the holder at {@code now}.
     */
    private int firstToEnd(long now) {
        int best = -1;
        long bestEnd = 0;
        for (int i = 0; i < leases.size(); i++) {
            RequestLease l = leases.get(i);
            if (next[i] > l.slots() || now - rules.slotStartNs(l, next[i]) < 0) {
                continue;
            }
            long end = rules.slotEndNs(l, next[i]);
            if (best < 0 || end - bestEnd < 0) {
                best = i;
                bestEnd = end;
            }
        }
        return best;
    }

    private void expire(long now) {
        for (int i = leases.size() - 1; i >= 0; i--) {
            RequestLease l = leases.get(i);
            if (rules.slotEndNs(l, l.slots()) - now <= 0) {
                remove(i);
                continue;
            }
            int k = next[i];
            while (k <= l.slots() && rules.slotEndNs(l, k) - now <= 0) {
                k++;
            }
            next[i] = k;
        }
    }

    private void remove(int i) {
        int last = leases.size() - 1;
        System.arraycopy(next, i + 1, next, i, last - i);
        leases.remove(i);
    }
}
