package dev.levee.governor;

/**
 * Reports an {@link AdmissionQueue}'s aggregated counters, for {@code GET /health/ready}
 * (docs/design.md §8); no principal ids. Gauges are values at the time of the snapshot, counters are
 * totals since creation.
 *
 * @param inFlightUploads   mutating uploads admitted and not yet released (gauge)
 * @param inFlightDownloads downloads admitted and not yet released (gauge)
 * @param waiting           requests waiting (gauge)
 * @param admitted          requests admitted, total
 * @param refusedQueueFull  requests refused because the waiters' bound was reached
 * @param refusedTimeout    requests refused after waiting for the timeout
 * @param refusedClosed     requests refused or failed because the queue is closed
 * @param cancellations     waiting requests cancelled
 */
public record AdmissionStats(
        int inFlightUploads,
        int inFlightDownloads,
        int waiting,
        long admitted,
        long refusedQueueFull,
        long refusedTimeout,
        long refusedClosed,
        long cancellations) {

    /** Returns all refusals, whatever the reason. */
    public long refusals() {
        return refusedQueueFull + refusedTimeout + refusedClosed;
    }
}
