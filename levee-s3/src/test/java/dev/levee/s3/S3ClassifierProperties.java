package dev.levee.s3;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Assume;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.AlphaChars;
import net.jqwik.api.constraints.NumericChars;
import net.jqwik.api.constraints.StringLength;
import net.jqwik.api.constraints.WithNull;

/** Invariants of S3 classification (docs/design.md §3) for arbitrary and adversarial requests. */
class S3ClassifierProperties {

    private static final List<S3Classifier> CLASSIFIERS = List.of(
            S3Classifier.pathStyleOnly(),
            S3Classifier.withBaseDomains(List.of("s3.example.com", "example.com")));

    /** Arbitrary strings anywhere never make classify throw, and the answer has no null component. */
    @Property(tries = 2000)
    void neverThrowsForArbitraryRequestLines(
            @ForAll @WithNull(0.05) String method,
            @ForAll @WithNull(0.1) String host,
            @ForAll @WithNull(0.05) String uri,
            @ForAll @WithNull(0.5) String copySource) {
        S3Request request = S3Request.fromRequestUri(method, host, uri, copySource);
        for (S3Classifier classifier : CLASSIFIERS) {
            assertWellFormed(classifier.classify(request));
        }
    }

    /** The same for records built by hand, where path and query need not be split. */
    @Property(tries = 2000)
    void neverThrowsForArbitraryRecords(
            @ForAll @WithNull(0.1) String method,
            @ForAll @WithNull(0.1) String host,
            @ForAll @WithNull(0.1) String path,
            @ForAll @WithNull(0.1) String query,
            @ForAll boolean copySource) {
        S3Request request = new S3Request(method, host, path, query, copySource);
        for (S3Classifier classifier : CLASSIFIERS) {
            assertWellFormed(classifier.classify(request));
        }
    }

    /**
     * Request-targets assembled from the fragments that break naive parsers (escapes, truncated
     * escapes, invalid UTF-8, slashes, schemes, sub-resources) never make classify throw.
     */
    @Property(tries = 3000)
    void neverThrowsForAdversarialTargets(
            @ForAll("methods") String method,
            @ForAll("hosts") String host,
            @ForAll("targets") String target,
            @ForAll boolean copySource) {
        S3Request request = S3Request.fromRequestUri(method, host, target, copySource ? "/src/k" : null);
        for (S3Classifier classifier : CLASSIFIERS) {
            assertWellFormed(classifier.classify(request));
        }
    }

    /** Any key, fully percent-encoded, comes back exactly after one decoding, in both styles. */
    @Property(tries = 1000)
    void percentEncodedKeysRoundTrip(
            @ForAll @AlphaChars @NumericChars @StringLength(min = 1, max = 20) String bucketName,
            @ForAll @StringLength(min = 1, max = 200) String key) {
        Assume.that(new String(key.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8).equals(key));
        String bucket = bucketName.toLowerCase(java.util.Locale.ROOT);
        S3Classifier classifier = CLASSIFIERS.get(1);

        S3Classification pathStyle = classifier.classify(
                S3Request.fromRequestUri("GET", "s3.example.com", "/" + bucket + "/" + encode(key), null));
        S3Classification virtual = classifier.classify(
                S3Request.fromRequestUri("GET", bucket + ".s3.example.com", "/" + encode(key), null));

        assertThat(pathStyle).isEqualTo(new S3Classification(bucket, key, S3Operation.GetObject));
        assertThat(virtual).isEqualTo(new S3Classification(bucket, key, S3Operation.GetObject));
    }

    /** Query parameters that select no operation never change it, whatever their order. */
    @Property(tries = 500)
    void ignoredParametersDoNotChangeTheOperation(
            @ForAll("ignoredParameters") List<String> noise,
            @ForAll("objectRequests") String[] request) {
        S3Classifier classifier = CLASSIFIERS.get(0);
        String base = request[1];
        int q = base.indexOf('?');
        String withNoise = q < 0
                ? base + "?" + String.join("&", noise)
                : base + "&" + String.join("&", noise);
        S3Operation expected = classifier.classify(S3Request.fromRequestUri(request[0], null, base, null)).operation();

        assertThat(classifier.classify(S3Request.fromRequestUri(request[0], null, withNoise, null)).operation())
                .isEqualTo(expected)
                .isNotEqualTo(S3Operation.Unknown);
    }

    private static void assertWellFormed(S3Classification c) {
        assertThat(c).isNotNull();
        assertThat(c.resource()).isNotNull();
        assertThat(c.key()).isNotNull();
        assertThat(c.operation()).isNotNull();
        if (c.resource().isEmpty()) {
            assertThat(c.key()).isEmpty();
        }
    }

    /** Percent-encodes every UTF-8 byte except unreserved characters and '/'. */
    private static String encode(String key) {
        StringBuilder sb = new StringBuilder();
        for (byte b : key.getBytes(StandardCharsets.UTF_8)) {
            int c = b & 0xFF;
            if (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || "-._~/".indexOf(c) >= 0) {
                sb.append((char) c);
            } else {
                sb.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
                        .append(Character.toUpperCase(Character.forDigit(c & 0xF, 16)));
            }
        }
        return sb.toString();
    }

    @Provide
    Arbitrary<String> methods() {
        return Arbitraries.oneOf(
                Arbitraries.of("GET", "HEAD", "PUT", "DELETE", "POST", "get", "OPTIONS", "", "G\u0000T"),
                Arbitraries.strings().ofMaxLength(8));
    }

    @Provide
    Arbitrary<String> hosts() {
        return Arbitraries.oneOf(
                Arbitraries.of("s3.example.com", "b.s3.example.com", "B.S3.EXAMPLE.COM:9000", "example.com",
                        ".s3.example.com", "s3.example.com.", "[::1]:80", ":", "@", "..", "", "\u0000"),
                Arbitraries.strings().ofMaxLength(30)).injectNull(0.1);
    }

    @Provide
    Arbitrary<String> targets() {
        Arbitrary<String> fragment = Arbitraries.oneOf(
                Arbitraries.of("/", "//", "%", "%2", "%2F", "%2f", "%25", "%E2%9C%93", "%E2%9C", "%FF", "%C0%AF",
                        "%ED%A0%80", "%F0%9F%98%80", "%00", "%0A", "?", "&", "=", "+", "#", "*", "..", ".",
                        "http://", "HTTPS://", "@", ":", "b.s3.example.com", "bucket", "key", "\u0000", "\uD800",
                        "acl", "uploadId", "uploads", "partNumber=1", "list-type=2", "select", "select-type=2",
                        "delete", "versions", "tagging", "%61cl", "X-Amz-Signature=ab%2F", "x-id=PutObject"),
                Arbitraries.strings().ofMaxLength(5));
        return fragment.list().ofMaxSize(40).map(parts -> String.join("", parts));
    }

    @Provide
    Arbitrary<List<String>> ignoredParameters() {
        return Arbitraries.of("prefix=a%2Fb", "max-keys=10", "delimiter=/", "versionId=v1", "x-id=Foo",
                        "response-content-type=text%2Fplain", "X-Amz-Algorithm=AWS4-HMAC-SHA256",
                        "X-Amz-Credential=AKIA%2F20240101%2Fus-east-1%2Fs3%2Faws4_request", "X-Amz-Date=20240101T000000Z",
                        "X-Amz-Expires=900", "X-Amz-SignedHeaders=host", "X-Amz-Signature=deadbeef",
                        "X-Amz-Security-Token=t%2Bk", "AWSAccessKeyId=AKIA", "Signature=abc%3D", "Expires=1",
                        "encoding-type=url", "", "unknown", "unknown=")
                .list().ofMinSize(1).ofMaxSize(8);
    }

    @Provide
    Arbitrary<String[]> objectRequests() {
        return Arbitraries.of(
                new String[] {"GET", "/b/k"},
                new String[] {"PUT", "/b/k"},
                new String[] {"HEAD", "/b/k"},
                new String[] {"DELETE", "/b/k"},
                new String[] {"GET", "/b"},
                new String[] {"GET", "/b?list-type=2"},
                new String[] {"POST", "/b?delete"},
                new String[] {"GET", "/b/k?acl"},
                new String[] {"PUT", "/b/k?partNumber=1&uploadId=u"},
                new String[] {"POST", "/b/k?uploads"},
                new String[] {"POST", "/b/k?uploadId=u"},
                new String[] {"GET", "/"});
    }
}
