package dev.levee.s3;

/**
 * Splits a request-target into host, path and query, reducing the absolute form.
 *
 * <p>Both {@link S3Request#fromRequestUri} and {@link S3Classifier#classify} go through here, so a
 * record built by hand with an unsplit or absolute-form path classifies the same as one built from
 * the request line. The common case (path starts with {@code '/'} and has no {@code '?'}) returns
 * the inputs unchanged after two character scans.
 *
 * @param host  the effective host: the authority of an absolute-form target, else the Host header
 * @param path  the path, never null, possibly empty
 * @param query the query, or null
 */
record RequestTarget(String host, String path, String query) {

    /**
     * Normalises one target.
     *
     * @param host  the Host header, may be null
     * @param path  the raw path or request-target, may be null
     * @param query the query already split off, may be null
     * @return the target, never null
     */
    static RequestTarget of(String host, String path, String query) {
        if (path == null) {
            return new RequestTarget(host, "", query);
        }
        String p = path;
        String h = host;
        if (!p.isEmpty() && p.charAt(0) != '/') {
            int authority = schemeEnd(p);
            if (authority > 0) {
                int end = authority;
                while (end < p.length() && p.charAt(end) != '/' && p.charAt(end) != '?') {
                    end++;
                }
                int at = p.lastIndexOf('@', end - 1);
                int hostStart = at >= authority ? at + 1 : authority;
                if (end > hostStart) {
                    h = p.substring(hostStart, end);
                }
                p = p.substring(end);
            }
        }
        int q = p.indexOf('?');
        if (q < 0) {
            return new RequestTarget(h, p, query);
        }
        String inPath = p.substring(q + 1);
        String merged;
        if (query == null || query.isEmpty()) {
            merged = inPath;
        } else {
            merged = inPath.isEmpty() ? query : inPath + '&' + query;
        }
        return new RequestTarget(h, p.substring(0, q), merged);
    }

    /** Returns the index just after {@code "http://"} or {@code "https://"} (any case), or -1. */
    private static int schemeEnd(String p) {
        if (p.regionMatches(true, 0, "http://", 0, 7)) {
            return 7;
        }
        if (p.regionMatches(true, 0, "https://", 0, 8)) {
            return 8;
        }
        return -1;
    }
}
