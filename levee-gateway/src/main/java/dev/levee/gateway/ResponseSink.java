package dev.levee.gateway;

import io.vertx.core.Future;
import io.vertx.core.Handler;
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
 * Ending after the flush leaves nothing but the end marker to write. Not thread-safe: the
 * request's event loop uses it.
 */
final class ResponseSink implements WriteStream<Buffer> {

    private final HttpServerResponse resp;
    private Future<Void> lastWrite = Future.succeededFuture();

    ResponseSink(HttpServerResponse resp) {
        this.resp = resp;
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
        resp.drainHandler(handler);
        return this;
    }
}
