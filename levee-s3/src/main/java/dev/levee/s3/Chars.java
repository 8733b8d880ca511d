package dev.levee.s3;

/**
 * Reads regions of text without copying them: the classifier's input is a {@code String} (an {@link S3Request}) or
 * received bytes read as characters ({@link Latin1Chars}), and a region becomes a {@code String} only when it is a
 * part of the answer.
 */
final class Chars {

    private Chars() {
    }

    /**
     * Returns the index of the first {@code c} in {@code s[from, to)}, or -1.
     *
     * @param from the start index, inclusive, {@code 0 ≤ from}
     * @param to   the end index, exclusive, {@code to ≤ s.length()}
     */
    static int indexOf(CharSequence s, char c, int from, int to) {
        if (s instanceof String str) {
            int i = str.indexOf(c, from);
            return i < to ? i : -1;
        }
        if (s instanceof Latin1Chars l) {
            return l.indexOf(c, from, to);
        }
        for (int i = from; i < to; i++) {
            if (s.charAt(i) == c) {
                return i;
            }
        }
        return -1;
    }

    /** Returns {@code s[from, to)} as a string (for a {@code String}, its substring). */
    static String substring(CharSequence s, int from, int to) {
        if (s instanceof String str) {
            return str.substring(from, to);
        }
        if (s instanceof Latin1Chars l) {
            return l.substring(from, to);
        }
        return s.subSequence(from, to).toString();
    }

    /** Returns whether {@code s[from, to)} holds exactly the characters of {@code what}. */
    static boolean regionEquals(CharSequence s, int from, int to, String what) {
        int n = to - from;
        if (n != what.length()) {
            return false;
        }
        if (s instanceof String str) {
            return str.regionMatches(from, what, 0, n);
        }
        for (int k = 0; k < n; k++) {
            if (s.charAt(from + k) != what.charAt(k)) {
                return false;
            }
        }
        return true;
    }
}
