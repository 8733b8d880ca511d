package dev.levee.governor;

import dev.levee.core.Ticker;
import java.util.Objects;
import java.util.concurrent.CompletionStage;

/**
 * Limits the requests in flight per principal and {@link AdmissionClass} (docs/design.md §8):
 * by default one mutating upload and {@code min(4, maxDownloads)} downloads.
 *
 * <p>A request over its principal's limit waits in that principal's FIFO for its class, so a
 * release admits only the oldest waiter of the same principal and class, and a principal at its
 * limit never holds up another. Waiting is bounded in number ({@link
 * AdmissionConfig#maxWaiters()}, refused at once with {@link WaitQueueFullException}) and in time
 * ({@link AdmissionConfig#waitTimeoutNanos()}, refused with {@link AdmissionTimeoutException}).
 * {@link #close()} fails every waiter and refuses later requests ({@code preClose}).
 *
 * <p>Thread-safe (one lock); completions happen outside the lock. No clock reads: time from the
 * {@link Ticker}, timeouts through the {@link GovernorTimer} (one scheduled task at most, for the
 * oldest waiter's deadline). Admission is not bandwidth: admitted requests still acquire their
 * bytes from a {@link BandwidthGovernor}.
 */
public interface AdmissionQueue extends AutoCloseable {

    /**
     * Creates an admission queue.
     *
     * @param config the configuration
     * @param ticker the monotonic clock, ns
     * @param timer  the timer that refuses waiters at their deadline
     * @throws NullPointerException if an argument is null
     */
    static AdmissionQueue create(AdmissionConfig config, Ticker ticker, GovernorTimer timer) {
        return new FifoAdmissionQueue(Objects.requireNonNull(config, "config"),
                Objects.requireNonNull(ticker, "ticker"), Objects.requireNonNull(timer, "timer"));
    }

    /**
     * Blocks until the request is admitted; intended for virtual threads.
     *
     * @param principalId    the service-account id, not blank
     * @param admissionClass the class of the request
     * @return the admission; close it when the request ends
     * @throws InterruptedException       if interrupted while waiting (the wait is cancelled)
     * @throws WaitQueueFullException     if it would have to wait and the waiters' bound is reached
     * @throws AdmissionTimeoutException  if not admitted within the timeout
     * @throws GovernorClosedException    if the queue is or becomes closed
     * @throws IllegalArgumentException   if the id is blank
     */
    Admission admit(String principalId, AdmissionClass admissionClass) throws InterruptedException;

    /**
     * Requests admission; the stage completes with the admission, or exceptionally with a
     * {@link RefusedException} (at once when the waiters' bound is reached or the queue is
     * closed). Cancelling the stage's future cancels the wait.
     *
     * @param principalId    the service-account id, not blank
     * @param admissionClass the class of the request
     * @return a stage completing with the admission
     * @throws IllegalArgumentException if the id is blank
     */
    CompletionStage<Admission> admitAsync(String principalId, AdmissionClass admissionClass);

    /** Returns the configuration. */
    AdmissionConfig config();

    /** Returns a snapshot of the aggregated counters, without principal ids. */
    AdmissionStats stats();

    /**
     * Closes the queue: fails every waiter with {@link GovernorClosedException} and refuses later
     * requests; admissions already granted stay valid until closed. Idempotent.
     */
    @Override
    void close();
}
