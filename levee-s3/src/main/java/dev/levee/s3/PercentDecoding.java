package dev.levee.s3;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.StandardCharsets;

/**
 * Percent-decodes URI components: the one decoder of Levee, in three named variants for the three rules its
 * readers need (issue 25 item 4; each keeps the rule it had where it was written before).
 *
 * <ul>
 *   <li><b>URI component</b> ({@link #decodeOnce}, {@link #decodeOrNull}): the classifier's path, key and query
 *       facts. Only {@code %XX} is decoded; {@code '+'} stays a plus sign (in a path it is not a space, RFC 3986).
 *       Characters that are not part of an escape, including raw non-ASCII ones, are kept as they are. When an
 *       escape is truncated or not hexadecimal, or the decoded bytes are not well-formed UTF-8 (overlong forms,
 *       lone surrogates, stray continuation bytes), the component is malformed: a limiter must never fail a
 *       request over its encoding, and raw text keeps two differently malformed keys distinct where a replacement
 *       character would merge them.</li>
 *   <li><b>query value</b> ({@link #queryValue}): a value read for what it names (the gateway's access key id),
 *       decoded as a form: {@code '+'} is a space, a stray {@code '%'} stays, malformed UTF-8 becomes U+FFFD.</li>
 *   <li><b>SigV4 canonical</b> ({@link #sigV4Canonical}): the bytes the gateway's SigV4 canonical request
 *       encodes again, never failing.</li>
 * </ul>
 */
public final class PercentDecoding {

    private PercentDecoding() {
    }

    /**
     * Decodes {@code s[from, to)} once.
     *
     * @param s    the text, not null
     * @param from the start index, inclusive
     * @param to   the end index, exclusive, {@code from ≤ to ≤ s.length()}
     * @return the decoded text, or {@code s[from, to)} as it is when it has no escape or is malformed
     */
    static String decodeOnce(CharSequence s, int from, int to) {
        String decoded = decodeOrNull(s, from, to);
        return decoded == null ? Chars.substring(s, from, to) : decoded;
    }

    /**
     * Decodes {@code s[from, to)} once, or says that it cannot.
     *
     * @param s    the text, not null
     * @param from the start index, inclusive
     * @param to   the end index, exclusive, {@code from ≤ to ≤ s.length()}
     * @return the decoded text ({@code s[from, to)} as it is when it has no escape), or null when an escape is
     *         truncated or not hexadecimal or the decoded bytes are not well-formed UTF-8
     */
    static String decodeOrNull(CharSequence s, int from, int to) {
        int percent = Chars.indexOf(s, '%', from, to);
        if (percent < 0) {
            return Chars.substring(s, from, to);
        }
        StringBuilder out = new StringBuilder(to - from);
        out.append(s, from, percent);
        byte[] run = new byte[(to - percent) / 3 + 1];
        int i = percent;
        while (i < to) {
            char c = s.charAt(i);
            if (c != '%') {
                out.append(c);
                i++;
                continue;
            }
            int n = 0;
            boolean ascii = true;
            while (i < to && s.charAt(i) == '%') {
                if (to - i < 3) {
                    return null;
                }
                int hi = hex(s.charAt(i + 1));
                int lo = hex(s.charAt(i + 2));
                if (hi < 0 || lo < 0) {
                    return null;
                }
                byte b = (byte) (hi << 4 | lo);
                ascii &= b >= 0;
                run[n++] = b;
                i += 3;
            }
            if (ascii) {
                for (int k = 0; k < n; k++) {
                    out.append((char) run[k]);
                }
            } else if (!appendUtf8(run, n, out)) {
                return null;
            }
        }
        return out.toString();
    }

    /**
     * Decodes a query parameter's value as an HTML form does ({@code application/x-www-form-urlencoded}): each
     * {@code %XX} is a byte, {@code '+'} is a space, a {@code '%'} not followed by two hexadecimal digits stays
     * as it is, and the bytes are read as UTF-8 (a malformed sequence becomes U+FFFD). Used where a value is
     * read for what it names (an access key id) rather than signed.
     *
     * @param s    the text, not null
     * @param from the start index, inclusive
     * @param to   the end index, exclusive, {@code from ≤ to ≤ s.length()}
     * @return the decoded value, or null when {@code s[from, to)} holds a raw non-ASCII character (no value a
     *         client escaped properly)
     */
    public static String queryValue(String s, int from, int to) {
        int pct = s.indexOf('%', from);
        if (pct < 0 || pct >= to) {
            return s.substring(from, to).replace('+', ' ');
        }
        byte[] out = new byte[to - from];
        int len = 0;
        for (int i = from; i < to; i++) {
            char c = s.charAt(i);
            if (c == '%' && i + 2 < to && hex(s.charAt(i + 1)) >= 0 && hex(s.charAt(i + 2)) >= 0) {
                out[len++] = (byte) (hex(s.charAt(i + 1)) << 4 | hex(s.charAt(i + 2)));
                i += 2;
            } else if (c == '+') {
                out[len++] = ' ';
            } else if (c < 0x80) {
                out[len++] = (byte) c;
            } else {
                return null; // raw non-ASCII in a query: not a value a client escaped
            }
        }
        return new String(out, 0, len, StandardCharsets.UTF_8);
    }

    /**
     * Decodes a path or a query component to the bytes SigV4's canonical request encodes again ("Create a
     * canonical request" in the IAM user guide: S3 decodes once, then encodes once): each {@code %XX} is a byte
     * ({@link Character#digit} reads the digits), in a query {@code '+'} is a space, an escape that is not one
     * stays as it is, and any other character is a byte of the request line as received (characters below
     * U+0100, as Netty decodes them one to one) or, above, its UTF-8 bytes. Never fails.
     *
     * @param s     the text, not null
     * @param query whether {@code s} is a query name or value ({@code '+'} is then a space)
     * @return the bytes
     */
    public static byte[] sigV4Canonical(String s, boolean query) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            int hi;
            int lo;
            if (c == '%' && i + 2 < s.length()
                    && (hi = Character.digit(s.charAt(i + 1), 16)) >= 0 && (lo = Character.digit(s.charAt(i + 2), 16)) >= 0) {
                out.write(hi << 4 | lo);
                i += 2;
            } else if (c == '+' && query) {
                out.write(' ');
            } else if (c < 0x100) {
                out.write(c); // a raw byte of the request line
            } else {
                byte[] b = String.valueOf(c).getBytes(StandardCharsets.UTF_8);
                out.write(b, 0, b.length);
            }
        }
        return out.toByteArray();
    }

    /** Returns the value of an ASCII hex digit, or -1 (unlike Character.digit, no fullwidth digits). */
    private static int hex(char c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F') {
            return c - 'A' + 10;
        }
        return -1;
    }

    private static boolean appendUtf8(byte[] bytes, int length, StringBuilder out) {
        CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder(); // REPORT on malformed input
        try {
            out.append(decoder.decode(ByteBuffer.wrap(bytes, 0, length)));
            return true;
        } catch (CharacterCodingException malformed) {
            return false;
        }
    }
}
