package dev.levee.gateway;

/**
 * The minimum-progress deadline of one request body (issue 10, defect 6): how long the gateway
 * waits for a client that sends too slowly. Pure: no clock, no I/O; every method takes the time
 * in nanoseconds of one monotonic clock.
 *
 * <h2>Model</h2>
 * The client holds an <em>allowance</em> of reading time, {@code timeout} at the start. It is
 * spent only while the gateway is reading the body ({@link #resume}d): time the gateway itself
 * does not read (the source paused while the bandwidth governor withholds permits, or while the
 * backend's connection is full) is the gateway's slowness, not the client's, and costs nothing.
 * Every byte received earns {@code 1 / minRate} seconds, up to {@code timeout} in all. The
 * deadline expires when the allowance is spent. So a client that stalls is cut after
 * {@code timeout} of reading time; one that sends at {@code r < minRate} after about
 * {@code timeout / (1 - r / minRate)}; one at or above {@code minRate} never. With
 * {@code minRate = 0} every byte refills the whole allowance: a pure idle timeout.
 *
 * <p>Not thread-safe: one request's event loop uses it.
 */
final class ProgressDeadline {

    private final long timeoutNanos;
    private final long minBytesPerSecond;
    private long allowance;
    private boolean reading;
    private long since;

    /**
     * Creates a deadline, not reading yet.
     *
     * @param timeoutNanos      the longest reading time without progress, nanoseconds, &gt; 0
     * @param minBytesPerSecond the rate below which a client loses allowance, bytes/s; 0 = idle timeout only
     * @throws IllegalArgumentException when {@code timeoutNanos <= 0} or {@code minBytesPerSecond < 0}
     */
    ProgressDeadline(long timeoutNanos, long minBytesPerSecond) {
        if (timeoutNanos <= 0 || minBytesPerSecond < 0) {
            throw new IllegalArgumentException("timeout must be > 0 and the minimum rate >= 0");
        }
        this.timeoutNanos = timeoutNanos;
        this.minBytesPerSecond = minBytesPerSecond;
        this.allowance = timeoutNanos;
    }

    /** The gateway starts (or resumes) reading the body at {@code now}. Idempotent. */
    void resume(long now) {
        if (!reading) {
            reading = true;
            since = now;
        }
    }

    /** The gateway stops reading at {@code now} (its own wait: governor or backend). Idempotent. */
    void pause(long now) {
        if (reading) {
            spend(now);
            reading = false;
        }
    }

    /** The client delivered {@code bytes} at {@code now}. */
    void received(long bytes, long now) {
        if (reading) {
            spend(now);
        }
        if (bytes <= 0) {
            return;
        }
        if (minBytesPerSecond == 0) {
            allowance = timeoutNanos;
            return;
        }
        // bytes / rate seconds, without overflow for any long byte count
        long earned = bytes >= Long.MAX_VALUE / 1_000_000_000L ? Long.MAX_VALUE
                : bytes * 1_000_000_000L / minBytesPerSecond;
        allowance = earned >= timeoutNanos - allowance ? timeoutNanos : allowance + earned;
    }

    /** Returns whether the allowance is spent at {@code now}. */
    boolean expired(long now) {
        return remaining(now) <= 0;
    }

    /** Returns the reading time left at {@code now}, nanoseconds (0 or less when expired). */
    long remaining(long now) {
        return reading ? allowance - Math.max(0, now - since) : allowance;
    }

    /** Returns whether the gateway is reading now. */
    boolean reading() {
        return reading;
    }

    private void spend(long now) {
        allowance -= Math.max(0, now - since);
        since = now;
    }
}
