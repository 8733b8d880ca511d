package dev.levee.runtime;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.async.AsyncQueueFullPolicy;
import org.apache.logging.log4j.core.async.EventRoute;
import org.slf4j.LoggerFactory;

/**
 * What happens to a log line when the asynchronous loggers' ring is full ({@link Logging#QUEUE_SIZE} lines wait
 * for a target that does not keep up): it is dropped, never waited for — an event loop must not stall on a log
 * target (docs/decisions.md, "Logging") — and counted. The count is {@code levee_log_lines_dropped_total} on every
 * role's {@code /metrics} ({@link Metrics#newRegistry}), and a WARN says how many lines were dropped, at most once
 * per {@value #REPORT_INTERVAL_S} s while lines are being dropped (the WARN goes through the same ring: if it is
 * dropped too, it is counted and said again at the next report). Log4j's own {@code Discard} policy counted
 * without telling anyone.
 *
 * <p>Named in {@code log4j2.component.properties} ({@code log4j2.AsyncQueueFullPolicy}); Log4j makes one instance.
 */
public final class LogDrops implements AsyncQueueFullPolicy {

    /** Most often a WARN about dropped lines is logged: every 10 s. */
    public static final int REPORT_INTERVAL_S = 10;

    private static final LongAdder DROPPED = new LongAdder();
    private static final AtomicBoolean REPORTING = new AtomicBoolean();
    private static long reported;

    /** Made by Log4j (a public constructor without arguments). */
    public LogDrops() {
    }

    /**
     * Drops the event and counts it; the first drop of the process starts the reporter.
     *
     * @return always {@link EventRoute#DISCARD}
     */
    @Override
    public EventRoute getRoute(long backgroundThreadId, Level level) {
        DROPPED.increment();
        if (!REPORTING.get() && REPORTING.compareAndSet(false, true)) {
            startReporter();
        }
        return EventRoute.DISCARD;
    }

    /** Lines dropped since the process started, all levels. */
    public static long dropped() {
        return DROPPED.sum();
    }

    private static void startReporter() {
        // one daemon thread of the JDK's scheduler, made at the first drop only
        java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "levee-log-drops");
            t.setDaemon(true);
            return t;
        }).scheduleWithFixedDelay(LogDrops::report, REPORT_INTERVAL_S, REPORT_INTERVAL_S,
                java.util.concurrent.TimeUnit.SECONDS);
    }

    /** Logs a WARN when lines were dropped since the last report; returns how many it reported. */
    static synchronized long report() {
        long total = DROPPED.sum();
        long n = total - reported;
        if (n > 0) {
            reported = total;
            LoggerFactory.getLogger("levee.logging").warn("{} log lines dropped in the last {} s: the log target did not"
                    + " keep up with {} lines waiting ({} dropped since start; levee_log_lines_dropped_total)", n,
                    REPORT_INTERVAL_S, Logging.QUEUE_SIZE, total);
        }
        return n;
    }
}
