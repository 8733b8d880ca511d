package dev.levee.s3;

/** Names the HTTP methods that S3 operations use; any other method classifies as Unknown. */
enum HttpMethod {
    GET, HEAD, PUT, DELETE, POST;

    /**
     * Parses a method exactly as sent: methods are case-sensitive (RFC 9110 §9.1) and S3 clients
     * send them in upper case, so {@code "get"} is not {@code GET}.
     *
     * @param method the method, may be null
     * @return the method, or null when it is not one of the five
     */
    static HttpMethod parse(String method) {
        if (method == null) {
            return null;
        }
        return switch (method) {
            case "GET" -> GET;
            case "HEAD" -> HEAD;
            case "PUT" -> PUT;
            case "DELETE" -> DELETE;
            case "POST" -> POST;
            default -> null;
        };
    }
}
