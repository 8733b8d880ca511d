package dev.levee.lease;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;

/**
 * The shared state of site leases (docs/design.md §10), as {@link ShareKeeper} needs it: etcd in
 * production ({@code dev.levee.etcd.EtcdShareStore}, in levee-etcd), a model with message loss,
 * delays and crashes in tests.
 *
 * <p>The invariant Σ shares ≤ budget is kept by the store's one guard: every write that raises a
 * share is conditional on the guard revision read with the view and moves it on; writes that only
 * lower shares or change demands need no guard, since they cannot raise the sum. Every write is
 * also conditional on the revision of the writer's own entry in the view: a write that was
 * delayed (or retried by a client library) and lands after a newer one is refused instead of
 * putting back an older share, which could lower a share still in use or raise one unguarded.
 */
public interface ShareStore {

    /**
     * A granted lease.
     *
     * @param id         the lease id
     * @param ttlSeconds its time to live as granted, seconds
     */
    record Lease(long id, long ttlSeconds) {
    }

    /**
     * What the store holds now.
     *
     * @param budgetText    the budget document, or null if there is none
     * @param entries       every live gateway entry (unparseable ones left out)
     * @param guardRevision the revision a raising write must be conditional on
     * @param entryRevisions the modification revision of each entry's key, by {@link GatewayEntry#keySuffix()}
     */
    record View(String budgetText, List<GatewayEntry> entries, long guardRevision, Map<String, Long> entryRevisions) {
        public View {
            entries = List.copyOf(entries);
            entryRevisions = Map.copyOf(entryRevisions);
        }

        /** A view without entry revisions (for status displays). */
        public View(String budgetText, List<GatewayEntry> entries, long guardRevision) {
            this(budgetText, entries, guardRevision, Map.of());
        }

        /** The modification revision of {@code e}'s key in this view; 0 if it has none. */
        public long entryRevision(GatewayEntry e) {
            return entryRevisions.getOrDefault(e.keySuffix(), 0L);
        }
    }

    /** The outcome of a write. */
    enum WriteResult {
        /** Written. */
        OK,
        /** The guard, or the writer's own entry, changed since the view was read: nothing written. */
        CONFLICT,
        /** The lease has expired or was revoked: nothing written. */
        LEASE_GONE
    }

    /** Where the budget document is, for messages (e.g. {@code etcd key /levee/bandwidth/budget}). */
    default String budgetLocation() {
        return "the budget document";
    }

    /** Grants a lease of {@code ttlSeconds}. */
    CompletionStage<Lease> grant(long ttlSeconds);

    /**
     * Renews a lease once.
     *
     * @return its time to live from now, seconds; ≤ 0 when the lease is gone
     */
    CompletionStage<Long> keepAlive(long leaseId);

    /** Reads the budget, every live entry and the guard revision at one revision. */
    CompletionStage<View> read();

    /**
     * Writes this gateway's entry under its lease.
     *
     * @param entry         the entry
     * @param leaseId       the lease the key is attached to
     * @param guarded       whether the write raises a share (then it is conditional on {@code guardRevision})
     * @param guardRevision the guard revision of the view the entry was computed from
     * @param entryRevision the modification revision of this entry's key in that view, 0 if it had none:
     *                      the write is conditional on it
     */
    CompletionStage<WriteResult> write(GatewayEntry entry, long leaseId, boolean guarded, long guardRevision,
                                       long entryRevision);

    /** Revokes a lease (graceful stop): its entry disappears at once. */
    CompletionStage<Void> revoke(long leaseId);
}
