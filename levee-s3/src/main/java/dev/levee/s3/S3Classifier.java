package dev.levee.s3;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Classifies an S3 request into {@code (resource, object key, operation)} (docs/design.md §3; AWS S3 API
 * reference, "Virtual hosting of buckets" and the request syntax of each operation).
 *
 * <h2>Model</h2>
 * Classification reads four raw facts of the request — method, Host, request-target and whether
 * {@code x-amz-copy-source} is present — and never the body. It runs on the hot path of every S3
 * request, so it uses no regular expressions, decodes nothing that has no {@code '%'}, and cannot
 * fail: any input, including nulls, garbage and invalid encodings, yields a classification. The request-target
 * may come as a {@code String} ({@link S3Request}) or as characters where they stand ({@link Latin1Chars}: bytes
 * as received); either way it is read in place, and only the parts of the answer — the key, a bucket name not
 * seen lately — become strings (issue 12: allocation per check).
 *
 * <ol>
 *   <li><b>Target.</b> An absolute-form target ({@code http://host/bucket/key}) is reduced to its
 *       path, and its authority replaces the Host header; a {@code '?'} inside the path starts
 *       the query.</li>
 *   <li><b>Addressing.</b> When the Host (port and a trailing dot removed, compared ignoring case)
 *       is {@code <bucket>.<base domain>} for a configured base domain, the request is
 *       virtual-hosted: the resource is {@code <bucket>} in lower case (DNS names have no case) and
 *       the key is the whole path after its leading {@code '/'}. The longest matching base domain
 *       wins, and a Host equal to a base domain is path-style. Otherwise the request is
 *       path-style: the resource is the first path segment and the key is everything after the
 *       {@code '/'} that ends it ({@code "/bucket/"} and {@code "/bucket"} have key {@code ""}).
 *       Leading slashes before the bucket are skipped ({@code "//bucket/key"} is
 *       {@code bucket}), so that a request can never leave its bucket's quota by adding slashes
 *       that a backend or NGINX's {@code merge_slashes} may collapse; a path without a leading
 *       {@code '/'} reads as if it had one. Only a raw {@code '/'} separates bucket and key: an
 *       encoded {@code %2F} is data (RFC 3986 §2.2), so {@code "/%2Fbucket"} names the resource
 *       {@code "/bucket"}, which no backend serves as {@code bucket}.</li>
 *   <li><b>Decoding.</b> Resource and key are each percent-decoded once as UTF-8 ({@code '+'}
 *       stays {@code '+'}). A malformed one (a truncated or non-hexadecimal escape such as
 *       {@code %ZZ}, {@code %} or {@code a%2}, or bytes that are not well-formed UTF-8 such as
 *       {@code %C3%28}) is kept raw and the request is {@link S3Operation#Unknown}: S3 answers it
 *       {@code 400 InvalidURI}, so it must not be counted as the operation its method suggests
 *       (issue 10; limited by the resource-level quotas). Nothing is normalised: {@code "//"},
 *       {@code "."} and {@code ".."} segments stay in the key as sent, because S3 keys are
 *       opaque.</li>
 *   <li><b>Operation.</b> The level (service: no resource; bucket: no key; object), the method
 *       (upper case only) and the query's sub-resources select the operation from the decision
 *       table of docs/design.md §3; presigned-URL parameters, {@code x-id} and other parameters that do
 *       not select an operation are ignored. Anything the table does not define is
 *       {@link S3Operation#Unknown}, which is still limited by resource-level quotas.</li>
 * </ol>
 *
 * <p>Instances are safe to share between threads. Their configuration is immutable; their only state is a memo
 * of the bucket names made lately ({@link Names}), which gives the same string again for the same text and never
 * changes an answer.
 */
public final class S3Classifier {

    private static final S3Classification UNCLASSIFIED = new S3Classification("", "", S3Operation.Unknown);

    /** Lower-case base domains, longest first, so that the most specific one matches. */
    private final String[] baseDomains;
    /** Bucket names made lately, given again for the same text instead of a new string each. */
    private final Names names = new Names();

    private S3Classifier(String[] baseDomains) {
        this.baseDomains = baseDomains;
    }

    /**
     * Creates a classifier that understands only path-style requests ({@code /bucket/key}).
     *
     * @return the classifier
     */
    public static S3Classifier pathStyleOnly() {
        return new S3Classifier(new String[0]);
    }

    /**
     * Creates a classifier that also understands virtual-hosted requests
     * ({@code Host: <bucket>.<baseDomain>}) for the given base domains, for example
     * {@code "s3.example.com"}.
     *
     * <p>Each domain is compared ignoring case; one leading and one trailing dot are dropped.
     * An empty list gives the same classifier as {@link #pathStyleOnly()}.
     *
     * @param baseDomains the base domains, not null
     * @return the classifier
     * @throws NullPointerException     when the list or one of its elements is null
     * @throws IllegalArgumentException when a domain is empty, or contains whitespace, {@code ':'},
     *                                  {@code '/'} or {@code '@'} (a base domain has no port,
     *                                  scheme or path)
     */
    public static S3Classifier withBaseDomains(List<String> baseDomains) {
        Objects.requireNonNull(baseDomains, "baseDomains");
        List<String> domains = new ArrayList<>(baseDomains.size());
        for (String raw : baseDomains) {
            Objects.requireNonNull(raw, "baseDomains contains null");
            String d = raw.toLowerCase(Locale.ROOT);
            if (d.startsWith(".")) {
                d = d.substring(1);
            }
            if (d.endsWith(".")) {
                d = d.substring(0, d.length() - 1);
            }
            if (d.isEmpty()) {
                throw new IllegalArgumentException("base domain is empty: \"" + raw + "\"");
            }
            for (int i = 0; i < d.length(); i++) {
                char c = d.charAt(i);
                if (c == ':' || c == '/' || c == '@' || Character.isWhitespace(c) || Character.isISOControl(c)) {
                    throw new IllegalArgumentException(
                            "base domain must be a bare host name (no port, scheme, path or spaces): \"" + raw + "\"");
                }
            }
            if (!domains.contains(d)) {
                domains.add(d);
            }
        }
        domains.sort(Comparator.comparingInt(String::length).reversed());
        return new S3Classifier(domains.toArray(new String[0]));
    }

    /**
     * Classifies one request. Never throws, whatever the request holds.
     *
     * @param request the raw request; null classifies as resource {@code ""}, key {@code ""},
     *                {@link S3Operation#Unknown}
     * @return the classification, never null, with non-null components
     */
    public S3Classification classify(S3Request request) {
        if (request == null) {
            return UNCLASSIFIED;
        }
        RequestTarget target = RequestTarget.of(request.host(), request.path(), request.query());
        String path = target.path();
        String query = target.query();
        return classify(request.method(), target.host(), path, path.length(), query, 0,
                query == null ? 0 : query.length(), request.hasCopySource());
    }

    /**
     * Classifies one request given by its request line's facts, the request-target as characters: exactly as
     * {@code classify(S3Request.fromRequestUri(method, host, requestUri.toString(), copy))} does, where
     * {@code copy} is present when {@code hasCopySource}, but without making the target a string first — with
     * a {@link Latin1Chars} view of received bytes, only the key (and a bucket name not seen lately) become
     * strings. Never throws.
     *
     * @param method        the HTTP method as sent; may be null
     * @param host          the {@code Host} header; may be null
     * @param requestUri    the request-target as in the request line ({@code path?query}), still percent-encoded;
     *                      may be null; read during the call only
     * @param hasCopySource whether the request carries a non-blank {@code x-amz-copy-source} header
     * @return the classification, never null, with non-null components
     */
    public S3Classification classify(String method, String host, CharSequence requestUri, boolean hasCopySource) {
        int n = requestUri == null ? 0 : requestUri.length();
        if (n == 0 || requestUri.charAt(0) != '/') {
            // empty, absolute-form or otherwise unusual: split into strings as S3Request does (RequestTarget)
            RequestTarget target = RequestTarget.of(host, requestUri == null ? null : requestUri.toString(), null);
            return classify(new S3Request(method, target.host(), target.path(), target.query(), hasCopySource));
        }
        // origin form, the usual case: the path ends at the first '?', the rest is the query (RequestTarget.of)
        int q = Chars.indexOf(requestUri, '?', 0, n);
        return q < 0 ? classify(method, host, requestUri, n, null, 0, 0, hasCopySource)
                : classify(method, host, requestUri, q, requestUri, q + 1, n, hasCopySource);
    }

    /**
     * Classifies the path {@code path[0, n)} (split from its query, absolute form reduced) and the query
     * {@code query[queryFrom, queryTo)} (null: none): steps 2 to 4 of the model.
     */
    private S3Classification classify(String httpMethod, String host, CharSequence path, int n, CharSequence query,
                                      int queryFrom, int queryTo, boolean hasCopySource) {
        String resource;
        String key;
        boolean malformed = false;
        String bucket = virtualHostedBucket(host);
        if (bucket != null) {
            resource = bucket;
            int from = n > 0 && path.charAt(0) == '/' ? 1 : 0;
            key = PercentDecoding.decodeOrNull(path, from, n);
            if (key == null) {
                malformed = true;
                key = Chars.substring(path, from, n);
            }
        } else {
            int start = 0;
            while (start < n && path.charAt(start) == '/') {
                start++;
            }
            int slash = Chars.indexOf(path, '/', start, n);
            int resourceEnd = slash < 0 ? n : slash;
            resource = Chars.indexOf(path, '%', start, resourceEnd) < 0 ? names.of(path, start, resourceEnd)
                    : PercentDecoding.decodeOrNull(path, start, resourceEnd);
            if (resource == null) {
                malformed = true;
                resource = Chars.substring(path, start, resourceEnd);
            }
            if (slash < 0) {
                key = "";
            } else {
                key = PercentDecoding.decodeOrNull(path, slash + 1, n);
                if (key == null) {
                    malformed = true;
                    key = Chars.substring(path, slash + 1, n);
                }
            }
        }
        if (malformed) {
            // S3 answers such a request 400 InvalidURI: it names no object, so no operation quota applies
            return new S3Classification(resource, key, S3Operation.Unknown);
        }
        HttpMethod method = HttpMethod.parse(httpMethod);
        QueryFacts facts = query == null ? QueryFacts.NONE : QueryFacts.parse(query, queryFrom, queryTo);
        S3Operation operation;
        if (resource.isEmpty()) {
            operation = OperationTable.service(method, facts);
        } else if (key.isEmpty()) {
            operation = OperationTable.bucket(method, facts);
        } else {
            operation = OperationTable.object(method, facts, hasCopySource);
        }
        return new S3Classification(resource, key, operation);
    }

    /**
     * Tells whether a raw path percent-decodes the way the classifier needs (step 3 of the model): no
     * truncated or non-hexadecimal escape and well-formed UTF-8. A path that does not classifies as
     * {@link S3Operation#Unknown}; {@code levee quota explain} uses this to name the problem.
     *
     * @param rawPath the path, still percent-encoded, without the query; null counts as well-formed
     * @return true when every escape decodes
     */
    public static boolean wellFormedEncoding(String rawPath) {
        return rawPath == null || PercentDecoding.decodeOrNull(rawPath, 0, rawPath.length()) != null;
    }

    /**
     * Returns the bucket a virtual-hosted request names by its Host ({@code <bucket>.<base domain>}),
     * in lower case as {@link #classify} reads it, or null when the request is path-style: no
     * configured base domain matches, or the Host is a base domain itself. Never throws.
     *
     * @param host the {@code Host} header, possibly with {@code :port}; may be null
     * @return the bucket, or null
     */
    public String hostBucket(String host) {
        return virtualHostedBucket(host);
    }

    /**
     * Returns the bucket of a virtual-hosted request, or null when the request is path-style.
     *
     * @param host the effective Host, may be null, may carry a port
     */
    private String virtualHostedBucket(String host) {
        if (baseDomains.length == 0 || host == null || host.isEmpty() || host.charAt(0) == '[') {
            return null; // an IPv6 literal never ends with a domain name
        }
        int end = host.indexOf(':');
        if (end < 0) {
            end = host.length();
        }
        if (end > 0 && host.charAt(end - 1) == '.') {
            end--;
        }
        for (String domain : baseDomains) {
            int start = end - domain.length();
            if (start < 0 || !host.regionMatches(true, start, domain, 0, domain.length())) {
                continue;
            }
            if (start == 0) {
                return null; // the base domain itself: path-style
            }
            if (host.charAt(start - 1) == '.') {
                // ".s3.example.com" names no bucket: path-style rather than a shorter domain's match
                if (start == 1) {
                    return null;
                }
                return lowerCaseAscii(host, start - 1) ? names.of(host, 0, start - 1)
                        : host.substring(0, start - 1).toLowerCase(Locale.ROOT);
            }
        }
        return null;
    }

    /**
     * Bucket names made lately, kept by a hash of their text, so that the requests of a bucket share one string
     * instead of making one each. Racy by design: slots are read and written without a lock; a {@code String} is
     * safely published through its final fields, so a reader sees some name made for the slot (or none), and uses
     * it only after comparing its text. A name is always the text as it stands (one that needs no decoding).
     */
    private static final class Names {
        private static final int SLOTS = 256;
        /** Longest text kept, characters: a bucket name has at most 63 (255 for a legacy one). */
        private static final int LONGEST = 255;
        private final String[] slots = new String[SLOTS];

        /** Returns {@code s[from, to)} as a string: the one made before for the same text, or a new one. */
        String of(CharSequence s, int from, int to) {
            int n = to - from;
            if (n == 0) {
                return "";
            }
            if (n > LONGEST) {
                return Chars.substring(s, from, to);
            }
            int h = 0;
            for (int i = from; i < to; i++) {
                h = 31 * h + s.charAt(i);
            }
            int slot = (h ^ (h >>> 16)) & (SLOTS - 1);
            String known = slots[slot];
            if (known != null && Chars.regionEquals(s, from, to, known)) {
                return known;
            }
            String made = Chars.substring(s, from, to);
            slots[slot] = made;
            return made;
        }
    }

    /** Returns whether {@code s[0, end)} is ASCII without upper-case letters: its own lower case. */
    private static boolean lowerCaseAscii(String s, int end) {
        for (int i = 0; i < end; i++) {
            char c = s.charAt(i);
            if (c > 0x7F || c >= 'A' && c <= 'Z') {
                return false;
            }
        }
        return true;
    }

    /** Returns a description naming the base domains, for logs. */
    @Override
    public String toString() {
        return baseDomains.length == 0
                ? "S3Classifier[path-style only]"
                : "S3Classifier[baseDomains=" + String.join(",", baseDomains) + "]";
    }
}
