package dev.levee.wire;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import java.nio.charset.StandardCharsets;

/**
 * The check wire between levee-client and a limiter (issue 12; docs/decisions.md, "The check wire"): checks and
 * answers in the {@link BinaryChecks} encoding, framed on a TCP connection of their own instead of one HTTP
 * request per check or batch, so that neither side builds HTTP request and response objects per check, and all
 * the checks a client collects in one turn of its event loop cost the limiter one read and one write.
 *
 * <p><b>Handshake.</b> The connection starts as HTTP/1.1 on the limiter's one listener and is upgraded
 * (RFC 9110 §7.8): {@code GET /v1/checks} with {@code Connection: Upgrade} and {@code Upgrade: levee-check/1};
 * the limiter answers {@code 101 Switching Protocols}. Any other answer (a limiter older than the wire answers
 * 405) means: keep to {@code POST /v1/checks}. A stopping limiter answers 503.
 *
 * <p><b>Frames</b>, both ways; integers big-endian:
 * <pre>
 * frame   = u32 length (of what follows, at most {@value #MAX_FRAME}), u8 type, u32 id, body
 * CHECKS  (1, client → limiter):  a request body of {@link BinaryChecks} (version 2, 1–1024 checks)
 * ANSWERS (2, limiter → client):  the answer body to the CHECKS frame of the same id: as many answers, in order
 * GOAWAY  (3, limiter → client):  no body; the limiter is stopping: it answers what it has received, and the
 *                                 client sends nothing more and closes the connection once its answers are in
 * ERROR   (4, limiter → client):  u16 length + UTF-8 message; a frame could not be read (unknown type, a length
 *                                 over the limit, a body that is not well formed); the limiter closes the connection
 * </pre>
 * The limiter answers frames in the order it received them. A check that is well formed but invalid (an unknown
 * operation, a group size above the factor) is an {@code invalid} answer inside the ANSWERS frame, as in
 * {@code POST /v1/checks}; only frames that cannot be read end the connection.
 */
public final class CheckWire {

    /** The {@code Upgrade} token: {@value}. */
    public static final String PROTOCOL = "levee-check/1";
    /** The path of the upgrade request: {@value}. */
    public static final String PATH = "/v1/checks";
    /** Frame type: checks, client to limiter. */
    public static final byte CHECKS = 1;
    /** Frame type: answers, limiter to client. */
    public static final byte ANSWERS = 2;
    /** Frame type: the limiter is stopping. */
    public static final byte GOAWAY = 3;
    /** Frame type: a frame could not be read; the connection closes. */
    public static final byte ERROR = 4;
    /**
     * Longest frame after its length field, in bytes: {@value} (4 MiB). A client cuts its frames at 1 MiB of checks;
     * 1024 answers with limit keys of 2 KiB each take about 2.1 MiB.
     */
    public static final int MAX_FRAME = 4 << 20;
    /** Bytes of a frame before its body: length, type and id. */
    public static final int HEADER_BYTES = 9;

    private CheckWire() {
    }

    /**
     * Returns a decoder that cuts a byte stream into frames, each handed on without its length field (type, id,
     * body); a length over {@link #MAX_FRAME} fails with Netty's {@code TooLongFrameException}. One per connection.
     */
    public static LengthFieldBasedFrameDecoder frameDecoder() {
        // the decoder's limit counts the length field too: MAX_FRAME bytes may follow it
        return new LengthFieldBasedFrameDecoder(MAX_FRAME + 4, 0, 4, 0, 4);
    }

    /**
     * Starts a frame at the buffer's writer index: a length to be filled in by {@link #endFrame}, the type and the id.
     *
     * @return the index of the length field, for {@link #endFrame}
     */
    public static int startFrame(ByteBuf b, byte type, int id) {
        int start = b.writerIndex();
        b.writeInt(0);
        b.writeByte(type);
        b.writeInt(id);
        return start;
    }

    /**
     * Fills in the length of the frame started at {@code start}.
     *
     * @throws IllegalArgumentException when the frame is longer than {@link #MAX_FRAME}
     */
    public static void endFrame(ByteBuf b, int start) {
        int length = b.writerIndex() - start - 4;
        if (length > MAX_FRAME) {
            throw new IllegalArgumentException("frame of " + length + " bytes is longer than " + MAX_FRAME);
        }
        b.setInt(start, length);
    }

    /** Appends a whole ERROR frame with {@code message} (cut to 1024 characters). */
    public static void writeError(ByteBuf b, int id, String message) {
        int start = startFrame(b, ERROR, id);
        String m = message.length() > 1024 ? message.substring(0, 1024) : message;
        b.writeShort(ByteBufUtil.utf8Bytes(m));
        b.writeCharSequence(m, StandardCharsets.UTF_8);
        endFrame(b, start);
    }

    /** Appends a whole GOAWAY frame. */
    public static void writeGoAway(ByteBuf b) {
        endFrame(b, startFrame(b, GOAWAY, 0));
    }

    /**
     * Reads the message of an ERROR frame's body (the frame's reader index at the body).
     *
     * @return the message, or a description of the malformed body
     */
    public static String readError(ByteBuf body) {
        if (body.readableBytes() < 2) {
            return "(malformed error frame)";
        }
        int n = body.getUnsignedShort(body.readerIndex());
        if (body.readableBytes() - 2 < n) {
            return "(malformed error frame)";
        }
        return body.toString(body.readerIndex() + 2, n, StandardCharsets.UTF_8);
    }
}
