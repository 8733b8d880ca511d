package dev.levee.s3;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The three variants of {@link PercentDecoding} side by side, on the inputs where they differ: {@code '+'}, an
 * escape that is not one, raw non-ASCII characters and escaped bytes that are not UTF-8.
 */
class PercentDecodingTest {

    @ParameterizedTest(name = "[{index}] {0}")
    @CsvSource(delimiter = '|', nullValues = "NULL", textBlock = """
            a%20b+c       | a b+c     | a b c     | 6120622063
            %41%2f        | A/        | A/        | 412f
            caf%C3%A9     | café      | café      | 636166c3a9
            100%          | NULL      | 100%      | 31303025
            %zz           | NULL      | %zz       | 257a7a
            %C3           | NULL      | \uFFFD    | c3
            é             | é         | é         | e9
            é%20          | 'é '      | NULL      | e920
            """)
    void theVariantsDifferOnlyWhereTheirRulesDo(String raw, String uriComponent, String queryValue, String sigV4QueryHex) {
        assertThat(PercentDecoding.decodeOrNull(raw, 0, raw.length())).isEqualTo(uriComponent);
        assertThat(PercentDecoding.decodeOnce(raw, 0, raw.length())).isEqualTo(uriComponent == null ? raw : uriComponent);
        assertThat(PercentDecoding.queryValue(raw, 0, raw.length())).isEqualTo(queryValue);
        assertThat(HexFormat.of().formatHex(PercentDecoding.sigV4Canonical(raw, true))).isEqualTo(sigV4QueryHex);
    }

    @Test
    void aQueryValueIsDecodedWithinItsRange() {
        String q = "a=x%2By&b=1+2";
        assertThat(PercentDecoding.queryValue(q, 2, 7)).isEqualTo("x+y");
        assertThat(PercentDecoding.queryValue(q, 10, 13)).isEqualTo("1 2");
        assertThat(PercentDecoding.queryValue(q, 2, 2)).isEmpty();
    }

    @Test
    void theSigV4VariantKeepsAPlusInAPathAndTakesRawBytesAsReceived() {
        assertThat(PercentDecoding.sigV4Canonical("/a+b%20c", false)).isEqualTo("/a+b c".getBytes(StandardCharsets.US_ASCII));
        assertThat(PercentDecoding.sigV4Canonical("a+b", true)).isEqualTo("a b".getBytes(StandardCharsets.US_ASCII));
        // a character below U+0100 is one byte of the request line (Netty decodes bytes one to one); above, UTF-8
        assertThat(PercentDecoding.sigV4Canonical("\u00e9", false)).containsExactly((byte) 0xe9);
        assertThat(PercentDecoding.sigV4Canonical("\u20ac", false)).isEqualTo("\u20ac".getBytes(StandardCharsets.UTF_8));
    }
}
