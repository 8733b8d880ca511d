package dev.levee.governor;

import java.util.concurrent.CompletionStage;

/**
 * Acquires bandwidth for one transfer (one request body or response body) of one principal.
 *
 * <p>A stream allows <b>one outstanding request at a time</b> (docs/design.md §8): start the next only
 * after the previous one has completed; otherwise {@link IllegalStateException}. A request for
 * more than one quantum is granted quantum by quantum and completes when all of its bytes are
 * granted; while it waits it counts as one waiting quantum. Bytes granted are never refunded,
 * even if the request is cancelled before it completes.
 *
 * <p>Obtain one from {@link BandwidthGovernor#openStream}; close it when the transfer ends.
 */
public interface GovernedStream extends AutoCloseable {

    /** Returns the principal (service-account id) whose bucket this stream draws from. */
    String principalId();

    /** Returns the largest single grant for this stream's principal now, in bytes. */
    long quantumBytes();

    /**
     * Grants {@code bytes} now if they fit in one quantum and both buckets hold them without
     * overtaking a waiting request; never waits and never queues. Allocates nothing.
     *
     * @param bytes the bytes wanted, ≥ 0
     * @return whether the bytes were granted
     * @throws IllegalArgumentException if {@code bytes} is negative
     * @throws IllegalStateException    if a request of this stream is outstanding or it is closed
     * @throws RefusedException         if the governor is closed or does not own its budget
     */
    boolean tryAcquire(long bytes);

    /**
     * Blocks until {@code bytes} have been granted; intended for virtual threads. Returns at once,
     * without allocating, when the bytes fit in one quantum and are available.
     *
     * @param bytes the bytes wanted, ≥ 0 (any size; granted in quanta)
     * @throws InterruptedException     if interrupted while waiting; the request is then cancelled
     *                                  (bytes already granted are not refunded)
     * @throws WaitQueueFullException   if the direction already has its maximum of waiting quanta
     * @throws OwnershipLostException   if ownership is lost before all bytes are granted
     * @throws GovernorClosedException  if the governor is or becomes closed
     * @throws java.util.concurrent.CancellationException if another thread cancels the request
     *                                  through {@link #cancel()} or {@link #close()}
     * @throws IllegalArgumentException if {@code bytes} is negative
     * @throws IllegalStateException    if a request of this stream is outstanding or it is closed
     */
    void acquire(long bytes) throws InterruptedException;

    /**
     * Requests {@code bytes} and returns a stage that completes when all of them are granted.
     * Refusals complete the stage exceptionally with a {@link RefusedException} (at once when the
     * queue is full); {@link #cancel()} or cancelling the stage's future completes it with a
     * {@link java.util.concurrent.CancellationException}. When the bytes are available at once,
     * the returned stage is already complete and shared (no allocation).
     *
     * @param bytes the bytes wanted, ≥ 0 (any size; granted in quanta)
     * @return a stage completing with {@code null} on grant
     * @throws IllegalArgumentException if {@code bytes} is negative
     * @throws IllegalStateException    if a request of this stream is outstanding or it is closed
     */
    CompletionStage<Void> acquireAsync(long bytes);

    /**
     * Cancels the outstanding request if it is still waiting (the client went away). Bytes
     * already granted to it are not refunded.
     *
     * @return whether a waiting request was cancelled
     */
    boolean cancel();

    /** Cancels the outstanding request, if any, and refuses later requests. Idempotent. */
    @Override
    void close();
}
