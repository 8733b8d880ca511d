package dev.levee.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.levee.s3.S3Operation;
import dev.levee.quota.Quota;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaConfigException;
import dev.levee.quota.QuotaMode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code lease:} (issue 23 item 2, docs/quotas.md "Request leases") in the single-file form and the etcd layout: a
 * top-level default and a per-quota setting that overrides it; strict (only {@code true} and {@code false}), errors
 * named by file or etcd key and path; written and read back the same.
 */
class LeaseConfigTest {

    @TempDir
    Path dir;

    private static List<String> errors(Executable parse) {
        return catchThrowableOfType(QuotaConfigException.class, parse::execute).errors();
    }

    static final String YAML = """
            factor: 2
            lease: false
            default: {rate: 100, burst: 10, lease: true}
            methods_default:
              PutObject: {rate: 50, burst: 5}
            resources:
              hot:
                quota: {rate: 5000, burst: 500, lease: true}
                prefixes:
                  - prefix: "logs/"
                    quota: {rate: 10, burst: 2, mode: shadow, lease: false}
              plain:
                quota: {rate: 7, burst: 1}
            """;

    @Test
    void theFileAUserWritesSaysWhichQuotasMayBeLeasedAndTheQuotaOverridesTheTop() throws Exception {
        Path file = Files.writeString(dir.resolve("quotas.yaml"), YAML);
        QuotaConfig c = QuotaConfigLoader.load(file);
        assertThat(c.defaultLease()).isFalse();
        assertThat(c.defaultQuota()).isEqualTo(new Quota(100, 10, null, true));
        assertThat(c.resources().get("plain").quota().lease()).as("not set: the top-level setting applies").isNull();
        assertThat(c.leaseEligible(c.resolve("hot", "a", S3Operation.GetObject))).as("quota says true").isTrue();
        assertThat(c.leaseEligible(c.resolve("hot", "logs/x", S3Operation.GetObject))).as("prefix says false").isFalse();
        assertThat(c.leaseEligible(c.resolve("plain", "a", S3Operation.GetObject))).as("top-level false").isFalse();
        assertThat(c.leaseEligible(c.resolve("other", "a", S3Operation.GetObject))).as("default says true").isTrue();
        assertThat(c.leaseEligible(c.resolve("other", "a", S3Operation.PutObject))).as("methods_default: top").isFalse();
        assertThat(c.resources().get("hot").prefixes().get(0).quota().mode()).isEqualTo(QuotaMode.SHADOW);
    }

    @Test
    void withoutLeaseEveryQuotaIsEligibleAsBefore() {
        QuotaConfig c = QuotaConfigLoader.parse("default: {rate: 1, burst: 1}\n", "q.yaml");
        assertThat(c.defaultLease()).isTrue();
        assertThat(c.defaultQuota().lease()).isNull();
        assertThat(c.leaseEligible(c.resolve("b", "k", S3Operation.GetObject))).isTrue();
        assertThat(QuotaYamlWriter.write(c)).doesNotContain("lease");
        assertThat(QuotaLayout.toValues(c)).doesNotContainKey(QuotaLayout.LEASE);
    }

    @Test
    void writtenAndReadBackTheSameInBothForms() {
        QuotaConfig c = QuotaConfigLoader.parse(YAML, "q.yaml");
        String written = QuotaYamlWriter.write(c);
        assertThat(written).contains("lease: false").contains("lease: true");
        assertThat(QuotaConfigLoader.parse(written, "written")).isEqualTo(c);
        Map<String, String> values = QuotaLayout.toValues(c);
        assertThat(values).containsEntry(QuotaLayout.LEASE, "false");
        assertThat(values.get("resources/hot")).contains("lease: true").contains("lease: false");
        QuotaConfig back = QuotaLayout.fromValues("/levee/", values);
        assertThat(back).isEqualTo(c);
        assertThat(back.defaultLease()).isFalse();
        assertThat(c.toBuilder().build()).isEqualTo(c);
        assertThat(c.toBuilder().defaultLease(true).build()).isNotEqualTo(c);
    }

    @Test
    void theEtcdLayoutTakesTheTopLevelKeyAndPerQuotaFields() {
        QuotaConfig c = QuotaLayout.fromValues("/levee/", Map.of("quotas/default", "{rate: 1, burst: 1}",
                "lease", "false", "resources/b", "quota: {rate: 9, burst: 3, lease: true}"));
        assertThat(c.defaultLease()).isFalse();
        assertThat(c.leaseEligible(c.resolve("b", "k", S3Operation.GetObject))).isTrue();
        assertThat(c.leaseEligible(c.resolve("c", "k", S3Operation.GetObject))).isFalse();
        assertThat(QuotaConfigLoader.parseLease("true\n", "/levee/lease")).isTrue();
    }

    @Test
    void badValuesAreRefusedNamingTheFileOrKeyAndTheField() {
        assertThat(errors(() -> QuotaConfigLoader.parse("""
                lease: maybe
                default: {rate: 1, burst: 1, lease: yes}
                resources:
                  b:
                    quota: {rate: 1, burst: 1, lease: "false"}
                    prefixes:
                      - prefix: "p"
                        quota: {rate: 1, burst: 1, lease: 0}
                """, "q.yaml"))).containsExactly(
                "q.yaml:1:8: lease: expected true or false (whether the quota's counter may be leased to a client),"
                        + " got 'maybe'",
                "q.yaml:2:37: default.lease: expected true or false (whether the quota's counter may be leased to a"
                        + " client), got 'yes' (read as a boolean)",
                "q.yaml:5:39: resources.b.quota.lease: expected true or false (whether the quota's counter may be leased"
                        + " to a client), got the string 'false'; write it without quotes",
                "q.yaml:8:43: resources.b.prefixes[0].quota.lease (prefix \"p\"): expected true or false (whether the"
                        + " quota's counter may be leased to a client), got 0");
        assertThat(errors(() -> QuotaConfigLoader.parseLease("flase", "/levee/lease"))).containsExactly(
                "/levee/lease:1:1: expected true or false (whether the quota's counter may be leased to a client), got"
                        + " 'flase' (did you mean false?)");
        assertThat(errors(() -> QuotaLayout.fromValues("/levee/", Map.of("quotas/default", "{rate: 1, burst: 1}",
                "lease", "")))).containsExactly(
                "/levee/lease: expected true or false (whether the quota's counter may be leased to a client), got an"
                        + " empty value");
        assertThat(errors(() -> QuotaLayout.fromValues("/levee/", Map.of("quotas/default", "{rate: 1, burst: 1}",
                "resources/b", "quota: {rate: 1, burst: 1, lease: maybe}")))).singleElement().asString()
                .startsWith("/levee/resources/b:1:35: quota.lease: expected true or false");
    }

    @Test
    void aMisspelledLeaseFieldIsAnUnknownField() {
        assertThat(errors(() -> QuotaConfigLoader.parse("default: {rate: 1, burst: 1, laese: false}\n", "q.yaml")))
                .singleElement().asString()
                .contains("default.laese: unknown field 'laese'; expected one of rate, burst, mode, lease (did you mean lease?)");
        assertThat(errors(() -> QuotaConfigLoader.parse("leases: false\ndefault: {rate: 1, burst: 1}\n", "q.yaml")))
                .singleElement().asString().contains("unknown field 'leases'").contains("(did you mean lease?)");
    }
}
