package dev.levee.gateway;

import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.streams.WriteStream;
import java.util.function.LongSupplier;

/**
 * The client's response as the sink of a relayed body: it ends the response only once every byte
 * written before has reached the socket (the last write's future completed).
 *
 * <p>Why: when the response of a connection ends during a shutdown ({@code HttpServer.shutdown}),
 * Vert.x 5.1 closes that connection at once, and Netty drops what its outbound buffer still held:
 * a slow client lost the tail of its download (issue 10, defect 4; {@code GracefulShutdownTest}).
 * Ending after the flush leaves nothing but the end marker to write.
 *
 * <p>It also keeps the send timeout ({@code --send-timeout}, as NGINX's {@code send_timeout}, which
 * runs between two successive write operations): while a write handed to the connection has not
 * reached the socket, the client is expected to take some of it within the timeout; when no pending
 * write completes for that long, the client is not reading and {@code onStall} gives the request up
 * (issue 10: a slow reader must not hold its admission slot forever). Watching the writes' own
 * futures rather than the write queue's high-water mark also catches a response whose last bytes
 * wait below that mark, or whose end waits for them. Time with nothing pending (the writer waiting for
 * the governor or the backend) does not count. Not thread-safe: the request's event loop uses it.
 */
final class ResponseSink implements WriteStream<Buffer> {

    private final HttpServerResponse resp;
    private final Vertx vertx;
    private final long sendTimeoutNs;
    private final LongSupplier nanoTime;
    private final Runnable onStall;
    private Future<Void> lastWrite = Future.succeededFuture();
    private int pendingWrites;
    private long lastProgressNs;
    private long stallTimer = -1;
    private boolean stalled;

    /**
     * @param resp          the client's response
     * @param vertx         for the send-timeout timer
     * @param sendTimeoutMs longest time without a pending write reaching the socket, ms; 0 = none
     * @param nanoTime      the monotonic clock, ns
     * @param onStall       runs once when that time passes
     */
    ResponseSink(HttpServerResponse resp, Vertx vertx, long sendTimeoutMs, LongSupplier nanoTime, Runnable onStall) {
        this.resp = resp;
        this.vertx = vertx;
        this.sendTimeoutNs = java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(sendTimeoutMs);
        this.nanoTime = nanoTime;
        this.onStall = onStall;
    }

    @Override
    public ResponseSink exceptionHandler(Handler<Throwable> handler) {
        resp.exceptionHandler(handler);
        return this;
    }

    @Override
    public Future<Void> write(Buffer data) {
        if (pendingWrites++ == 0) {
            lastProgressNs = nanoTime.getAsLong();
        }
        armStallTimer(sendTimeoutNs);
        lastWrite = resp.write(data);
        lastWrite.onComplete(ar -> {
            pendingWrites--;
            lastProgressNs = nanoTime.getAsLong();
        });
        return lastWrite;
    }

    @Override
    public Future<Void> end() {
        return lastWrite.transform(ar -> ar.succeeded() ? resp.end() : Future.failedFuture(ar.cause()))
                .andThen(ar -> cancelStallTimer());
    }

    @Override
    public ResponseSink setWriteQueueMaxSize(int maxSize) {
        resp.setWriteQueueMaxSize(maxSize);
        return this;
    }

    @Override
    public boolean writeQueueFull() {
        return resp.writeQueueFull();
    }

    @Override
    public ResponseSink drainHandler(Handler<Void> handler) {
        resp.drainHandler(handler);
        return this;
    }

    private void armStallTimer(long delayNs) {
        if (sendTimeoutNs <= 0 || stallTimer >= 0 || stalled) {
            return;
        }
        stallTimer = vertx.setTimer(Math.max(1, java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(delayNs)), id -> {
            stallTimer = -1;
            if (pendingWrites == 0 || resp.closed()) {
                return; // nothing waits for the client; the next write arms the timer again
            }
            long idle = nanoTime.getAsLong() - lastProgressNs;
            if (idle - sendTimeoutNs >= 0) {
                stalled = true;
                onStall.run();
            } else {
                armStallTimer(sendTimeoutNs - idle);
            }
        });
    }

    /** Cancels a pending send timeout (the response ended or failed). */
    void cancelStallTimer() {
        if (stallTimer >= 0) {
            vertx.cancelTimer(stallTimer);
            stallTimer = -1;
        }
    }
}
