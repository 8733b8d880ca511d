package dev.levee.gateway;

import dev.levee.governor.GovernorTimer;
import java.time.Duration;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wakes the governors and admission queues of one gateway: one daemon thread, delays rounded up to
 * the configured resolution (250 µs by default), so that wake-ups that fall in the same slot run
 * as one and batch their grants (docs/BENCHMARKS-governor.md: coarser than {@code burst / rate}
 * loses throughput, finer costs wake-ups).
 *
 * <p>Honours the {@link GovernorTimer} contract: {@link #schedule} never runs the task on the
 * caller's thread. Tasks complete futures on this thread; the gateway's continuations hop back
 * to their own event loop at once. Close it only after the governors and queues are closed.
 */
final class ScheduledGovernorTimer implements GovernorTimer, AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger("levee.gateway");
    private static final GovernorTimer.Cancellable NOTHING = () -> { };

    /** Name of the timer's thread (leak checks in tests look for it). */
    static final String THREAD_NAME = "levee-governor-timer";

    private final ScheduledThreadPoolExecutor executor;
    private final long resolutionNs;

    /**
     * Starts the timer thread.
     *
     * @param resolution the slot to which delays are rounded up, ≥ 1 ns
     */
    ScheduledGovernorTimer(Duration resolution) {
        this.resolutionNs = Math.max(1, resolution.toNanos());
        this.executor = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, THREAD_NAME);
            t.setDaemon(true);
            return t;
        });
        executor.setRemoveOnCancelPolicy(true);
        executor.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
    }

    @Override
    public Cancellable schedule(long delayNs, Runnable task) {
        long slots = (Math.max(1, delayNs) + resolutionNs - 1) / resolutionNs;
        long delay = slots > Long.MAX_VALUE / resolutionNs ? Long.MAX_VALUE / 2 : slots * resolutionNs;
        try {
            ScheduledFuture<?> f = executor.schedule(() -> {
                try {
                    task.run();
                } catch (RuntimeException e) {
                    LOG.error("governor timer task failed", e);
                }
            }, delay, TimeUnit.NANOSECONDS);
            return () -> f.cancel(false);
        } catch (RejectedExecutionException e) {
            return NOTHING; // closed: the governors and queues were closed first, nothing waits
        }
    }

    /** Stops the thread, dropping tasks not yet run, and waits up to one second for it to end. */
    @Override
    public void close() {
        executor.shutdownNow();
        try {
            executor.awaitTermination(1, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
