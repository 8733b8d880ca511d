package dev.levee.governor;

/**
 * Reports a {@link BandwidthGovernor}'s aggregated counters, for {@code GET /health/ready}
 * (docs/design.md §8). Carries no principal ids, keys, paths or object names. Counters are totals since
 * the governor was created; gauges are values at the time of the snapshot.
 *
 * @param direction             the direction
 * @param grantedBytes          bytes granted, total
 * @param grantedQuanta         grants, total (one grant is at most one quantum)
 * @param waitingQuanta         requests waiting now, each for one quantum (gauge, ≤ the bound)
 * @param principals            principals in the table now (gauge)
 * @param refusedQueueFull      requests refused because the wait queue was full
 * @param refusedOwnershipLost  requests refused because ownership was lost (fencing)
 * @param refusedClosed         requests refused or failed because the governor is closed
 * @param refusedPrincipalTable streams refused because the principal table was full
 * @param cancellations         waiting requests cancelled (by the caller or an interrupt)
 */
public record GovernorStats(
        Direction direction,
        long grantedBytes,
        long grantedQuanta,
        int waitingQuanta,
        int principals,
        long refusedQueueFull,
        long refusedOwnershipLost,
        long refusedClosed,
        long refusedPrincipalTable,
        long cancellations) {

    /** Returns all refusals, whatever the reason. */
    public long refusals() {
        return refusedQueueFull + refusedOwnershipLost + refusedClosed + refusedPrincipalTable;
    }
}
