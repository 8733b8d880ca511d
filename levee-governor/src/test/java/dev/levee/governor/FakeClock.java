package dev.levee.governor;

import dev.levee.core.Ticker;
import java.util.PriorityQueue;

/**
 * Fakes the monotonic clock and the timer together, so tests drive whole timelines without
 * sleeping (after grpc-java's FakeClock). Tasks run on the test's thread, in due order, with the
 * clock set to each task's due time. Times compare by subtraction: any origin works, including
 * values near {@link Long#MAX_VALUE} that wrap during the test. Not thread-safe except {@link
 * #read()}, which other threads may call.
 */
final class FakeClock implements Ticker, GovernorTimer {

    private volatile long now;
    private long seq;
    private final PriorityQueue<Task> tasks = new PriorityQueue<>((a, b) -> {
        long d = a.due - b.due;
        return d != 0 ? (d < 0 ? -1 : 1) : Long.compare(a.seq, b.seq);
    });
    private int scheduled;
    private int cancelled;

    FakeClock(long origin) {
        this.now = origin;
    }

    @Override
    public long read() {
        return now;
    }

    @Override
    public synchronized Cancellable schedule(long delayNs, Runnable task) {
        if (delayNs < 1) {
            throw new AssertionError("delay must be ≥ 1 ns, got " + delayNs);
        }
        Task t = new Task(now + delayNs, seq++, task);
        tasks.add(t);
        scheduled++;
        return () -> {
            synchronized (FakeClock.this) {
                if (tasks.remove(t)) {
                    cancelled++;
                }
            }
        };
    }

    /** Advances the clock by {@code ns}, running every task due on the way, in order. */
    void advance(long ns) {
        advanceTo(now + ns);
    }

    /** Advances the clock to {@code target}, running every task due on the way, in order. */
    void advanceTo(long target) {
        while (true) {
            Task t;
            synchronized (this) {
                t = tasks.peek();
                if (t == null || t.due - target > 0) {
                    break;
                }
                tasks.poll();
                now = t.due;
            }
            t.task.run();
        }
        now = target;
    }

    /** Runs the next task (advancing the clock to its due time); returns false if none is pending. */
    boolean runNext() {
        Task t;
        synchronized (this) {
            t = tasks.poll();
            if (t == null) {
                return false;
            }
            now = t.due;
        }
        t.task.run();
        return true;
    }

    synchronized int pending() {
        return tasks.size();
    }

    /** Returns the due time of the next pending task; fails if none. */
    synchronized long nextDue() {
        return tasks.element().due;
    }

    synchronized int scheduledCount() {
        return scheduled;
    }

    synchronized int cancelledCount() {
        return cancelled;
    }

    private record Task(long due, long seq, Runnable task) {
    }
}
