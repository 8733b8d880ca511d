package dev.levee.gateway;

import java.util.UUID;

/**
 * Builds S3 error bodies (AWS S3 REST error responses): {@code 503 SlowDown} for refusals
 * (docs/design.md §1 step 5) and other codes for gateway failures.
 */
public final class SlowDown {

    /**
     * The reason phrase of a refusal's status line, as S3 sends it: {@code HTTP/1.1 503 Slow Down}. AWS SDK for
     * Java v2 recognises a throttled {@code HEAD}, whose answer has no body to carry {@code <Code>SlowDown</Code>},
     * by it (issue 24).
     */
    public static final String REASON_PHRASE = "Slow Down";

    /**
     * The header of the wait in milliseconds that the AWS SDKs' 2026 retry behaviour clamps its back-off to,
     * sent beside {@code Retry-After} (issue 24).
     */
    public static final String RETRY_AFTER_MS_HEADER = "x-amz-retry-after";

    private SlowDown() {
    }

    /**
     * The value of {@link #RETRY_AFTER_MS_HEADER} for a refusal: the same decision as {@code Retry-After}, in
     * milliseconds (the limiters decide the wait in whole seconds, so this is {@code seconds × 1000}).
     *
     * @param retryAfterSeconds the refusal's {@code Retry-After}, seconds (at least 1)
     * @return milliseconds
     */
    public static long retryAfterMillis(long retryAfterSeconds) {
        return Math.min(retryAfterSeconds, Long.MAX_VALUE / 1000L) * 1000L;
    }

    /** Returns a new request id for an error response (hex, 16 characters). */
    public static String newRequestId() {
        return Long.toHexString(UUID.randomUUID().getMostSignificantBits() | Long.MIN_VALUE).toUpperCase(java.util.Locale.ROOT);
    }

    /**
     * Renders an S3 XML error document.
     *
     * @param code      the S3 error code, for example {@code SlowDown}
     * @param message   a human-readable message
     * @param resource  the request path (escaped here)
     * @param requestId the request id
     * @return the XML text
     */
    public static String xml(String code, String message, String resource, String requestId) {
        return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + escape(code) + "</Code><Message>"
                + escape(message) + "</Message><Resource>" + escape(resource) + "</Resource><RequestId>"
                + escape(requestId) + "</RequestId></Error>\n";
    }

    static String escape(String s) {
        if (s == null) {
            return "";
        }
        StringBuilder sb = new StringBuilder(s.length() + 16);
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '<' -> sb.append("&lt;");
                case '>' -> sb.append("&gt;");
                case '&' -> sb.append("&amp;");
                case '"' -> sb.append("&quot;");
                case '\'' -> sb.append("&apos;");
                default -> {
                    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0xfffe || c == 0xffff) {
                        sb.append('?'); // not representable in XML 1.0
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.toString();
    }
}
