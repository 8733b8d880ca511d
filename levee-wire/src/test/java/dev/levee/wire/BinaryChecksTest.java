package dev.levee.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.StringLength;
import org.junit.jupiter.api.Test;

/** The binary check encoding between levee-client and limiters (issue 12): round trips and strict reading. */
class BinaryChecksTest {

    private static byte[] bytes(ByteBuf b) {
        byte[] out = new byte[b.readableBytes()];
        b.getBytes(b.readerIndex(), out);
        return out;
    }

    @Property(tries = 300)
    void checksSurviveTheRoundTrip(@ForAll @StringLength(max = 300) String resource,
                                   @ForAll @StringLength(max = 300) String key,
                                   @ForAll @IntRange(min = 1, max = 65535) int g) {
        // what a String can carry in UTF-8 (an unpaired surrogate has no UTF-8 form: it is sent as '?')
        String r = new String(resource.getBytes(java.nio.charset.StandardCharsets.UTF_8), java.nio.charset.StandardCharsets.UTF_8);
        String k = new String(key.getBytes(java.nio.charset.StandardCharsets.UTF_8), java.nio.charset.StandardCharsets.UTF_8);
        ByteBuf b = BinaryChecks.start(2, 16);
        BinaryChecks.writeCheck(b, r, k, "GetObject", g);
        BinaryChecks.writeCheck(b, "", "", "Unknown", 1);
        byte[] body = bytes(b);
        assertThat(body.length).isEqualTo(3 + BinaryChecks.checkSize(r, k, "GetObject") + BinaryChecks.checkSize("", "", "Unknown"));
        BinaryChecks.Checks c = BinaryChecks.readChecks(body);
        assertThat(c.count()).isEqualTo(2);
        assertThat(c.resources()).containsExactly(r, "");
        assertThat(c.keys()).containsExactly(k, "");
        assertThat(c.operations()).containsExactly("GetObject", "Unknown");
        assertThat(c.g()).containsExactly(g, 1);
    }

    @Test
    void answersSurviveTheRoundTrip() {
        ByteBuf b = BinaryChecks.start(4, 16);
        BinaryChecks.writeDecision(b, true, "prefix", "prefix:bkt/photos/", 41, 0);
        BinaryChecks.writeDecision(b, false, "default", "default:é", 0, 3);
        BinaryChecks.writeFailed(b);
        BinaryChecks.writeInvalid(b, "field 'g' must be between 1 and the factor 2, got 9");
        BinaryChecks.Answer[] a = BinaryChecks.readAnswers(bytes(b), 4);
        assertThat(a[0]).isEqualTo(new BinaryChecks.Answer(BinaryChecks.ACCEPTED, "prefix", "prefix:bkt/photos/", 41, 0, null));
        assertThat(a[0].level()).isSameAs("prefix"); // the shared label, not a new string per answer
        assertThat(a[1]).isEqualTo(new BinaryChecks.Answer(BinaryChecks.REJECTED, "default", "default:é", 0, 3, null));
        assertThat(a[2].result()).isEqualTo(BinaryChecks.FAILED);
        assertThat(a[3].error()).isEqualTo("field 'g' must be between 1 and the factor 2, got 9");
        assertThatThrownBy(() -> BinaryChecks.readAnswers(bytes(b.resetReaderIndex()), 3))
                .hasMessage("4 answers for 3 checks");
    }

    @Test
    void version2AnswersCarryTheShadowResultAndTheQuotaFigures() {
        ByteBuf b = BinaryChecks.start(BinaryChecks.VERSION, 2, 16);
        BinaryChecks.writeDecision(b, 2, true, null, null, 0, 0, BinaryChecks.SHADOW_WOULD_REJECT, 0, 0, 0);
        BinaryChecks.writeDecision(b, 2, false, "resource", "resource:b", 0, 2, BinaryChecks.SHADOW_ACCEPTED, 27.5, 3, 4);
        BinaryChecks.Answer[] a = BinaryChecks.readAnswers(bytes(b), 2);
        assertThat(a[0]).isEqualTo(new BinaryChecks.Answer(BinaryChecks.ACCEPTED, null, null, 0, 0, null,
                BinaryChecks.SHADOW_WOULD_REJECT, 0, 0, 0));
        assertThat(a[1]).isEqualTo(new BinaryChecks.Answer(BinaryChecks.REJECTED, "resource", "resource:b", 0, 2, null,
                BinaryChecks.SHADOW_ACCEPTED, 27.5, 3, 4));
    }

    @Test
    void aVersion1RequestIsReadAndAnsweredInVersion1() {
        ByteBuf req = BinaryChecks.start(BinaryChecks.VERSION_1, 1, 16);
        BinaryChecks.writeCheck(req, "b", "k", "GetObject", 1);
        BinaryChecks.Checks c = BinaryChecks.readChecks(bytes(req));
        assertThat(c.version()).isEqualTo(1);
        ByteBuf b = BinaryChecks.start(c.version(), 1, 16);
        BinaryChecks.writeDecision(b, c.version(), true, "default", "default:b", 5, 0, BinaryChecks.SHADOW_WOULD_REJECT,
                10, 2, 1);
        byte[] body = bytes(b);
        assertThat(body).hasSize(3 + 1 + 1 + 7 + 2 + 9 + 16); // no version-2 fields
        assertThat(BinaryChecks.readAnswers(body, 1)[0])
                .isEqualTo(new BinaryChecks.Answer(BinaryChecks.ACCEPTED, "default", "default:b", 5, 0, null));
        byte[] v3 = bytes(BinaryChecks.start(3, 1, 16));
        assertThatThrownBy(() -> BinaryChecks.readChecks(v3)).hasMessage("binary body version 3 is not 1 or 2");
    }

    private static byte[] one(String resource, String key) {
        ByteBuf b = BinaryChecks.start(1, 16);
        BinaryChecks.writeCheck(b, resource, key, "GetObject", 1);
        return bytes(b);
    }

    @Test
    void malformedBodiesAreRefusedNamingTheProblem() {
        assertThatThrownBy(() -> BinaryChecks.readChecks(new byte[0])).hasMessageContaining("too short");
        assertThatThrownBy(() -> BinaryChecks.readChecks("{\"resource\":1}".getBytes()))
                .hasMessageContaining("version 123 is not 1");
        assertThatThrownBy(() -> BinaryChecks.readChecks(new byte[] {1, 0, 0})).hasMessageContaining("count 0");
        assertThatThrownBy(() -> BinaryChecks.readChecks(new byte[] {1, 4, 1})).hasMessageContaining("count 1025");
        byte[] good = one("bkt", "key");
        byte[] truncated = java.util.Arrays.copyOf(good, good.length - 1);
        assertThatThrownBy(() -> BinaryChecks.readChecks(truncated))
                .hasMessageContaining("field 'g' of entry 0 runs past the end");
        byte[] trailing = java.util.Arrays.copyOf(good, good.length + 2);
        assertThatThrownBy(() -> BinaryChecks.readChecks(trailing)).hasMessageContaining("2 bytes after the last entry");
        assertThatThrownBy(() -> BinaryChecks.readChecks(one("b", "k".repeat(1025))))
                .hasMessageContaining("field 'key' of entry 0 is longer than 1024 bytes");
        byte[] badUtf8 = one("bkt", "ab");
        badUtf8[3 + 2 + 3 + 2] = (byte) 0xC3; // a lead byte followed by 'b': not UTF-8
        assertThatThrownBy(() -> BinaryChecks.readChecks(badUtf8)).hasMessageContaining("field 'key' of entry 0 is not valid UTF-8");
        byte[] lyingLength = one("bkt", "key");
        lyingLength[3] = 0x7F; // resource length 32 515
        assertThatThrownBy(() -> BinaryChecks.readChecks(lyingLength)).hasMessageContaining("field 'resource' of entry 0 is longer");
    }

    @Test
    void onlyItsOwnMediaTypeIsBinary() {
        assertThat(BinaryChecks.isBinary("application/x-levee-check")).isTrue();
        assertThat(BinaryChecks.isBinary("Application/X-Levee-Check; v=1")).isTrue();
        assertThat(BinaryChecks.isBinary("application/json")).isFalse();
        assertThat(BinaryChecks.isBinary("application/x-levee-checks")).isFalse();
        assertThat(BinaryChecks.isBinary(null)).isFalse();
        assertThat(BinaryChecks.accepts(BinaryChecks.ACCEPT_POST)).isTrue();
        assertThat(BinaryChecks.accepts("application/json")).isFalse();
        assertThat(BinaryChecks.accepts(null)).isFalse();
    }
}
