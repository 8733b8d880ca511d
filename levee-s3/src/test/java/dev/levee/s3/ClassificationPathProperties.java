package dev.levee.s3;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.WithNull;

/**
 * Classification reads request targets as characters where they stand (issue 12: no intermediate strings on the
 * check path) and classifies exactly as before: every entry point — an {@link S3Request} built from the request
 * line or by hand, the request-target as a {@code String}, as a {@link Latin1Chars} view of received bytes, as any
 * other {@code CharSequence} — gives what {@link ClassifierBeforeIssue12}, the frozen copy of the classifier before
 * the change, gives for the same request, for random request lines: methods, hosts (virtual-hosted ones too),
 * targets with queries, percent-escapes, invalid escapes, unicode, absolute forms and empty parts. The classifiers
 * are shared across tries, so their memo of bucket names is hit, missed and overwritten along the way.
 */
class ClassificationPathProperties {

    static final List<String> DOMAINS = List.of("s3.example.com", "example.com");
    static final S3Classifier PATH_STYLE = S3Classifier.pathStyleOnly();
    static final S3Classifier VIRTUAL = S3Classifier.withBaseDomains(DOMAINS);
    static final ClassifierBeforeIssue12 PATH_STYLE_BEFORE = new ClassifierBeforeIssue12(List.of());
    static final ClassifierBeforeIssue12 VIRTUAL_BEFORE = new ClassifierBeforeIssue12(DOMAINS);

    @Property(tries = 5000)
    void requestLinesClassifyAsBeforeThroughEveryEntryPoint(
            @ForAll("methods") String method,
            @ForAll("hosts") String host,
            @ForAll("targets") String target,
            @ForAll("copySources") String copySource) {
        assertSameEverywhere(method, host, target, copySource);
    }

    @Property(tries = 2000)
    void arbitraryStringsClassifyAsBefore(
            @ForAll @WithNull(0.05) String method,
            @ForAll @WithNull(0.1) String host,
            @ForAll @WithNull(0.05) String target,
            @ForAll @WithNull(0.5) String copySource) {
        assertSameEverywhere(method, host, target, copySource);
    }

    @Property(tries = 2000)
    void recordsBuiltByHandClassifyAsBefore(
            @ForAll("methods") String method,
            @ForAll("hosts") String host,
            @ForAll("targets") @WithNull(0.1) String path,
            @ForAll("queries") @WithNull(0.3) String query,
            @ForAll boolean copySource) {
        S3Request request = new S3Request(method, host, path, query, copySource);
        assertThat(PATH_STYLE.classify(request)).isEqualTo(PATH_STYLE_BEFORE.classify(request));
        assertThat(VIRTUAL.classify(request)).isEqualTo(VIRTUAL_BEFORE.classify(request));
    }

    static void assertSameEverywhere(String method, String host, String target, String copySource) {
        // the line endpoint receives bytes: a target with characters beyond Latin-1 arrives as its UTF-8 bytes,
        // read one char per byte (as Vert.x reads a header), and that string is what the reference classifies
        byte[] bytes = target == null ? null : target.getBytes(StandardCharsets.UTF_8);
        String received = bytes == null ? null : new String(bytes, StandardCharsets.ISO_8859_1);
        boolean copy = copySource != null && !copySource.isBlank();
        for (int k = 0; k < 2; k++) {
            S3Classifier classifier = k == 0 ? PATH_STYLE : VIRTUAL;
            ClassifierBeforeIssue12 before = k == 0 ? PATH_STYLE_BEFORE : VIRTUAL_BEFORE;
            for (String uri : new String[] {target, received}) {
                S3Request request = S3Request.fromRequestUri(method, host, uri, copySource);
                S3Classification expected = before.classify(request);
                assertThat(classifier.classify(request)).as("S3Request of %s", uri).isEqualTo(expected);
                assertThat(classifier.classify(method, host, uri, copy)).as("String %s", uri).isEqualTo(expected);
                CharSequence other = uri == null ? null : new StringBuilder(uri);
                assertThat(classifier.classify(method, host, other, copy)).as("StringBuilder %s", uri)
                        .isEqualTo(expected);
            }
            S3Classification expected = before.classify(S3Request.fromRequestUri(method, host, received, copySource));
            CharSequence view = bytes == null ? null : new Latin1Chars().wrap(padded(bytes), bytes.length);
            assertThat(classifier.classify(method, host, view, copy)).as("bytes of %s", target).isEqualTo(expected);
        }
    }

    /** The bytes in a longer array, as a decoder's scratch holds them: the view must stop at its length. */
    static byte[] padded(byte[] bytes) {
        byte[] b = java.util.Arrays.copyOf(bytes, bytes.length + 7);
        java.util.Arrays.fill(b, bytes.length, b.length, (byte) '/');
        return b;
    }

    @Provide
    Arbitrary<String> methods() {
        return Arbitraries.oneOf(
                Arbitraries.of("GET", "HEAD", "PUT", "DELETE", "POST", "get", "OPTIONS", "", "G\u0000T"),
                Arbitraries.strings().ofMaxLength(8)).injectNull(0.02);
    }

    @Provide
    Arbitrary<String> hosts() {
        return Arbitraries.oneOf(
                Arbitraries.of("s3.example.com", "b.s3.example.com", "B.S3.EXAMPLE.COM:9000", "bkt.example.com",
                        "my.dotted.bucket.s3.example.com.", "Ünï.s3.example.com", "İ.example.com", "example.com",
                        ".s3.example.com", "s3.example.com.", "[::1]:80", "127.0.0.1:8080", ":", "@", "..", "",
                        "\u0000"),
                Arbitraries.strings().ofMaxLength(30)).injectNull(0.1);
    }

    @Provide
    Arbitrary<String> copySources() {
        return Arbitraries.of("/src/k", "", " ", "\t", "\u00A0", "\u2003", "src%2Fk").injectNull(0.5);
    }

    @Provide
    Arbitrary<String> targets() {
        Arbitrary<String> fragment = Arbitraries.oneOf(
                Arbitraries.of("/", "//", "%", "%2", "%2F", "%2f", "%25", "%E2%9C%93", "%E2%9C", "%FF", "%C0%AF",
                        "%ED%A0%80", "%F0%9F%98%80", "%00", "%0A", "%3F", "%26", "%3D", "?", "&", "=", "+", "#", "*",
                        "..", ".", "http://", "HTTPS://", "https://u:p@h:1", "@", ":", "b.s3.example.com", "bucket",
                        "photos", "photos-1", "key", "\u0000", "\uD800", "é", "ü", "✓", "\uD83D\uDE00", "\u00FF",
                        "acl", "%61cl", "uploadId", "uploads", "partNumber", "partNumber=1", "list-type=2",
                        "list-type", "list-type=%32", "select", "select-type=2", "select-type=", "delete", "versions",
                        "tagging", "analytics", "X-Amz-Signature=ab%2F", "x-id=PutObject", "versionId=3",
                        "legal-hold", "object-lock"),
                Arbitraries.strings().ofMaxLength(5));
        return fragment.list().ofMaxSize(40).map(parts -> String.join("", parts));
    }

    @Provide
    Arbitrary<String> queries() {
        return Arbitraries.of("", "acl", "uploads", "uploadId=u&partNumber=2", "list-type=2&prefix=a", "%61cl", "a?b",
                "select&select-type=2", "&&", "=", "tagging&versionId=1", "delete=");
    }
}
