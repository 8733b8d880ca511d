package dev.levee.governor;

/**
 * Runs a task once after a delay; the only way the governor and the admission queue wake up.
 *
 * <p>The adapters supply it (a Vert.x timer, a {@link java.util.concurrent.ScheduledExecutorService});
 * tests supply a fake that runs tasks when the test advances its clock. A {@link
 * BandwidthGovernor} keeps at most one task scheduled at a time, an {@link AdmissionQueue}
 * likewise.
 *
 * <p>Contract: {@link #schedule} must return without running {@code task} on the calling thread
 * (it is called while the caller holds its lock), must not run the task before {@code delayNs}
 * has elapsed on the caller's {@link dev.levee.core.Ticker}, and may run it later — a timer with
 * coarse resolution should round the delay up, which batches more grants into one wake-up (at
 * 1 GiB/s in 64 KiB quanta an exact timer wakes 16 384 times a second). Keep the resolution well
 * below {@code burst / rate} (about 1 ms at 1 GiB/s): a bucket holds at most one burst, so a later
 * wake-up forfeits refill and the achieved rate drops below the ceiling. A task that runs after {@link Cancellable#cancel()} is harmless. It must not throw:
 * close the governor and the admission queue before the timer stops (docs/design.md §8, {@code preClose}).
 */
@FunctionalInterface
public interface GovernorTimer {

    /**
     * Schedules {@code task} to run once, no earlier than {@code delayNs} from now.
     *
     * @param delayNs the delay in nanoseconds, {@code ≥ 1}
     * @param task    the task; runs on whatever thread the timer uses
     * @return a handle that cancels the task if it has not run yet
     */
    Cancellable schedule(long delayNs, Runnable task);

    /** Cancels one scheduled task. */
    @FunctionalInterface
    interface Cancellable {
        /** Cancels the task if it has not started; does nothing otherwise. */
        void cancel();
    }
}
