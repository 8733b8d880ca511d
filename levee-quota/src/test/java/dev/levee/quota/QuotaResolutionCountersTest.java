package dev.levee.quota;

import static dev.levee.core.S3Operation.GetObject;
import static dev.levee.core.S3Operation.ListObjects;
import static dev.levee.core.S3Operation.ListObjectsV2;
import static dev.levee.core.S3Operation.PutObject;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

import org.junit.jupiter.api.Test;

/** Which requests share a counter: the identity that GCRA state is kept under (SPEC.md §6). */
class QuotaResolutionCountersTest {

    private static final QuotaConfig A = QuotaFixtures.configA();

    private static String key(String resource, String objectKey, dev.levee.core.S3Operation op) {
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
