package dev.levee.s3;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.StandardCharsets;

/**
 * Percent-decodes URI components once, as UTF-8, keeping the raw text when they are malformed.
 *
 * <p>Only {@code %XX} is decoded; {@code '+'} stays a plus sign (in a path it is not a space,
 * RFC 3986). Characters that are not part of an escape, including raw non-ASCII ones, are kept
 * as they are. When an escape is truncated or not hexadecimal, or the decoded bytes are not
 * well-formed UTF-8 (overlong forms, lone surrogates, stray continuation bytes), the component is
 * returned raw: a limiter must never fail a request over its encoding, and raw text keeps two
 * differently malformed keys distinct where a replacement character would merge them.
 */
final class PercentDecoding {

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
