package dev.levee.gateway;

import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import java.io.ByteArrayOutputStream;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A stand-in S3 backend on a free loopback port, for component tests of the gateway: it records
 * the last request's headers and body exactly as received, and serves {@code GET} bodies of
 * {@code ?size=N} bytes (byte {@code i} is {@code i % 251}), counting what it managed to write;
 * requests to {@link #MISSING_BUCKET} are answered {@code 404} before their body is read.
 */
final class StubBackend implements AutoCloseable {

    /** A bucket that does not exist: requests to it are answered 404 before their body is read. */
    static final String MISSING_BUCKET = "missing-bucket";
    /** Requests to it are answered 400 after 200 ms, whatever their body (none of it is read). */
    static final String LATE_ANSWER_BUCKET = "late-answer-bucket";
    /** Requests to it get a 404 whose body is cut: 100 of its 1000 bytes, then the connection closes. */
    static final String CUT_ANSWER_BUCKET = "cut-answer-bucket";

    final Vertx vertx = Vertx.vertx();
    final HttpServer server;
    final AtomicReference<MultiMap> lastHeaders = new AtomicReference<>();
    final AtomicReference<byte[]> lastBody = new AtomicReference<>();
    /** Bytes of GET bodies handed to the socket (write futures completed). */
    final AtomicLong written = new AtomicLong();
    /** Requests to {@link #MISSING_BUCKET} answered before their body was read. */
    final AtomicLong earlyAnswers = new AtomicLong();
    /** Bytes of request bodies received. */
    final AtomicLong received = new AtomicLong();

    StubBackend() throws Exception {
        server = vertx.createHttpServer(new HttpServerOptions().setHost("127.0.0.1").setPort(0))
                .requestHandler(this::handle).listen().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    int port() {
        return server.actualPort();
    }

    static byte pattern(long i) {
        return (byte) (i % 251);
    }

    private void handle(HttpServerRequest req) {
        if (req.path().startsWith("/" + MISSING_BUCKET + "/")) {
            answerEarly(req);
            return;
        }
        if (req.path().startsWith("/" + LATE_ANSWER_BUCKET + "/")) {
            earlyAnswers.incrementAndGet();
            vertx.setTimer(200, t -> req.response().setStatusCode(400).putHeader("Content-Length", "0").end());
            return;
        }
        if (req.path().startsWith("/" + CUT_ANSWER_BUCKET + "/")) {
            HttpServerResponse resp = req.response().setStatusCode(404).putHeader("Content-Length", "1000");
            resp.write(Buffer.buffer(new byte[100])).onComplete(v -> req.connection().close());
            return;
        }
        if ("100-continue".equalsIgnoreCase(req.getHeader("Expect"))) {
            req.response().writeContinue(); // as S3 does once it wants the body
        }
        if (req.method().name().equals("GET")) {
            String size = req.getParam("size");
            serve(req.response(), size == null ? 0 : Long.parseLong(size));
            return;
        }
        lastHeaders.set(MultiMap.caseInsensitiveMultiMap().addAll(req.headers()));
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        req.handler(b -> {
            received.addAndGet(b.length());
            if (body.size() < 64 * 1024 * 1024) {
                body.writeBytes(b.getBytes());
            }
        });
        req.endHandler(v -> {
            lastBody.set(body.toByteArray());
            req.response().putHeader("ETag", "\"stub\"").end();
        });
    }

    /**
     * As S3 answers a request to a bucket that does not exist: {@code 404 NoSuchBucket} at once,
     * before reading the body, then the connection closes with the body unread (the kernel resets
     * it when unread bytes are left).
     */
    private void answerEarly(HttpServerRequest req) {
        earlyAnswers.incrementAndGet();
        String xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>NoSuchBucket</Code>"
                + "<Message>The specified bucket does not exist</Message><BucketName>" + MISSING_BUCKET
                + "</BucketName></Error>";
        req.response().setStatusCode(404).putHeader("Content-Type", "application/xml").putHeader("Connection", "close")
                .end(xml).onComplete(v -> req.connection().close());
    }

    private void serve(HttpServerResponse resp, long size) {
        resp.putHeader("Content-Length", Long.toString(size)).putHeader("Content-Type", "application/octet-stream");
        long[] next = {0};
        Runnable[] pump = new Runnable[1];
        pump[0] = () -> {
            while (next[0] < size && !resp.writeQueueFull() && !resp.closed()) {
                int n = (int) Math.min(16 * 1024, size - next[0]);
                Buffer b = Buffer.buffer(n);
                for (int i = 0; i < n; i++) {
                    b.appendByte(pattern(next[0] + i));
                }
                next[0] += n;
                resp.write(b).onSuccess(v -> written.addAndGet(n));
            }
            if (next[0] >= size) {
                resp.end();
            } else if (!resp.closed()) {
                resp.drainHandler(v -> pump[0].run());
            }
        };
        pump[0].run();
    }

    @Override
    public void close() {
        try {
            vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("stub backend did not stop", e);
        }
    }
}
