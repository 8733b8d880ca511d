package dev.levee.gateway;

import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.streams.WriteStream;
import java.util.function.LongSupplier;

/**
 * The backend request as the request body's sink: tells the exchange's {@link BackendWatch} when a write is handed
 * to the backend's connection, when it reaches the socket, and when the request is ended, so that
 * {@code --backend-timeout} counts only the backend's own slowness (issue 22, item 3).
 *
 * <p>Not thread-safe: the request's event loop uses it.
 */
final class BackendSink implements WriteStream<Buffer> {

    private final WriteStream<Buffer> out;
    private final BackendWatch watch;
    private final LongSupplier nanoTime;

    BackendSink(WriteStream<Buffer> out, BackendWatch watch, LongSupplier nanoTime) {
        this.out = out;
        this.watch = watch;
        this.nanoTime = nanoTime;
    }

    @Override
    public BackendSink exceptionHandler(Handler<Throwable> handler) {
        out.exceptionHandler(handler);
        return this;
    }

    @Override
    public Future<Void> write(Buffer data) {
        watch.writing(nanoTime.getAsLong());
        Future<Void> f = out.write(data);
        int n = data.length();
        f.onComplete(ar -> watch.written(ar.succeeded() ? Math.max(1, n) : 0, nanoTime.getAsLong()));
        return f;
    }

    @Override
    public Future<Void> end() {
        watch.requestEnded(nanoTime.getAsLong());
        return out.end();
    }

    @Override
    public Future<Void> end(Buffer data) {
        watch.writing(nanoTime.getAsLong());
        watch.requestEnded(nanoTime.getAsLong());
        Future<Void> f = out.end(data);
        f.onComplete(ar -> watch.written(ar.succeeded() ? Math.max(1, data.length()) : 0, nanoTime.getAsLong()));
        return f;
    }

    @Override
    public BackendSink setWriteQueueMaxSize(int maxSize) {
        out.setWriteQueueMaxSize(maxSize);
        return this;
    }

    @Override
    public boolean writeQueueFull() {
        return out.writeQueueFull();
    }

    @Override
    public BackendSink drainHandler(Handler<Void> handler) {
        out.drainHandler(handler);
        return this;
    }
}
