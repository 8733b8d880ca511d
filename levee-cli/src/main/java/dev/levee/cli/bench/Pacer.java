package dev.levee.cli.bench;

import io.netty.channel.EventLoop;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;

/**
 * Issues the requests of an open-loop load at their scheduled times on one event loop (issue 12, item 5): each run
 * issues every request whose time has come, then sleeps until the next one is due — on Netty's scheduled tasks, which
 * wake to the microsecond (a timerfd on epoll), not on Vert.x's timers, whose millisecond tick alone would add up to
 * 1 ms to a request's latency measured from its scheduled time. A run at most every {@value #MIN_GAP_US} µs.
 */
public final class Pacer implements Runnable {

    /** Shortest sleep between two runs: {@value} µs (at high rates each run issues several requests). */
    static final long MIN_GAP_US = 50;

    private final EventLoop loop;
    private final long start;
    private final double rate;
    private final long total;
    private final LongConsumer issue;
    private long issued;

    private Pacer(EventLoop loop, long start, double rate, long total, LongConsumer issue) {
        this.loop = loop;
        this.start = start;
        this.rate = rate;
        this.total = total;
        this.issue = issue;
    }

    /**
     * Issues {@code total} requests at {@code rate} per second from {@code start} (System.nanoTime), calling
     * {@code issue} with each request's number on {@code loop}; request {@code n} is due at
     * {@code start + n / rate} seconds.
     */
    public static void start(EventLoop loop, long start, double rate, long total, LongConsumer issue) {
        loop.execute(new Pacer(loop, start, rate, total, issue));
    }

    /** The scheduled time of request {@code n}, System.nanoTime. */
    public static long scheduled(long start, double rate, long n) {
        return start + (long) (n / rate * 1e9);
    }

    @Override
    public void run() {
        long now = System.nanoTime();
        long due = Math.min(total, (long) ((now - start) / 1e9 * rate) + 1);
        while (issued < due) {
            issue.accept(issued++);
        }
        if (issued < total) {
            long wait = Math.max(scheduled(start, rate, issued) - System.nanoTime(), MIN_GAP_US * 1000);
            loop.schedule(this, wait, TimeUnit.NANOSECONDS);
        }
    }
}
