package dev.levee.limiter;

import static dev.levee.limiter.LimiterService.WARMUP_RESOURCE;

import dev.levee.config.QuotaSource;
import dev.levee.core.Ticker;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.ResolvedQuota;
import dev.levee.runtime.Http;
import dev.levee.runtime.Json;
import dev.levee.runtime.LogText;
import dev.levee.s3.S3Operation;
import dev.levee.wire.BinaryChecks;
import io.netty.buffer.ByteBuf;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The decision point of a limiter and its check endpoints: {@code POST /v1/check} and {@code POST /v1/checks} in
 * JSON ({@link CheckRequest}, {@link CheckBatch}) and in the binary encoding ({@link BinaryChecks}), and the
 * CHECKS frames of the check wire ({@link WireHandler}). Each check is validated, decided by the {@link Decider}
 * at one reading of the ticker, then counted ({@link LimiterMetrics}), recorded in the statistics
 * ({@link DecisionStats}) and logged ({@link DecisionLog}) — the warm-up's self-checks neither counted nor logged.
 * One configuration snapshot per request body or frame: never two versions in one decision.
 */
final class Checks {

    private static final Logger LOG = LoggerFactory.getLogger("levee.limiter");
    private static final CharSequence BINARY = HttpHeaders.createOptimized(BinaryChecks.CONTENT_TYPE);
    private static final CharSequence RETRY_AFTER = HttpHeaders.createOptimized("Retry-After");

    private final String id;
    private final QuotaSource config;
    private final Decider decider;
    private final Ticker ticker;
    private final LimiterMetrics metrics;
    private final DecisionStats stats;
    private final DecisionLog log;

    Checks(String id, QuotaSource config, Decider decider, Ticker ticker, LimiterMetrics metrics, DecisionStats stats) {
        this.id = id;
        this.config = config;
        this.decider = decider;
        this.ticker = ticker;
        this.metrics = metrics;
        this.stats = stats;
        this.log = new DecisionLog(id);
    }

    /**
     * Decides one check into {@code out} ({@link Decider#decide} at the ticker's reading), counts it, records the
     * statistics and logs the decision; allocates nothing of its own when the quota's answer is shared (every
     * level but a wildcard prefix entry) and the decision log is off or garbage-free.
     */
    void decide(QuotaConfig cfg, String resource, String key, S3Operation op, int g, Decider.Decision out) {
        decider.decide(cfg, resource, key, op, g, ticker.read(), out);
        if (WARMUP_RESOURCE.equals(resource)) {
            return;
        }
        // the one outcome counted per check: rejected (enforced), would_reject (admitted, the shadow quota refused), accepted
        ResolvedQuota rq = out.enforced;
        ResolvedQuota sq = out.shadowQuota;
        boolean wouldReject = out.wouldReject();
        String outcome = !out.accepted ? "rejected" : wouldReject ? CheckResponse.WOULD_REJECT : "accepted";
        ResolvedQuota counted = wouldReject || rq == null ? sq : rq;
        // one outcome per check, with the level of the quota that produced it (metrics and per-resource stats)
        metrics.count(outcome, counted.level().label());
        // per-resource stats: a request on a shadow entry is one row, the trial's (its enforced refusals included)
        recordDecision(sq != null ? sq : rq, !out.accepted ? DecisionStats.Outcome.REFUSED
                : wouldReject ? DecisionStats.Outcome.WOULD_REJECT : DecisionStats.Outcome.ADMITTED);
        if (sq != null) {
            metrics.countShadow(out.shadow == BinaryChecks.SHADOW_ACCEPTED ? "accepted" : CheckResponse.WOULD_REJECT,
                    sq.level().label());
        }
        if (log.enabled()) {
            log.log(resource, key, op, g, out);
        }
    }

    /**
     * The statistics' hook at the decision point (issue 14): every decided check, once. A shadow entry's
     * refusal (issue 14 item 4) is recorded as {@link DecisionStats.Outcome#WOULD_REJECT}.
     */
    private void recordDecision(ResolvedQuota rq, DecisionStats.Outcome outcome) {
        stats.record(rq.ruleKey(), outcome);
    }

    /**
     * {@code POST /v1/check} in JSON: 200 accepted / 429 rejected (with {@code Retry-After}) / 500 failed; malformed
     * input → 400 naming the field.
     */
    void check(HttpServerRequest req, byte[] body) {
        CheckRequest in;
        S3Operation op;
        QuotaConfig cfg = config.current(); // one snapshot per decision: never two versions in one decision
        try {
            in = Json.parse(body, CheckRequest.class);
            op = in.validate(cfg.factor());
        } catch (IllegalArgumentException e) {
            metrics.count("invalid", "none");
            Http.error(req.response(), 400, e.getMessage());
            return;
        }
        try {
            Decider.Decision d = new Decider.Decision();
            decide(cfg, in.resource(), in.key(), op, in.g(), d);
            CheckResponse out = d.response(id);
            int status = out.result().equals("accepted") ? 200 : 429;
            if (status == 429) {
                req.response().putHeader("Retry-After", Long.toString(out.retryAfter()));
            }
            Http.json(req.response(), status, out);
        } catch (RuntimeException e) {
            metrics.count("failed", "none");
            LOG.error("decision failed resource={} key={} op={}", LogText.escape(in.resource()), LogText.escape(in.key()),
                    op, e);
            Http.json(req.response(), 500, CheckResponse.failed(id));
        }
    }

    /**
     * {@code POST /v1/checks}: decides each check of a {@link CheckBatch} in order, as
     * {@code POST /v1/check} would, and answers 200 with {@code {"decisions": [...]}}, one entry per
     * check in the same order: a {@link CheckResponse}, or {@code {"result": "invalid", "error": …}}
     * for a check that is malformed (the others are still decided). A malformed batch → 400.
     */
    void checkBatch(HttpServerRequest req, byte[] body) {
        CheckBatch batch;
        QuotaConfig cfg = config.current(); // one snapshot for the whole batch
        try {
            batch = Json.parse(body, CheckBatch.class);
            batch.validate();
        } catch (IllegalArgumentException e) {
            metrics.count("invalid", "none");
            Http.error(req.response(), 400, e.getMessage());
            return;
        }
        if (batch.checks().isEmpty() || !WARMUP_RESOURCE.equals(batch.checks().get(0).resource())) {
            metrics.batchSizes.record(batch.checks().size());
        }
        List<Object> decisions = new ArrayList<>(batch.checks().size());
        for (CheckRequest in : batch.checks()) {
            S3Operation op;
            try {
                op = in.validate(cfg.factor());
            } catch (IllegalArgumentException e) {
                metrics.count("invalid", "none");
                decisions.add(Map.of("result", "invalid", "error", e.getMessage()));
                continue;
            }
            try {
                Decider.Decision d = new Decider.Decision();
                decide(cfg, in.resource(), in.key(), op, in.g(), d);
                decisions.add(d.response(id));
            } catch (RuntimeException e) {
                metrics.count("failed", "none");
                LOG.error("decision failed resource={} key={} op={}", LogText.escape(in.resource()),
                        LogText.escape(in.key()), op, e);
                decisions.add(CheckResponse.failed(id));
            }
        }
        Http.json(req.response(), 200, Map.of("decisions", decisions));
    }

    /**
     * {@code POST /v1/check} and {@code /v1/checks} in the binary encoding ({@link BinaryChecks}): each check
     * is validated, decided, counted and logged as in JSON; the answer is binary, one entry per check. On
     * {@code /v1/check} (exactly one check) the status is that of the JSON form — 200 accepted, 429 rejected
     * (with {@code Retry-After}), 400 invalid, 500 failed; on {@code /v1/checks} 200. A body that is not a
     * well-formed binary body → 400 with a JSON error naming what is wrong, and nothing is decided.
     */
    void checkBinary(HttpServerRequest req, byte[] body, boolean one) {
        QuotaConfig cfg = config.current(); // one snapshot for the whole body
        BinaryChecks.CheckCursor in = new BinaryChecks.CheckCursor();
        ByteBuf b = io.netty.buffer.Unpooled.wrappedBuffer(body);
        int n;
        try {
            n = in.validate(b);
            if (one && n != 1) {
                throw new IllegalArgumentException("POST /v1/check takes one check, got " + n
                        + " (several go to /v1/checks)");
            }
        } catch (IllegalArgumentException e) {
            metrics.count("invalid", "none");
            Http.error(req.response(), 400, e.getMessage());
            return;
        }
        ByteBuf out = BinaryChecks.start(in.version(), n, 8 + n * 88);
        Last last = new Last();
        decideAll(cfg, in, n, !one, out, last, new Decider.Decision());
        var resp = req.response();
        if (resp.ended() || resp.closed()) {
            out.release();
            return;
        }
        if (one && last.status == 429) {
            resp.putHeader(RETRY_AFTER, Long.toString(last.retryAfter));
        }
        resp.setStatusCode(one ? last.status : 200).putHeader(HttpHeaders.CONTENT_TYPE, BINARY)
                .end(Http.buffer(out));
    }

    /** The status and Retry-After of the last check of a body, for the answer to a single binary check. */
    private static final class Last {
        int status = 200;
        long retryAfter;
    }

    /**
     * Decides one CHECKS frame of the check wire ({@link WireHandler}): reads the body through once (a malformed
     * body is refused before any of its checks is decided), then decides each check in order and appends the
     * answer body (the frame's version, count, one answer per check) to {@code out}.
     *
     * @param body the frame's body, at its reader index
     * @param in   the connection's cursor
     * @param out  where the answers go
     * @param d    the connection's decision holder
     * @throws IllegalArgumentException naming what is wrong when the body is not a well-formed check body
     */
    void decideFrame(ByteBuf body, BinaryChecks.CheckCursor in, ByteBuf out, Decider.Decision d) {
        QuotaConfig cfg = config.current(); // one snapshot for the whole frame
        int n = in.validate(body);
        out.writeByte(in.version());
        out.writeShort(n);
        decideAll(cfg, in, n, true, out, null, d);
    }

    /** Counts a wire frame that could not be read (the connection is closed). */
    void countInvalidFrame() {
        metrics.count("invalid", "none");
    }

    /**
     * Decides the {@code n} checks of a validated body in order and appends one binary answer each: an invalid
     * check (unknown operation, group size above the factor) gets an invalid answer and the others are decided.
     *
     * @param batch whether to record the batch size ({@code levee_limiter_batch_checks})
     * @param last  where the status and Retry-After of the last check go (single-check HTTP answers), or null
     */
    private void decideAll(QuotaConfig cfg, BinaryChecks.CheckCursor in, int n, boolean batch, ByteBuf out, Last last,
                           Decider.Decision d) {
        int version = in.version();
        boolean counted = false;
        for (int i = 0; i < n; i++) {
            in.next();
            if (batch && !counted) {
                counted = true;
                if (!WARMUP_RESOURCE.equals(in.resource)) {
                    metrics.batchSizes.record(n);
                }
            }
            S3Operation op;
            try {
                CheckRequest.checkGroup(in.g, cfg.factor());
                op = in.operation != null ? in.operation : CheckRequest.operation(in.operationName());
            } catch (IllegalArgumentException e) {
                metrics.count("invalid", "none");
                BinaryChecks.writeInvalid(out, e.getMessage());
                if (last != null) {
                    last.status = 400;
                }
                continue;
            }
            try {
                decide(cfg, in.resource, in.key, op, in.g, d);
                d.write(out, version);
                if (last != null) {
                    last.status = d.accepted ? 200 : 429;
                    last.retryAfter = d.retryAfter;
                }
            } catch (RuntimeException e) {
                metrics.count("failed", "none");
                LOG.error("decision failed resource={} key={} op={}", LogText.escape(in.resource),
                        LogText.escape(in.key), op, e);
                BinaryChecks.writeFailed(out);
                if (last != null) {
                    last.status = 500;
                }
            }
        }
    }
}
