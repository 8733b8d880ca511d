package dev.levee.runtime;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.internal.buffer.BufferInternal;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * The compact check encoding between levee-client and the limiters (issue 12; docs/decisions.md,
 * "Binary check encoding"): the same {@code POST /v1/check} and {@code POST /v1/checks} over the same
 * HTTP/1.1 connection, with {@code Content-Type: application/x-levee-check} instead of JSON. A limiter
 * answers in the encoding it was asked in; JSON stays for people and scripts. A limiter that takes the
 * encoding says so in {@code Accept-Post} ({@value #ACCEPT_POST}) on its JSON check answers, and a client
 * switches to it from then on: an older limiter (or a stand-in) never sees a binary body.
 *
 * <p>All integers big-endian, strings UTF-8 with a length prefix in bytes.
 * <pre>
 * request: u8 version (1 or 2), u16 count (1-1024; 1 on /v1/check), then per check:
 *          u16 resource length, resource, u16 key length, key, u8 operation length, operation (ASCII), u16 g
 * answer:  u8 version (that of the request), u16 count, then per check: u8 result, and
 *          accepted (0) / rejected (1): u8 level length, level, u16 limit key length, limit key,
 *                                       i64 remaining, i64 retry after (seconds),
 *                                       version 2 only: u8 shadow (0 none, 1 accepted, 2 would_reject),
 *                                       f64 rate, i32 burst, i64 reset (seconds)
 *          failed (2):                  nothing
 *          invalid (3):                 u16 error length, error
 * </pre>
 * An empty level and limit key mean that no enforced quota applies (only shadow quotas; the check was
 * accepted). Version 2 (issue 14) carries what the RateLimit header fields and the shadow counters need; a
 * limiter answers a version-1 request in version 1 (a would-reject as accepted), and a limiter that knows only
 * version 1 refuses a version-2 body with a JSON 400, after which levee-client speaks JSON to it.
 * Decoding is strict: a wrong version, a count out of range, a length running past the body, a name over
 * 1024 bytes or not valid UTF-8, or bytes after the last check are refused with a message naming the field.
 */
public final class BinaryChecks {

    /** The media type of the encoding: {@value}. */
    public static final String CONTENT_TYPE = "application/x-levee-check";
    /** The {@code Accept-Post} value of a limiter's JSON check answers: {@value}. */
    public static final String ACCEPT_POST = CONTENT_TYPE + ", application/json";
    /** The version byte of the bodies levee-client writes: {@value}. */
    public static final int VERSION = 2;
    /** The first version, still read and answered: {@value}. */
    public static final int VERSION_1 = 1;
    /** Shadow byte of a version-2 answer: no shadow quota matched. */
    public static final byte SHADOW_NONE = 0;
    /** Shadow byte: the shadow quota admitted the request. */
    public static final byte SHADOW_ACCEPTED = 1;
    /** Shadow byte: the shadow quota would have refused the request (it was admitted). */
    public static final byte SHADOW_WOULD_REJECT = 2;
    /** Most checks in one body: {@value} (the limiter's batch cap). */
    public static final int MAX_CHECKS = 1024;
    /** Longest resource or key, in UTF-8 bytes: {@value} (the S3 key limit). */
    public static final int MAX_NAME_BYTES = 1024;
    /** Longest operation name, in bytes: {@value}. */
    public static final int MAX_OPERATION_BYTES = 64;
    /** Result codes of an answer. */
    public static final byte ACCEPTED = 0;
    /** Result code: rejected. */
    public static final byte REJECTED = 1;
    /** Result code: the limiter failed to decide. */
    public static final byte FAILED = 2;
    /** Result code: the check was malformed (an error message follows). */
    public static final byte INVALID = 3;

    private BinaryChecks() {
    }

    /** Returns whether a {@code Content-Type} header value names this encoding (parameters ignored). */
    public static boolean isBinary(String contentType) {
        if (contentType == null || !contentType.regionMatches(true, 0, CONTENT_TYPE, 0, CONTENT_TYPE.length())) {
            return false;
        }
        return contentType.length() == CONTENT_TYPE.length() || contentType.charAt(CONTENT_TYPE.length()) == ';'
                || contentType.charAt(CONTENT_TYPE.length()) == ' ';
    }

    /** Returns whether an {@code Accept-Post} header value lists this encoding. */
    public static boolean accepts(String acceptPost) {
        if (acceptPost == null) {
            return false;
        }
        for (String t : acceptPost.split(",")) {
            if (isBinary(t.trim())) {
                return true;
            }
        }
        return false;
    }

    // ---- writing (no intermediate strings or byte arrays: UTF-8 is written straight into the buffer)

    /** Starts a body of {@code count} checks or answers, with room for {@code capacity} bytes. */
    public static ByteBuf start(int count, int capacity) {
        return start(VERSION, count, capacity);
    }

    /** Starts a body of {@code count} checks or answers in {@code version} (1 or 2). */
    public static ByteBuf start(int version, int count, int capacity) {
        ByteBuf b = Unpooled.buffer(Math.max(16, capacity));
        b.writeByte(version);
        b.writeShort(count);
        return b;
    }

    /** The bytes one check takes in a request body. */
    public static int checkSize(String resource, String key, String operation) {
        return 7 + ByteBufUtil.utf8Bytes(resource) + ByteBufUtil.utf8Bytes(key) + operation.length();
    }

    /**
     * Appends one check.
     *
     * @throws IllegalArgumentException when a name is longer than the encoding allows
     */
    public static void writeCheck(ByteBuf b, String resource, String key, String operation, int g) {
        writeString16(b, resource, "resource");
        writeString16(b, key, "key");
        int n = ByteBufUtil.utf8Bytes(operation);
        if (n > MAX_OPERATION_BYTES) {
            throw new IllegalArgumentException("operation longer than " + MAX_OPERATION_BYTES + " bytes");
        }
        b.writeByte(n);
        b.writeCharSequence(operation, StandardCharsets.UTF_8);
        b.writeShort(g);
    }

    /**
     * Appends an accepted or rejected answer in version 2.
     *
     * @param level    the enforced quota's level, or null when no enforced quota applies
     * @param limitKey its limit key, or null likewise
     */
    public static void writeDecision(ByteBuf b, boolean accepted, String level, String limitKey, long remaining,
                                     long retryAfter) {
        writeDecision(b, VERSION, accepted, level, limitKey, remaining, retryAfter, SHADOW_NONE, 0, 0, 0);
    }

    /**
     * Appends an accepted or rejected answer in {@code version}: the fields of version 2 are left out in
     * version 1.
     *
     * @param level    the enforced quota's level, or null when no enforced quota applies
     * @param limitKey its limit key, or null likewise
     * @param shadow   {@link #SHADOW_NONE}, {@link #SHADOW_ACCEPTED} or {@link #SHADOW_WOULD_REJECT}
     * @param rate     the enforced quota's rate, requests per second for the group
     * @param burst    its burst, requests per limiter
     * @param reset    seconds until the key's allowance is whole again
     */
    public static void writeDecision(ByteBuf b, int version, boolean accepted, String level, String limitKey,
                                     long remaining, long retryAfter, byte shadow, double rate, int burst, long reset) {
        b.writeByte(accepted ? ACCEPTED : REJECTED);
        String l = level == null ? "" : level;
        int n = ByteBufUtil.utf8Bytes(l);
        if (n > 255) {
            throw new IllegalArgumentException("level longer than 255 bytes");
        }
        b.writeByte(n);
        b.writeCharSequence(l, StandardCharsets.UTF_8);
        writeString16(b, limitKey == null ? "" : limitKey, "limit key");
        b.writeLong(remaining);
        b.writeLong(retryAfter);
        if (version >= 2) {
            b.writeByte(shadow);
            b.writeDouble(rate);
            b.writeInt(burst);
            b.writeLong(reset);
        }
    }

    /** Appends a failed answer. */
    public static void writeFailed(ByteBuf b) {
        b.writeByte(FAILED);
    }

    /** Appends an invalid answer with its error (cut to 1024 characters). */
    public static void writeInvalid(ByteBuf b, String error) {
        b.writeByte(INVALID);
        String e = error.length() > 1024 ? error.substring(0, 1024) : error;
        writeString16(b, e, "error");
    }

    /** Wraps a written body as a Vert.x buffer (no copy). */
    public static Buffer toBuffer(ByteBuf b) {
        return BufferInternal.buffer(b);
    }

    private static void writeString16(ByteBuf b, String s, String what) {
        int n = ByteBufUtil.utf8Bytes(s);
        if (n > 0xFFFF) {
            throw new IllegalArgumentException(what + " longer than 65535 bytes");
        }
        b.writeShort(n);
        b.writeCharSequence(s, StandardCharsets.UTF_8);
    }

    // ---- reading

    /** The checks of a request body, in order. */
    public record Checks(int version, String[] resources, String[] keys, String[] operations, int[] g) {
        /** Returns how many checks there are. */
        public int count() {
            return g.length;
        }
    }

    /**
     * One answer. {@code level}, {@code limitKey}: null unless accepted or rejected with an enforced quota;
     * {@code error}: null unless invalid; {@code shadow}, {@code rate}, {@code burst}, {@code reset}: 0 in version 1.
     */
    public record Answer(byte result, String level, String limitKey, long remaining, long retryAfter, String error,
                         byte shadow, double rate, int burst, long reset) {
        /** An answer of version 1. */
        public Answer(byte result, String level, String limitKey, long remaining, long retryAfter, String error) {
            this(result, level, limitKey, remaining, retryAfter, error, SHADOW_NONE, 0, 0, 0);
        }
    }

    /**
     * Reads a request body.
     *
     * @throws IllegalArgumentException naming what is wrong (SPEC: strict input)
     */
    public static Checks readChecks(byte[] body) {
        Reader r = new Reader(body);
        int n = r.header("check");
        String[] resources = new String[n];
        String[] keys = new String[n];
        String[] ops = new String[n];
        int[] g = new int[n];
        for (int i = 0; i < n; i++) {
            resources[i] = r.string(r.u16("resource", i), MAX_NAME_BYTES, "resource", i);
            keys[i] = r.string(r.u16("key", i), MAX_NAME_BYTES, "key", i);
            ops[i] = r.string(r.u8("operation", i), MAX_OPERATION_BYTES, "operation", i);
            g[i] = r.u16("g", i);
        }
        r.end();
        return new Checks(body[0], resources, keys, ops, g);
    }

    /**
     * Reads an answer body of exactly {@code expected} answers.
     *
     * @throws IllegalArgumentException naming what is wrong
     */
    public static Answer[] readAnswers(byte[] body, int expected) {
        Reader r = new Reader(body);
        int n = r.header("answer");
        if (n != expected) {
            throw new IllegalArgumentException(n + " answers for " + expected + " checks");
        }
        Answer[] out = new Answer[n];
        for (int i = 0; i < n; i++) {
            int result = r.u8("result", i);
            switch (result) {
                case ACCEPTED, REJECTED -> {
                    String level = level(r, r.u8("level", i), i);
                    String limitKey = r.string(r.u16("limit key", i), 0xFFFF, "limit key", i);
                    long remaining = r.i64("remaining", i);
                    long retry = r.i64("retry after", i);
                    if (r.version < 2) {
                        out[i] = new Answer((byte) result, level.isEmpty() ? null : level,
                                limitKey.isEmpty() ? null : limitKey, remaining, retry, null);
                        break;
                    }
                    int shadow = r.u8("shadow", i);
                    if (shadow > SHADOW_WOULD_REJECT) {
                        throw new IllegalArgumentException("answer " + i + ": unknown shadow code " + shadow);
                    }
                    double rate = Double.longBitsToDouble(r.i64("rate", i));
                    int burst = r.i32("burst", i);
                    long reset = r.i64("reset", i);
                    out[i] = new Answer((byte) result, level.isEmpty() ? null : level,
                            limitKey.isEmpty() ? null : limitKey, remaining, retry, null, (byte) shadow, rate, burst, reset);
                }
                case FAILED -> out[i] = new Answer(FAILED, null, null, 0, 0, null);
                case INVALID -> out[i] = new Answer(INVALID, null, null, 0, 0,
                        r.string(r.u16("error", i), 0xFFFF, "error", i));
                default -> throw new IllegalArgumentException("answer " + i + ": unknown result code " + result);
            }
        }
        r.end();
        return out;
    }

    /** The quota level labels, shared instead of one new string per answer. */
    private static final String[] LEVELS = {"prefix_method", "prefix", "resource", "methods_default", "default"};

    private static String level(Reader r, int n, int i) {
        for (String l : LEVELS) {
            if (l.length() == n && r.matches(l)) {
                r.pos += n;
                return l;
            }
        }
        return r.string(n, 255, "level", i);
    }

    private static final class Reader {
        final byte[] b;
        int pos;
        int version;

        Reader(byte[] b) {
            this.b = b;
        }

        int header(String what) {
            if (b.length < 3) {
                throw new IllegalArgumentException("binary body of " + b.length + " bytes: too short for its header");
            }
            if (b[0] != VERSION && b[0] != VERSION_1) {
                throw new IllegalArgumentException("binary body version " + (b[0] & 0xFF) + " is not " + VERSION_1
                        + " or " + VERSION);
            }
            version = b[0];
            pos = 1;
            int n = u16(what + " count", -1);
            if (n < 1 || n > MAX_CHECKS) {
                throw new IllegalArgumentException(what + " count " + n + " is not between 1 and " + MAX_CHECKS);
            }
            return n;
        }

        private void need(int n, String field, int i) {
            if (b.length - pos < n) {
                throw new IllegalArgumentException(where(field, i) + " runs past the end of the body (" + b.length
                        + " bytes)");
            }
        }

        int u8(String field, int i) {
            need(1, field, i);
            return b[pos++] & 0xFF;
        }

        int u16(String field, int i) {
            need(2, field, i);
            int v = (b[pos] & 0xFF) << 8 | b[pos + 1] & 0xFF;
            pos += 2;
            return v;
        }

        long i64(String field, int i) {
            need(8, field, i);
            long v = 0;
            for (int k = 0; k < 8; k++) {
                v = v << 8 | b[pos + k] & 0xFF;
            }
            pos += 8;
            return v;
        }

        /** Reads a big-endian i32. */
        int i32(String field, int i) {
            need(4, field, i);
            int v = (b[pos] & 0xFF) << 24 | (b[pos + 1] & 0xFF) << 16 | (b[pos + 2] & 0xFF) << 8 | b[pos + 3] & 0xFF;
            pos += 4;
            return v;
        }

        boolean matches(String ascii) {
            if (b.length - pos < ascii.length()) {
                return false;
            }
            for (int k = 0; k < ascii.length(); k++) {
                if (b[pos + k] != ascii.charAt(k)) {
                    return false;
                }
            }
            return true;
        }

        String string(int n, int max, String field, int i) {
            if (n > max) {
                throw new IllegalArgumentException(where(field, i) + " is longer than " + max + " bytes");
            }
            need(n, field, i);
            int start = pos;
            boolean ascii = true;
            for (int k = start; k < start + n; k++) {
                if (b[k] < 0) {
                    ascii = false;
                    break;
                }
            }
            pos += n;
            if (ascii) {
                return new String(b, start, n, StandardCharsets.ISO_8859_1); // the cheapest decoder for ASCII
            }
            try {
                return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b, start, n)).toString();
            } catch (CharacterCodingException e) {
                throw new IllegalArgumentException(where(field, i) + " is not valid UTF-8");
            }
        }

        void end() {
            if (pos != b.length) {
                throw new IllegalArgumentException((b.length - pos) + " bytes after the last entry of the binary body");
            }
        }

        private static String where(String field, int i) {
            return i < 0 ? "field '" + field + "'" : "field '" + field + "' of entry " + i;
        }
    }
}
