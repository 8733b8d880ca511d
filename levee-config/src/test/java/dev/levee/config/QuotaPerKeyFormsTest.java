package dev.levee.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.levee.quota.PrefixRule;
import dev.levee.quota.Quota;
import dev.levee.quota.QuotaConfigException;
import dev.levee.quota.ResourceQuotas;
import dev.levee.s3.S3Operation;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** The per-key values of the etcd layout (docs/design.md §4 table); paths start at the value's root. */
class QuotaPerKeyFormsTest {

    private static List<String> errors(Executable parse) {
        return catchThrowableOfType(QuotaConfigException.class, parse::execute).errors();
    }

    @Test
    void factor() {
        assertThat(QuotaConfigLoader.parseFactor("4\n", "/levee/factor")).isEqualTo(4);
        assertThat(errors(() -> QuotaConfigLoader.parseFactor("0", "/levee/factor")))
                .containsExactly("/levee/factor:1:1: expected an integer ≥ 1 (the limiter group size), got 0");
        assertThat(errors(() -> QuotaConfigLoader.parseFactor("", "/levee/factor")))
                .containsExactly("/levee/factor: expected an integer ≥ 1 (the limiter group size), got an empty value");
        assertThat(errors(() -> QuotaConfigLoader.parseFactor("\"4\"", "/levee/factor")))
                .containsExactly("/levee/factor:1:1: expected an integer ≥ 1 (the limiter group size), got the string '4'");
    }

    @Test
    void defaultQuota() {
        assertThat(QuotaConfigLoader.parseQuota("{rate: 1000, burst: 500}", "/levee/quotas/default")).isEqualTo(new Quota(1000, 500));
        assertThat(errors(() -> QuotaConfigLoader.parseQuota("rate: 1000\n", "/levee/quotas/default")))
                .containsExactly("/levee/quotas/default:1:1: burst: required (requests)");
        assertThat(errors(() -> QuotaConfigLoader.parseQuota("", "/levee/quotas/default"))).containsExactly(
                "/levee/quotas/default: expected a mapping with rate (requests per second) and burst (requests), got an empty value");
    }

    @Test
    void methodsDefault() {
        assertThat(QuotaConfigLoader.parseMethods("ListObjects: {rate: 250, burst: 250}\n", "/levee/quotas/methods_default"))
                .isEqualTo(Map.of(S3Operation.ListObjects, new Quota(250, 250)));
        assertThat(QuotaConfigLoader.parseMethods("", "/levee/quotas/methods_default")).isEmpty();
        assertThat(errors(() -> QuotaConfigLoader.parseMethods(
                "ListObjects: {rate: 250, burst: 250}\nUnknown: {rate: 1, burst: 1}\nGetObjects: {rate: 1, burst: -1}\n", "md")))
                .containsExactly(
                        "md:2:1: Unknown: operation Unknown cannot be configured: unclassified requests are limited by the "
                                + "resource-level quotas",
                        "md:3:1: GetObjects: unknown operation 'GetObjects' (did you mean GetObject?); operations use AWS API "
                                + "names such as GetObject",
                        "md:3:30: GetObjects.burst: expected an integer ≥ 0 (requests), got -1");
    }

    @Test
    void resource() {
        String yaml = """
            quota: {rate: 2000, burst: 250}
            prefixes:
              - prefix: "uploads/*"
                quota: {rate: 1700, burst: 300}
            """;
        assertThat(QuotaConfigLoader.parseResource("example-bucket", yaml, "/levee/resources/example-bucket"))
                .isEqualTo(new ResourceQuotas(new Quota(2000, 250), List.of(PrefixRule.of("uploads/*", new Quota(1700, 300)))));
        assertThat(QuotaConfigLoader.parseResource("empty", "", "/levee/resources/empty"))
                .isEqualTo(new ResourceQuotas(null, List.of()));
        assertThat(errors(() -> QuotaConfigLoader.parseResource("b", yaml.replace("uploads/*", "up*loads"), "/levee/resources/b")))
                .containsExactly("/levee/resources/b:3:5: prefixes[0] (prefix \"up*loads\"): '*' is only allowed at the end");
        assertThat(errors(() -> QuotaConfigLoader.parseResource("a/b", "", "/levee/resources/a/b")))
                .containsExactly("/levee/resources/a/b: resource name \"a/b\" must not contain '/'");
        assertThat(errors(() -> QuotaConfigLoader.parseResource("b", "quota: {rate: 1, burst: 1}\nqouta: 1\n", "r")))
                .containsExactly("r:2:1: qouta: unknown field 'qouta'; expected one of quota, prefixes (did you mean quota?)");
    }
}
