package dev.levee.governor;

import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;

/**
 * Drives one stream asynchronously, as the gateway would: requests {@code chunk} bytes, and when
 * they are granted requests the next chunk at once, until {@code total} bytes are granted or it is
 * stopped. Runs entirely on the thread that completes the grants (in tests, the fake clock's).
 */
final class Pump {

    final GovernedStream stream;
    private final long chunk;
    private final LongSupplier clock;
    private long toRequest;
    private boolean stopped;
    private Runnable onFinish;
    long granted;
    long chunks;
    long finishedAt;
    boolean finished;
    Throwable failure;

    Pump(GovernedStream stream, long chunk, long total, LongSupplier clock) {
        this.stream = stream;
        this.chunk = chunk;
        this.toRequest = total;
        this.clock = clock;
    }

    static Pump start(GovernedStream stream, long chunk, long total, LongSupplier clock) {
        return start(stream, chunk, total, clock, () -> { });
    }

    /** Starts a pump that runs {@code onFinish} when all {@code total} bytes are granted. */
    static Pump start(GovernedStream stream, long chunk, long total, LongSupplier clock, Runnable onFinish) {
        Pump p = new Pump(stream, chunk, total, clock);
        p.onFinish = onFinish;
        p.next();
        return p;
    }

    /** Stops after the outstanding chunk, if any, completes. */
    void stop() {
        stopped = true;
    }

    private void next() {
        while (!stopped && failure == null) {
            if (toRequest == 0) {
                finished = true;
                finishedAt = clock.getAsLong();
                onFinish.run();
                return;
            }
            long n = Math.min(chunk, toRequest);
            toRequest -= n;
            CompletableFuture<Void> f = stream.acquireAsync(n).toCompletableFuture();
            if (!f.isDone()) {
                f.whenComplete((v, e) -> {
                    if (e != null) {
                        failure = e;
                    } else {
                        granted += n;
                        chunks++;
                        next();
                    }
                });
                return;
            }
            try {
                f.join();
                granted += n;
                chunks++;
            } catch (RuntimeException e) {
                failure = e.getCause() != null ? e.getCause() : e;
            }
        }
    }
}
