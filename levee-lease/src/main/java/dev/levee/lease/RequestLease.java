package dev.levee.lease;

import java.util.Objects;

/**
 * One grant of pre-reserved GCRA conformance slots of a hot limit key, as the client holds it (docs/design.md
 * §12). Immutable. The limiter decided it at some instant {@code t} of its own clock and sent offsets relative
 * to {@code t}; the client recorded, on its own monotonic clock, when it sent the request ({@code sentNs}) and
 * when the grant arrived ({@code receivedNs}), and {@code t} lies between the two in real time. Slot {@code k}
 * (1-based) has the virtual time {@code v_k = t + firstNs + (k − 1) × intervalNs} and may be used in real time
 * {@code [v_k − τ, v_k + T)}; {@link RequestLeaseRules} maps that window onto the client's clock.
 *
 * @param id          the lease id the limiter gave, for the logs (any value; unique per limiter incarnation)
 * @param epoch       the quota revision the limiter decided under and the membership version the client asked
 *                    under; used only while it equals the client's current epoch
 * @param limiterId   the limiter that granted it, for the logs; not null
 * @param firstNs     {@code v_1 − t}, ns of the limiter's clock, ≥ 0
 * @param intervalNs  {@code T}, ns between two slots, ≥ 1
 * @param toleranceNs {@code τ}, ns a slot may be used before its virtual time, ≥ 0
 * @param slots       slots granted, ≥ 1
 * @param sentNs      the client's monotonic reading when it sent the request, ns
 * @param receivedNs  the client's monotonic reading when the grant arrived, ns, not before {@code sentNs}
 */
public record RequestLease(long id, Epoch epoch, String limiterId, long firstNs, long intervalNs, long toleranceNs,
                           int slots, long sentNs, long receivedNs) {

    /**
     * What a lease was taken under: the revision of the quota configuration the limiter decided with, and the
     * version of the membership the client computed the group from. A client uses leases of its own current
     * epoch only (docs/design.md §12).
     *
     * @param configRevision    the revision of the quota configuration (a file's generation or etcd's revision)
     * @param membershipVersion the version of the list of active limiters the group was computed from
     */
    public record Epoch(long configRevision, long membershipVersion) {
    }

    /**
     * Validates the shape of a grant; what a client accepts beyond its shape is {@link RequestLeaseRules#problem}.
     *
     * @throws IllegalArgumentException naming the field, when a field is out of range
     * @throws NullPointerException     when {@code epoch} or {@code limiterId} is null
     */
    public RequestLease {
        Objects.requireNonNull(epoch, "epoch");
        Objects.requireNonNull(limiterId, "limiterId");
        if (firstNs < 0) {
            throw new IllegalArgumentException("firstNs must be >= 0, got " + firstNs);
        }
        if (intervalNs < 1) {
            throw new IllegalArgumentException("intervalNs must be >= 1, got " + intervalNs);
        }
        if (toleranceNs < 0) {
            throw new IllegalArgumentException("toleranceNs must be >= 0, got " + toleranceNs);
        }
        if (slots < 1) {
            throw new IllegalArgumentException("slots must be >= 1, got " + slots);
        }
        if (receivedNs - sentNs < 0) {
            throw new IllegalArgumentException("receivedNs must not be before sentNs, got " + (receivedNs - sentNs)
                    + " ns");
        }
    }

    /**
     * Returns {@code v_k − t} of slot {@code k}, ns of the limiter's clock, saturating at {@link Long#MAX_VALUE}.
     *
     * @param k the slot, 1-based, in {@code [1, slots]}
     */
    public long offsetNs(int k) {
        long steps = k - 1L;
        long hi = Math.multiplyHigh(steps, intervalNs);
        long span = steps * intervalNs;
        if (hi != 0 || span < 0 || Long.MAX_VALUE - span < firstNs) {
            return Long.MAX_VALUE;
        }
        return firstNs + span;
    }

    /** Returns {@code v_n + T − t}: when, after the decision, the last slot's window ends (ns, saturating). */
    public long lifetimeNs() {
        long last = offsetNs(slots);
        return Long.MAX_VALUE - last < intervalNs ? Long.MAX_VALUE : last + intervalNs;
    }
}
