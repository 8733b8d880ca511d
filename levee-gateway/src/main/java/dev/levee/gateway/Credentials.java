package dev.levee.gateway;

import dev.levee.s3.PercentDecoding;

/**
 * Reads the access key id a request claims, without verifying anything (AWS Signature Version 4
 * and Version 2, "Authenticating Requests" in the Amazon S3 API reference).
 *
 * <p>Sources, in order: the {@code Authorization} header ({@code AWS4-HMAC-SHA256
 * Credential=AKID/date/region/s3/aws4_request, …}, SigV4a's {@code AWS4-ECDSA-P256-SHA256} alike,
 * or SigV2's {@code AWS AKID:signature}), then the query of a presigned URL
 * ({@code X-Amz-Credential=AKID%2Fdate%2F…} or SigV2's {@code AWSAccessKeyId=AKID}). A browser
 * POST upload carries its credential inside the multipart form, which the gateway does not read:
 * it claims nothing here. Pure: no I/O, never throws.
 */
final class Credentials {

    /** Longest access key id accepted; longer claims are ignored (AWS ids have 16–128 characters). */
    static final int MAX_KEY_LENGTH = 128;

    private Credentials() {
    }

    /**
     * Returns the access key id the request claims, or {@code null} when it claims none or the
     * claim is malformed.
     *
     * @param authorization the {@code Authorization} header, may be null
     * @param rawQuery      the raw (still percent-encoded) query string without {@code '?'}, may be null
     */
    static String accessKeyId(String authorization, String rawQuery) {
        if (authorization != null && !authorization.isBlank()) {
            return fromAuthorization(authorization.strip());
        }
        if (rawQuery == null || rawQuery.isEmpty()) {
            return null;
        }
        String credential = queryParameter(rawQuery, "X-Amz-Credential");
        if (credential != null) {
            int slash = credential.indexOf('/');
            return valid(slash < 0 ? credential : credential.substring(0, slash));
        }
        return valid(queryParameter(rawQuery, "AWSAccessKeyId"));
    }

    /**
     * The header names a SigV4 request signed, lower case: the {@code SignedHeaders} of a SigV4 / SigV4a
     * {@code Authorization} header, else a presigned URL's {@code X-Amz-SignedHeaders}. Whatever the gateway forwards
     * of these must be what the client sent (issue 24): nothing added, removed or changed.
     *
     * @param authorization the {@code Authorization} header, or null
     * @param rawQuery      the query as received, without {@code '?'}, or null
     * @return the names, empty when the request claims no SigV4 signature
     */
    static java.util.Set<String> signedHeaders(String authorization, String rawQuery) {
        String list = null;
        if (authorization != null && authorization.strip().startsWith("AWS4-")) {
            int at = authorization.indexOf("SignedHeaders=");
            if (at >= 0) {
                int start = at + "SignedHeaders=".length();
                int end = start;
                while (end < authorization.length() && authorization.charAt(end) != ','
                        && !Character.isWhitespace(authorization.charAt(end))) {
                    end++;
                }
                list = authorization.substring(start, end);
            }
        } else if (rawQuery != null && !rawQuery.isEmpty()) {
            list = queryParameter(rawQuery, "X-Amz-SignedHeaders");
        }
        if (list == null || list.isEmpty()) {
            return java.util.Set.of();
        }
        java.util.Set<String> names = new java.util.HashSet<>();
        for (String name : list.split(";")) {
            if (!name.isEmpty()) {
                names.add(name.toLowerCase(java.util.Locale.ROOT));
            }
        }
        return names;
    }

    private static String fromAuthorization(String h) {
        if (h.startsWith("AWS4-")) {
            int at = h.indexOf("Credential=");
            if (at < 0) {
                return null;
            }
            int start = at + "Credential=".length();
            int end = start;
            while (end < h.length() && h.charAt(end) != '/' && h.charAt(end) != ',' && !Character.isWhitespace(h.charAt(end))) {
                end++;
            }
            return valid(h.substring(start, end));
        }
        if (h.startsWith("AWS ")) {
            String rest = h.substring(4).strip();
            int colon = rest.lastIndexOf(':');
            return colon <= 0 ? null : valid(rest.substring(0, colon));
        }
        return null;
    }

    /** Returns the value of the first parameter called {@code name}, percent-decoded ({@link PercentDecoding#queryValue}), or null. */
    private static String queryParameter(String query, String name) {
        int i = 0;
        int n = query.length();
        while (i <= n) {
            int amp = query.indexOf('&', i);
            if (amp < 0) {
                amp = n;
            }
            int eq = query.indexOf('=', i);
            if (eq > i && eq < amp && query.regionMatches(i, name, 0, name.length()) && eq - i == name.length()) {
                return PercentDecoding.queryValue(query, eq + 1, amp);
            }
            i = amp + 1;
        }
        return null;
    }

    /**
     * Returns whether {@code id} can be an access key id that this class reads back unchanged from
     * every source: 1 to {@value #MAX_KEY_LENGTH} printable ASCII characters without spaces and
     * without {@code / , : & % +}.
     */
    static boolean isKeyId(String id) {
        return valid(id) != null && id.chars().noneMatch(c -> "/,:&%+".indexOf(c) >= 0);
    }

    private static String valid(String id) {
        if (id == null || id.isEmpty() || id.length() > MAX_KEY_LENGTH) {
            return null;
        }
        for (int i = 0; i < id.length(); i++) {
            char c = id.charAt(i);
            if (c <= ' ' || c >= 0x7f) {
                return null;
            }
        }
        return id;
    }
}
