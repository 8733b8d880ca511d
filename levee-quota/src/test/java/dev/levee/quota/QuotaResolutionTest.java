package dev.levee.quota;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.s3.S3Operation;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvFileSource;

/**
 * Resolution of (resource, key, operation) against docs/design.md §4, one row per case of
 * {@code resolution.csv} (test resources, shared with levee quota explain's test). Configs "A"
 * and "B" are in {@link QuotaFixtures}; {@code ''} is the empty key of bucket-level operations;
 * an empty cell is {@code null}.
 */
class QuotaResolutionTest {

    private static final QuotaConfig A = QuotaFixtures.configA();
    private static final QuotaConfig B = QuotaFixtures.configB();

    @ParameterizedTest(name = "[{index}] {0} {1} {2} {3} -> {4} {6}")
    @CsvFileSource(resources = "resolution.csv", delimiter = '|', quoteCharacter = '\'', nullValues = "-")
    void resolves(String cfg, String resource, String key, S3Operation op, QuotaLevel level, String quota,
                  String limitKey, String matchedPrefix, S3Operation matchedOp) {
        QuotaConfig config = cfg.equals("A") ? A : B;
        String[] rateBurst = quota.split("/");
        Quota expected = new Quota(Double.parseDouble(rateBurst[0]), Integer.parseInt(rateBurst[1]));

        ResolvedQuota resolved = config.resolve(resource, key, op);

        assertThat(resolved).isEqualTo(new ResolvedQuota(expected, level, limitKey, matchedPrefix, matchedOp));
    }
}
