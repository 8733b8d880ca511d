package dev.levee.s3;

/**
 * Carries the raw facts of one S3 request as NGINX or the gateway saw them (docs/design.md §1, step 1).
 *
 * <p>Every component may be {@code null} or malformed; {@link S3Classifier#classify} accepts any
 * value. Nothing is decoded or normalised here.
 *
 * @param method        the HTTP method as sent, for example {@code "GET"}; case-sensitive
 * @param host          the {@code Host} header, possibly with {@code :port}; may be null or empty
 * @param path          the raw path of the request line, still percent-encoded, without the query,
 *                      for example {@code "/bucket/a%20b"}
 * @param query         the raw query string without the {@code '?'}, for example
 *                      {@code "uploadId=x&partNumber=2"}; may be null or empty
 * @param hasCopySource whether the request carries an {@code x-amz-copy-source} header
 */
public record S3Request(String method, String host, String path, String query, boolean hasCopySource) {

    /**
     * Creates a request from the request-target of the request line, splitting path and query.
     *
     * <p>The path ends at the first {@code '?'} (RFC 3986 §3.3); the rest, without that
     * {@code '?'}, is the query ({@code null} when there is no {@code '?'}). An absolute-form
     * target ({@code http://host:port/bucket/key?query}, RFC 9112 §3.2.2) is reduced to its path
     * and query, and its authority (without user info) replaces {@code host}, as RFC 9112 §3.2.3
     * requires of a server. A {@code null} target becomes an empty path.
     *
     * @param method     the HTTP method as sent; may be null
     * @param host       the {@code Host} header, possibly with {@code :port}; may be null
     * @param requestUri the request-target as in the request line ({@code path?query}), still
     *                   percent-encoded; may be null
     * @param copySource the {@code x-amz-copy-source} header value, or null when absent; an empty
     *                   or blank value counts as absent, because NGINX reports a missing header as
     *                   an empty variable
     * @return the request, never null
     */
    public static S3Request fromRequestUri(String method, String host, String requestUri, String copySource) {
        return fromRequestUri(method, host, requestUri, copySource != null && !copySource.isBlank());
    }

    /**
     * Creates a request from the request-target of the request line, as
     * {@link #fromRequestUri(String, String, String, String)} does, given only whether a copy source is present.
     *
     * @param hasCopySource whether the request carries a non-blank {@code x-amz-copy-source} header
     * @return the request, never null
     */
    public static S3Request fromRequestUri(String method, String host, String requestUri, boolean hasCopySource) {
        RequestTarget target = RequestTarget.of(host, requestUri, null);
        return new S3Request(method, target.host(), target.path(), target.query(), hasCopySource);
    }
}
