package dev.levee.wire;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.util.ByteProcessor;
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
 *
 * <p>The parts: content negotiation ({@link #isBinary}, {@link #accepts}); the writers of a request ({@link #start},
 * {@link #checkSize}, {@link #writeCheck}) and of an answer ({@code writeDecision}, {@link #writeFailed},
 * {@link #writeInvalid}); the strict readers of a request ({@link #readChecks} into {@link Checks}, the operation
 * names looked up without allocating) and of an answer ({@link #readAnswers} into {@code Answer}).
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
     * @throws IllegalArgumentException naming what is wrong (docs/design.md §2: strict input)
     */
    public static Checks readChecks(byte[] body) {
        CheckCursor c = new CheckCursor();
        int n = c.begin(Unpooled.wrappedBuffer(body));
        String[] resources = new String[n];
        String[] keys = new String[n];
        String[] ops = new String[n];
        int[] g = new int[n];
        for (int i = 0; i < n; i++) {
            c.next();
            resources[i] = c.resource;
            keys[i] = c.key;
            ops[i] = c.operationName();
            g[i] = c.g;
        }
        c.end();
        return new Checks(c.version(), resources, keys, ops, g);
    }

    /**
     * Reads the checks of a request body one at a time, without an array or record per body: the reader of the
     * limiter's check wire ({@link CheckWire}), also behind {@link #readChecks(byte[])}. After {@link #next()} the
     * fields hold the check just read. A cursor keeps the last few resource names it decoded and hands out the
     * same {@code String} when a resource repeats (consecutive checks mostly name the same buckets). Not
     * thread-safe: one per connection or thread.
     */
    public static final class CheckCursor {
        /** The resource of the check read last. */
        public String resource;
        /** The key of the check read last. */
        public String key;
        /** Its operation, or null when the name is not an operation Levee knows ({@link #operationName()}). */
        public dev.levee.s3.S3Operation operation;
        /** Its group size as sent (validated by the limiter against the factor). */
        public int g;
        private final Reader r = new Reader();
        private int count;
        private int index;
        private int opStart;
        private int opLength;
        /** Recently decoded resource names, most recent at {@code recent[next - 1]}: a ring of 8. */
        private final String[] recent = new String[8];
        private int next;

        /**
         * Starts reading a body from its reader index to its writer index (the buffer's indexes are not moved).
         *
         * @return how many checks it holds, 1–{@value #MAX_CHECKS}
         * @throws IllegalArgumentException when the header is malformed
         */
        public int begin(ByteBuf body) {
            r.reset(body);
            count = r.header("check", "check count");
            index = 0;
            return count;
        }

        /**
         * Reads a body through once without decoding its names (only a name that is not ASCII is decoded, to check
         * its UTF-8), then starts it again as {@link #begin} does: a body that is not well formed is refused before
         * any of its checks is read for real (and decided).
         *
         * @return how many checks it holds
         * @throws IllegalArgumentException naming what is wrong
         */
        public int validate(ByteBuf body) {
            int n = begin(body);
            int first = r.pos;
            for (int i = 0; i < n; i++) {
                skipName(r.u16("resource", i), MAX_NAME_BYTES, "resource", i);
                skipName(r.u16("key", i), MAX_NAME_BYTES, "key", i);
                int op = r.u8("operation", i);
                if (op > MAX_OPERATION_BYTES) {
                    throw new IllegalArgumentException(Reader.where("operation", i) + " is longer than "
                            + MAX_OPERATION_BYTES + " bytes");
                }
                r.need(op, "operation", i);
                r.pos += op;
                r.u16("g", i);
            }
            r.end();
            r.pos = first;
            return n;
        }

        private void skipName(int n, int max, String field, int i) {
            if (n > max) {
                throw new IllegalArgumentException(Reader.where(field, i) + " is longer than " + max + " bytes");
            }
            r.need(n, field, i);
            if (r.b.forEachByte(r.pos, n, ASCII) < 0) {
                r.pos += n;
            } else {
                r.string(n, max, field, i); // checks the UTF-8 (rare: a name that is not ASCII)
            }
        }

        /** Returns the version byte of the body (1 or 2). */
        public int version() {
            return r.version;
        }

        /**
         * Reads the next check.
         *
         * @throws IllegalArgumentException when it is malformed (a length past the end, a name too long or not
         *                                  UTF-8); the rest of the body cannot be read then
         */
        public void next() {
            int i = index++;
            int n = r.u16("resource", i);
            resource = cachedResource(n, i);
            key = r.string(r.u16("key", i), MAX_NAME_BYTES, "key", i);
            opLength = r.u8("operation", i);
            if (opLength > MAX_OPERATION_BYTES) {
                throw new IllegalArgumentException(Reader.where("operation", i) + " is longer than "
                        + MAX_OPERATION_BYTES + " bytes");
            }
            r.need(opLength, "operation", i);
            opStart = r.pos;
            r.pos += opLength;
            operation = operation(r.b, opStart, opLength);
            g = r.u16("g", i);
        }

        /** Returns the operation's name as sent (a new string only when it is not a known operation). */
        public String operationName() {
            if (operation != null) {
                return operation.name();
            }
            return r.b.toString(opStart, opLength, StandardCharsets.UTF_8);
        }

        /**
         * Checks that nothing follows the last check.
         *
         * @throws IllegalArgumentException naming the bytes left
         */
        public void end() {
            r.end();
        }

        private String cachedResource(int n, int i) {
            if (n > MAX_NAME_BYTES) {
                throw new IllegalArgumentException(Reader.where("resource", i) + " is longer than " + MAX_NAME_BYTES
                        + " bytes");
            }
            r.need(n, "resource", i);
            for (int k = 1; k <= recent.length; k++) {
                String s = recent[(next - k) & (recent.length - 1)];
                if (s != null && r.matchesLatin(s, n)) {
                    r.pos += n;
                    return s;
                }
            }
            String s = r.string(n, MAX_NAME_BYTES, "resource", i);
            recent[next++ & (recent.length - 1)] = s;
            return s;
        }
    }

    /** Operations by the length of their name, for a lookup from bytes without a string. */
    private static final dev.levee.s3.S3Operation[][] OPERATIONS_BY_LENGTH = byLength();

    private static dev.levee.s3.S3Operation[][] byLength() {
        dev.levee.s3.S3Operation[][] out = new dev.levee.s3.S3Operation[MAX_OPERATION_BYTES + 1][];
        for (int n = 0; n <= MAX_OPERATION_BYTES; n++) {
            final int len = n;
            out[n] = java.util.Arrays.stream(dev.levee.s3.S3Operation.values()).filter(o -> o.name().length() == len)
                    .toArray(dev.levee.s3.S3Operation[]::new);
        }
        return out;
    }

    /** The operation whose name is the ASCII bytes {@code b[start, start + n)}, or null. */
    static dev.levee.s3.S3Operation operation(ByteBuf b, int start, int n) {
        if (n > MAX_OPERATION_BYTES) {
            return null;
        }
        next:
        for (dev.levee.s3.S3Operation o : OPERATIONS_BY_LENGTH[n]) {
            String name = o.name();
            for (int k = 0; k < n; k++) {
                if (b.getByte(start + k) != name.charAt(k)) {
                    continue next;
                }
            }
            return o;
        }
        return null;
    }

    /**
     * Reads an answer body of exactly {@code expected} answers.
     *
     * @throws IllegalArgumentException naming what is wrong
     */
    public static Answer[] readAnswers(byte[] body, int expected) {
        AnswerCursor c = new AnswerCursor();
        int n = c.begin(Unpooled.wrappedBuffer(body));
        if (n != expected) {
            throw new IllegalArgumentException(n + " answers for " + expected + " checks");
        }
        Answer[] out = new Answer[n];
        for (int i = 0; i < n; i++) {
            c.next();
            out[i] = switch (c.result) {
                case ACCEPTED, REJECTED -> c.version() < 2
                        ? new Answer(c.result, c.level, c.limitKey, c.remaining, c.retryAfter, null)
                        : new Answer(c.result, c.level, c.limitKey, c.remaining, c.retryAfter, null, c.shadow, c.rate,
                                c.burst, c.reset);
                case FAILED -> new Answer(FAILED, null, null, 0, 0, null);
                default -> new Answer(INVALID, null, null, 0, 0, c.error);
            };
        }
        c.end();
        return out;
    }

    /**
     * Reads the answers of an answer body one at a time (levee-client's reader of the check wire, also behind
     * {@link #readAnswers(byte[], int)}). After {@link #next()} the fields hold the answer just read: for accepted
     * and rejected the level (one of the shared level labels, or null when no enforced quota applied), limit key
     * (null likewise), remaining, retry after and, in version 2, shadow, rate, burst and reset; for invalid the
     * error. A cursor keeps the last few limit keys it decoded and hands out the same {@code String} when one
     * repeats. Not thread-safe.
     */
    public static final class AnswerCursor {
        /** {@link #ACCEPTED}, {@link #REJECTED}, {@link #FAILED} or {@link #INVALID}. */
        public byte result;
        /** The enforced quota's level label, or null. */
        public String level;
        /** Its limit key, or null. */
        public String limitKey;
        /** Requests left in the burst after an admission. */
        public long remaining;
        /** Seconds to wait after a refusal. */
        public long retryAfter;
        /** Why the check was invalid, or null. */
        public String error;
        /** The shadow byte ({@link #SHADOW_NONE} in version 1). */
        public byte shadow;
        /** The enforced quota's rate (0 in version 1). */
        public double rate;
        /** Its burst (0 in version 1). */
        public int burst;
        /** Seconds until the allowance is whole again (0 in version 1). */
        public long reset;
        private final Reader r = new Reader();
        private int index;
        private final String[] recent = new String[8];
        private int next;

        /**
         * Starts reading a body from its reader index to its writer index (the indexes are not moved).
         *
         * @return how many answers it holds
         * @throws IllegalArgumentException when the header is malformed
         */
        public int begin(ByteBuf body) {
            return begin(body, body.writerIndex());
        }

        /**
         * Starts reading a body from its reader index to {@code end} (the indexes are not moved): a frame read where
         * it lies in a buffer that holds more.
         *
         * @return how many answers it holds
         * @throws IllegalArgumentException when the header is malformed
         */
        public int begin(ByteBuf body, int end) {
            r.reset(body, end);
            index = 0;
            return r.header("answer", "answer count");
        }

        /** Returns the version byte of the body. */
        public int version() {
            return r.version;
        }

        /**
         * Reads the next answer.
         *
         * @throws IllegalArgumentException when it is malformed
         */
        public void next() {
            int i = index++;
            level = null;
            limitKey = null;
            error = null;
            remaining = 0;
            retryAfter = 0;
            shadow = SHADOW_NONE;
            rate = 0;
            burst = 0;
            reset = 0;
            int code = r.u8("result", i);
            switch (code) {
                case ACCEPTED, REJECTED -> {
                    String l = level(r, r.u8("level", i), i);
                    level = l.isEmpty() ? null : l;
                    limitKey = limitKey(r.u16("limit key", i), i);
                    remaining = r.i64("remaining", i);
                    retryAfter = r.i64("retry after", i);
                    if (r.version >= 2) {
                        int s = r.u8("shadow", i);
                        if (s > SHADOW_WOULD_REJECT) {
                            throw new IllegalArgumentException("answer " + i + ": unknown shadow code " + s);
                        }
                        shadow = (byte) s;
                        rate = Double.longBitsToDouble(r.i64("rate", i));
                        burst = r.i32("burst", i);
                        reset = r.i64("reset", i);
                    }
                }
                case FAILED -> {
                }
                case INVALID -> error = r.string(r.u16("error", i), 0xFFFF, "error", i);
                default -> throw new IllegalArgumentException("answer " + i + ": unknown result code " + code);
            }
            result = (byte) code;
        }

        /**
         * Checks that nothing follows the last answer.
         *
         * @throws IllegalArgumentException naming the bytes left
         */
        public void end() {
            r.end();
        }

        private String limitKey(int n, int i) {
            if (n == 0) {
                return null;
            }
            r.need(n, "limit key", i);
            for (int k = 1; k <= recent.length; k++) {
                String s = recent[(next - k) & (recent.length - 1)];
                if (s != null && r.matchesLatin(s, n)) {
                    r.pos += n;
                    return s;
                }
            }
            String s = r.string(n, 0xFFFF, "limit key", i);
            recent[next++ & (recent.length - 1)] = s;
            return s;
        }
    }

    /** The quota level labels, shared instead of one new string per answer. */
    private static final String[] LEVELS = {"prefix_method", "prefix", "resource", "methods_default", "default"};

    private static String level(Reader r, int n, int i) {
        for (String l : LEVELS) {
            if (l.length() == n && r.matchesLatin(l, n)) {
                r.pos += n;
                return l;
            }
        }
        return r.string(n, 255, "level", i);
    }

    /** Goes on while a byte is ASCII: {@code forEachByte} returns the index of the first byte that is not, or -1. */
    private static final ByteProcessor ASCII = value -> value >= 0;

    /** Reads big-endian fields from a body between its reader index and an end (its writer index), by absolute index. */
    private static final class Reader {
        ByteBuf b;
        int pos;
        int limit;
        int length;
        int version;

        void reset(ByteBuf body) {
            reset(body, body.writerIndex());
        }

        void reset(ByteBuf body, int end) {
            b = body;
            pos = body.readerIndex();
            limit = end;
            length = limit - pos;
        }

        /** Reads the version and the count; {@code countField} names the count (a constant: no string per body). */
        int header(String what, String countField) {
            if (length < 3) {
                throw new IllegalArgumentException("binary body of " + length + " bytes: too short for its header");
            }
            int v = b.getByte(pos);
            if (v != VERSION && v != VERSION_1) {
                throw new IllegalArgumentException("binary body version " + (v & 0xFF) + " is not " + VERSION_1
                        + " or " + VERSION);
            }
            version = v;
            pos++;
            int n = u16(countField, -1);
            if (n < 1 || n > MAX_CHECKS) {
                throw new IllegalArgumentException(what + " count " + n + " is not between 1 and " + MAX_CHECKS);
            }
            return n;
        }

        void need(int n, String field, int i) {
            if (limit - pos < n) {
                throw new IllegalArgumentException(where(field, i) + " runs past the end of the body (" + length
                        + " bytes)");
            }
        }

        int u8(String field, int i) {
            need(1, field, i);
            return b.getUnsignedByte(pos++);
        }

        int u16(String field, int i) {
            need(2, field, i);
            int v = b.getUnsignedShort(pos);
            pos += 2;
            return v;
        }

        long i64(String field, int i) {
            need(8, field, i);
            long v = b.getLong(pos);
            pos += 8;
            return v;
        }

        /** Reads a big-endian i32. */
        int i32(String field, int i) {
            need(4, field, i);
            int v = b.getInt(pos);
            pos += 4;
            return v;
        }

        /** Whether the next {@code n} bytes are the characters of {@code s}, each below 256 (no bounds check). */
        boolean matchesLatin(String s, int n) {
            if (s.length() != n || limit - pos < n) {
                return false;
            }
            for (int k = 0; k < n; k++) {
                if ((b.getByte(pos + k) & 0xFF) != s.charAt(k) || s.charAt(k) > 0x7F) {
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
            pos += n;
            if (b.forEachByte(start, n, ASCII) < 0) {
                return b.toString(start, n, StandardCharsets.ISO_8859_1); // the cheapest decoder for ASCII
            }
            try {
                return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT).decode(b.nioBuffer(start, n)).toString();
            } catch (CharacterCodingException e) {
                throw new IllegalArgumentException(where(field, i) + " is not valid UTF-8");
            }
        }

        void end() {
            if (pos != limit) {
                throw new IllegalArgumentException((limit - pos) + " bytes after the last entry of the binary body");
            }
        }

        static String where(String field, int i) {
            return i < 0 ? "field '" + field + "'" : "field '" + field + "' of entry " + i;
        }
    }
}
