package dev.levee.quota;

/**
 * Builds the paths and quoted values that configuration error messages use, so that every
 * message names the field at fault the same way, whichever module reports it.
 *
 * <p>A path is written from the document root: {@code resources.example-bucket.prefixes[2].quota.burst}.
 * Map keys that are not plain words ({@code [A-Za-z0-9_-]+}), such as bucket names with dots,
 * are written in brackets: {@code resources["logs.example.com"].quota}. The root itself is the
 * empty path {@code ""}. Quoted values escape control and invisible characters, so a message
 * always fits on one log line.
 */
public final class ConfigPath {

    private ConfigPath() {
    }

    /**
     * Appends a schema field name to a path.
     *
     * @param parent the parent path, {@code ""} for the root
     * @param field  a field name of the schema, such as {@code "quota"}
     * @return {@code parent.field}, or {@code field} when {@code parent} is the root
     */
    public static String field(String parent, String field) {
        return parent.isEmpty() ? field : parent + "." + field;
    }

    /**
     * Appends a map key chosen by the operator (a bucket name, an operation name, an unknown
     * field) to a path, in brackets and quoted unless it is a plain word.
     *
     * @param parent the parent path, {@code ""} for the root
     * @param key    the key as written in the document
     * @return for example {@code resources.example-bucket} or {@code resources["a.b"]}
     */
    public static String key(String parent, String key) {
        return plainWord(key) ? field(parent, key) : parent + "[" + quote(key) + "]";
    }

    /**
     * Appends a list index to a path.
     *
     * @param parent the path of the list
     * @param index  the zero-based index
     * @return for example {@code resources.example-bucket.prefixes[2]}
     */
    public static String index(String parent, int index) {
        return parent + "[" + index + "]";
    }

    /**
     * Quotes a value in double quotes for a message, escaping as {@link #escape} does.
     *
     * @param value any string
     * @return for example {@code "up*loads"} or {@code "a\nb"}
     */
    public static String quote(String value) {
        return '"' + escape(value, '"') + '"';
    }

    /**
     * Escapes a value for a one-line message, as {@link #escape(String, char)} does, when no
     * quote character surrounds it.
     *
     * @param value any string
     * @return the escaped text
     */
    public static String escape(String value) {
        return escape(value, '\\');
    }

    /**
     * Escapes a value for a one-line message: backslash, {@code quoteChar}, control characters,
     * line and paragraph separators, byte-order marks and unpaired surrogates become
     * backslash escapes ({@code \n}, {@code \t}, {@code \u0085}, …); everything else is kept.
     *
     * @param value     any string
     * @param quoteChar the quote character that will surround the value
     * @return the escaped text, without quotes
     */
    public static String escape(String value, char quoteChar) {
        StringBuilder sb = null;
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            String replacement = escapeOf(value, i, c, quoteChar);
            if (replacement != null && sb == null) {
                sb = new StringBuilder(value.length() + 16).append(value, 0, i);
            }
            if (sb != null) {
                if (replacement != null) {
                    sb.append(replacement);
                } else {
                    sb.append(c);
                }
            }
        }
        return sb == null ? value : sb.toString();
    }

    private static String escapeOf(String s, int i, char c, char quoteChar) {
        if (c == '\\' || c == quoteChar) {
            return "\\" + c;
        }
        switch (c) {
            case '\n': return "\\n";
            case '\r': return "\\r";
            case '\t': return "\\t";
            default: break;
        }
        boolean invisible = Character.isISOControl(c) || c == '\u2028' || c == '\u2029' || c == '\uFEFF';
        boolean unpaired = Character.isHighSurrogate(c)
                ? i + 1 >= s.length() || !Character.isLowSurrogate(s.charAt(i + 1))
                : Character.isLowSurrogate(c) && (i == 0 || !Character.isHighSurrogate(s.charAt(i - 1)));
        return invisible || unpaired ? String.format("\\u%04x", (int) c) : null;
    }

    private static boolean plainWord(String key) {
        if (key.isEmpty()) {
            return false;
        }
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
            if (!ok) {
                return false;
            }
        }
        return true;
    }
}
