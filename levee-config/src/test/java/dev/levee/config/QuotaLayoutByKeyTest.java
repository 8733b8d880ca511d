package dev.levee.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.levee.quota.ConfigProblem;
import dev.levee.quota.QuotaConfigException;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** {@link QuotaLayout#fromValues(String, Map, QuotaLayout.ParseCache, Map)}: problems recorded by key (issue 22). */
class QuotaLayoutByKeyTest {

    @Test
    void eachProblemIsRecordedUnderItsKeyAndAMissingDefaultUnderQuotasDefault() {
        Map<String, String> values = new TreeMap<>(Map.of(
                "factor", "0",
                "resources/good", "quota: {rate: 5, burst: 1}",
                "resources/x", "quota: {rate: -5, burst: 1}",
                "stray", "1"));
        Map<String, List<ConfigProblem>> byKey = new TreeMap<>();
        QuotaConfigException e = catchThrowableOfType(QuotaConfigException.class,
                () -> QuotaLayout.fromValues("/levee/", values, new QuotaLayout.ParseCache(), byKey));
        assertThat(byKey).containsOnlyKeys("factor", "resources/x", "stray", "quotas/default");
        assertThat(byKey.get("resources/x")).singleElement().asString().contains("/levee/resources/x").contains("quota.rate");
        assertThat(byKey.get("quotas/default")).singleElement().asString().contains("missing");
        assertThat(byKey.get("stray")).singleElement().asString().contains("unknown key");
        assertThat(e.problems()).hasSize(4);
    }

    @Test
    void aDefaultThatIsInvalidIsNotAlsoReportedMissing() {
        Map<String, List<ConfigProblem>> byKey = new TreeMap<>();
        catchThrowableOfType(QuotaConfigException.class, () -> QuotaLayout.fromValues("/levee/",
                Map.of("quotas/default", "{rate: 1, burst: many}"), null, byKey));
        assertThat(byKey.get("quotas/default")).singleElement().asString().contains("burst").doesNotContain("missing");
    }
}
