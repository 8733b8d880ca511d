package dev.levee.gateway;

import io.vertx.core.Handler;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.streams.ReadStream;
import java.util.function.LongSupplier;

/**
 * A request body as a {@link ReadStream} that tells its {@link ProgressDeadline} when the gateway
 * reads it (resumed, or fetching) and when it stops (paused by a {@link GovernedPipe} waiting for
 * permits, or by a pipe whose sink is full), and what the client delivers. The pipes use it in
 * place of the request, so the deadline measures the client's slowness only (issue 10, defect 6).
 *
 * <p>Not thread-safe: the request's event loop uses it.
 */
final class WatchedBody implements ReadStream<Buffer> {

    private final ReadStream<Buffer> body;
    private final ProgressDeadline deadline;
    private final LongSupplier nanoTime;
    private final Runnable onEnd;
    private boolean armed;
    private boolean paused = true;
    private Throwable failure;

    /**
     * Wraps a paused body.
     *
     * @param armed whether the client may send now; false while it waits for {@code 100 Continue}
     *              (then {@link #arm} starts the clock)
     * @param onEnd runs when the body has been read to its end, before the end handler
     */
    WatchedBody(ReadStream<Buffer> body, ProgressDeadline deadline, LongSupplier nanoTime, boolean armed, Runnable onEnd) {
        this.body = body;
        this.deadline = deadline;
        this.nanoTime = nanoTime;
        this.armed = armed;
        this.onEnd = onEnd;
    }

    /** Returns how reading the body failed (the client reset, bad chunked framing), or null. */
    Throwable failure() {
        return failure;
    }

    /** The client was told to send ({@code 100 Continue} written): the clock runs while reading. */
    void arm() {
        armed = true;
        if (!paused) {
            deadline.resume(nanoTime.getAsLong());
        }
    }

    /** The body ended or the exchange is over: the deadline stops counting. */
    void disarm() {
        armed = false;
        deadline.pause(nanoTime.getAsLong());
    }

    @Override
    public WatchedBody exceptionHandler(Handler<Throwable> handler) {
        body.exceptionHandler(e -> {
            if (failure == null) {
                failure = e;
            }
            if (handler != null) {
                handler.handle(e);
            }
        });
        return this;
    }

    @Override
    public WatchedBody handler(Handler<Buffer> handler) {
        if (handler == null) {
            body.handler(null);
        } else {
            body.handler(b -> {
                deadline.received(b.length(), nanoTime.getAsLong());
                handler.handle(b);
            });
        }
        return this;
    }

    @Override
    public WatchedBody pause() {
        paused = true;
        deadline.pause(nanoTime.getAsLong());
        body.pause();
        return this;
    }

    @Override
    public WatchedBody resume() {
        reading();
        body.resume();
        return this;
    }

    @Override
    public WatchedBody fetch(long amount) {
        if (amount > 0) {
            reading();
        }
        body.fetch(amount);
        return this;
    }

    @Override
    public WatchedBody endHandler(Handler<Void> endHandler) {
        if (endHandler == null) {
            body.endHandler(null);
        } else {
            body.endHandler(v -> {
                disarm();
                onEnd.run();
                endHandler.handle(v);
            });
        }
        return this;
    }

    private void reading() {
        paused = false;
        if (armed) {
            deadline.resume(nanoTime.getAsLong());
        }
    }
}
