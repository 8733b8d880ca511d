package dev.levee.gateway;

import io.vertx.core.Handler;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.streams.ReadStream;
import java.util.ArrayDeque;

/**
 * The body of a backend's early answer (it answered before the request body was sent: {@code 404 NoSuchBucket},
 * {@code 403}) as a {@link ReadStream} that reads its source at once, whatever its reader does, and holds what came
 * until the reader takes it (issue 22, item 5).
 *
 * <p>Why: such a backend closes or resets its connection right after its answer. Vert.x then fails the response
 * with "Connection was closed" — delivered at once, ahead of the chunks and the end still queued behind a paused
 * response (a pipe waiting for its first download permits, a client slow to read) — and an answer already received
 * whole was lost (answered {@code 502}). Here the end, once received, wins: a failure after it is ignored, and a
 * failure before it is told to the reader only after the chunks that came before it.
 *
 * <p>At most {@code maxHeld} bytes are held; past that the source is paused (back-pressure as usual): an early
 * answer is an error document of a few hundred bytes. Not thread-safe: the request's event loop uses it.
 */
final class EarlyAnswer implements ReadStream<Buffer> {

    private final ReadStream<Buffer> source;
    private final long maxHeld;
    private final ArrayDeque<Buffer> held = new ArrayDeque<>();
    private long heldBytes;
    private boolean sourceEnded;
    private Throwable sourceFailure;
    private boolean delivered; // the end or the failure was given to the reader
    private long demand; // nothing is handed on before the reader asks
    private boolean sourcePaused;
    private boolean draining;
    private Handler<Buffer> handler;
    private Handler<Void> endHandler;
    private Handler<Throwable> exceptionHandler;

    /**
     * Starts reading {@code source} at once.
     *
     * @param maxHeld bytes held for the reader at most before the source is paused, &gt; 0
     */
    EarlyAnswer(ReadStream<Buffer> source, long maxHeld) {
        this.source = source;
        this.maxHeld = maxHeld;
        source.handler(this::received);
        source.endHandler(v -> {
            sourceEnded = true;
            drain();
        });
        source.exceptionHandler(e -> {
            if (!sourceEnded && sourceFailure == null) {
                sourceFailure = e;
                drain();
            }
        });
        source.resume();
    }

    /** Returns whether the source ended (the whole answer is held or was handed on). */
    boolean complete() {
        return sourceEnded;
    }

    /** Returns how the source failed before its end, or null. */
    Throwable failure() {
        return sourceEnded ? null : sourceFailure;
    }

    private void received(Buffer b) {
        held.add(b);
        heldBytes += b.length();
        if (heldBytes >= maxHeld && !sourcePaused) {
            sourcePaused = true;
            source.pause();
        }
        drain();
    }

    private void drain() {
        if (draining) {
            return;
        }
        draining = true;
        try {
            while (demand > 0 && !held.isEmpty() && handler != null) {
                Buffer b = held.poll();
                heldBytes -= b.length();
                if (demand != Long.MAX_VALUE) {
                    demand--;
                }
                handler.handle(b);
            }
            if (sourcePaused && heldBytes < maxHeld) {
                sourcePaused = false;
                source.resume();
            }
            if (held.isEmpty() && !delivered) {
                if (sourceEnded && endHandler != null) {
                    delivered = true;
                    endHandler.handle(null);
                } else if (sourceFailure != null && exceptionHandler != null) {
                    delivered = true;
                    exceptionHandler.handle(sourceFailure);
                }
            }
        } finally {
            draining = false;
        }
    }

    @Override
    public EarlyAnswer exceptionHandler(Handler<Throwable> handler) {
        this.exceptionHandler = handler;
        return this;
    }

    @Override
    public EarlyAnswer handler(Handler<Buffer> handler) {
        this.handler = handler;
        return this;
    }

    @Override
    public EarlyAnswer pause() {
        demand = 0;
        return this;
    }

    @Override
    public EarlyAnswer resume() {
        return fetch(Long.MAX_VALUE);
    }

    @Override
    public EarlyAnswer fetch(long amount) {
        if (amount > 0) {
            demand = amount == Long.MAX_VALUE || demand > Long.MAX_VALUE - amount ? Long.MAX_VALUE : demand + amount;
            drain();
        }
        return this;
    }

    @Override
    public EarlyAnswer endHandler(Handler<Void> endHandler) {
        this.endHandler = endHandler;
        return this;
    }
}
