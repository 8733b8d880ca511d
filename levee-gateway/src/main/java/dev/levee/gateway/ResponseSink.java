package dev.levee.gateway;

import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.streams.WriteStream;

/**
 * The client's response as the sink of a relayed body: it ends the response only once every byte
 * written before has reached the socket (the last write's future completed).
 *
 * <p>Why: when the response of a connection ends during a shutdown ({@code HttpServer.shutdown}),
 * Vert.x 5.1 closes that connection at once, and Netty drops what its outbound buffer still held:
 * a slow client lost the tail of its download (issue 10, defect 4; {@code GracefulShutdownTest}).
 * Ending after the flush leaves nothing but the end marker to write.
 *
 * <p>It also keeps the send timeout ({@code --send-timeout}, as NGINX's {@code send_timeout}): a writer
 * that finds the write queue full waits for a drain; when no drain comes for that long, the client is
 * not reading, and {@code onStall} gives the request up (issue 10: a slow reader must not hold its
 * admission slot forever). Time the writer spends elsewhere (waiting for the governor or the backend)
 * does not count. Not thread-safe: the request's event loop uses it.
 */
final class ResponseSink implements WriteStream<Buffer> {

    private final HttpServerResponse resp;
    private final Vertx vertx;
    private final long sendTimeoutMs;
    private final Runnable onStall;
    private Future<Void> lastWrite = Future.succeededFuture();
    private long stallTimer = -1;

    /**
     * @param resp          the client's response
     * @param vertx         for the send-timeout timer
     * @param sendTimeoutMs longest wait for a drain of a full write queue, ms; 0 = none
     * @param onStall       runs once when that wait expires
     */
    ResponseSink(HttpServerResponse resp, Vertx vertx, long sendTimeoutMs, Runnable onStall) {
        this.resp = resp;
        this.vertx = vertx;
        this.sendTimeoutMs = sendTimeoutMs;
        this.onStall = onStall;
    }

    @Override
    public ResponseSink exceptionHandler(Handler<Throwable> handler) {
        resp.exceptionHandler(handler);
        return this;
    }

    @Override
    public Future<Void> write(Buffer data) {
        lastWrite = resp.write(data);
        return lastWrite;
    }

    @Override
    public Future<Void> end() {
        cancelStallTimer();
        return lastWrite.transform(ar -> ar.succeeded() ? resp.end() : Future.failedFuture(ar.cause()));
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
        cancelStallTimer();
        if (handler == null || sendTimeoutMs <= 0) {
            resp.drainHandler(handler);
            return this;
        }
        stallTimer = vertx.setTimer(sendTimeoutMs, id -> {
            stallTimer = -1;
            if (resp.writeQueueFull() && !resp.ended() && !resp.closed()) {
                onStall.run();
            }
        });
        resp.drainHandler(v -> {
            cancelStallTimer();
            handler.handle(v);
        });
        return this;
    }

    /** Cancels a pending send timeout (the response ended or failed). */
    void cancelStallTimer() {
        if (stallTimer >= 0) {
            vertx.cancelTimer(stallTimer);
            stallTimer = -1;
        }
    }
}
