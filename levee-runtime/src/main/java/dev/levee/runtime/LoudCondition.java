package dev.levee.runtime;

import java.time.Duration;

/**
 * Says when a lasting degraded condition (failing open, an unreachable observer) is to be logged: when it
 * begins, again at most once per interval while it lasts (with its reason, which may change), and once when
 * it ends (issue 13, docs/design.md §11 "a check path that fails open says so"). Pure: no I/O, no clock; the caller
 * passes the time (ticker nanoseconds) and does the logging. Thread-safe.
 */
public final class LoudCondition {

    /** The default interval between two warnings about one lasting condition: 10 s. */
    public static final Duration DEFAULT_INTERVAL = Duration.ofSeconds(10);

    /** What to say now. */
    public enum Kind {
        /** Nothing to log. */
        NONE,
        /** The condition began: warn. */
        BEGAN,
        /** It still lasts and the interval has passed since the last warning (or its reason changed): warn again. */
        LASTS,
        /** It ended: say so once. */
        ENDED
    }

    /**
     * The answer of one {@link #update}.
     *
     * @param kind        what to log
     * @param reason      the condition's reason (for {@link Kind#ENDED}: the last one), null for {@link Kind#NONE}
     * @param sinceNanos  how long the condition lasted so far (or in all, when it ended), ns
     */
    public record Report(Kind kind, String reason, long sinceNanos) {
        static final Report NONE = new Report(Kind.NONE, null, 0);

        /** Returns the duration in whole seconds, for messages. */
        public long seconds() {
            return sinceNanos / 1_000_000_000L;
        }
    }

    private final long intervalNanos;
    private String reason;
    private long since;
    private long lastWarned;

    /**
     * Creates a tracker.
     *
     * @param interval the least time between two warnings about the same lasting condition; positive
     * @throws IllegalArgumentException when {@code interval} is not positive
     */
    public LoudCondition(Duration interval) {
        if (interval == null || interval.isNegative() || interval.isZero()) {
            throw new IllegalArgumentException("warning interval must be positive");
        }
        this.intervalNanos = interval.toNanos();
    }

    /**
     * Updates the condition.
     *
     * @param now       the time, ticker nanoseconds
     * @param newReason why the condition holds now; null when it does not
     * @return what to log
     */
    public synchronized Report update(long now, String newReason) {
        if (newReason == null) {
            if (reason == null) {
                return Report.NONE;
            }
            Report r = new Report(Kind.ENDED, reason, now - since);
            reason = null;
            return r;
        }
        if (reason == null) {
            reason = newReason;
            since = now;
            lastWarned = now;
            return new Report(Kind.BEGAN, newReason, 0);
        }
        if (!newReason.equals(reason) || now - lastWarned >= intervalNanos) {
            reason = newReason;
            lastWarned = now;
            return new Report(Kind.LASTS, newReason, now - since);
        }
        return Report.NONE;
    }

    /** Returns the reason of the condition in force, or null when there is none. */
    public synchronized String reason() {
        return reason;
    }

    /** Returns whether the condition holds. */
    public synchronized boolean active() {
        return reason != null;
    }
}
