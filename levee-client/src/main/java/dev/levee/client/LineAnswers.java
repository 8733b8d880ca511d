package dev.levee.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import java.nio.charset.StandardCharsets;

/**
 * Encodes the answers of levee-line/1 (see {@link LineDecoder} and docs/nginx.md):
 *
 * <pre>
 * answer = result HTAB retry-after HTAB policy HTAB ratelimit LF
 * result = "accepted" / "rejected" / "failed"    ; retry-after: seconds ≥ 1 on rejected, "0" otherwise
 * error  = "error" HTAB reason LF                 ; malformed request: the connection closes after it
 * </pre>
 *
 * <p>{@code policy} and {@code ratelimit} are the {@code RateLimit-Policy} and {@code RateLimit} values
 * exactly as {@link ClientService}'s HTTP endpoint sends them ({@link ClientDecision#rateLimitPolicy()},
 * {@link ClientDecision#rateLimit()}), on a rejected answer, and on an accepted one when the request asked;
 * empty when the decision names no enforced quota. They are written straight into the buffer from the
 * decision's figures, and the fixed parts are pre-encoded: an answer allocates nothing.
 */
final class LineAnswers {

    private static final byte[] ACCEPTED_PLAIN = ascii("accepted\t0\t\t\n");
    private static final byte[] ACCEPTED = ascii("accepted\t0\t");
    private static final byte[] REJECTED = ascii("rejected\t");
    private static final byte[] FAILED = ascii("failed\t0\t\t\n");
    private static final byte[] ERROR = ascii("error\t");
    private static final byte[] POLICY_Q = ascii("\";q=");
    private static final byte[] POLICY_W = ascii(";w=");
    private static final byte[] LIMIT_R = ascii("\";r=");
    private static final byte[] LIMIT_T = ascii(";t=");

    /** Room for any answer of a decision: the words, two fields with a level label and four 19-digit numbers. */
    static final int MAX_DECISION_BYTES = 160;

    private LineAnswers() {
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * Writes the answer to one check.
     *
     * @param out               where to write
     * @param d                 the decision, or null when the check failed without one
     * @param rateLimitOnAccept whether the request's flags asked for the fields on an accepted answer
     */
    static void write(ByteBuf out, ClientDecision d, boolean rateLimitOnAccept) {
        if (d == null || d.result() == ClientDecision.Result.FAILED) {
            out.writeBytes(FAILED);
            return;
        }
        boolean rejected = d.result() == ClientDecision.Result.REJECTED;
        if (!rejected && !(rateLimitOnAccept && d.hasQuota())) {
            out.writeBytes(ACCEPTED_PLAIN);
            return;
        }
        if (rejected) {
            out.writeBytes(REJECTED);
            writeDecimal(out, d.retryAfter());
            out.writeByte('\t');
        } else {
            out.writeBytes(ACCEPTED);
        }
        if (d.hasQuota()) {
            // RateLimitFields.policy and .limit, spelled into the buffer
            out.writeByte('"');
            ByteBufUtil.writeAscii(out, d.level());
            out.writeBytes(POLICY_Q);
            writeDecimal(out, RateLimitFields.quota(d.rate()));
            out.writeBytes(POLICY_W);
            writeDecimal(out, RateLimitFields.window(d.rate()));
            out.writeByte('\t');
            out.writeByte('"');
            ByteBufUtil.writeAscii(out, d.level());
            out.writeBytes(LIMIT_R);
            writeDecimal(out, rejected ? 0 : Math.max(0, d.remaining()));
            out.writeBytes(LIMIT_T);
            writeDecimal(out, Math.max(0, rejected ? d.retryAfter() : d.reset()));
        } else {
            out.writeByte('\t');
        }
        out.writeByte('\n');
    }

    /**
     * Writes the answer to a malformed request.
     *
     * @param reason names the field; TAB, CR and LF in it become spaces
     */
    static void writeError(ByteBuf out, String reason) {
        out.writeBytes(ERROR);
        int start = out.writerIndex();
        ByteBufUtil.writeAscii(out, reason);
        for (int i = start; i < out.writerIndex(); i++) {
            byte b = out.getByte(i);
            if (b == '\t' || b == '\n' || b == '\r') {
                out.setByte(i, ' ');
            }
        }
        out.writeByte('\n');
    }

    /** Writes a non-negative number in decimal; a negative one as 0. */
    static void writeDecimal(ByteBuf out, long v) {
        if (v <= 0) {
            out.writeByte('0');
            return;
        }
        long div = 1;
        while (v / div >= 10) {
            div *= 10;
        }
        for (; div > 0; div /= 10) {
            out.writeByte((int) ('0' + (v / div) % 10));
        }
    }
}
