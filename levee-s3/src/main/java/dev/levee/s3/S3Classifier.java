package dev.levee.s3;

import dev.levee.core.S3Operation;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Classifies an S3 request into {@code (resource, object key, operation)} (SPEC.md §3; AWS S3 API
 * reference, "Virtual hosting of buckets" and the request syntax of each operation).
 *
 * <h2>Model</h2>
 * Classification reads four raw facts of the request — method, Host, request-target and whether
 * {@code x-amz-copy-source} is present — and never the body. It runs on the hot path of every S3
 * request, so it uses no regular expressions, decodes nothing that has no {@code '%'}, and cannot
 * fail: any input, including nulls, garbage and invalid encodings, yields a classification.
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
 *       table of SPEC.md §3; presigned-URL parameters, {@code x-id} and other parameters that do
 *       not select an operation are ignored. Anything the table does not define is
 *       {@link S3Operation#Unknown}, which is still limited by resource-level quotas.</li>
 * </ol>
 *
 * <p>Instances are immutable and safe to share between threads.
 */
public final class S3Classifier {

    private static final S3Classification UNCLASSIFIED = new S3Classification("", "", S3Operation.Unknown);

    /** Lower-case base domains, longest first, so that the most specific one matches. */
    private final String[] baseDomains;

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
        int n = path.length();
        String resource;
        String key;
        boolean malformed = false;
        String bucket = virtualHostedBucket(target.host());
        if (bucket != null) {
            resource = bucket;
            int from = n > 0 && path.charAt(0) == '/' ? 1 : 0;
            key = PercentDecoding.decodeOrNull(path, from, n);
            if (key == null) {
                malformed = true;
                key = path.substring(from, n);
            }
        } else {
            int start = 0;
            while (start < n && path.charAt(start) == '/') {
                start++;
            }
            int slash = path.indexOf('/', start);
            int resourceEnd = slash < 0 ? n : slash;
            resource = PercentDecoding.decodeOrNull(path, start, resourceEnd);
            if (resource == null) {
                malformed = true;
                resource = path.substring(start, resourceEnd);
            }
            if (slash < 0) {
                key = "";
            } else {
                key = PercentDecoding.decodeOrNull(path, slash + 1, n);
                if (key == null) {
                    malformed = true;
                    key = path.substring(slash + 1, n);
                }
            }
        }
        if (malformed) {
            // S3 answers such a request 400 InvalidURI: it names no object, so no operation quota applies
            return new S3Classification(resource, key, S3Operation.Unknown);
        }
        HttpMethod method = HttpMethod.parse(request.method());
        QueryFacts query = QueryFacts.parse(target.query());
        S3Operation operation;
        if (resource.isEmpty()) {
            operation = OperationTable.service(method, query);
        } else if (key.isEmpty()) {
            operation = OperationTable.bucket(method, query);
        } else {
            operation = OperationTable.object(method, query, request.hasCopySource());
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
                return start == 1 ? null : host.substring(0, start - 1).toLowerCase(Locale.ROOT);
            }
        }
        return null;
    }

    /** Returns a description naming the base domains, for logs. */
    @Override
    public String toString() {
        return baseDomains.length == 0
                ? "S3Classifier[path-style only]"
                : "S3Classifier[baseDomains=" + String.join(",", baseDomains) + "]";
    }
}
