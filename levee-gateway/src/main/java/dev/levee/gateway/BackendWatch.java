package dev.levee.gateway;

/**
 * {@code --backend-timeout} of one exchange (issue 22, item 3): an idle timeout of the backend's side, counted only
 * while the gateway waits for the backend. Pure: no clock, no I/O; every method takes the time in nanoseconds of one
 * monotonic clock.
 *
 * <h2>What counts</h2>
 * <ul>
 *   <li><b>Taking the request body</b>: while a write handed to the backend's connection has not reached its socket
 *       (the backend reads nothing, its receive window is closed). Time the gateway itself holds the body — the
 *       upload governor withholding permits, a client slow to send, the wait for {@code 100 Continue} — has no
 *       write outstanding and costs nothing: a throttled upload never times out because Levee throttled it.</li>
 *   <li><b>Answering</b>: from the end of the request (its last byte handed to the connection) to the response's
 *       status line.</li>
 *   <li><b>Sending the response body</b>: while the gateway reads the response and nothing comes (a
 *       {@link WatchedBody} over the response drives {@link #deadline()}); time the gateway does not read (the
 *       download governor, a client slow to read) costs nothing.</li>
 * </ul>
 * Every byte the backend takes or sends refills the whole allowance ({@link ProgressDeadline} with no minimum
 * rate). Before, the timeout ran from the request's start to the status line, and cut every upload longer than it
 * with {@code 502}.
 *
 * <p>Not thread-safe: one request's event loop uses it.
 */
final class BackendWatch {

    private final ProgressDeadline deadline;
    private int pendingWrites;
    private boolean requestEnded;
    private boolean answered;

    /**
     * @param timeoutNanos the backend's longest time without progress while the gateway waits for it, &gt; 0
     * @throws IllegalArgumentException when {@code timeoutNanos <= 0}
     */
    BackendWatch(long timeoutNanos) {
        this.deadline = new ProgressDeadline(timeoutNanos, 0);
    }

    /** The deadline itself, for the {@link WatchedBody} over the response once it {@link #answered answered}. */
    ProgressDeadline deadline() {
        return deadline;
    }

    /** A write of the request body was handed to the backend's connection at {@code now}. */
    void writing(long now) {
        pendingWrites++;
        if (!requestEnded && !answered) {
            deadline.resume(now);
        }
    }

    /**
     * A write reached the socket ({@code bytes} &gt; 0) or failed ({@code bytes} = 0) at {@code now}. After a failed
     * write nothing more is sent: the answer (or the connection's close) is awaited, as after the request's end.
     */
    void written(long bytes, long now) {
        pendingWrites = Math.max(0, pendingWrites - 1);
        if (answered) {
            return; // the response's reading drives the deadline now
        }
        if (bytes <= 0) {
            requestEnded(now);
            return;
        }
        deadline.received(bytes, now);
        if (pendingWrites == 0 && !requestEnded) {
            deadline.pause(now); // nothing of the backend's to wait for until the next write
        }
    }

    /** The request was ended (its last byte handed to the connection) at {@code now}: the answer is awaited. */
    void requestEnded(long now) {
        requestEnded = true;
        if (!answered) {
            deadline.resume(now);
        }
    }

    /** The response's status line came at {@code now}; from here its reading drives the deadline. */
    void answered(long now) {
        answered = true;
        deadline.received(1, now);
        deadline.pause(now);
    }

    /** Returns whether the backend made no progress for the whole timeout while awaited, at {@code now}. */
    boolean expired(long now) {
        return deadline.expired(now);
    }

    /** Returns whether the request was ended (no handler may be set on it any more). */
    boolean requestEnded() {
        return requestEnded;
    }

    /** Returns what the backend was doing when it was awaited: for the log line of a timeout. */
    String phase() {
        return answered ? "sending its response" : requestEnded ? "answering" : "taking the request body";
    }
}
