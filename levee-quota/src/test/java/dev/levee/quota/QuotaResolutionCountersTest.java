package dev.levee.quota;

import static dev.levee.s3.S3Operation.GetObject;
import static dev.levee.s3.S3Operation.ListObjects;
import static dev.levee.s3.S3Operation.ListObjectsV2;
import static dev.levee.s3.S3Operation.PutObject;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

import org.junit.jupiter.api.Test;

/** Which requests share a counter: the identity that GCRA state is kept under (docs/design.md §6). */
class QuotaResolutionCountersTest {

    private static final QuotaConfig A = QuotaFixtures.configA();

    private static String key(String resource, String objectKey, dev.levee.s3.S3Operation op) {
        return A.resolve(resource, objectKey, op).limitKey();
    }

    @Test
    void wildcardGivesEachObjectKeyItsOwnCounter() {
        assertThat(key("example-bucket", "uploads/a.bin", PutObject))
                .isNotEqualTo(key("example-bucket", "uploads/b.bin", PutObject));
        assertThat(key("example-bucket", "uploads/a.bin", PutObject))
                .isEqualTo(key("example-bucket", "uploads/a.bin", GetObject));
    }

    @Test
    void plainPrefixSharesOneCounterAcrossKeys() {
        assertThat(key("example-bucket", "photos/2024/a.jpg", GetObject))
                .isEqualTo(key("example-bucket", "photos/2024/b.jpg", PutObject));
    }

    @Test
    void listObjectsV2SharesTheListObjectsCounterWhenItFallsBack() {
        assertThat(key("lists", "", ListObjectsV2)).isEqualTo(key("lists", "", ListObjects));
        assertThat(key("other-bucket", "", ListObjectsV2)).isEqualTo(key("other-bucket", "", ListObjects));
        assertThat(key("lists-v2", "", ListObjectsV2)).isNotEqualTo(key("lists-v2", "", ListObjects));
    }

    @Test
    void methodsDefaultAndDefaultAreCountedPerResource() {
        assertThat(key("bucket-1", "", ListObjects)).isNotEqualTo(key("bucket-2", "", ListObjects));
        assertThat(key("bucket-1", "k", GetObject)).isNotEqualTo(key("bucket-2", "k", GetObject));
        assertThat(key("bucket-1", "k", GetObject)).isEqualTo(key("bucket-1", "other", PutObject));
    }

    /**
     * An unconfigured bucket's answers are built on its first request and shared by the next ones (no limit key
     * string and no answer per request); a configured bucket's plain entries are shared likewise. The answer's
     * GCRA parameters per group size are made once and equal {@link dev.levee.core.GcraLimit#of}.
     */
    @Test
    void answersThatDoNotDependOnTheObjectKeyAreSharedAndSoAreTheirGcraParameters() {
        ResolvedQuota first = A.resolve("never-configured", "a", GetObject);
        assertThat(A.resolve("never-configured", "b", PutObject)).isSameAs(first);
        assertThat(first.limitKey()).isEqualTo("default:never-configured");
        ResolvedQuota listing = A.resolve("never-configured", "", ListObjects);
        assertThat(listing.level()).isEqualTo(QuotaLevel.METHODS_DEFAULT);
        assertThat(A.resolve("never-configured", "", ListObjectsV2)).isEqualTo(listing)
                .isSameAs(A.resolve("never-configured", "x", ListObjectsV2));
        for (int g = 1; g <= 70; g++) {
            assertThat(first.limit(g)).isEqualTo(dev.levee.core.GcraLimit.of(first.quota().rate(), first.quota().burst(), g));
            if (g <= 64) {
                assertThat(first.limit(g)).as("kept for g = %d", g).isSameAs(first.limit(g));
            }
        }
        ResolvedQuota photos = A.resolve("example-bucket", "photos/2024/a.jpg", GetObject);
        assertThat(A.resolve("example-bucket", "photos/2024/b.jpg", GetObject)).isSameAs(photos);
    }

    /** Regression: with "#Op" after the object key, key "k#PutObject" would share the counter of PutObject on "k". */
    @Test
    void objectKeyEndingInAnOperationNameCannotBorrowAnotherCounter() {
        assertThat(key("wild-methods", "tmp/k#PutObject", GetObject))
                .isNotEqualTo(key("wild-methods", "tmp/k", PutObject));
    }

    @Test
    void resultsForConfiguredNonWildcardEntriesArePrecomputed() {
        assertThat(A.resolve("example-bucket", "photos/2024/a", GetObject))
                .isSameAs(A.resolve("example-bucket", "photos/2024/b", GetObject));
        assertThat(A.resolve("methods-only", "x", GetObject)).isSameAs(A.resolve("methods-only", "y", PutObject));
    }

    @Test
    void rejectsNullArguments() {
        assertThatNullPointerException().isThrownBy(() -> A.resolve(null, "", GetObject));
        assertThatNullPointerException().isThrownBy(() -> A.resolve("b", null, GetObject));
        assertThatNullPointerException().isThrownBy(() -> A.resolve("b", "", null));
    }
}
