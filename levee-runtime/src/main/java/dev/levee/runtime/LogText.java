package dev.levee.runtime;

/**
 * Makes untrusted text safe for one log line (docs/design.md §2: a line carries the resource key in
 * clear, with control characters escaped).
 *
 * <p>Printable characters, including non-ASCII letters, are kept as they are so that
 * {@code grep <resource>} finds them; control characters (C0, DEL, C1, U+2028/U+2029) and the
 * backslash are written as {@code \xNN} / {@code \\uNNNN} / {@code \\}; text longer than
 * {@code maxChars} is cut and marked with {@code …}. A value that contains a space, {@code =} or
 * {@code "} is wrapped in double quotes (inner quotes escaped), so that request text can never
 * forge another {@code field=value} of the line.
 */
public final class LogText {

    /** Default maximum characters of one value in a log line: 2048. */
    public static final int DEFAULT_MAX_CHARS = 2048;

    private LogText() {
    }

    /** Escapes {@code s} for a log line with the default length cap; {@code null} becomes {@code -}. */
    public static String escape(String s) {
        return escape(s, DEFAULT_MAX_CHARS);
    }

    /**
     * Escapes {@code s} for a log line.
     *
     * @param s        the text, may be null
     * @param maxChars the maximum number of input characters kept
     * @return the escaped text, {@code -} for null, {@code ""} quoted as {@code ""}
     */
    public static String escape(String s, int maxChars) {
        if (s == null) {
            return "-";
        }
        if (s.isEmpty()) {
            return "\"\"";
        }
        boolean clean = s.length() <= maxChars;
        boolean quote = false;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (needsEscape(c)) {
                clean = false;
            } else if (c == ' ' || c == '=' || c == '"') {
                quote = true;
            }
        }
        if (clean && !quote) {
            return s;
        }
        int n = Math.min(s.length(), maxChars);
        StringBuilder sb = new StringBuilder(n + 16);
        if (quote) {
            sb.append('"');
        }
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (c == '"') {
                sb.append("\\\"");
            } else if (c == '\\') {
                sb.append("\\\\");
            } else if (c < 0x20 || c == 0x7f) {
                sb.append("\\x").append(Character.forDigit(c >> 4, 16)).append(Character.forDigit(c & 0xf, 16));
            } else if (needsEscape(c)) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        if (s.length() > maxChars) {
            sb.append('…');
        }
        if (quote) {
            sb.append('"');
        }
        return sb.toString();
    }

    private static boolean needsEscape(char c) {
        return c < 0x20 || c == 0x7f || c == '\\' || (c >= 0x80 && c <= 0x9f) || c == 0x2028 || c == 0x2029;
    }
}
