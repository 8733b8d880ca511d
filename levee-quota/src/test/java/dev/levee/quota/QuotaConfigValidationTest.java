package dev.levee.quota;

import static dev.levee.quota.QuotaFixtures.entry;
import static dev.levee.quota.QuotaFixtures.q;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.levee.s3.S3Operation;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Validation of a {@link QuotaConfig} at construction (docs/design.md §4 and {@link QuotaRules}). */
class QuotaConfigValidationTest {

    private static QuotaConfig.Builder base() {
        return QuotaConfig.builder().defaultQuota(q(1000, 500));
    }

    private static List<String> errorsOf(QuotaConfig.Builder builder) {
        return catchThrowableOfType(QuotaConfigException.class, builder::build).errors();
    }

    private static QuotaConfig.Builder withPrefixes(PrefixRule... rules) {
        return base().resource("example-bucket", new ResourceQuotas(null, List.of(rules)));
    }

    @Test
    void acceptsTheSeedExample() {
        QuotaConfig config = QuotaFixtures.configA();
        assertThat(config.factor()).isEqualTo(4);
        assertThat(config.resources()).containsKeys("example-bucket", "tiered");
        assertThat(config.resources().get("example-bucket").prefixes()).extracting(PrefixRule::prefix)
                .containsExactly("photos/2024", "uploads/*", "");
    }

    @Test
    void requiresTheDefaultQuota() {
        assertThat(errorsOf(QuotaConfig.builder()))
                .containsExactly("default: required: the quota for requests that match nothing more specific");
    }

    @ParameterizedTest
    @CsvSource({"0", "-1", "-2147483648"})
    void rejectsAFactorBelowOne(int factor) {
        assertThat(errorsOf(base().factor(factor)))
                .containsExactly("factor: expected an integer ≥ 1 (the limiter group size), got " + factor);
    }

    @Test
    void rejectsAStarThatIsNotTrailing() {
        assertThat(errorsOf(withPrefixes(entry("photos", q(1, 1)), entry("2024", q(1, 1)), entry("up*loads", q(1, 1)))))
                .containsExactly("resources.example-bucket.prefixes[2] (prefix \"up*loads\"): '*' is only allowed at the end");
    }

    @ParameterizedTest
    @CsvSource({"a**", "**", "*a*"})
    void rejectsMoreThanOneStar(String prefix) {
        assertThat(errorsOf(withPrefixes(entry(prefix, q(1, 1)))))
                .containsExactly("resources.example-bucket.prefixes[0] (prefix \"" + prefix + "\"): only a single trailing '*' is allowed");
    }

    @Test
    void rejectsDuplicatePrefixesButNotAPrefixNextToItsWildcard() {
        assertThat(errorsOf(withPrefixes(entry("a", q(1, 1)), entry("a*", q(2, 2)), entry("a", q(3, 3)), entry("a*", q(4, 4)))))
                .containsExactly(
                        "resources.example-bucket.prefixes[2] (prefix \"a\"): duplicate prefix: already configured at prefixes[0]",
                        "resources.example-bucket.prefixes[3] (prefix \"a*\"): duplicate prefix: already configured at prefixes[1]");
    }

    @Test
    void rejectsAnEntryWithNeitherQuotaNorMethods() {
        assertThat(errorsOf(withPrefixes(new PrefixRule("logs/", null, Map.of()))))
                .containsExactly("resources.example-bucket.prefixes[0] (prefix \"logs/\"): needs a quota or methods");
    }

    @Test
    void rejectsTheUnknownOperationEverywhere() {
        QuotaConfig.Builder builder = base()
                .methodDefault(S3Operation.Unknown, q(1, 1))
                .resource("b", new ResourceQuotas(null, List.of(entry("", null, Map.of(S3Operation.Unknown, q(1, 1))))));
        assertThat(errorsOf(builder)).containsExactly(
                "methods_default.Unknown: operation Unknown cannot be configured: unclassified requests are limited by the resource-level quotas",
                "resources.b.prefixes[0].methods.Unknown (prefix \"\"): operation Unknown cannot be configured: unclassified requests are limited by the resource-level quotas");
    }

    @Test
    void rejectsPrefixesLongerThanAnS3Key() {
        String ok = "é".repeat(512);          // 1024 bytes
        String tooLong = "é".repeat(512) + "x"; // 1025 bytes
        assertThat(errorsOf(withPrefixes(entry(ok + "*", q(1, 1)), entry(tooLong, q(1, 1)))))
                .containsExactly("resources.example-bucket.prefixes[1] (prefix \"" + tooLong
                        + "\"): prefix is 1025 bytes long in UTF-8; at most 1024 are allowed");
    }

    @Test
    void rejectsUnpairedSurrogatesInPrefixes() {
        assertThat(errorsOf(withPrefixes(entry("a\uD800", q(1, 1)))))
                .containsExactly("resources.example-bucket.prefixes[0] (prefix \"a\\ud800\"): prefix is not valid Unicode (unpaired surrogate at index 1)");
    }

    @Test
    void rejectsBadResourceNamesAndQuotesThemInThePath() {
        QuotaConfig.Builder builder = base()
                .resource("", ResourceQuotas.of(q(1, 1)))
                .resource("a/b", ResourceQuotas.of(q(1, 1)))
                .resource("tab\there", ResourceQuotas.of(q(1, 1)))
                .resource("x".repeat(256), ResourceQuotas.of(q(1, 1)))
                .resource("logs.example.com", ResourceQuotas.of(q(1, 1)))
                .resource("Odd_Name-1", ResourceQuotas.of(q(1, 1)));
        assertThat(errorsOf(builder)).containsExactly(
                "resources[\"\"]: resource name must not be empty",
                "resources[\"a/b\"]: resource name \"a/b\" must not contain '/'",
                "resources[\"tab\\there\"]: resource name \"tab\\there\" must not contain control characters",
                "resources." + "x".repeat(256) + ": resource name is 256 characters long; at most 255 are allowed");
    }

    @Test
    void rejectsPrefixesWhoseLimitKeysWouldCollide() {
        assertThat(errorsOf(withPrefixes(
                entry("a", null, Map.of(S3Operation.PutObject, q(1, 1))),
                entry("a#PutObject", q(2, 2)),
                entry("a#PutObject*", q(3, 3)))))
                .containsExactly("resources.example-bucket.prefixes[1] (prefix \"a#PutObject\"): limit key "
                        + "\"prefix:example-bucket/a#PutObject\" would be shared with prefixes[0] (prefix \"a\") "
                        + "methods.PutObject; change one of the prefixes");
    }

    @Test
    void reportsEveryProblemAtOnceAndJoinsThemInTheMessage() {
        QuotaConfig.Builder builder = QuotaConfig.builder().factor(0)
                .resource("a/b", new ResourceQuotas(null, List.of(entry("x*y", q(1, 1)), new PrefixRule("z", null, Map.of()))));
        QuotaConfigException e = catchThrowableOfType(QuotaConfigException.class, builder::build);
        assertThat(e.errors()).hasSize(5);
        assertThat(e.getMessage()).isEqualTo(String.join("; ", e.errors()));
        assertThat(e.problems()).extracting(ConfigProblem::path).containsExactly(
                "factor", "default", "resources[\"a/b\"]", "resources[\"a/b\"].prefixes[0]", "resources[\"a/b\"].prefixes[1]");
    }

    @Test
    void quotaRejectsNegativeAndNonFiniteValues() {
        assertThatThrownBy(() -> new Quota(-1, 0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("rate");
        assertThatThrownBy(() -> new Quota(Double.NaN, 0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new Quota(Double.POSITIVE_INFINITY, 0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new Quota(1, -1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("burst");
        assertThat(new Quota(-0.0, 0)).isEqualTo(new Quota(0, 0));
        assertThat(new Quota(0, 0).blocksAll()).isTrue();
        assertThat(new Quota(27.5, 3).blocksAll()).isFalse();
    }

    @Test
    void snapshotsAreImmutableAndEqualByValue() {
        QuotaConfig a = QuotaFixtures.configA();
        assertThat(a).isEqualTo(QuotaFixtures.configA()).hasSameHashCodeAs(QuotaFixtures.configA());
        assertThat(a.toBuilder().build()).isEqualTo(a);
        assertThat(a.toBuilder().factor(5).build()).isNotEqualTo(a);
        assertThatThrownBy(() -> a.resources().clear()).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> a.methodsDefault().clear()).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> a.resources().get("example-bucket").prefixes().get(2).methods().clear())
                .isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void formatsProblemsWithLocationPathAndContext() {
        assertThat(new ConfigProblem("q.yaml:3:5", "resources.b.prefixes[0]", "prefix \"x\"", "bad").toString())
                .isEqualTo("q.yaml:3:5: resources.b.prefixes[0] (prefix \"x\"): bad");
        assertThat(ConfigProblem.of("", "malformed").toString()).isEqualTo("malformed");
        assertThat(ConfigProblem.of("", "prefix \"x\"", "bad").toString()).isEqualTo("(prefix \"x\"): bad");
        assertThat(ConfigPath.key("resources", "a.b")).isEqualTo("resources[\"a.b\"]");
        assertThat(ConfigPath.key("", "x")).isEqualTo("x");
        assertThat(ConfigPath.quote("a\"b\\c\n\u0085\u2028")).isEqualTo("\"a\\\"b\\\\c\\n\\u0085\\u2028\"");
    }
}
