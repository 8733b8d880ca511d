package dev.levee.governor;

import dev.levee.core.Ticker;
import java.util.Objects;

/**
 * Shapes the bytes of one direction (upload or download) so that neither the direction nor any
 * principal exceeds its rate, however many parallel streams it opens (docs/design.md §8).
 *
 * <p>Each content chunk passes two token buckets at once: the direction's shared bucket and the
 * bucket of the chunk's principal (the service-account id behind the access key). For any window
 * that starts when the governor (or the principal) is created or when a bucket is full:
 * bytes granted ≤ rate × elapsed + burst, with {@code burst = min(rate / 10, 1 MiB)}. This is a
 * ceiling, not a promise of speed. Chunks are granted in quanta of at most {@code min(64 KiB,
 * every enabled burst)}; waiting principals are served by deficit round robin, and a principal
 * waiting for its own bucket never holds up another. The model is explained in full at the top of
 * the implementation ({@code DrrBandwidthGovernor}).
 *
 * <p>Use: open one {@link GovernedStream} per active transfer with {@link #openStream}, then
 * acquire each chunk's bytes before forwarding it. At most {@link
 * GovernorConfig#maxWaitingQuanta()} requests (256 by default) wait per direction; past that a
 * request is refused at once with {@link WaitQueueFullException}.
 *
 * <p>Thread-safe: one lock per governor (direction); grants are completed outside the lock, on
 * the thread that caused them (a caller of {@code acquire}, {@code cancel}, {@code close} or the
 * timer's thread), so continuations of {@link GovernedStream#acquireAsync} should be short or
 * hop to their own executor. No clock reads and no I/O: time comes from the {@link Ticker}, every
 * wake-up from the {@link GovernorTimer} (one scheduled task at most).
 */
public interface BandwidthGovernor extends AutoCloseable {

    /**
     * Creates a governor whose budget is always owned (a standalone gateway).
     *
     * @param config the configuration
     * @param ticker the monotonic clock, nanoseconds
     * @param timer  the timer that wakes the governor when the next grant becomes possible
     * @throws NullPointerException if an argument is null
     */
    static BandwidthGovernor create(GovernorConfig config, Ticker ticker, GovernorTimer timer) {
        return create(config, ticker, timer, OwnershipCheck.alwaysOwned());
    }

    /**
     * Creates a governor that refuses quanta whenever {@code ownership} answers {@code false}
     * (fencing, docs/design.md §8). Every bucket starts full.
     *
     * @param config    the configuration
     * @param ticker    the monotonic clock, nanoseconds
     * @param timer     the timer that wakes the governor when the next grant becomes possible
     * @param ownership consulted on each request and before each grant
     * @throws NullPointerException if an argument is null
     */
    static BandwidthGovernor create(GovernorConfig config, Ticker ticker, GovernorTimer timer,
                                    OwnershipCheck ownership) {
        return new DrrBandwidthGovernor(Objects.requireNonNull(config, "config"),
                Objects.requireNonNull(ticker, "ticker"), Objects.requireNonNull(timer, "timer"),
                Objects.requireNonNull(ownership, "ownership"), DrrBandwidthGovernor.GrantObserver.NONE);
    }

    /**
     * Opens a stream for one transfer of {@code principalId}. The principal's bucket is created
     * (full) the first time its id is seen and lives until the process stops; streams, keys and
     * connections of the same id share it.
     *
     * @param principalId the service-account id, not blank
     * @return a new stream, which allows one outstanding request at a time
     * @throws PrincipalTableFullException if the id is new and the table holds {@link
     *                                     GovernorConfig#maxPrincipals()} principals
     * @throws GovernorClosedException     if the governor is closed
     * @throws IllegalArgumentException    if the id is blank
     * @throws NullPointerException        if the id is null
     */
    GovernedStream openStream(String principalId);

    /**
     * Replaces the configuration atomically. Buckets are refilled at their old rates up to now,
     * then take the new rates; a bucket's content is clamped to its new burst, and a bucket that
     * was disabled starts full. Waiting requests keep their places. Bounds apply to later
     * requests only.
     *
     * @param config the new configuration, for the same direction
     * @throws IllegalArgumentException if the direction differs
     * @throws NullPointerException     if {@code config} is null
     */
    void reconfigure(GovernorConfig config);

    /**
     * Runs one scheduling pass now: grants whatever has become grantable, for example after the
     * {@link OwnershipCheck} answers {@code true} again. A no-op on a closed governor.
     */
    void wake();

    /**
     * Returns whether the last scheduling pass found a grantable quantum but granted nothing
     * because the budget was not owned (fenced; docs/design.md §10).
     */
    boolean stalled();

    /**
     * Visits every principal's usage under the governor's lock, for a demand estimate (docs/design.md
     * §10). The visitor must be quick and must not call back into the governor.
     *
     * @param visitor called once per principal known to the governor
     */
    void usage(UsageVisitor visitor);

    /** Receives one principal's usage; see {@link #usage}. */
    @FunctionalInterface
    interface UsageVisitor {
        /**
         * @param principalId   the service-account id
         * @param grantedBytes  bytes granted since the principal was first seen, monotone
         * @param waitedBytes   of those, bytes granted to requests that had to wait, monotone
         * @param waitingNow    requests of this principal waiting now
         */
        void principal(String principalId, long grantedBytes, long waitedBytes, int waitingNow);
    }

    /** Returns the configuration in force. */
    GovernorConfig config();

    /** Returns a snapshot of the aggregated counters, without principal ids. */
    GovernorStats stats();

    /**
     * Closes the governor: fails every waiting request with {@link GovernorClosedException},
     * cancels the timer and refuses every later request and stream. Bytes already granted stay
     * granted. Idempotent.
     */
    @Override
    void close();
}
