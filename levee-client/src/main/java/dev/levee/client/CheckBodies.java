package dev.levee.client;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.levee.runtime.Http;
import dev.levee.runtime.Json;
import dev.levee.wire.BinaryChecks;
import io.vertx.core.buffer.Buffer;
import java.util.List;

/**
 * The HTTP forms of checks and answers between levee-client and a limiter (docs/design.md §1 step 2): the body
 * of {@code POST /v1/check} (one check) and {@code /v1/checks} (a batch), in JSON or in the binary encoding
 * ({@link BinaryChecks}), and what an answer means — decisions, a refusal of the check ({@link Refused}), or a
 * limiter older than the form sent ({@link NoBatches}, {@link NoBinary}). Pure: bytes in, bytes or answers out;
 * {@link LimiterChannel} moves them.
 */
final class CheckBodies {

    private CheckBodies() {
    }

    static final ObjectMapper LENIENT = JsonMapper.builder()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES).build();

    static final CharSequence BINARY = io.vertx.core.http.HttpHeaders.createOptimized(BinaryChecks.CONTENT_TYPE);
    static final CharSequence JSON = io.vertx.core.http.HttpHeaders.createOptimized("application/json");
    static final CharSequence ACCEPT_POST = io.vertx.core.http.HttpHeaders.createOptimized("Accept-Post");

    /**
     * Largest batch body sent, in bytes: 1 MiB, a quarter of what a limiter accepts. A check is at
     * most ~12.3 KiB of JSON (two 1024-byte names of control characters, each escaped as
     * six-character JSON escapes), so a batch is cut by size before {@code maxBatch} only for such names.
     */
    static final int MAX_BATCH_BYTES = 1 << 20;

    /** Longest resource or key a limiter accepts, in UTF-8 bytes (the S3 key limit). */
    static final int MAX_BYTES = 1024;

    /** Returns {@code s} cut to its first {@link #MAX_BYTES} UTF-8 bytes on a character boundary; itself when it fits. */
    static String cut(String s) {
        if (s.length() * 3 <= MAX_BYTES) {
            return s; // fast path: cannot exceed 1024 bytes
        }
        byte[] b = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        if (b.length <= MAX_BYTES) {
            return s;
        }
        int end = MAX_BYTES;
        while (end > 0 && (b[end] & 0xC0) == 0x80) {
            end--; // do not split a UTF-8 sequence
        }
        return new String(b, 0, end, java.nio.charset.StandardCharsets.UTF_8);
    }

    /** A limiter's answer; {@code rate}, {@code burst}, {@code reset}, {@code shadow}: absent from limiters before issue 14. */
    record LimiterAnswer(String result, String level, String limitKey, long remaining, long retryAfter,
                         String limiter, String error, double rate, int burst, long reset, String shadow) {
    }

    private record BatchAnswer(List<LimiterAnswer> decisions) {
    }

    /** One check as the limiter's {@code POST /v1/check} and {@code /v1/checks} take it. */
    private record CheckItem(String resource, String key, String operation, int g) {
    }

    /** Returns the JSON form of one check. */
    static byte[] json(Plan p) {
        return Json.write(new CheckItem(p.c.resource(), p.c.key(), p.c.operation().name(), p.g()));
    }

    /**
     * Returns the body of a request for {@code batch}: binary, or the JSON of one check, or a JSON batch.
     *
     * @param jsons the checks' JSON forms when made already, else null
     */
    static Buffer body(List<Plan> batch, boolean bin, List<byte[]> jsons) {
        if (bin) {
            io.netty.buffer.ByteBuf b = BinaryChecks.start(batch.size(), 8 + batch.size() * 64);
            for (Plan p : batch) {
                BinaryChecks.writeCheck(b, p.c.resource(), p.c.key(), p.c.operation().name(), p.g());
            }
            return Http.buffer(b);
        }
        if (batch.size() == 1) {
            return Buffer.buffer(jsons != null ? jsons.get(0) : batch.get(0).json());
        }
        byte[] first = jsons != null ? jsons.get(0) : batch.get(0).json();
        Buffer body = Buffer.buffer(64 + batch.size() * (first.length + 8));
        body.appendString("{\"checks\":[");
        for (int k = 0; k < batch.size(); k++) {
            if (k > 0) {
                body.appendByte((byte) ',');
            }
            body.appendBytes(k == 0 ? first : jsons != null ? jsons.get(k) : batch.get(k).json());
        }
        body.appendString("]}");
        return body;
    }

    /**
     * Reads a limiter's answer to {@code n} checks.
     *
     * @param one whether the request was {@code POST /v1/check} (one check), not a batch
     * @param bin whether the request's body was binary
     * @return one answer per check, in order
     * @throws NoBatches             a batch answered 404 or 413
     * @throws NoBinary              a binary body answered 400 or 415 that is not binary
     * @throws Refused               any other 4xx but 429: the check is malformed, not the limiter broken
     * @throws IllegalStateException any other status, or a malformed answer
     */
    static List<LimiterAnswer> parse(int status, String contentType, Buffer b, boolean one, boolean bin, int n) {
        if (!one && (status == 404 || status == 413)) {
            throw new NoBatches(); // an older limiter, or one with a smaller body limit
        }
        boolean binaryAnswer = BinaryChecks.isBinary(contentType);
        if (bin && !binaryAnswer && (status == 400 || status == 415)) {
            throw new NoBinary(); // an older limiter read the binary body as JSON
        }
        if (binaryAnswer && (status == 200 || status == 429 || one && (status == 400 || status == 500))) {
            return binaryAnswers(b, n);
        }
        if (status >= 400 && status < 500 && status != 429) {
            throw new Refused("HTTP " + status + ": " + b.toString().replaceAll("[\\r\\n]", " "));
        }
        if (one ? status != 200 && status != 429 : status != 200) {
            throw new IllegalStateException("HTTP " + status);
        }
        try {
            if (one) {
                return List.of(LENIENT.readValue(b.getBytes(), LimiterAnswer.class));
            }
            BatchAnswer a = LENIENT.readValue(b.getBytes(), BatchAnswer.class);
            if (a.decisions() == null || a.decisions().size() != n || a.decisions().contains(null)) {
                throw new IllegalStateException("malformed answer: not one decision per check");
            }
            return a.decisions();
        } catch (java.io.IOException e) {
            throw new IllegalStateException("malformed answer");
        }
    }

    private static List<LimiterAnswer> binaryAnswers(Buffer b, int n) {
        BinaryChecks.Answer[] as;
        try {
            as = BinaryChecks.readAnswers(b.getBytes(), n);
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException("malformed answer: " + e.getMessage());
        }
        LimiterAnswer[] out = new LimiterAnswer[n];
        for (int k = 0; k < n; k++) {
            BinaryChecks.Answer a = as[k];
            out[k] = new LimiterAnswer(switch (a.result()) {
                case BinaryChecks.ACCEPTED -> "accepted";
                case BinaryChecks.REJECTED -> "rejected";
                case BinaryChecks.INVALID -> "invalid";
                default -> "failed";
            }, a.level(), a.limitKey(), a.remaining(), a.retryAfter(), null, a.error(), a.rate(), a.burst(), a.reset(),
                    a.shadow() == BinaryChecks.SHADOW_WOULD_REJECT ? "would_reject"
                            : a.shadow() == BinaryChecks.SHADOW_ACCEPTED ? "accepted" : null);
        }
        return java.util.Arrays.asList(out);
    }

    /** A limiter's answer that is not a decision (4xx): the request is malformed, not the limiter broken. */
    static final class Refused extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Refused(String message) {
            super(message, null, false, false);
        }
    }

    /** A limiter answered a binary body with a 400 or 415 that is not binary: it takes JSON only. */
    static final class NoBinary extends RuntimeException {
        private static final long serialVersionUID = 1L;

        NoBinary() {
            super("no binary check encoding", null, false, false);
        }
    }

    /** The limiter answered 404 to {@code /v1/checks}. */
    static final class NoBatches extends RuntimeException {
        private static final long serialVersionUID = 1L;

        NoBatches() {
            super("no /v1/checks", null, false, false);
        }
    }
}
