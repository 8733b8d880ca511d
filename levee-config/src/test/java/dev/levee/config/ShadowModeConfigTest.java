package dev.levee.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.levee.quota.Quota;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaConfigException;
import dev.levee.quota.QuotaMode;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** {@code mode: shadow} in the single-file form and the etcd layout: strict, named errors, round trips. */
class ShadowModeConfigTest {

    private static List<String> errors(Executable parse) {
        return catchThrowableOfType(QuotaConfigException.class, parse::execute).errors();
    }

    static final String YAML = """
            factor: 2
            mode: shadow
            default: {rate: 100, burst: 10, mode: enforce}
            resources:
              b:
                quota: {rate: 5, burst: 1}
                prefixes:
                  - prefix: "trial/"
                    methods:
                      PutObject: {rate: 1, burst: 1, mode: shadow}
            """;

    @Test
    void modesAreReadOnEveryQuotaAndAtTheTop() {
        QuotaConfig c = QuotaConfigLoader.parse(YAML, "q.yaml");
        assertThat(c.defaultMode()).isEqualTo(QuotaMode.SHADOW);
        assertThat(c.defaultQuota()).isEqualTo(new Quota(100, 10, QuotaMode.ENFORCE));
        assertThat(c.resources().get("b").quota().mode()).as("not set: the default mode applies").isNull();
        assertThat(c.resources().get("b").prefixes().get(0).methods().values().iterator().next().mode())
                .isEqualTo(QuotaMode.SHADOW);
        assertThat(c.hasShadow()).isTrue();
    }

    @Test
    void writtenAndReadBackTheSame() {
        QuotaConfig c = QuotaConfigLoader.parse(YAML, "q.yaml");
        assertThat(QuotaConfigLoader.parse(QuotaYamlWriter.write(c), "written")).isEqualTo(c);
        Map<String, String> values = QuotaLayout.toValues(c);
        assertThat(values).containsEntry(QuotaLayout.MODE, "shadow");
        assertThat(QuotaLayout.fromValues("/levee/", values)).isEqualTo(c);
    }

    @Test
    void anUnknownModeIsRefusedNamingTheKeyAndField() {
        assertThat(errors(() -> QuotaConfigLoader.parse("""
                mode: dry-run
                default: {rate: 1, burst: 1, mode: Shadow}
                resources:
                  b:
                    quota: {rate: 1, burst: 1, mode: true}
                """, "q.yaml"))).containsExactly(
                "q.yaml:1:7: mode: expected enforce or shadow, got 'dry-run'",
                "q.yaml:2:36: default.mode: expected enforce or shadow, got 'Shadow' (did you mean shadow?)",
                "q.yaml:5:38: resources.b.quota.mode: expected enforce or shadow, got 'true' (read as a boolean)");
        assertThat(errors(() -> QuotaConfigLoader.parseMode("shadows", "/levee/mode")))
                .containsExactly("/levee/mode:1:1: expected enforce or shadow, got 'shadows' (did you mean shadow?)");
        assertThat(errors(() -> QuotaLayout.fromValues("/levee/", Map.of("quotas/default", "{rate: 1, burst: 1}",
                "mode", "")))).containsExactly("/levee/mode: expected enforce or shadow, got an empty value");
        assertThat(QuotaConfigLoader.parseMode("enforce\n", "/levee/mode")).isEqualTo(QuotaMode.ENFORCE);
    }

    @Test
    void aMisspelledModeFieldIsAnUnknownField() {
        assertThat(errors(() -> QuotaConfigLoader.parse("default: {rate: 1, burst: 1, mdoe: shadow}\n", "q.yaml")))
                .singleElement().asString()
                .contains("default.mdoe: unknown field 'mdoe'; expected one of rate, burst, mode, lease (did you mean mode?)");
    }
}
