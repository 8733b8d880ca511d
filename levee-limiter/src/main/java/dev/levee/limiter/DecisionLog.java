package dev.levee.limiter;

import dev.levee.quota.ResolvedQuota;
import dev.levee.runtime.LogText;
import dev.levee.s3.S3Operation;
import org.apache.logging.log4j.util.Unbox;

/**
 * The decision log of a limiter: one line per decided check on the {@code levee.limiter.decision} logger, with the
 * resource and key in clear (escaped). Written without garbage on the caller's thread (issue 12; docs/decisions.md,
 * "Decision log lines without garbage").
 */
final class DecisionLog {

    /**
     * The decision log: Log4j's own API rather than SLF4J's, for its fixed-arity calls (SLF4J's stop at two
     * parameters, beyond which each line costs an array and boxed numbers).
     */
    private static final org.apache.logging.log4j.Logger DECISIONS =
            org.apache.logging.log4j.LogManager.getLogger("levee.limiter.decision");

    /** The builder of decision lines with a shadow quota, one per thread. */
    private static final ThreadLocal<StringBuilder> SHADOW_LINE = ThreadLocal.withInitial(() -> new StringBuilder(512));

    private final String id;
    /** The decision line's format per result, with this limiter's id in it (ten parameters left). */
    private final String acceptedLine;
    private final String rejectedLine;

    /** @param id the limiter's id, in every line */
    DecisionLog(String id) {
        this.id = id;
        this.acceptedLine = decisionLine("accepted", id);
        this.rejectedLine = decisionLine("rejected", id);
    }

    /** Whether decision lines are written (the logger's level is INFO or finer). */
    boolean enabled() {
        return DECISIONS.isInfoEnabled();
    }

    /**
     * Logs one decision: Log4j's fixed-arity call with at most ten parameters — the result word and this
     * limiter's id are in the format, which is made once — and numbers through {@code Unbox}; a line with a
     * shadow quota (eighteen fields) is appended to a per-thread builder and logged as text. The line reads as it
     * always did.
     */
    void log(String resource, String key, S3Operation op, int g, Decider.Decision d) {
        ResolvedQuota rq = d.enforced;
        ResolvedQuota sq = d.shadowQuota;
        long remaining = d.remaining;
        long retry = d.retryAfter;
        if (sq == null) {
            String format = d.accepted ? acceptedLine : rejectedLine;
            if (rq == null) {
                DECISIONS.info(format, LogText.escape(resource), LogText.escape(key), op, "none", "-", "-", "-", Unbox.box(g),
                        Unbox.box(remaining), Unbox.box(retry));
            } else {
                DECISIONS.info(format, LogText.escape(resource), LogText.escape(key), op, rq.level().label(),
                        LogText.escape(rq.limitKey()), Unbox.box(rq.quota().rate()), Unbox.box(rq.quota().burst()),
                        Unbox.box(g), Unbox.box(remaining), Unbox.box(retry));
            }
            return;
        }
        String shadow = d.shadow == dev.levee.wire.BinaryChecks.SHADOW_ACCEPTED ? "accepted"
                : CheckResponse.WOULD_REJECT;
        long shadowR = d.shadowResult;
        StringBuilder b = SHADOW_LINE.get();
        b.setLength(0);
        b.append("decision result=").append(d.accepted ? "accepted" : "rejected").append(" resource=")
                .append(LogText.escape(resource))
                .append(" key=").append(LogText.escape(key)).append(" op=").append(op.name())
                .append(" level=").append(rq == null ? "none" : rq.level().label())
                .append(" limit_key=").append(rq == null ? "-" : LogText.escape(rq.limitKey())).append(" rate=");
        if (rq == null) {
            b.append('-');
        } else {
            b.append(rq.quota().rate());
        }
        b.append(" burst=");
        if (rq == null) {
            b.append('-');
        } else {
            b.append(rq.quota().burst());
        }
        b.append(" g=").append(g).append(" remaining=").append(remaining).append(" retry_after=").append(retry)
                .append(" limiter=").append(id).append(" mode=shadow shadow=").append(shadow)
                .append(" shadow_level=").append(sq.level().label())
                .append(" shadow_limit_key=").append(LogText.escape(sq.limitKey()))
                .append(" shadow_rate=").append(sq.quota().rate()).append(" shadow_burst=").append(sq.quota().burst())
                .append(" shadow_remaining=").append(shadowR >= 0 ? shadowR : 0);
        DECISIONS.info(b); // the async logger copies the text before the call returns
    }

    /** The format of a decision line without a shadow quota (the id's characters never include braces). */
    private static String decisionLine(String result, String id) {
        return "decision result=" + result + " resource={} key={} op={} level={} limit_key={} rate={} burst={} g={}"
                + " remaining={} retry_after={} limiter=" + id;
    }
}
