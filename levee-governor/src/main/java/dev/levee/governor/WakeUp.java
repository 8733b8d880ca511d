package dev.levee.governor;

import java.util.function.Consumer;

/**
 * Holds the one armed wake-up of a governor direction or an admission queue (docs/design.md §8: one timer per
 * direction): armed for the earliest moment anything can happen, re-armed only when that moment
 * moves earlier, so that a burst of requests never schedules more than one timer task.
 *
 * <p>Not thread-safe: the owner calls every method under its own lock. A fired task calls back the
 * owner, which calls {@link #fired} under its lock; the task's identity tells the armed task from a
 * stale one.
 */
final class WakeUp {

    /** One scheduled wake-up. */
    static final class Task implements Runnable {
        private final WakeUp owner;

        private Task(WakeUp owner) {
            this.owner = owner;
        }

        @Override
        public void run() {
            owner.onFire.accept(this);
        }
    }

    private final GovernorTimer timer;
    private final Consumer<Task> onFire;
    private Task armed;
    private GovernorTimer.Cancellable handle;
    private long armedAt;

    WakeUp(GovernorTimer timer, Consumer<Task> onFire) {
        this.timer = timer;
        this.onFire = onFire;
    }

    /**
     * Makes sure a task fires no later than {@code next}.
     *
     * @param next the earliest moment anything can happen, ns of the owner's ticker
     * @param now  the current time, ns
     */
    void armFor(long next, long now) {
        if (armed != null && next - armedAt >= 0) {
            return; // a task already fires no later than needed
        }
        long delay = Math.max(1, next - now);
        Task task = new Task(this);
        GovernorTimer.Cancellable h = timer.schedule(delay, task); // if it throws, the old state stands
        if (armed != null) {
            handle.cancel();
        }
        armed = task;
        armedAt = now + delay;
        handle = h;
    }

    /** Forgets {@code task} when it is the armed one (it has fired). */
    void fired(Task task) {
        if (armed == task) {
            armed = null;
            handle = null;
        }
    }

    /** Cancels the armed task, if any. */
    void cancel() {
        if (armed != null) {
            handle.cancel();
            armed = null;
            handle = null;
        }
    }
}
