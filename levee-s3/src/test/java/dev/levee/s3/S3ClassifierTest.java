package dev.levee.s3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvFileSource;

/**
 * Decision table of docs/design.md §3: addressing, key decoding and operation names; the table is
 * {@code classification.csv} in the test resources (shared with levee quota explain's test).
 */
class S3ClassifierTest {

    /**
     * One classifier for the whole table: {@code s3.example.com} and the shorter
     * {@code example.com} (to show the longest base domain wins and that a Host equal to a base
     * domain is path-style), plus a domain configured in upper case with a trailing dot.
     */
    private static final S3Classifier CLASSIFIER =
            S3Classifier.withBaseDomains(List.of("s3.example.com", "example.com", "S3.EU.Example.Net."));

    @ParameterizedTest(name = "[{index}] {0} {1} {2} copy={3} -> {4} | {5} | {6}")
    @CsvFileSource(resources = "classification.csv", delimiter = '|', quoteCharacter = '\'')
    void classifies(String method, String host, String uri, String copySource,
            String resource, String key, S3Operation operation) {
        S3Classification c = CLASSIFIER.classify(S3Request.fromRequestUri(method, host, uri, copySource));

        assertThat(c).isEqualTo(new S3Classification(resource, key, operation));
    }

    @Test
    void pathStyleOnlyIgnoresVirtualHosts() {
        S3Classifier pathStyle = S3Classifier.pathStyleOnly();

        assertThat(pathStyle.classify(S3Request.fromRequestUri("GET", "photos.s3.example.com", "/cat.jpg", null)))
                .isEqualTo(new S3Classification("cat.jpg", "", S3Operation.ListObjects));
        assertThat(pathStyle.classify(S3Request.fromRequestUri("GET", "photos.s3.example.com", "/album/a", null)))
                .isEqualTo(new S3Classification("album", "a", S3Operation.GetObject));
        assertThat(pathStyle).hasToString("S3Classifier[path-style only]");
    }

    @Test
    void emptyBaseDomainListIsPathStyleOnly() {
        S3Classifier none = S3Classifier.withBaseDomains(List.of());

        assertThat(none.classify(S3Request.fromRequestUri("GET", "photos.s3.example.com", "/album/a", null)))
                .isEqualTo(new S3Classification("album", "a", S3Operation.GetObject));
    }

    @Test
    void baseDomainsAreNormalisedAndValidated() {
        S3Classifier c = S3Classifier.withBaseDomains(List.of(".S3.Example.com.", "s3.example.com", "example.com"));
        assertThat(c).hasToString("S3Classifier[baseDomains=s3.example.com,example.com]");

        assertThatThrownBy(() -> S3Classifier.withBaseDomains(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> S3Classifier.withBaseDomains(Arrays.asList("s3.example.com", null)))
                .isInstanceOf(NullPointerException.class);
        for (String bad : List.of("", ".", "s3.example.com:9000", "http://s3.example.com", "s3 example.com",
                "s3.example.com/", "user@s3.example.com", "s3.example.com\n")) {
            assertThatThrownBy(() -> S3Classifier.withBaseDomains(List.of(bad)))
                    .as("base domain %s", bad)
                    .isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void nullRequestAndNullComponentsClassifyAsUnknown() {
        assertThat(CLASSIFIER.classify(null)).isEqualTo(new S3Classification("", "", S3Operation.Unknown));
        assertThat(CLASSIFIER.classify(new S3Request(null, null, null, null, false)))
                .isEqualTo(new S3Classification("", "", S3Operation.Unknown));
        assertThat(CLASSIFIER.classify(new S3Request(null, null, "/photos/k", null, true)))
                .isEqualTo(new S3Classification("photos", "k", S3Operation.Unknown));
        assertThat(CLASSIFIER.classify(S3Request.fromRequestUri(null, null, null, null)))
                .isEqualTo(new S3Classification("", "", S3Operation.Unknown));
        assertThat(CLASSIFIER.classify(new S3Request("GET", "", "", "", false)))
                .isEqualTo(new S3Classification("", "", S3Operation.ListBuckets));
    }

    @Test
    void controlCharactersAndNulSurviveDecodingUnchanged() {
        S3Classification c = CLASSIFIER.classify(S3Request.fromRequestUri("GET", null, "/photos/a%00b%0A%0d%7F%1B[0m", null));

        assertThat(c).isEqualTo(new S3Classification("photos", "a\u0000b\n\r\u007f\u001b[0m", S3Operation.GetObject));
        assertThat(CLASSIFIER.classify(S3Request.fromRequestUri("PUT", null, "/ph%00otos/\u0000k", null)))
                .isEqualTo(new S3Classification("ph\u0000otos", "\u0000k", S3Operation.PutObject));
    }

    @Test
    void absurdlyLongPathsAreClassified() {
        String plain = "x".repeat(10_000);
        assertThat(CLASSIFIER.classify(S3Request.fromRequestUri("GET", null, "/photos/" + plain, null)))
                .isEqualTo(new S3Classification("photos", plain, S3Operation.GetObject));

        String encoded = "%E2%9C%93".repeat(3_000);
        assertThat(CLASSIFIER.classify(S3Request.fromRequestUri("PUT", null, "/photos/" + encoded, null)))
                .isEqualTo(new S3Classification("photos", "✓".repeat(3_000), S3Operation.PutObject));

        String slashes = "/".repeat(10_000);
        assertThat(CLASSIFIER.classify(S3Request.fromRequestUri("GET", null, slashes, null)))
                .isEqualTo(new S3Classification("", "", S3Operation.ListBuckets));

        String query = "acl&".repeat(5_000);
        assertThat(CLASSIFIER.classify(S3Request.fromRequestUri("GET", null, "/photos/k?" + query, null)))
                .isEqualTo(new S3Classification("photos", "k", S3Operation.GetObjectAcl));
    }

    @Test
    void fromRequestUriSplitsPathAndQuery() {
        assertThat(S3Request.fromRequestUri("GET", "h", "/b/k", null))
                .isEqualTo(new S3Request("GET", "h", "/b/k", null, false));
        assertThat(S3Request.fromRequestUri("GET", "h", "/b/k?", null))
                .isEqualTo(new S3Request("GET", "h", "/b/k", "", false));
        assertThat(S3Request.fromRequestUri("PUT", "h", "/b/k?uploadId=u?x&partNumber=1", "/src/k"))
                .isEqualTo(new S3Request("PUT", "h", "/b/k", "uploadId=u?x&partNumber=1", true));
        assertThat(S3Request.fromRequestUri("PUT", "h", "/b/k", " "))
                .isEqualTo(new S3Request("PUT", "h", "/b/k", null, false));
        assertThat(S3Request.fromRequestUri("GET", "h", "http://user@other:81/b/k?acl", null))
                .isEqualTo(new S3Request("GET", "other:81", "/b/k", "acl", false));
        assertThat(S3Request.fromRequestUri("GET", "h", "http:///b/k", null))
                .isEqualTo(new S3Request("GET", "h", "/b/k", null, false));
    }

    @Test
    void queryLeftInThePathIsMergedWithTheQueryComponent() {
        S3Request unsplit = new S3Request("PUT", "s3.example.com", "/photos/big.iso?uploadId=u1", "partNumber=2", false);

        assertThat(CLASSIFIER.classify(unsplit))
                .isEqualTo(new S3Classification("photos", "big.iso", S3Operation.UploadPart));
    }

    @Test
    void classificationRejectsNullComponents() {
        assertThatThrownBy(() -> new S3Classification(null, "", S3Operation.Unknown))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> new S3Classification("", null, S3Operation.Unknown))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> new S3Classification("", "", null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void levelsFollowResourceAndKey() {
        S3Classification service = CLASSIFIER.classify(S3Request.fromRequestUri("GET", null, "/", null));
        S3Classification bucket = CLASSIFIER.classify(S3Request.fromRequestUri("GET", null, "/b", null));
        S3Classification object = CLASSIFIER.classify(S3Request.fromRequestUri("GET", null, "/b/k", null));

        assertThat(service.serviceLevel()).isTrue();
        assertThat(service.objectLevel()).isFalse();
        assertThat(bucket.serviceLevel()).isFalse();
        assertThat(bucket.objectLevel()).isFalse();
        assertThat(object.objectLevel()).isTrue();
    }
}
