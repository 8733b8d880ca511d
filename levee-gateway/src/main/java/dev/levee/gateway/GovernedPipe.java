package dev.levee.gateway;

import dev.levee.governor.GovernedStream;
import io.vertx.core.Context;
import io.vertx.core.Handler;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.streams.ReadStream;
import io.vertx.core.streams.WriteStream;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

/**
 * Moves one body through a {@link GovernedStream}: a request body from the client to the backend
 * (upload), or a response body from the backend to the client (download) (docs/design.md §8).
 *
 * <h2>Model</h2>
 * The pipe holds <em>credit</em>: bytes the governor has granted and the pipe has not forwarded
 * yet. A chunk that the credit covers is forwarded at once. Otherwise the pipe pauses the source,
 * holds that one chunk, and asks the governor for {@code max(missing, quantum)} bytes in one
 * request (one wake-up per quantum rather than per chunk); the grant pays the chunk, the rest
 * becomes credit, and the source resumes. So the source is read only as permits arrive: a paused
 * Vert.x stream stops reading its socket and the peer's TCP window closes. The sink's write queue
 * pauses the source as well. In the gateway at most one held chunk, one quantum of credit (a
 * permit, not data) and the sink's write queue (Netty's 64 KiB high-water mark) belong to a pipe:
 * about two quanta of data; nothing is buffered whole.
 *
 * <p>Granted bytes are never refunded (docs/design.md §8): the credit left when a body ends, at most one
 * quantum, is lost, which errs on the safe side of the ceiling. Bytes forwarded never exceed bytes
 * granted.
 *
 * <p>Before the transfer starts, {@link #prepay} takes the first permits, so that a refusal (wait
 * queue full, governor closed) can still be answered with {@code 503 SlowDown}.
 *
 * <p>Not thread-safe: every method runs on the request's event-loop context; grants that
 * complete on the timer's thread hop back to it.
 */
final class GovernedPipe {

    /** Hears how the transfer ended; called once, on the context, unless {@link #abort} came first. */
    interface Listener {
        /** The source ended and the sink was ended. */
        void ended();

        /**
         * The transfer failed: a refusal of the governor ({@link dev.levee.governor.RefusedException}),
         * or an I/O failure of the source or the sink.
         */
        void failed(Throwable cause);
    }

    private final Context context;
    private final GovernedStream stream;
    private final long quantum;
    private final Runnable onClose;

    private ReadStream<Buffer> source;
    private WriteStream<Buffer> sink;
    private Listener listener;
    private Runnable onAbort;

    private long credit;
    /** The handler of a prepay that waits for its permits, or null. */
    private Handler<Throwable> prepayThen;
    private Buffer held;
    private boolean waitingPermit;
    private boolean waitingDrain;
    private boolean done;
    private boolean closed;
    private boolean ended;
    private long forwarded;

    /**
     * Creates a pipe over an open stream.
     *
     * @param context the request's event-loop context
     * @param stream  the stream of the request's principal and direction
     * @param onClose runs once when the stream is closed (the gateway's open-stream gauge)
     */
    GovernedPipe(Context context, GovernedStream stream, Runnable onClose) {
        this.context = context;
        this.stream = stream;
        this.quantum = Math.max(1, stream.quantumBytes());
        this.onClose = onClose;
    }

    /** Returns the largest single grant of this pipe's principal, in bytes. */
    long quantum() {
        return quantum;
    }

    /** Returns the bytes forwarded so far. */
    long forwarded() {
        return forwarded;
    }

    /**
     * Takes {@code bytes} of permits before the transfer starts; {@code then} runs on the context
     * with {@code null} once they are granted (at once when the buckets hold them) or with the
     * refusal. Does not run {@code then} if the pipe is aborted first.
     */
    void prepay(long bytes, Handler<Throwable> then) {
        if (bytes <= quantum) {
            try {
                if (stream.tryAcquire(bytes)) {
                    credit += bytes;
                    then.handle(null);
                    return;
                }
            } catch (RuntimeException refused) {
                done = true;
                closeStream();
                then.handle(refused);
                return;
            }
        }
        prepayThen = then;
        acquireAsync(bytes, e -> {
            prepayThen = null;
            if (e != null) {
                done = true;
                closeStream();
                then.handle(e);
            } else {
                credit += bytes;
                then.handle(null);
            }
        });
    }

    /** Whether a {@link #prepay} waits for its permits (nothing of the transfer has started). */
    boolean prepaying() {
        return prepayThen != null && !done;
    }

    /**
     * Ends a {@link #prepay} that waits for its permits as a refusal: its handler gets {@code why} (so the request
     * is answered {@code 503 SlowDown}, as one refused at once), and the request for permits is cancelled. Does
     * nothing when no prepay waits. Used when the site's shares expire while a request waits for its first permits
     * (docs/site-bandwidth.md, "Fail closed"): nothing has reached the client yet, and new requests are refused.
     */
    void refusePrepay(Throwable why) {
        if (!prepaying()) {
            return;
        }
        Handler<Throwable> then = prepayThen;
        prepayThen = null;
        done = true;
        closeStream(); // cancels the outstanding request for permits
        then.handle(why);
    }

    /**
     * Starts moving bytes: resumes {@code source} and forwards each chunk to {@code sink} as
     * permits allow; ends {@code sink} when {@code source} ends.
     *
     * @param onAbort runs if {@link #abort} stops the transfer before it ended: reset the other side
     */
    void start(ReadStream<Buffer> source, WriteStream<Buffer> sink, Listener listener, Runnable onAbort) {
        this.source = source;
        this.sink = sink;
        this.listener = listener;
        this.onAbort = onAbort;
        sink.exceptionHandler(this::fail);
        source.exceptionHandler(this::fail);
        source.endHandler(v -> {
            if (done) {
                return;
            }
            done = true;
            ended = true;
            closeStream();
            sink.end();
            listener.ended();
        });
        source.handler(this::onChunk);
        source.resume();
    }

    /**
     * Stops the transfer because the exchange ended early (the client went away, the backend
     * answered before the body was sent): cancels a waiting permit request and closes the stream.
     * Bytes granted are not refunded. Idempotent; does nothing after a normal end.
     */
    void abort() {
        if (done) {
            closeStream();
            return;
        }
        done = true;
        held = null;
        closeStream(); // cancels the outstanding request, if any
        if (onAbort != null) {
            onAbort.run();
        }
    }

    /** Returns whether the source ended and the sink was ended (a complete transfer). */
    boolean ended() {
        return ended;
    }

    /**
     * Stops reading without touching the other side: the backend answered before the request
     * body was sent, and its answer is still to be relayed. Cancels a waiting permit request.
     */
    void detach() {
        if (!done) {
            done = true;
            held = null;
        }
        closeStream();
    }

    private void onChunk(Buffer chunk) {
        if (done) {
            return;
        }
        int n = chunk.length();
        if (n <= credit) {
            credit -= n;
            write(chunk);
            return;
        }
        long ask = Math.max(n - credit, quantum);
        if (ask <= quantum) {
            boolean granted;
            try {
                granted = stream.tryAcquire(ask);
            } catch (RuntimeException refused) {
                fail(refused);
                return;
            }
            if (granted) {
                credit = credit + ask - n;
                write(chunk);
                return;
            }
        }
        source.pause();
        held = chunk;
        acquireAsync(ask, e -> {
            if (e != null) {
                fail(e);
                return;
            }
            credit = credit + ask - n;
            Buffer h = held;
            held = null;
            write(h);
            resumeIfIdle();
        });
    }

    private void acquireAsync(long bytes, Handler<Throwable> then) {
        CompletionStage<Void> grant;
        try {
            grant = stream.acquireAsync(bytes);
        } catch (RuntimeException e) {
            then.handle(e);
            return;
        }
        waitingPermit = true;
        grant.whenComplete((v, e) -> context.runOnContext(x -> {
            waitingPermit = false;
            if (!done) {
                then.handle(e instanceof CompletionException && e.getCause() != null ? e.getCause() : e);
            }
        }));
    }

    private void write(Buffer chunk) {
        forwarded += chunk.length();
        sink.write(chunk);
        if (sink.writeQueueFull()) {
            waitingDrain = true;
            source.pause();
            sink.drainHandler(v -> {
                waitingDrain = false;
                resumeIfIdle();
            });
        }
    }

    private void resumeIfIdle() {
        if (!done && !waitingPermit && !waitingDrain && held == null) {
            source.resume();
        }
    }

    private void fail(Throwable cause) {
        if (done) {
            return;
        }
        done = true;
        held = null;
        closeStream();
        listener.failed(cause);
    }

    private void closeStream() {
        if (!closed) {
            closed = true;
            stream.close();
            onClose.run();
        }
    }
}
