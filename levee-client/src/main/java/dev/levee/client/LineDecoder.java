package dev.levee.client;

import dev.levee.s3.Latin1Chars;
import dev.levee.s3.S3Classification;
import dev.levee.s3.S3Classifier;
import dev.levee.s3.S3Request;
import io.netty.buffer.ByteBuf;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Decodes the requests of levee-line/1, the line protocol between NGINX's {@code rate.lua} (cosocket
 * transport) and levee-client (docs/nginx.md, "Transports: subrequest and cosocket"):
 *
 * <pre>
 * request = "C" SP flags SP method-f host-f uri-f copy-f LF
 * flags   = "0" / "1"              ; "1": the RateLimit fields on an accepted answer too
 * xxx-f   = length ":" bytes       ; length = 1*5DIGIT, the number of bytes that follow, taken verbatim
 * </pre>
 *
 * <p>The decoder is a state machine fed with whatever bytes arrived: a request may be split anywhere
 * between reads, and one read may carry several requests (pipelining). A field's bytes are copied into
 * an array that grows to the longest field seen (at most {@link #MAX_URI} bytes) and are read in ISO-8859-1,
 * one char per byte: the characters Vert.x makes of the same bytes in an {@code X-Levee-*} header, so both
 * transports classify a request alike ({@link Request#toS3Request()}). An empty host is absent ({@code null}),
 * as NGINX omits an empty header, and so is a blank copy source ({@link S3Request#fromRequestUri}). A method is
 * one of the usual constants when its bytes spell one, and a host equal to the previous request's is that
 * string again. The URI stays bytes ({@link Latin1Chars}), classified where it lies, and of the copy source
 * only its presence is kept: most checks make no string here at all.
 *
 * <p>Strict: a wrong first byte, a separator other than SP, flags other than 0 or 1, a length that is
 * not 1–5 digits followed by ':' or exceeds its field's limit, an empty method or URI, or a byte other
 * than LF after the last field ends decoding for good with a reason naming the field: the framing is
 * lost, and the connection closes after the answers due. No I/O here; the caller owns the buffer.
 */
final class LineDecoder {

    /** Longest method, bytes. */
    static final int MAX_METHOD = 32;
    /** Longest Host, bytes. */
    static final int MAX_HOST = 1024;
    /** Longest request URI with its query, bytes: 16 KiB (levee-client's HTTP listener allows as long a line). */
    static final int MAX_URI = 16 * 1024;
    /** Longest {@code x-amz-copy-source}, bytes: 8 KiB. */
    static final int MAX_COPY_SOURCE = 8 * 1024;

    private static final String[] FIELD = {"method", "host", "uri", "copy-source"};
    private static final int[] LIMIT = {MAX_METHOD, MAX_HOST, MAX_URI, MAX_COPY_SOURCE};
    private static final int METHOD = 0;
    private static final int HOST = 1;
    private static final int URI = 2;

    private static final String[] METHODS = {"GET", "PUT", "HEAD", "POST", "DELETE", "OPTIONS", "PATCH"};
    private static final byte[][] METHOD_BYTES = new byte[METHODS.length][];

    static {
        for (int i = 0; i < METHODS.length; i++) {
            METHOD_BYTES[i] = METHODS[i].getBytes(StandardCharsets.US_ASCII);
        }
    }

    /**
     * One decoded request, as the decoder holds it: valid only during {@link Sink#request}, then refilled with the
     * next request (its URI is a view of the decoder's array).
     */
    static final class Request {
        private String method;
        private String host;
        private final Latin1Chars uri = new Latin1Chars();
        private boolean hasCopySource;

        /** Classifies the request as {@code classifier.classify(toS3Request())} does, without making the URI a string. */
        S3Classification classify(S3Classifier classifier) {
            return classifier.classify(method, host, uri, hasCopySource);
        }

        /** Returns the request as an {@link S3Request} (copies the URI). */
        S3Request toS3Request() {
            return S3Request.fromRequestUri(method, host, uri.toString(), hasCopySource);
        }
    }

    /** Receives what {@link #decode} finds. */
    interface Sink {
        /**
         * Takes one request.
         *
         * @param request           the S3 request facts, valid only during the call
         * @param rateLimitOnAccept flags "1": the answer carries the RateLimit fields when accepted too
         * @return whether to go on decoding now; false leaves the rest of the buffer unread (back-pressure)
         */
        boolean request(Request request, boolean rateLimitOnAccept);

        /**
         * Takes the reason decoding stopped for good; called once, after every request before it.
         *
         * @param reason names the field, e.g. {@code "uri length 20000 exceeds 16384 bytes"}; no TAB, no LF
         */
        void malformed(String reason);
    }

    private static final int COMMAND = 0;
    private static final int SP_BEFORE_FLAGS = 1;
    private static final int FLAGS = 2;
    private static final int SP_AFTER_FLAGS = 3;
    private static final int LENGTH = 4;
    private static final int BYTES = 5;
    private static final int END = 6;
    private static final int BROKEN = 7;

    private int state = COMMAND;
    private boolean rateLimitOnAccept;
    private int field;
    private int digits;
    private int length;
    /** Bytes of the current field copied so far. */
    private int filled;
    /** The bytes of the method, host and copy-source fields, one after the other. */
    private byte[] scratch = new byte[256];
    /** The bytes of the URI field: kept while the copy-source field is read, then viewed by {@link Request#uri}. */
    private byte[] uriBytes = new byte[256];
    private final Request request = new Request();
    private byte[] lastHostBytes = new byte[0];
    private String lastHost;

    /** Returns whether malformed input ended decoding for good. */
    boolean broken() {
        return state == BROKEN;
    }

    /**
     * The peer's input ended (it half-closed its connection): a request cut short ends decoding as malformed
     * ({@link Sink#malformed}, "input ended inside a request"); between requests nothing happens.
     */
    void endOfInput(Sink sink) {
        if (state != COMMAND && state != BROKEN) {
            fail(sink, "input ended inside a request");
        }
    }

    /**
     * Decodes what {@code in} holds from its reader index, advancing it past what was consumed: to its end,
     * to the end of the request after which {@code sink} asked to stop, or to the malformed byte.
     *
     * @param in   the bytes received, not released here
     * @param sink receives each request and at most one malformation
     */
    void decode(ByteBuf in, Sink sink) {
        while (state != BROKEN && in.isReadable()) {
            if (state == BYTES) {
                int n = Math.min(length - filled, in.readableBytes());
                in.readBytes(field == URI ? uriBytes : scratch, filled, n);
                filled += n;
                if (filled == length) {
                    endField();
                }
                continue;
            }
            byte b = in.readByte();
            switch (state) {
                case COMMAND -> expect(b == 'C', SP_BEFORE_FLAGS, sink, "request must start with 'C'");
                case SP_BEFORE_FLAGS -> expect(b == ' ', FLAGS, sink, "expected SP after 'C'");
                case FLAGS -> {
                    rateLimitOnAccept = b == '1';
                    expect(b == '0' || b == '1', SP_AFTER_FLAGS, sink, "flags must be 0 or 1");
                }
                case SP_AFTER_FLAGS -> {
                    if (expect(b == ' ', LENGTH, sink, "expected SP after the flags")) {
                        startField(METHOD);
                    }
                }
                case LENGTH -> length(b, sink);
                case END -> {
                    if (b != '\n') {
                        fail(sink, "expected LF after the copy-source field");
                    } else {
                        state = COMMAND;
                        if (!sink.request(request, rateLimitOnAccept)) {
                            return;
                        }
                    }
                }
                default -> throw new IllegalStateException("state " + state);
            }
        }
    }

    private boolean expect(boolean ok, int next, Sink sink, String reason) {
        if (ok) {
            state = next;
        } else {
            fail(sink, reason);
        }
        return ok;
    }

    private void fail(Sink sink, String reason) {
        state = BROKEN;
        sink.malformed(reason);
    }

    private void startField(int f) {
        field = f;
        digits = 0;
        length = 0;
        filled = 0;
        state = LENGTH;
    }

    private void length(byte b, Sink sink) {
        if (b >= '0' && b <= '9') {
            if (digits == 5) {
                fail(sink, FIELD[field] + " length has more than 5 digits");
                return;
            }
            digits++;
            length = length * 10 + (b - '0');
            return;
        }
        if (b != ':') {
            fail(sink, digits == 0 ? FIELD[field] + " length must be 1-5 digits"
                    : FIELD[field] + " length must end with ':'");
            return;
        }
        if (digits == 0) {
            fail(sink, FIELD[field] + " length must be 1-5 digits");
        } else if (length > LIMIT[field]) {
            fail(sink, FIELD[field] + " length " + length + " exceeds " + LIMIT[field] + " bytes");
        } else if (length == 0 && (field == METHOD || field == URI)) {
            fail(sink, "empty " + FIELD[field]);
        } else if (length == 0) {
            endField();
        } else {
            if (field == URI && uriBytes.length < length) {
                uriBytes = Arrays.copyOf(uriBytes, Math.min(MAX_URI, Math.max(length, 2 * uriBytes.length)));
            } else if (field != URI && scratch.length < length) {
                scratch = Arrays.copyOf(scratch, Math.min(MAX_COPY_SOURCE, Math.max(length, 2 * scratch.length)));
            }
            state = BYTES;
        }
    }

    /** Turns the bytes of the current field into its value and moves on. */
    private void endField() {
        switch (field) {
            case METHOD -> request.method = methodOf(scratch, length);
            case HOST -> request.host = hostOf(scratch, length);
            case URI -> request.uri.wrap(uriBytes, length);
            default -> {
                // only whether it is there counts (CopyObject, UploadPartCopy), as S3Request keeps it
                request.hasCopySource = !blank(scratch, length);
                state = END;
                return;
            }
        }
        startField(field + 1);
    }

    /** Whether {@code b[0, n)} read as ISO-8859-1 is empty or white space only, as {@link String#isBlank()} says. */
    private static boolean blank(byte[] b, int n) {
        for (int i = 0; i < n; i++) {
            if (!Character.isWhitespace((char) (b[i] & 0xFF))) {
                return false;
            }
        }
        return true;
    }

    private static String methodOf(byte[] b, int n) {
        for (int i = 0; i < METHOD_BYTES.length; i++) {
            if (Arrays.equals(METHOD_BYTES[i], 0, METHOD_BYTES[i].length, b, 0, n)) {
                return METHODS[i];
            }
        }
        return new String(b, 0, n, StandardCharsets.ISO_8859_1);
    }

    private String hostOf(byte[] b, int n) {
        if (n == 0) {
            return null;
        }
        if (lastHost == null || !Arrays.equals(lastHostBytes, 0, lastHostBytes.length, b, 0, n)) {
            lastHostBytes = Arrays.copyOf(b, n);
            lastHost = new String(b, 0, n, StandardCharsets.ISO_8859_1);
        }
        return lastHost;
    }
}
