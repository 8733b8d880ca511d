package dev.levee.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.levee.quota.QuotaConfigException;
import dev.levee.s3.S3Operation;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The file source reloads a changed quota file, refuses an invalid one and keeps the last good. */
class FileQuotaSourceTest {

    @TempDir
    Path dir;

    @Test
    void reloadsOnChangeAndKeepsTheLastGoodConfigurationOnError() throws Exception {
        Path f = dir.resolve("quotas.yaml");
        Files.writeString(f, "default: {rate: 10, burst: 1}\n");
        try (FileQuotaSource s = FileQuotaSource.open(f, 20)) {
            assertThat(s.current().defaultQuota().rate()).isEqualTo(10.0);
            // replaced the way editors and config managers do it: write elsewhere, move over
            Path tmp = dir.resolve("quotas.yaml.tmp");
            Files.writeString(tmp, "default: {rate: 20, burst: 2}\nresources: {b: {quota: {rate: 3, burst: 1}}}\n");
            Files.move(tmp, f, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            await().atMost(Duration.ofSeconds(5)).until(() -> s.current().defaultQuota().rate() == 20.0);
            assertThat(s.current().resolve("b", "k", S3Operation.GetObject).quota().rate()).isEqualTo(3.0);
            assertThat(s.revision()).isEqualTo(1);

            // written in place (truncated, then written): a poll between the two sees an empty file and refuses that
            // too, so one or two refusals
            Files.writeString(f, "default: {rate: -1, burst: 2}\n");
            await().atMost(Duration.ofSeconds(5)).until(() -> s.rejectedUpdates() >= 1);
            assertThat(s.current().defaultQuota().rate()).isEqualTo(20.0);

            Files.delete(f);
            await().atMost(Duration.ofSeconds(5)).until(() -> !s.ready());
            assertThat(s.current().defaultQuota().rate()).isEqualTo(20.0);
            Files.writeString(f, "default: {rate: 30, burst: 2}\n");
            await().atMost(Duration.ofSeconds(5)).until(() -> s.ready() && s.current().defaultQuota().rate() == 30.0);
        }
    }

    @Test
    void anInvalidFileAtStartIsRefused() throws Exception {
        Path f = dir.resolve("bad.yaml");
        Files.writeString(f, "default: {rate: 1, burst: 1}\nmethods_default: {Nope: {rate: 1, burst: 1}}\n");
        assertThatThrownBy(() -> FileQuotaSource.open(f, 100)).isInstanceOf(QuotaConfigException.class)
                .hasMessageContaining("Nope");
    }

    @Test
    void etcdLayoutRoundTripsAndNamesTheKeyAtFault() {
        var cfg = QuotaConfigLoader.parse("""
                factor: 3
                default: {rate: 10, burst: 1}
                methods_default: {ListObjects: {rate: 2, burst: 1}}
                resources:
                  b: {quota: {rate: 5, burst: 1}, prefixes: [{prefix: "p*", quota: {rate: 1, burst: 1}}]}
                """, "t");
        var values = QuotaLayout.toValues(cfg);
        assertThat(values).containsKeys("factor", "quotas/default", "quotas/methods_default", "resources/b");
        assertThat(QuotaLayout.fromValues("/levee/", values)).isEqualTo(cfg);
        values.put("resources/b", "quota: {rate: 5, burst: 1}\nprefixes: [{prefix: \"a*b\", quota: {rate: 1, burst: 1}}]\n");
        values.put("quotas/typo", "x");
        values.remove("quotas/default");
        assertThatThrownBy(() -> QuotaLayout.fromValues("/levee/", values)).isInstanceOf(QuotaConfigException.class)
                .satisfies(e -> assertThat(((QuotaConfigException) e).errors())
                        .anyMatch(m -> m.contains("/levee/resources/b") && m.contains("a*b"))
                        .anyMatch(m -> m.contains("/levee/quotas/typo") && m.contains("unknown key"))
                        .anyMatch(m -> m.contains("/levee/quotas/default") && m.contains("missing")));
    }
}
