package dev.levee.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.s3.S3Classification;
import dev.levee.s3.S3Operation;
import dev.levee.s3.S3Request;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.vertx.core.Completable;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * levee-line/1 on an {@link EmbeddedChannel}: the decoder takes requests split anywhere and fields with any byte,
 * refuses every malformed form naming the field, and the connection answers in request order, once per read
 * burst, with back-pressure, a drain and a close after a malformed request.
 */
class LineConnectionTest {

    /** Encodes one request: {@code C flags} then the four length-prefixed fields and LF. */
    static byte[] req(boolean onAccept, byte[] method, byte[] host, byte[] uri, byte[] copy) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes(("C " + (onAccept ? "1" : "0") + " ").getBytes(StandardCharsets.US_ASCII));
        for (byte[] f : new byte[][] {method, host, uri, copy}) {
            b.writeBytes((f.length + ":").getBytes(StandardCharsets.US_ASCII));
            b.writeBytes(f);
        }
        b.write('\n');
        return b.toByteArray();
    }

    static byte[] req(String method, String host, String uri) {
        return req(false, latin1(method), latin1(host), latin1(uri), new byte[0]);
    }

    static byte[] latin1(String s) {
        return s.getBytes(StandardCharsets.ISO_8859_1);
    }

    static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            b.writeBytes(p);
        }
        return b.toByteArray();
    }

    /** What a decoder delivered. */
    static final class Collected implements LineDecoder.Sink {
        static final dev.levee.s3.S3Classifier CLASSIFIER =
                dev.levee.s3.S3Classifier.withBaseDomains(List.of("s3.test"));
        final List<S3Request> requests = new ArrayList<>();
        /** Each request classified from the decoder's bytes. */
        final List<S3Classification> classified = new ArrayList<>();
        final List<Boolean> flags = new ArrayList<>();
        final List<String> errors = new ArrayList<>();

        @Override
        public boolean request(LineDecoder.Request request, boolean rateLimitOnAccept) {
            requests.add(request.toS3Request());
            classified.add(request.classify(CLASSIFIER));
            flags.add(rateLimitOnAccept);
            return true;
        }

        @Override
        public void malformed(String reason) {
            errors.add(reason);
        }
    }

    static Collected decode(byte[]... chunks) {
        LineDecoder d = new LineDecoder();
        Collected c = new Collected();
        for (byte[] chunk : chunks) {
            ByteBuf in = Unpooled.wrappedBuffer(chunk);
            d.decode(in, c);
            if (d.broken()) {
                break;
            }
            assertThat(in.isReadable()).as("a sink that never stops gets every byte").isFalse();
        }
        return c;
    }

    // ---- the decoder

    @Test
    void fieldsAreTakenVerbatimWithSpacesTabsColonsAndAnyByte() {
        byte[] odd = new byte[256];
        for (int i = 0; i < odd.length; i++) {
            odd[i] = (byte) i; // every byte value, LF and NUL included: the length says where the field ends
        }
        byte[] host = latin1("b k t:8\t0 80");
        byte[] uri = concat(latin1("/bkt/a b\tc:d/"), odd, latin1("?x=1:2"));
        byte[] copy = latin1("/src/k ey\t:ü");
        Collected c = decode(req(true, latin1("PUT"), host, uri, copy));
        assertThat(c.errors).isEmpty();
        assertThat(c.flags).containsExactly(true);
        assertThat(c.requests).containsExactly(S3Request.fromRequestUri("PUT", new String(host, StandardCharsets.ISO_8859_1),
                new String(uri, StandardCharsets.ISO_8859_1), new String(copy, StandardCharsets.ISO_8859_1)));
        assertThat(c.requests.get(0).hasCopySource()).isTrue();
    }

    @Test
    void anEmptyHostAndCopySourceAreAbsent() {
        Collected c = decode(req("GET", "", "/bkt/k?versionId=3"));
        assertThat(c.requests).containsExactly(S3Request.fromRequestUri("GET", null, "/bkt/k?versionId=3", null));
        assertThat(c.flags).containsExactly(false);
    }

    @Test
    void aUtf8UriIsTheStringVertxMakesOfTheSameHeaderBytes() {
        // Vert.x (Netty) reads header bytes one char per byte: the line endpoint does the same
        byte[] uri = "/bkt/café/ü".getBytes(StandardCharsets.UTF_8);
        Collected c = decode(req(false, latin1("GET"), latin1("h"), uri, new byte[0]));
        assertThat(c.requests.get(0).path()).isEqualTo(new String(uri, StandardCharsets.ISO_8859_1));
    }

    @Test
    void theUsualMethodsAndARepeatedHostAreTheSameStrings() {
        Collected c = decode(req("GET", "h.example", "/a"), req("GET", "h.example", "/b"), req("MKCOL", "other", "/c"));
        assertThat(c.requests.get(0).method()).isSameAs("GET");
        assertThat(c.requests.get(0).host()).isSameAs(c.requests.get(1).host());
        assertThat(c.requests.get(2).method()).isEqualTo("MKCOL");
        assertThat(c.requests.get(2).host()).isEqualTo("other");
    }

    @Test
    void requestsSplitAtEveryByteBoundaryDecodeTheSame() {
        byte[] uri = concat(latin1("/bkt/k:1 2\t"), new byte[] {(byte) 0xC3, (byte) 0xBC, '\n', ':'}, latin1("?uploads"));
        byte[] stream = concat(req(false, latin1("POST"), latin1("bkt.s3.test"), uri, new byte[0]),
                req(true, latin1("PUT"), new byte[0], latin1("/b/k"), latin1("/src/k")),
                req("DELETE", "127.0.0.1:8080", "/b/k?delete"));
        Collected whole = decode(stream);
        assertThat(whole.requests).hasSize(3);
        assertThat(whole.errors).isEmpty();
        for (int i = 0; i <= stream.length; i++) {
            for (int j = i; j <= stream.length; j += Math.max(1, (stream.length - i) / 7)) {
                Collected c = decode(java.util.Arrays.copyOfRange(stream, 0, i), java.util.Arrays.copyOfRange(stream, i, j),
                        java.util.Arrays.copyOfRange(stream, j, stream.length));
                assertThat(c.requests).as("split at %d and %d", i, j).isEqualTo(whole.requests);
                assertThat(c.flags).isEqualTo(whole.flags);
                assertThat(c.errors).isEmpty();
            }
        }
        byte[][] oneByOne = new byte[stream.length][];
        for (int i = 0; i < stream.length; i++) {
            oneByOne[i] = new byte[] {stream[i]};
        }
        assertThat(decode(oneByOne).requests).isEqualTo(whole.requests);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            wrong first byte          | 'G 0 3:GET1:h2:/a0:\\n'                     | request must start with 'C'
            lower-case command        | 'c 0 3:GET1:h2:/a0:\\n'                     | request must start with 'C'
            no SP after C             | 'C0 3:GET1:h2:/a0:\\n'                      | expected SP after 'C'
            flags 2                   | 'C 2 3:GET1:h2:/a0:\\n'                     | flags must be 0 or 1
            flags missing             | 'C  3:GET1:h2:/a0:\\n'                      | flags must be 0 or 1
            no SP after flags         | 'C 03:GET1:h2:/a0:\\n'                      | expected SP after the flags
            method length not digits  | 'C 0 x:GET1:h2:/a0:\\n'                     | method length must be 1-5 digits
            method length missing     | 'C 0 :GET1:h2:/a0:\\n'                      | method length must be 1-5 digits
            method length 6 digits    | 'C 0 000003:GET1:h2:/a0:\\n'                | method length has more than 5 digits
            method too long           | 'C 0 33:GETGETGETGETGETGETGETGETGETGETGE1:h2:/a0:\\n' | method length 33 exceeds 32 bytes
            method without colon      | 'C 0 3GET1:h2:/a0:\\n'                      | method length must end with ':'
            empty method              | 'C 0 0:1:h2:/a0:\\n'                        | empty method
            host without colon        | 'C 0 3:GET9h2:/a0:\\n'                      | host length must end with ':'
            host too long             | 'C 0 3:GET1025:'                            | host length 1025 exceeds 1024 bytes
            uri too long              | 'C 0 3:GET1:h16385:'                        | uri length 16385 exceeds 16384 bytes
            uri 99999                 | 'C 0 3:GET1:h99999:'                        | uri length 99999 exceeds 16384 bytes
            uri length 6 digits       | 'C 0 3:GET1:h100000:'                       | uri length has more than 5 digits
            empty uri                 | 'C 0 3:GET1:h0:0:\\n'                       | empty uri
            copy-source too long      | 'C 0 3:GET1:h2:/a8193:'                     | copy-source length 8193 exceeds 8192 bytes
            copy-source no colon      | 'C 0 3:GET1:h2:/a0\\n'                      | copy-source length must end with ':'
            no LF after last field    | 'C 0 3:GET1:h2:/a0:X'                       | expected LF after the copy-source field
            CRLF                      | 'C 0 3:GET1:h2:/a0:\\r\\n'                  | expected LF after the copy-source field
            copy-source longer than said | 'C 0 3:GET1:h2:/a1:ab\\n'                | expected LF after the copy-source field
            """)
    void malformedInputEndsDecodingWithAReasonNamingTheField(String what, String input, String reason) {
        byte[] bad = latin1(input.replace("\\n", "\n").replace("\\r", "\r"));
        Collected c = decode(concat(req("GET", "h", "/before"), bad, req("GET", "h", "/after")));
        assertThat(c.requests).as("the request before is decoded, nothing after").hasSize(1);
        assertThat(c.errors).containsExactly(reason);
        assertThat(reason).doesNotContain("\t").doesNotContain("\n");
    }

    @Test
    void aRequestClassifiedFromTheDecodersBytesIsClassifiedAsItsS3Request() {
        byte[] stream = concat(req("GET", "h", "/bkt/a%20b/c?versionId=1"), req("PUT", "bkt.s3.test:80", "/k?partNumber=2&uploadId=u"),
                req(false, latin1("PUT"), latin1("h"), latin1("/b/k"), latin1(" \t")), // a blank copy source is none
                req(false, latin1("PUT"), latin1("h"), latin1("/b/k"), latin1("/src/k")),
                req(false, latin1("GET"), latin1("h"), "/bkt/café?acl".getBytes(StandardCharsets.UTF_8), new byte[0]),
                req("DELETE", "", "http://bkt.s3.test/x%ZZ"), req("POST", "h", "/b?delete"));
        Collected c = decode(stream);
        assertThat(c.requests).hasSize(7);
        for (int i = 0; i < c.requests.size(); i++) {
            assertThat(c.classified.get(i)).as("request %d", i).isEqualTo(Collected.CLASSIFIER.classify(c.requests.get(i)));
        }
        assertThat(c.classified).extracting(S3Classification::operation).containsExactly(S3Operation.GetObject,
                S3Operation.UploadPart, S3Operation.PutObject, S3Operation.CopyObject, S3Operation.GetObjectAcl,
                S3Operation.Unknown, S3Operation.DeleteObjects);
    }

    @Test
    void theLongestFieldsAreTaken() {
        byte[] uri = concat(latin1("/"), latin1("u".repeat(LineDecoder.MAX_URI - 1)));
        Collected c = decode(req(false, latin1("M".repeat(LineDecoder.MAX_METHOD)), latin1("h".repeat(LineDecoder.MAX_HOST)),
                uri, latin1("c".repeat(LineDecoder.MAX_COPY_SOURCE))), req("GET", "h", "/short"));
        assertThat(c.errors).isEmpty();
        assertThat(c.requests).hasSize(2);
        assertThat(c.requests.get(0).path()).hasSize(LineDecoder.MAX_URI);
        assertThat(c.requests.get(1).path()).isEqualTo("/short");
    }

    // ---- the connection

    /** Checks that wait for the test to decide them; records each request in order. */
    static final class Pending implements LineConnection.Checks {
        final List<S3Request> requests = new ArrayList<>();
        final Map<String, Completable<ClientDecision>> byPath = new HashMap<>();

        @Override
        public void check(LineDecoder.Request request, Completable<ClientDecision> done) {
            S3Request r = request.toS3Request();
            requests.add(r);
            byPath.put(r.path(), done);
        }

        void decide(String path, ClientDecision d) {
            byPath.get(path).succeed(d);
        }
    }

    static final S3Classification CLASS = new S3Classification("bkt", "k", S3Operation.GetObject);

    static ClientDecision accepted() {
        return new ClientDecision(ClientDecision.Result.ACCEPTED, 0, 4, "l1", "prefix", "p:k", CLASS, 1, 27.5, 3, 2, false);
    }

    static ClientDecision rejected(long retryAfter) {
        return new ClientDecision(ClientDecision.Result.REJECTED, retryAfter, 0, "l1", "resource", "r:k", CLASS, 1, 4, 2,
                1, false);
    }

    static String outbound(EmbeddedChannel ch) {
        StringBuilder s = new StringBuilder();
        for (ByteBuf b; (b = ch.readOutbound()) != null; ) {
            s.append(b.toString(StandardCharsets.ISO_8859_1)).append('|');
            b.release();
        }
        return s.toString();
    }

    @Test
    void answersLeaveInRequestOrderWhateverOrderTheChecksEndIn() {
        Pending checks = new Pending();
        EmbeddedChannel ch = new EmbeddedChannel(new LineConnection(checks));
        ch.writeInbound(Unpooled.wrappedBuffer(concat(req("GET", "h", "/1"), req("GET", "h", "/2"), req("GET", "h", "/3"))));
        assertThat(checks.requests).hasSize(3);
        checks.decide("/3", accepted());
        checks.decide("/2", rejected(7));
        ch.runPendingTasks();
        assertThat(outbound(ch)).as("nothing before the first answer").isEmpty();
        checks.decide("/1", new ClientDecision(ClientDecision.Result.FAILED, 0, 0, null, null, null, CLASS, 0));
        ch.runPendingTasks();
        assertThat(outbound(ch)).as("three answers, one flush")
                .isEqualTo("failed\t0\t\t\nrejected\t7\t\"resource\";q=4;w=1\t\"resource\";r=0;t=7\naccepted\t0\t\t\n|");
        assertThat(ch.isOpen()).isTrue();
        ch.finishAndReleaseAll();
    }

    @Test
    void checksAnsweredWithinTheReadAreFlushedOnceAtTheEndOfTheBurst() {
        LineConnection.Checks now = (r, done) -> done.succeed(accepted());
        EmbeddedChannel ch = new EmbeddedChannel(new LineConnection(now));
        ch.writeInbound(Unpooled.wrappedBuffer(req("GET", "h", "/1")), Unpooled.wrappedBuffer(req("GET", "h", "/2")));
        assertThat(outbound(ch)).isEqualTo("accepted\t0\t\t\naccepted\t0\t\t\n|");
        ch.finishAndReleaseAll();
    }

    @Test
    void theFlagsAskForTheFieldsOnAnAcceptedAnswer() {
        LineConnection.Checks now = (r, done) -> done.succeed(accepted());
        EmbeddedChannel ch = new EmbeddedChannel(new LineConnection(now));
        ch.writeInbound(Unpooled.wrappedBuffer(concat(req(true, latin1("GET"), latin1("h"), latin1("/1"), new byte[0]),
                req("GET", "h", "/2"))));
        ClientDecision d = accepted();
        assertThat(outbound(ch)).isEqualTo("accepted\t0\t" + d.rateLimitPolicy() + "\t" + d.rateLimit()
                + "\naccepted\t0\t\t\n|");
        assertThat(d.rateLimitPolicy()).isEqualTo("\"prefix\";q=55;w=2");
        ch.finishAndReleaseAll();
    }

    @Test
    void aCheckThatFailsIsAnsweredFailed() {
        LineConnection.Checks broken = (r, done) -> done.fail(new IllegalStateException("boom"));
        LineConnection.Checks throwing = (r, done) -> {
            throw new IllegalStateException("boom");
        };
        for (LineConnection.Checks c : List.of(broken, throwing)) {
            EmbeddedChannel ch = new EmbeddedChannel(new LineConnection(c));
            ch.writeInbound(Unpooled.wrappedBuffer(req("GET", "h", "/1")));
            assertThat(outbound(ch)).isEqualTo("failed\t0\t\t\n|");
            assertThat(ch.isOpen()).isTrue();
            ch.finishAndReleaseAll();
        }
    }

    @Test
    void aMalformedRequestIsAnsweredAfterTheAnswersDueThenTheConnectionCloses() {
        Pending checks = new Pending();
        EmbeddedChannel ch = new EmbeddedChannel(new LineConnection(checks));
        ch.writeInbound(Unpooled.wrappedBuffer(concat(req("GET", "h", "/1"), latin1("C 0 3:GET1:h0:0:\n"),
                req("GET", "h", "/never"))));
        assertThat(checks.requests).hasSize(1);
        assertThat(ch.isOpen()).as("the answer due comes first").isTrue();
        assertThat(ch.config().isAutoRead()).as("nothing more is read").isFalse();
        checks.decide("/1", accepted());
        ch.runPendingTasks();
        assertThat(outbound(ch)).isEqualTo("accepted\t0\t\t\nerror\tempty uri\n|");
        assertThat(ch.isOpen()).isFalse();
        ch.finishAndReleaseAll();
    }

    @Test
    void anAloneMalformedRequestIsAnsweredAndClosedAtOnce() {
        EmbeddedChannel ch = new EmbeddedChannel(new LineConnection(new Pending()));
        ch.writeInbound(Unpooled.wrappedBuffer(latin1("GET / HTTP/1.1\r\n\r\n")));
        assertThat(outbound(ch)).isEqualTo("error\trequest must start with 'C'\n|");
        assertThat(ch.isOpen()).isFalse();
        ch.finishAndReleaseAll();
    }

    @Test
    void pipelinedRequestsBeyondTheLimitWaitUnreadUntilAnswersLeave() {
        Pending checks = new Pending();
        EmbeddedChannel ch = new EmbeddedChannel(new LineConnection(checks));
        int n = LineConnection.MAX_PENDING + 10;
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        for (int i = 0; i < n; i++) {
            all.writeBytes(req("GET", "h", "/" + i));
        }
        ch.writeInbound(Unpooled.wrappedBuffer(all.toByteArray()));
        assertThat(checks.requests).hasSize(LineConnection.MAX_PENDING);
        assertThat(ch.config().isAutoRead()).isFalse();
        checks.decide("/0", accepted());
        checks.decide("/1", accepted());
        assertThat(checks.requests).hasSize(LineConnection.MAX_PENDING + 2);
        for (int i = 2; i < n; i++) {
            checks.decide("/" + i, accepted());
        }
        assertThat(checks.requests).hasSize(n);
        assertThat(ch.config().isAutoRead()).isTrue();
        ch.runPendingTasks();
        assertThat(outbound(ch).split("\n", -1)).hasSize(n + 1);
        ch.finishAndReleaseAll();
    }

    @Test
    void aDrainAnswersEveryRequestReceivedThenCloses() {
        Pending checks = new Pending();
        LineConnection conn = new LineConnection(checks);
        EmbeddedChannel ch = new EmbeddedChannel(conn);
        byte[] partial = req("GET", "h", "/partial");
        ch.writeInbound(Unpooled.wrappedBuffer(concat(req("GET", "h", "/1"), req("GET", "h", "/2"),
                java.util.Arrays.copyOf(partial, 9))));
        conn.drain();
        assertThat(ch.config().isAutoRead()).isFalse();
        assertThat(ch.isOpen()).isTrue();
        checks.decide("/2", rejected(3));
        ch.runPendingTasks();
        assertThat(ch.isOpen()).isTrue();
        checks.decide("/1", accepted());
        ch.runPendingTasks();
        assertThat(outbound(ch)).startsWith("accepted\t0\t\t\nrejected\t3\t");
        assertThat(ch.isOpen()).as("the partial request was not received: not answered").isFalse();
        assertThat(checks.requests).hasSize(2);
        ch.finishAndReleaseAll();
    }

    @Test
    void aDrainWithNothingInFlightClosesAtOnce() {
        LineConnection conn = new LineConnection(new Pending());
        EmbeddedChannel ch = new EmbeddedChannel(conn);
        conn.drain();
        assertThat(ch.isOpen()).isFalse();
        ch.finishAndReleaseAll();
    }

    @Test
    void theIdleTimerClosesOnlyAConnectionWithNoCheckPending() {
        Pending checks = new Pending();
        List<Object> passed = new ArrayList<>();
        EmbeddedChannel ch = new EmbeddedChannel(new LineConnection(checks), new io.netty.channel.ChannelInboundHandlerAdapter() {
            @Override
            public void userEventTriggered(io.netty.channel.ChannelHandlerContext ctx, Object evt) {
                passed.add(evt);
            }
        });
        ch.writeInbound(Unpooled.wrappedBuffer(req("GET", "h", "/1")));
        ch.pipeline().fireUserEventTriggered(io.netty.handler.timeout.IdleStateEvent.FIRST_READER_IDLE_STATE_EVENT);
        assertThat(passed).as("a check is pending: not idle").isEmpty();
        checks.decide("/1", accepted());
        ch.pipeline().fireUserEventTriggered(io.netty.handler.timeout.IdleStateEvent.READER_IDLE_STATE_EVENT);
        assertThat(passed).containsExactly(io.netty.handler.timeout.IdleStateEvent.READER_IDLE_STATE_EVENT);
        ch.finishAndReleaseAll();
    }

    @Test
    void aCheckThatEndsAfterThePeerLeftIsDropped() {
        Pending checks = new Pending();
        EmbeddedChannel ch = new EmbeddedChannel(new LineConnection(checks));
        ch.writeInbound(Unpooled.wrappedBuffer(req("GET", "h", "/1")));
        ch.close();
        checks.decide("/1", accepted());
        ch.runPendingTasks();
        assertThat(outbound(ch)).isEmpty();
        ch.finishAndReleaseAll();
    }
}
