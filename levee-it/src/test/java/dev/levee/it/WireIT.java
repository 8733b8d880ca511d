package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.runtime.HostPort;
import dev.levee.stack.LocalStack;
import dev.levee.wire.BinaryChecks;
import dev.levee.wire.CheckWire;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The limiter's end of the check wire (docs/decisions.md, "The check wire"), driven byte by byte from a socket as
 * a misbehaving client would: the upgrade, frames decided as their HTTP forms, and every malformed frame answered
 * with an ERROR frame naming what is wrong, counted once, nothing of it decided, and the connection closed —
 * never a crash, never a stack trace on the wire.
 */
class WireIT {

    static Stack stack;
    static HttpClient http;

    @BeforeAll
    static void start() {
        stack = new Stack("""
                factor: 4
                default: {rate: 1000, burst: 100}
                """, new LocalStack.Settings(2, Duration.ofSeconds(2), Duration.ofMillis(300), Duration.ofMillis(300),
                true, dev.levee.gateway.GatewayOptions.OnFailure.ALLOW));
        http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterAll
    static void stop() {
        if (stack != null) {
            stack.close();
        }
    }

    /** A raw connection upgraded to the wire. */
    static final class Raw implements AutoCloseable {
        final Socket socket;
        final DataInputStream in;

        Raw() throws IOException {
            this(new byte[0]);
        }

        /** Upgrades with {@code early} (frames) written in the same write as the upgrade request, before the 101. */
        Raw(byte[] early) throws IOException {
            HostPort limiter = stack.stack.limiters().get(0).address();
            socket = new Socket(limiter.host(), limiter.port());
            socket.setSoTimeout(5_000);
            byte[] upgrade = ("GET /v1/checks HTTP/1.1\r\nHost: " + limiter + "\r\nConnection: Upgrade\r\n"
                    + "Upgrade: " + CheckWire.PROTOCOL + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
            byte[] both = java.util.Arrays.copyOf(upgrade, upgrade.length + early.length);
            System.arraycopy(early, 0, both, upgrade.length, early.length);
            socket.getOutputStream().write(both);
            in = new DataInputStream(socket.getInputStream());
            String head = head(in);
            assertThat(head).startsWith("HTTP/1.1 101");
            assertThat(head.toLowerCase()).contains("upgrade: " + CheckWire.PROTOCOL);
        }

        void send(byte[] bytes) throws IOException {
            socket.getOutputStream().write(bytes);
            socket.getOutputStream().flush();
        }

        /** Reads one frame: type, id, body. */
        Frame read() throws IOException {
            int length = in.readInt();
            byte type = in.readByte();
            int id = in.readInt();
            byte[] body = new byte[length - 5];
            in.readFully(body);
            return new Frame(type, id, body);
        }

        boolean closedByPeer() throws IOException {
            try {
                return in.read() < 0;
            } catch (java.net.SocketException e) {
                return true; // reset
            }
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    record Frame(byte type, int id, byte[] body) {
        String error() {
            return CheckWire.readError(Unpooled.wrappedBuffer(body));
        }
    }

    /** Reads an HTTP response head up to the empty line (test code reading the limiter's own 101). */
    static String head(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) >= 0) {
            b.write(c);
            String s = b.toString(StandardCharsets.US_ASCII);
            if (s.endsWith("\r\n\r\n")) {
                return s;
            }
        }
        throw new EOFException("connection closed in the response head: " + b);
    }

    static byte[] frame(byte type, int id, byte[] body) {
        ByteBuf b = Unpooled.buffer();
        int start = CheckWire.startFrame(b, type, id);
        b.writeBytes(body);
        CheckWire.endFrame(b, start);
        byte[] out = new byte[b.readableBytes()];
        b.readBytes(out);
        return out;
    }

    static byte[] checks(Object[]... checks) {
        return BadInputIT.binary(checks);
    }

    @Test
    void framesAreAnsweredInOrderAsTheirHttpForms() throws Exception {
        try (Raw w = new Raw()) {
            // two frames in one write: answered in order, each with its id
            byte[] a = frame(CheckWire.CHECKS, 7, checks(new Object[] {"wire1", "a", "GetObject", 2},
                    new Object[] {"wire1", "a", "GetObjekt", 2}, new Object[] {"wire1", "a", "PutObject", 9}));
            byte[] b = frame(CheckWire.CHECKS, 8, checks(new Object[] {"wire2", "k", "PutObject", 1}));
            byte[] both = java.util.Arrays.copyOf(a, a.length + b.length);
            System.arraycopy(b, 0, both, a.length, b.length);
            w.send(both);
            Frame fa = w.read();
            assertThat(fa.type()).isEqualTo(CheckWire.ANSWERS);
            assertThat(fa.id()).isEqualTo(7);
            var as = BinaryChecks.readAnswers(fa.body(), 3);
            assertThat(as[0].result()).isEqualTo(BinaryChecks.ACCEPTED);
            assertThat(as[0].limitKey()).isEqualTo("default:wire1");
            assertThat(as[0].rate()).isPositive();
            assertThat(as[1].error()).contains("unknown operation 'GetObjekt'");
            assertThat(as[2].error()).contains("'g' must be between");
            Frame fb = w.read();
            assertThat(fb.id()).isEqualTo(8);
            assertThat(BinaryChecks.readAnswers(fb.body(), 1)[0].limitKey()).isEqualTo("default:wire2");
            // the burst of 100 at g = 4 runs out: rejected with a Retry-After, as over HTTP
            BinaryChecks.Answer last = null;
            for (int i = 0; i < 5000 && (last == null || last.result() == BinaryChecks.ACCEPTED); i++) {
                w.send(frame(CheckWire.CHECKS, 100 + i, checks(new Object[] {"wireburst", "a", "GetObject", 4})));
                last = BinaryChecks.readAnswers(w.read().body(), 1)[0];
            }
            assertThat(last.result()).isEqualTo(BinaryChecks.REJECTED);
            assertThat(last.retryAfter()).isPositive();
        }
    }

    static Stream<Arguments> malformedFrames() {
        byte[] good = checks(new Object[] {"wirebad", "a", "GetObject", 1});
        byte[] badUtf8 = good.clone();
        badUtf8[5] = (byte) 0xFF; // the resource's first byte
        byte[] tooLong = new byte[9];
        Unpooled.wrappedBuffer(tooLong).setInt(0, CheckWire.MAX_FRAME + 1);
        return Stream.of(
                Arguments.of(frame((byte) 9, 3, good), "frame type 9 is not CHECKS"),
                Arguments.of(frame(CheckWire.ANSWERS, 3, good), "frame type 2 is not CHECKS"),
                Arguments.of(new byte[] {0, 0, 0, 2, 1, 0}, "too short for its type and id"),
                Arguments.of(frame(CheckWire.CHECKS, 3, new byte[0]), "too short for its header"),
                Arguments.of(frame(CheckWire.CHECKS, 3, new byte[] {3, 0, 1}), "version 3 is not 1 or 2"),
                Arguments.of(frame(CheckWire.CHECKS, 3, new byte[] {2, 0, 0}), "count 0"),
                Arguments.of(frame(CheckWire.CHECKS, 3, java.util.Arrays.copyOf(good, good.length - 1)),
                        "field 'g' of entry 0 runs past"),
                Arguments.of(frame(CheckWire.CHECKS, 3, java.util.Arrays.copyOf(good, good.length + 2)),
                        "2 bytes after the last entry"),
                Arguments.of(frame(CheckWire.CHECKS, 3, badUtf8), "field 'resource' of entry 0 is not valid UTF-8"),
                Arguments.of(frame(CheckWire.CHECKS, 3, checks(new Object[] {"wirebad", "k".repeat(1025), "GetObject", 1})),
                        "field 'key' of entry 0 is longer than 1024 bytes"),
                // a good check then a broken one: the first must not be decided either
                Arguments.of(frame(CheckWire.CHECKS, 3, java.util.Arrays.copyOf(checks(
                        new Object[] {"wirebad", "a", "GetObject", 1}, new Object[] {"wirebad", "b", "GetObject", 1}),
                        good.length * 2 - 4)), "field 'g' of entry 1 runs past"),
                Arguments.of(tooLong, "frame length over the limit of 4194304 bytes"));
    }

    @ParameterizedTest
    @MethodSource("malformedFrames")
    void malformedFrameIsAnsweredWithAnErrorNamingItAndTheConnectionClosed(byte[] bytes, String expected)
            throws Exception {
        double invalid = metric("result=\"invalid\"");
        double accepted = metric("result=\"accepted\"");
        try (Raw w = new Raw()) {
            w.send(bytes);
            Frame f = w.read();
            assertThat(f.type()).isEqualTo(CheckWire.ERROR);
            assertThat(f.error()).contains(expected).doesNotContain("Exception").doesNotContain("at dev.");
            assertThat(w.closedByPeer()).as("the limiter closes the connection").isTrue();
        }
        assertThat(metric("result=\"invalid\"")).as("counted once").isEqualTo(invalid + 1);
        assertThat(metric("result=\"accepted\"")).as("nothing of the frame decided").isEqualTo(accepted);
        // and the limiter goes on deciding
        try (Raw w = new Raw()) {
            w.send(frame(CheckWire.CHECKS, 1, checks(new Object[] {"wirebad", "a", "GetObject", 1})));
            assertThat(BinaryChecks.readAnswers(w.read().body(), 1)[0].result()).isEqualTo(BinaryChecks.ACCEPTED);
        }
    }

    @Test
    void aFrameCutShortInTheMiddleOfTheStreamIsWaitedFor() throws Exception {
        try (Raw w = new Raw()) {
            byte[] f = frame(CheckWire.CHECKS, 5, checks(new Object[] {"wiresplit", "a", "GetObject", 1}));
            for (byte b : f) {
                w.send(new byte[] {b}); // one byte at a time: the frame decoder waits for the whole frame
            }
            Frame a = w.read();
            assertThat(a.id()).isEqualTo(5);
            assertThat(BinaryChecks.readAnswers(a.body(), 1)[0].limitKey()).isEqualTo("default:wiresplit");
        }
    }

    @Test
    void aPeerThatDoesNotReadItsAnswersIsNotReadFrom(@org.junit.jupiter.api.io.TempDir java.nio.file.Path logs)
            throws Exception {
        // its ~100 000 decision lines go to a file of its own, not into the log the other ITs read
        dev.levee.runtime.Logging.configure(new dev.levee.runtime.LogTarget("file", null, 0, logs.resolve("flood.log")),
                "levee-it", "INFO");
        try {
            flood();
        } finally {
            dev.levee.runtime.Logging.configure(new dev.levee.runtime.LogTarget("file", null, 0, Stack.LOG.toAbsolutePath()),
                    "levee-it", "INFO");
        }
    }

    private void flood() throws Exception {
        // frames of 1 000 checks each, written without reading an answer: the limiter must stop reading once its
        // answers back up (else they pile up in its memory: 150 MB of frames in 3 s before the fix)
        Object[][] many = new Object[1000][];
        for (int i = 0; i < many.length; i++) {
            many[i] = new Object[] {"wireflood", "k" + i, "GetObject", 1};
        }
        byte[] f = frame(CheckWire.CHECKS, 1, checks(many));
        long bound = 32L << 20; // stalled after ~5 MB with back-pressure; ~150 MB taken in 3 s without
        HostPort limiter = stack.stack.limiters().get(0).address();
        try (java.nio.channels.SocketChannel ch = java.nio.channels.SocketChannel.open()) {
            // a small receive window: the answers back up after a few MB, not after what the kernel would let pile up
            ch.setOption(java.net.StandardSocketOptions.SO_RCVBUF, 4096);
            ch.connect(new java.net.InetSocketAddress(limiter.host(), limiter.port()));
            ch.write(java.nio.ByteBuffer.wrap(("GET /v1/checks HTTP/1.1\r\nHost: " + limiter + "\r\nConnection: Upgrade\r\n"
                    + "Upgrade: " + CheckWire.PROTOCOL + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII)));
            assertThat(head(ch.socket().getInputStream())).startsWith("HTTP/1.1 101");
            ch.configureBlocking(false);
            long sent = 0;
            long frames = 0;
            long stalledSince = 0;
            java.nio.ByteBuffer buf = java.nio.ByteBuffer.wrap(f);
            while (sent < bound) {
                int n = ch.write(buf);
                sent += n;
                if (!buf.hasRemaining()) {
                    frames++;
                    buf = java.nio.ByteBuffer.wrap(f);
                }
                if (n > 0) {
                    stalledSince = 0;
                } else if (stalledSince == 0) {
                    stalledSince = System.nanoTime();
                } else if (System.nanoTime() - stalledSince > java.util.concurrent.TimeUnit.SECONDS.toNanos(2)) {
                    break; // nothing taken for 2 s: the limiter reads no more
                } else {
                    Thread.onSpinWait();
                }
            }
            assertThat(sent).as("bytes the limiter took before it stopped reading").isLessThan(bound);
            // reading the answers lets it go on: every frame sent is answered, the one cut short once it is whole
            ch.configureBlocking(true);
            long expected = frames + (buf.position() > 0 ? 1 : 0);
            java.util.concurrent.CompletableFuture<Long> answered = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    DataInputStream in = new DataInputStream(java.nio.channels.Channels.newInputStream(ch));
                    long n = 0;
                    for (; n < expected; n++) {
                        int length = in.readInt();
                        if (in.readByte() != CheckWire.ANSWERS) {
                            break;
                        }
                        in.skipNBytes(length - 1);
                    }
                    return n;
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            while (buf.position() > 0 && buf.hasRemaining()) {
                ch.write(buf); // the limiter reads again as its answers are read
            }
            assertThat(answered.get(60, java.util.concurrent.TimeUnit.SECONDS)).isEqualTo(expected);
        }
    }

    @Test
    void framesSentWithTheUpgradeRequestBeforeThe101AreAnswered() throws Exception {
        // RFC 9110 §7.8: a client may start the new protocol right after its request, without waiting for the 101
        byte[] f1 = frame(CheckWire.CHECKS, 11, checks(new Object[] {"wireearly", "a", "GetObject", 1}));
        // an id whose bytes end in CR LF: an HTTP decoder still reading would take it for the end of a request line
        byte[] f2 = frame(CheckWire.CHECKS, 0x0D0A, checks(new Object[] {"wireearly", "b", "GetObject", 1}));
        byte[] both = java.util.Arrays.copyOf(f1, f1.length + f2.length);
        System.arraycopy(f2, 0, both, f1.length, f2.length);
        try (Raw w = new Raw(both)) {
            assertThat(w.read().id()).isEqualTo(11);
            assertThat(w.read().id()).isEqualTo(0x0D0A);
            // and the connection goes on as any other
            w.send(frame(CheckWire.CHECKS, 13, checks(new Object[] {"wireearly", "c", "GetObject", 1})));
            assertThat(w.read().id()).isEqualTo(13);
        }
    }

    @ParameterizedTest
    @org.junit.jupiter.params.provider.CsvSource(delimiter = '|', textBlock = """
            HTTP/1.1 | Connection: keep-alive, Upgrade~Upgrade: websocket, levee-check/1 | HTTP/1.1 101 |
            HTTP/1.0 | Connection: Upgrade~Upgrade: levee-check/1                         | 405          | the check wire: HTTP/1.1
            HTTP/1.1 | Connection: Upgrade~Upgrade: levee-check/2                         | HTTP/1.1 405 | Upgrade: levee-check/1
            HTTP/1.1 | Connection: Upgrade~Upgrade: levee-check/1~Content-Length: 5       | HTTP/1.1 400 | has no body
            HTTP/1.1 | Connection: Upgrade~Upgrade: levee-check/1~Transfer-Encoding: chunked | HTTP/1.1 400 | has no body
            """)
    void theUpgradeFollowsHttpRules(String version, String headers, String status, String says) throws Exception {
        // headers separated by '~' in the table
        HostPort limiter = stack.stack.limiters().get(0).address();
        try (Socket s = new Socket(limiter.host(), limiter.port())) {
            s.setSoTimeout(5_000);
            String body = headers.contains("Content-Length: 5") ? "hello"
                    : headers.contains("chunked") ? "5\r\nhello\r\n0\r\n\r\n" : "";
            s.getOutputStream().write(("GET /v1/checks " + version + "\r\nHost: x\r\n" + headers.replace("~", "\r\n")
                    + "\r\n\r\n" + body).getBytes(StandardCharsets.US_ASCII));
            assertThat(head(s.getInputStream())).contains(status);
            if (says != null) { // the body, read until it says so (or the socket's 5 s time-out fails the test)
                ByteArrayOutputStream rest = new ByteArrayOutputStream();
                while (!rest.toString(StandardCharsets.UTF_8).contains(says)) {
                    int c = s.getInputStream().read();
                    assertThat(c).as("body so far: %s", rest).isNotNegative();
                    rest.write(c);
                }
            }
        }
    }

    @Test
    void anUpgradeToAnotherProtocolIsNotTaken() throws Exception {
        HostPort limiter = stack.stack.limiters().get(0).address();
        try (Socket s = new Socket(limiter.host(), limiter.port())) {
            s.setSoTimeout(5_000);
            s.getOutputStream().write(("GET /v1/checks HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                    + "Content-Length: 0\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            assertThat(head(s.getInputStream())).startsWith("HTTP/1.1 405");
        }
    }

    @Test
    void anUpgradeWithoutTheConnectionOptionIsRefusedAtOnce() throws Exception {
        HostPort limiter = stack.stack.limiters().get(0).address();
        try (Socket s = new Socket(limiter.host(), limiter.port())) {
            s.setSoTimeout(5_000); // before the fix: no answer until the 60 s idle timeout
            s.getOutputStream().write(("GET /v1/checks HTTP/1.1\r\nHost: x\r\nUpgrade: " + CheckWire.PROTOCOL
                    + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            assertThat(head(s.getInputStream())).startsWith("HTTP/1.1 400");
        }
    }

    /** The first limiter's levee_limiter_decisions_total with {@code label}, summed over levels. */
    static double metric(String label) throws Exception {
        var limiter = stack.stack.limiters().get(0).address();
        String metrics = http.send(HttpRequest.newBuilder(URI.create("http://" + limiter + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        return metrics.lines().filter(l -> l.startsWith("levee_limiter_decisions_total{") && l.contains(label))
                .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
    }
}
