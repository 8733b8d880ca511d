package dev.levee.gateway;

import dev.levee.client.ClientDecision;
import dev.levee.client.LeveeClient;
import dev.levee.core.Ticker;
import dev.levee.governor.Admission;
import dev.levee.governor.AdmissionClass;
import dev.levee.governor.Direction;
import dev.levee.governor.RefusedException;
import dev.levee.runtime.LogText;
import dev.levee.s3.S3Operation;
import dev.levee.s3.S3Request;
import io.vertx.core.Context;
import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.streams.Pipe;
import io.vertx.core.streams.ReadStream;
import java.time.Clock;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One request through the gateway and what it holds, from its head to the end of its response: the state
 * machine of {@link GatewayService}'s design comment ("One request"). {@link #begin} identifies the principal
 * and runs the rate check; {@link #admit} takes the admission slot; {@link #forward} takes the first upload
 * permits; {@link #openBackend} sends the request (once more on another connection when an idempotent
 * bodiless one failed before any answer), always with {@code Expect: 100-continue}, and {@link #proceed}
 * streams the body once the backend asked for it or the continue timeout passed; {@link #relay} relays the
 * answer, an early one included, through the download governor when charged. {@link #abandon} gives the
 * exchange up because of its client (too slow, bad body) or its backend ({@code --backend-timeout});
 * {@link #finish} releases everything it holds, once.
 *
 * <p>Every field is used on the request's event-loop context only. Time is read from the gateway's
 * {@link Ticker} (deadlines, the backend watch) and wall clock (signed requests' dates).
 */
final class Exchange {

    private static final Logger LOG = LoggerFactory.getLogger("levee.gateway");
    private static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-authenticate",
            "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "expect");
    /**
     * Longest time, ms, the gateway reads and discards the rest of a request body after answering
     * it early, before it closes the connection (closeAfterLinger).
     */
    private static final long LINGER_MILLIS = 2_000;
    /**
     * Bytes of a backend's early answer (it answered before the request body was sent) read ahead of the client and
     * held, so that the backend's close right after it cannot destroy it (EarlyAnswer); error documents are far
     * smaller.
     */
    private static final long EARLY_ANSWER_MAX_HELD = 1 << 20;
    /** Seconds a client is told to wait after a governance refusal (Retry-After). */
    private static final long RETRY_AFTER_SECONDS = 1;
    /** Methods that may be sent again (RFC 9110 §9.2.2) when they carry no body. */
    private static final Set<HttpMethod> IDEMPOTENT = Set.of(HttpMethod.GET, HttpMethod.HEAD,
            HttpMethod.DELETE, HttpMethod.OPTIONS);

    /**
     * What the exchanges of one gateway share.
     *
     * @param client        the check client; null when the gateway does not enforce
     * @param governance    the governors and admission; null when governance is off
     * @param backend       the backend's HTTP client
     * @param ticker        the monotonic time of deadlines and the backend watch, ns
     * @param wallClock     the wall clock that signed requests' times are compared with (SigV4 dates)
     * @param inFlight      requests being handled now; an exchange counts itself out when it finishes
     * @param closing       whether the gateway drains
     * @param failingClosed whether a transfer of an operation is refused now because its site shares expired
     * @param prepayWatch   watches a pipe's first permits for the site's shares expiring (the site watch)
     */
    record Shared(Vertx vertx, GatewayOptions options, LeveeClient client, Governance governance,
                  HttpClientAgent backend, Ticker ticker, Clock wallClock, GatewayCounters counters,
                  AtomicInteger inFlight, BooleanSupplier closing, Predicate<S3Operation> failingClosed,
                  BiConsumer<Exchange, GovernedPipe> prepayWatch) {
    }

    private final Shared gw;
    private final Vertx vertx;
    private final GatewayOptions options;
    final HttpServerRequest req;
    final Context context;
    /** After the exchange: lets a keep-alive connection wait for its next request head. */
    private final Runnable awaitNextHead;
    String principal;
    S3Operation operation = S3Operation.Unknown;
    CompletableFuture<Admission> pendingAdmission;
    Admission admission;
    GovernedPipe upload;
    GovernedPipe download;
    /** The request body as the pipes read it, with its progress deadline; null without a body. */
    WatchedBody body;
    ProgressDeadline bodyDeadline;
    long bodyTimer = -1;
    /** The plain (ungoverned) pipe of the request body, if any. */
    Pipe<Buffer> plainPipe;
    HttpClientRequest backendRequest;
    HttpClientRequest unfinishedBackendRequest;
    /** Whether the request body was read to its end (or there is none). */
    boolean bodyDone;
    /** Whether the client was told to send its body ({@code 100 Continue}), when it asked. */
    boolean continued;
    boolean expectContinue;
    /** Whether the backend request carries {@code Expect: 100-continue} (not when the client signed its own Expect). */
    boolean backendExpects;
    /** Whether the body is being streamed to the backend (after its 100 Continue or the continue timeout). */
    boolean proceeded;
    long continueTimer = -1;
    /** Answered by the gateway because of its client (too slow, bad body): the backend's answer is not wanted. */
    boolean abandoned;
    /** The backend answered before the body was read: close the connection after the response. */
    boolean lingerAfterResponse;
    /** The backend's response failed (its connection closed or was reset) before it was relayed whole. */
    Throwable backendResponseFailure;
    /** {@code --backend-timeout}: the backend's slowness while the gateway waits for it; null before the request. */
    BackendWatch backendWatch;
    long backendTimer = -1;
    boolean finished;

    /**
     * @param gw            what the gateway's exchanges share
     * @param req           the request, paused
     * @param context       its event-loop context
     * @param awaitNextHead run when the exchange finished without closing its connection
     */
    Exchange(Shared gw, HttpServerRequest req, Context context, Runnable awaitNextHead) {
        this.gw = gw;
        this.vertx = gw.vertx();
        this.options = gw.options();
        this.req = req;
        this.context = context;
        this.awaitNextHead = awaitNextHead;
    }

    boolean governed() {
        return principal != null;
    }

    /**
     * Starts the exchange of a request counted in flight: its principal (governance on), then the rate check
     * (enforcement on), then {@link #admit}.
     */
    void begin() {
        Governance governance = gw.governance();
        HttpServerResponse resp = req.response();
        resp.closeHandler(v -> finish());
        resp.endHandler(v -> finish());
        resp.exceptionHandler(e -> LOG.debug("writing to the client failed: {}", LogText.escape(e.toString())));
        String host = req.getHeader("Host");
        if (governance != null) {
            operation = governance.classify(req.method().name(), host, req.uri(), req.getHeader("x-amz-copy-source"))
                    .operation();
            Governance.Identity id = governance.identify(req.method().name(), req.path(), req.query(), req.headers(),
                    gw.wallClock().millis());
            if (id.refusal() != null) {
                count("signature_refused");
                ErrorAnswers.signatureRefused(req, id.refusal());
                return;
            }
            principal = id.principal();
            if (principal == null) {
                count("principal_refused");
                ErrorAnswers.accessDenied(req);
                return;
            }
        }
        if (!options.enforce()) {
            admit();
            return;
        }
        S3Request s3 = S3Request.fromRequestUri(req.method().name(), host, req.uri(), req.getHeader("x-amz-copy-source"));
        gw.client().check(s3).onComplete(ar -> {
            ClientDecision d = ar.succeeded() ? ar.result() : null;
            if (d == null || d.result() == ClientDecision.Result.FAILED) {
                count("failed");
                if (options.onFailure() == GatewayOptions.OnFailure.DENY) {
                    refuse(1, "rate check failed");
                } else {
                    admit();
                }
            } else if (d.result() == ClientDecision.Result.REJECTED) {
                count("rejected");
                rateLimitFields(req.response(), d);
                refuse(d.retryAfter(), "rate limit");
            } else {
                count("accepted");
                if (options.rateLimitOnAccept()) {
                    rateLimitFields(req.response(), d); // kept: the backend's answer is added to these headers
                }
                admit();
            }
        });
    }

    /** Releases everything the exchange holds; runs once, when the response ends or the connection closes. */
    void finish() {
        if (finished) {
            return;
        }
        finished = true;
        stopBodyDeadline();
        stopBackendWatch();
        if (continueTimer >= 0) {
            vertx.cancelTimer(continueTimer);
        }
        if (pendingAdmission != null) {
            pendingAdmission.cancel(false); // a slot granted meanwhile is closed by admitted()
        }
        if (admission != null) {
            admission.close();
        }
        if (upload != null) {
            upload.abort();
        }
        if (download != null) {
            download.abort();
        }
        if (unfinishedBackendRequest != null) {
            quiet(unfinishedBackendRequest).reset();
        } else if (backendRequest != null && !bodyDone && !req.response().headWritten()) {
            // the client went away before its body was sent (a malformed body, a reset) and before an
            // answer: the backend's work is not wanted, and its connection is freed now rather than at
            // its answer; the request is not ended (its body was not), and quiet() since its creation
            backendRequest.reset();
        }
        gw.inFlight().decrementAndGet();
        if (lingerAfterResponse && !req.response().closed()) {
            closeAfterLinger();
        } else {
            awaitNextHead.run(); // a keep-alive connection waits for its next request head
        }
    }

    void stopBackendWatch() {
        if (backendTimer >= 0) {
            vertx.cancelTimer(backendTimer);
            backendTimer = -1;
        }
    }

    void stopBodyDeadline() {
        if (bodyTimer >= 0) {
            vertx.cancelTimer(bodyTimer);
            bodyTimer = -1;
        }
        if (body != null) {
            body.disarm();
        }
    }

    /** Takes the exchange's admission slot, if its operation needs one, then forwards it. */
    private void admit() {
        if (governed() && !finished && gw.failingClosed().test(operation)) {
            count("site_failing_closed");
            refuse(RETRY_AFTER_SECONDS, "site bandwidth shares expired (failing closed, docs/design.md §10)");
            return;
        }
        AdmissionClass c = governed() ? TransferPolicy.admissionClass(operation) : null;
        if (c == null || finished) {
            if (!finished) {
                forward();
            }
            return;
        }
        CompletableFuture<Admission> f = gw.governance().admit(principal, c).toCompletableFuture();
        if (f.isDone() && !f.isCompletedExceptionally()) {
            admission = f.join();
            forward();
            return;
        }
        pendingAdmission = f;
        f.whenComplete((a, e) -> context.runOnContext(v -> admitted(a, e)));
    }

    private void admitted(Admission a, Throwable e) {
        pendingAdmission = null;
        if (finished) {
            if (a != null) {
                a.close(); // granted while the client was going away
            }
            return;
        }
        if (e != null) {
            Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
            count("admission_refused");
            refuse(RETRY_AFTER_SECONDS, "admission: " + cause.getMessage());
            return;
        }
        admission = a;
        forward();
    }

    /** Takes the first upload permits when the body is charged, then opens the backend request. */
    private void forward() {
        long length = contentLength(req.headers());
        boolean chunked = length < 0 && req.headers().contains("Transfer-Encoding");
        bodyDone = !(length > 0 || chunked);
        expectContinue = !bodyDone && "100-continue".equalsIgnoreCase(req.getHeader("Expect"));
        if (governed() && !bodyDone && TransferPolicy.chargesUpload(operation)) {
            try {
                upload = gw.governance().openPipe(Direction.UPLOAD, principal, context);
            } catch (RefusedException e) {
                count("bandwidth_refused");
                refuse(RETRY_AFTER_SECONDS, "upload bandwidth: " + e.getMessage());
                return;
            }
            upload.prepay(length > 0 ? Math.min(length, upload.quantum()) : upload.quantum(), e -> {
                if (e != null) {
                    count("bandwidth_refused");
                    refuse(RETRY_AFTER_SECONDS, "upload bandwidth: " + e.getMessage());
                } else {
                    openBackend(0);
                }
            });
            gw.prepayWatch().accept(this, upload);
            return;
        }
        openBackend(0);
    }

    /**
     * Whether a failed backend request may be sent once more on another connection: an idempotent
     * method without a body, no answer from the backend yet, and the first try. A pooled keep-alive
     * connection the backend closed as it was reused fails that way (as {@code proxy_next_upstream
     * error} retries in NGINX).
     */
    private boolean retriable(int attempt) {
        return attempt == 0 && !finished && upload == null && IDEMPOTENT.contains(req.method())
                && !req.headers().contains("Transfer-Encoding") && contentLength(req.headers()) <= 0
                && !req.response().headWritten() && !req.response().closed();
    }

    private void openBackend(int attempt) {
        MultiMap headers = MultiMap.caseInsensitiveMultiMap();
        // a header the client signed goes on exactly as sent, hop-by-hop or not, else the store refuses the
        // signature (issue 24: curl -H 'Expect:' signs expect); Transfer-Encoding is the body's framing, which the
        // backend request carries itself (setChunked below)
        Set<String> signed = Credentials.signedHeaders(req.getHeader("Authorization"), req.query());
        req.headers().forEach((k, v) -> {
            String name = k.toLowerCase(Locale.ROOT);
            if (!HOP_BY_HOP.contains(name) || signed.contains(name) && !name.equals("transfer-encoding")) {
                headers.add(k, v);
            }
        });
        backendExpects = !bodyDone && (signed.contains("expect")
                ? "100-continue".equalsIgnoreCase(req.getHeader("Expect")) : true);
        if (!bodyDone && !signed.contains("expect")) {
            // the backend decides whether the body is wanted before a byte of it is sent: an early
            // answer (404 NoSuchBucket, 403) is then relayed rather than cut by the backend's close
            headers.add("Expect", "100-continue");
        }
        RequestOptions ro = new RequestOptions()
                .setMethod(req.method())
                .setHost(options.backend().host())
                .setPort(options.backend().port())
                .setURI(req.uri())
                .setHeaders(headers);
        gw.backend().request(ro).onComplete(ar -> {
            if (ar.failed()) {
                if (retriable(attempt)) {
                    LOG.debug("backend request failed ({}), sending it once more", ar.cause().toString());
                    openBackend(attempt + 1);
                    return;
                }
                if (!finished && !abandoned) {
                    badGateway(ar.cause());
                }
                return;
            }
            HttpClientRequest out = ar.result();
            quiet(out);
            if (finished || abandoned) {
                out.reset();
                return;
            }
            backendRequest = out;
            watchBackend();
            String host = req.getHeader("Host");
            if (host != null) {
                out.authority(io.vertx.core.net.HostAndPort.parseAuthority(host, -1));
            }
            boolean hasLength = req.headers().contains("Content-Length");
            if (!hasLength && req.headers().contains("Transfer-Encoding")) {
                out.setChunked(true);
            }
            out.response().onComplete(rr -> {
                if (finished || abandoned) {
                    if (rr.succeeded()) {
                        // a late answer nobody reads: the reset reaches it too, and without a handler of its
                        // own Vert.x would log that at ERROR ("Stream reset: 0")
                        rr.result().exceptionHandler(e -> LOG.debug("late backend response dropped: {}", e.toString()));
                        rr.result().request().reset();
                    }
                    return; // the client went away, or was answered already
                }
                if (rr.failed()) {
                    if (retriable(attempt)) {
                        LOG.debug("backend request failed ({}), sending it once more", rr.cause().toString());
                        openBackend(attempt + 1);
                        return;
                    }
                    badGateway(rr.cause());
                    return;
                }
                relay(rr.result());
            });
            if (bodyDone) {
                req.resume(); // reads the end of a bodiless request
                new BackendSink(out, backendWatch, gw.ticker()::read).end();
                return;
            }
            streamBody(out);
        });
    }

    /**
     * Streams the request body to the backend under its progress deadline, once the backend asked
     * for it ({@code 100 Continue}) or did not answer within the continue timeout: through the upload
     * governor when charged, else as it comes. A failure of the client's side (reset, bad chunked
     * framing) resets the backend request and is answered {@code 400}; a failure of the backend's
     * side is left to the backend's response, which is relayed when it came (an early answer) and
     * answered {@code 502} otherwise.
     */
    private void streamBody(HttpClientRequest out) {
        GatewayOptions.ClientDeadlines d = options.clientDeadlines();
        bodyDeadline = new ProgressDeadline(d.requestBodyTimeout().toNanos(), d.minBodyRate());
        body = new WatchedBody(req, bodyDeadline, gw.ticker()::read, true, () -> {
            bodyDone = true;
            stopBodyDeadline();
        });
        long check = Math.max(10, Math.min(1000, d.requestBodyTimeout().toMillis() / 5));
        bodyTimer = vertx.setPeriodic(check, t -> {
            if (bodyDeadline.expired(gw.ticker().read())) {
                bodyTimedOut();
            }
        });
        // the body is read from the client only once the backend wants it (100 Continue), or after
        // the continue timeout for a backend that ignores Expect
        out.continueHandler(v -> proceed(out));
        out.writeHead();
        if (!backendExpects) {
            // the client signed its Expect (or its absence): the backend gets none and will not ask for the body, so
            // it is streamed at once; an answer the backend gives while it comes is still relayed (its connection is
            // read after a failed write: issue 22, item 5)
            proceed(out);
            return;
        }
        continueTimer = vertx.setTimer(options.continueTimeout().toMillis(), t -> proceed(out));
    }

    /** The backend wants the body (or did not answer within the continue timeout): start streaming it. */
    private void proceed(HttpClientRequest out) {
        HttpServerResponse resp = req.response();
        if (proceeded || finished || abandoned || resp.headWritten() || resp.ended()) {
            return;
        }
        proceeded = true;
        vertx.cancelTimer(continueTimer);
        if (expectContinue) {
            continued = true;
            resp.writeContinue();
        }
        BackendSink sink = new BackendSink(out, backendWatch, gw.ticker()::read);
        if (upload != null) {
            upload.start(body, sink, new GovernedPipe.Listener() {
                @Override
                public void ended() {
                    // the backend answers; relay() takes it from there
                }

                @Override
                public void failed(Throwable cause) {
                    if (cause instanceof RefusedException) {
                        out.reset();
                        count("bandwidth_refused");
                        refuse(RETRY_AFTER_SECONDS, "upload bandwidth: " + cause.getMessage());
                    } else if (body.failure() != null) {
                        clientBodyFault(cause);
                    }
                    // else the backend's side failed: its response (or its failure) answers
                }
            }, out::reset);
        } else {
            Pipe<Buffer> pipe = body.pipe();
            pipe.endOnFailure(false); // a body cut by the client must never reach the backend as complete
            plainPipe = pipe;
            pipe.to(sink).onFailure(e -> {
                if (body.failure() != null) {
                    clientBodyFault(body.failure());
                }
                // else the backend's side failed: its response (or its failure) answers
            });
        }
    }

    /**
     * Starts watching the backend's side of an exchange with {@code --backend-timeout} ({@link BackendWatch}): only
     * time the gateway waits for the backend counts, never time it holds the body itself (issue 22, item 3).
     */
    private void watchBackend() {
        stopBackendWatch(); // a retry on another connection starts afresh
        long timeout = options.backendTimeout().toNanos();
        backendWatch = new BackendWatch(timeout);
        long check = Math.max(10, Math.min(1000, options.backendTimeout().toMillis() / 10));
        backendTimer = vertx.setPeriodic(check, t -> {
            if (backendWatch.expired(gw.ticker().read())) {
                backendTimedOut();
            }
        });
    }

    /**
     * The backend made no progress for {@code --backend-timeout} while the gateway waited for it: {@code 504
     * GatewayTimeout} when the status line is not out yet, else the client's connection is closed (only a cut tells
     * it); the backend request is reset (an upload is not stored) and what the request holds is freed.
     */
    private void backendTimedOut() {
        stopBackendWatch();
        if (finished || abandoned) {
            return;
        }
        count("backend_timeout");
        LOG.warn("backend {} timed out for {} {}: no progress for {} ms while {}", options.backend(), req.method(),
                LogText.escape(req.path()), options.backendTimeout().toMillis(), backendWatch.phase());
        abandon(504, "GatewayTimeout", "The S3 backend did not answer in time.");
    }

    /** The client sent its body too slowly (docs/design.md §8 admission; issue 10): frees what the request holds. */
    private void bodyTimedOut() {
        if (finished || bodyDone || abandoned) {
            stopBodyDeadline();
            return;
        }
        gw.counters().bodyTimeouts.increment();
        count("body_timeout");
        LOG.debug("{} {} from {}: request body too slow (under {} B/s for {} ms of reading), aborted",
                req.method(), LogText.escape(req.path()), req.remoteAddress(), options.clientDeadlines().minBodyRate(),
                options.clientDeadlines().requestBodyTimeout().toMillis());
        abandon(400, "RequestTimeout",
                "Your socket connection to the server was not read from or written to within the timeout period.");
    }

    /** Reading the client's body failed (reset, bad chunked framing): one DEBUG line, counted. */
    private void clientBodyFault(Throwable cause) {
        if (finished || abandoned) {
            return;
        }
        gw.counters().connectionErrors.increment();
        count("client_error");
        LOG.debug("{} {} from {}: reading the request body failed: {}", req.method(), LogText.escape(req.path()),
                req.remoteAddress(), LogText.escape(cause.toString()));
        abandon(400, "IncompleteBody", "The request body could not be read.");
    }

    /**
     * Stops reading the request body: its deadline, the governed upload's pipe, the plain pipe (the request is
     * paused). Returns whether a plain pipe was closed.
     */
    private boolean stopReadingBody() {
        stopBodyDeadline();
        if (upload != null) {
            upload.detach();
        }
        if (plainPipe == null) {
            return false;
        }
        plainPipe.close();
        req.pause();
        return true;
    }

    /**
     * Gives up an exchange because of its client: stops the body, resets the backend request (no
     * object is created), answers {@code status} when the status line is not out yet, then closes
     * the connection. The slot and permits are released when the response ends.
     */
    private void abandon(int status, String code, String message) {
        abandoned = true;
        stopReadingBody();
        if (backendRequest != null) {
            if (backendWatch == null || !backendWatch.requestEnded()) {
                quiet(backendRequest); // an ended request takes no handler (Vert.x throws): it keeps its own
            }
            backendRequest.reset();
        }
        ErrorAnswers.abandoned(req, status, code, message);
    }

    /**
     * Closes a connection whose request body was not read to its end, after its response: reads
     * and discards what the client still sends for at most {@value #LINGER_MILLIS} ms (or until the
     * body ends), so that closing with unread bytes does not reset the connection before the client
     * has read the answer (as NGINX's {@code lingering_close}). A client that waits for
     * {@code 100 Continue} sent nothing: its connection is closed at once.
     */
    private void closeAfterLinger() {
        if ((expectContinue && !continued) || req.isEnded()) { // nothing (more) to read
            req.connection().close();
            return;
        }
        req.handler(b -> { });
        req.exceptionHandler(e -> { });
        req.endHandler(v -> req.connection().close());
        req.resume();
        vertx.setTimer(LINGER_MILLIS, t -> req.connection().close());
    }

    private void relay(HttpClientResponse in) {
        HttpServerResponse resp = req.response();
        backendWatch.answered(gw.ticker().read());
        // the response body as the pipes read it: --backend-timeout counts while the gateway reads it and nothing
        // comes, not while the gateway does not read (the download governor, a slow client)
        WatchedBody watched = new WatchedBody(in, backendWatch.deadline(), gw.ticker()::read, true,
                this::stopBackendWatch);
        boolean early = !bodyDone;
        // an early answer is read at once and held: the backend's close right after it must not destroy it
        EarlyAnswer held = early ? new EarlyAnswer(watched, EARLY_ANSWER_MAX_HELD) : null;
        ReadStream<Buffer> source = early ? held : watched;
        source.exceptionHandler(e -> {
            backendResponseFailure = e;
            LOG.debug("backend response failed: {}", e.toString());
        });
        if (resp.ended() || resp.closed() || finished) {
            in.request().reset();
            return;
        }
        if (early) {
            // the backend answered before the whole body was sent (404 NoSuchBucket, 403): stop
            // reading it, relay the answer, then close both connections (neither can carry another
            // request); closing the client's waits for what it still sends (closeAfterLinger)
            if (stopReadingBody()) {
                quiet(backendRequest);
            }
            unfinishedBackendRequest = in.request();
            lingerAfterResponse = true;
            resp.putHeader("Connection", "close");
            LOG.debug("backend answered {} to {} {} before the request body was sent: relayed", in.statusCode(),
                    req.method(), LogText.escape(req.path()));
        }
        long length = contentLength(in.headers());
        boolean hasBody = req.method() != HttpMethod.HEAD && in.statusCode() >= 200 && in.statusCode() != 204
                && in.statusCode() != 304 && length != 0;
        if (!governed() || !hasBody || !TransferPolicy.chargesDownload(operation)) {
            writeHead(in);
            source.pipeTo(sink(in)).onFailure(e -> {
                LOG.debug("response stream ended early: {}", e.toString());
                req.connection().close();
            });
            return;
        }
        source.pause();
        try {
            download = gw.governance().openPipe(Direction.DOWNLOAD, principal, context);
        } catch (RefusedException e) {
            in.request().reset();
            count("bandwidth_refused");
            refuse(RETRY_AFTER_SECONDS, "download bandwidth: " + e.getMessage());
            return;
        }
        GovernedPipe pipe = download;
        vertx.runOnContext(v -> gw.prepayWatch().accept(this, pipe)); // once prepay below is waiting
        pipe.prepay(length > 0 ? Math.min(length, pipe.quantum()) : pipe.quantum(), e -> {
            if (e != null) {
                in.request().reset();
                count("bandwidth_refused");
                refuse(RETRY_AFTER_SECONDS, "download bandwidth: " + e.getMessage());
                return;
            }
            if (finished) {
                return; // the client went away while the permits were on their way
            }
            Throwable lost = early ? held.failure() : backendResponseFailure;
            if (lost != null) {
                // the answer was lost (its connection closed before its end) while it waited for its permits: nothing
                // of it is out yet, so the client is told so; a pipe started on it would fail on the ended stream. An
                // early answer received whole is held and relayed whatever happened to its connection afterwards
                badGateway(lost);
                return;
            }
            writeHead(in);
            pipe.start(source, sink(in), new GovernedPipe.Listener() {
                @Override
                public void ended() {
                    // the pipe ended the response; its end handler finishes the exchange
                }

                @Override
                public void failed(Throwable cause) {
                    LOG.debug("download stopped: {}", cause.toString());
                    in.request().reset();
                    req.connection().close(); // the status line is out: only a cut tells the client
                }
            }, () -> in.request().reset());
        });
    }

    /** The client's response as a pipe's sink, with the send timeout of {@link GatewayOptions.ClientDeadlines}. */
    private ResponseSink sink(HttpClientResponse in) {
        return new ResponseSink(req.response(), vertx, options.clientDeadlines().sendTimeout().toMillis(),
                gw.ticker()::read, () -> {
            gw.counters().sendTimeouts.increment();
            count("send_timeout");
            LOG.debug("{} {} to {}: the client read nothing of its response for {} ms, closed", req.method(),
                    LogText.escape(req.path()), req.remoteAddress(), options.clientDeadlines().sendTimeout().toMillis());
            finish(); // frees the slot and permits now
            in.request().reset();
            closeNow(req.connection());
        });
    }

    /**
     * Aborts a connection at once with a TCP reset, dropping what its outbound queue and the kernel's
     * send buffer hold, as NGINX's {@code reset_timedout_connection}. Vert.x 5.1 defers {@code close()}
     * until the connection's outbound queue has drained, which never happens for a client that does not
     * read (it held the socket until the idle timeout, ~2 minutes), and a plain close would leave the
     * kernel holding and trickling the buffered bytes: the Netty channel is closed directly with
     * {@code SO_LINGER = 0}. Uses Vert.x's {@code ConnectionBase} (implementation, not API); other
     * connection types fall back to {@code close()}.
     */
    static void closeNow(io.vertx.core.http.HttpConnection connection) {
        if (connection instanceof io.vertx.core.net.impl.ConnectionBase base) {
            base.channel().config().setOption(io.netty.channel.ChannelOption.SO_LINGER, 0);
            base.channel().close();
        } else {
            connection.close();
        }
    }

    private void writeHead(HttpClientResponse in) {
        HttpServerResponse resp = req.response();
        if (gw.closing().getAsBoolean()) {
            resp.putHeader("Connection", "close"); // draining: the connection carries no other request
        }
        resp.setStatusCode(in.statusCode());
        resp.setStatusMessage(in.statusMessage());
        in.headers().forEach((k, v) -> {
            if (!HOP_BY_HOP.contains(k.toLowerCase(Locale.ROOT))) {
                resp.headers().add(k, v);
            }
        });
        if (!in.headers().contains("Content-Length") && req.method() != HttpMethod.HEAD) {
            resp.setChunked(true);
        }
    }

    /**
     * Gives a backend request an exception handler that logs at DEBUG: a reset or a failure of a
     * request no pipe watches any more must not reach Vert.x's unhandled-exception ERROR log.
     */
    private static HttpClientRequest quiet(HttpClientRequest out) {
        return out.exceptionHandler(e -> LOG.debug("backend request failed: {}", e.toString()));
    }

    /** Returns the Content-Length, or -1 when absent or malformed. */
    private static long contentLength(MultiMap headers) {
        String cl = headers.get("Content-Length");
        if (cl == null) {
            return -1;
        }
        try {
            long n = Long.parseLong(cl.strip());
            return n < 0 ? -1 : n;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** Puts the RateLimit header fields of a rate decision on the response (docs/gateway.md). */
    private static void rateLimitFields(HttpServerResponse resp, ClientDecision d) {
        String policy = d.rateLimitPolicy();
        if (policy != null) {
            resp.putHeader(dev.levee.client.RateLimitFields.POLICY_HEADER, policy)
                    .putHeader(dev.levee.client.RateLimitFields.LIMIT_HEADER, d.rateLimit());
        }
    }

    private void refuse(long retryAfter, String why) {
        ErrorAnswers.refuse(req, retryAfter, why, gw.closing().getAsBoolean());
    }

    private void badGateway(Throwable e) {
        count("backend_error");
        LOG.warn("backend {} failed for {} {}: {}", options.backend(), req.method(), LogText.escape(req.path()),
                e.toString());
        ErrorAnswers.badGateway(req);
    }

    private void count(String what) {
        gw.counters().count(what);
    }
}
