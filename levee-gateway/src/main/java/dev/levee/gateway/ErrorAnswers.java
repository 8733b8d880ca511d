package dev.levee.gateway;

import dev.levee.runtime.LogText;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway's own S3 error answers, with the bodies {@link SlowDown} renders: {@code 503 SlowDown} for a
 * refusal (docs/design.md §1 step 5, §8), the signature and principal refusals, {@code 502 BadGateway}, and
 * the answer to an exchange given up because of its client or its backend ({@code 400}, {@code 504}). Each
 * answers only while it still can ({@link #canAnswer}); a request whose body was not read is answered with
 * {@code Connection: close} and never forwarded.
 */
final class ErrorAnswers {

    private static final Logger LOG = LoggerFactory.getLogger("levee.gateway");

    private ErrorAnswers() {
    }

    /**
     * Says whether an error answer can still be given: not when the response ended or its connection
     * closed, nor once the status line is out (then only closing the connection tells the client, which
     * this does).
     */
    static boolean canAnswer(HttpServerRequest req) {
        HttpServerResponse resp = req.response();
        if (resp.ended() || resp.closed()) {
            return false;
        }
        if (resp.headWritten()) {
            req.connection().close();
            return false;
        }
        return true;
    }

    /**
     * Answers {@code 503 SlowDown} with {@code Retry-After} ({@code retryAfter} seconds, at least 1) and its
     * milliseconds; {@code closing} (the gateway drains) adds {@code Connection: close}; {@code why} goes to
     * the DEBUG line only.
     */
    static void refuse(HttpServerRequest req, long retryAfter, String why, boolean closing) {
        HttpServerResponse resp = req.response();
        if (!canAnswer(req)) {
            return;
        }
        String rid = SlowDown.newRequestId();
        if (closing) {
            resp.putHeader("Connection", "close"); // draining: the connection carries no other request
        }
        long seconds = Math.max(1, retryAfter);
        // the reason phrase S3 sends: SDKs tell a throttled HEAD, which has no body, by it (issue 24)
        resp.setStatusCode(503).setStatusMessage(SlowDown.REASON_PHRASE)
                .putHeader("Content-Type", "application/xml")
                .putHeader("Retry-After", Long.toString(seconds))
                .putHeader(SlowDown.RETRY_AFTER_MS_HEADER, Long.toString(SlowDown.retryAfterMillis(seconds)))
                .putHeader("x-amz-request-id", rid);
        endUnread(req, req.method() == HttpMethod.HEAD ? null
                : SlowDown.xml("SlowDown", "Please reduce your request rate.", req.path(), rid));
        LOG.debug("refused {} {} ({})", req.method(), LogText.escape(req.path()), why);
    }

    /** Answers a signature the gateway could not verify with the verdict's status and S3 code. */
    static void signatureRefused(HttpServerRequest req, SigV4Verifier.Verdict v) {
        HttpServerResponse resp = req.response();
        String rid = SlowDown.newRequestId();
        resp.setStatusCode(v.status()).putHeader("Content-Type", "application/xml").putHeader("x-amz-request-id", rid);
        endUnread(req, req.method() == HttpMethod.HEAD ? null : SlowDown.xml(v.code(), v.message(), req.path(), rid));
        // the path only: a presigned query is a credential until it expires
        LOG.debug("refused {} {} ({} {}: {})", req.method(), LogText.escape(req.path()), v.status(), v.code(),
                LogText.escape(v.reason()));
    }

    /** Answers {@code 403 AccessDenied} to a request without a known principal when anonymous ones are refused. */
    static void accessDenied(HttpServerRequest req) {
        HttpServerResponse resp = req.response();
        String rid = SlowDown.newRequestId();
        resp.setStatusCode(403).putHeader("Content-Type", "application/xml").putHeader("x-amz-request-id", rid);
        endUnread(req, req.method() == HttpMethod.HEAD ? null
                : SlowDown.xml("AccessDenied", "Unknown or missing access key: this gateway refuses anonymous requests.",
                        req.path(), rid));
        LOG.debug("refused {} {} (unknown principal)", req.method(), LogText.escape(req.path()));
    }

    /**
     * Ends a response whose request body may not have been read: the connection is then closed
     * rather than the body read and discarded, and never forwarded.
     */
    private static void endUnread(HttpServerRequest req, String body) {
        HttpServerResponse resp = req.response();
        boolean hasBody = req.headers().contains("Content-Length") && !"0".equals(req.getHeader("Content-Length"))
                || req.headers().contains("Transfer-Encoding");
        if (hasBody) {
            resp.putHeader("Connection", "close");
        }
        Future<Void> end = body == null ? resp.end() : resp.end(body);
        if (hasBody) {
            end.onComplete(v -> req.connection().close());
        }
    }

    /** Answers {@code 502 BadGateway} (the backend failed) and closes the connection, when it still can. */
    static void badGateway(HttpServerRequest req) {
        HttpServerResponse resp = req.response();
        if (!canAnswer(req)) {
            return;
        }
        String rid = SlowDown.newRequestId();
        resp.setStatusCode(502).putHeader("Content-Type", "application/xml").putHeader("Connection", "close")
                .end(SlowDown.xml("BadGateway", "The S3 backend could not be reached.", req.path(), rid));
    }

    /**
     * Answers an exchange the gateway gave up ({@code status} with S3 error {@code code}), when it still can,
     * then closes the connection: its request body was not read to its end.
     */
    static void abandoned(HttpServerRequest req, int status, String code, String message) {
        HttpServerResponse resp = req.response();
        if (!canAnswer(req)) {
            return;
        }
        String rid = SlowDown.newRequestId();
        resp.setStatusCode(status).putHeader("Content-Type", "application/xml").putHeader("x-amz-request-id", rid)
                .putHeader("Connection", "close")
                .end(SlowDown.xml(code, message, req.path(), rid))
                .onComplete(v -> req.connection().close());
    }
}
